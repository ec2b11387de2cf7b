# The pause test (issue 42; tests/pause/run.py): on every surface a holder SIGSTOPped past its
# lease while another owner takes the lock is told at its first look after SIGCONT (is_lost
# true, valid_for 0), its lost callback runs and its release is refused. PAUSE_RUNS runs per
# surface (3 here; 20 in a row were shown for the issue).
TEST_TARGETS += pause

.PHONY: pause

PAUSE_RUNS ?= 3

pause: build-python build-node lib-c testbed ## SIGSTOP a holder past its lease on every surface: its first look says lost
	$(CARGO) build $(CORE_PKG) --example pause_holder
	@mkdir -p build/pause
	gcc -std=c11 -Wall -Wextra -Werror -O1 -g -Iinclude tests/pause/holder.c -o build/pause/holder-c \
	  -Ltarget/release -lrlock -Wl,-rpath,$(CURDIR)/target/release -lpthread
	PAUSE_RUNS=$(PAUSE_RUNS) timeout 600 $(VENV)/bin/python tests/pause/run.py
