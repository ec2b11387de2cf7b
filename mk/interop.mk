# Interop with the real Redisson (Java): tests/interop. `make interop` builds the rlock side
# (binary `interop` of the crate rlock-interop, tests/interop/rlock) and the Maven project once
# per Redisson line, then runs tests/interop/run.sh with every scenario against each line.
APT_PACKAGES += maven openjdk-17-jdk-headless
TEST_TARGETS += interop

INTEROP_JAR := tests/interop/redisson/target/interop.jar
INTEROP_SOURCES := tests/interop/redisson/pom.xml $(shell find tests/interop/redisson/src -name '*.java' 2>/dev/null)
# The Redisson 4 line, built from the same sources into a directory of its own (the 3.x line is
# the pom's default, the one chaos, netfaults and bench use too).
INTEROP_REDISSON4 := 4.7.0
INTEROP_DIR4 := tests/interop/redisson/target-$(INTEROP_REDISSON4)
INTEROP_JAR4 := $(INTEROP_DIR4)/interop.jar
# Both builds, as tests/interop/run.sh takes them (INTEROP_JAVA_DIRS).
INTEROP_LINES := $(patsubst %/,%,$(dir $(INTEROP_JAR))) $(INTEROP_DIR4)

.PHONY: interop build-interop interop-jar

# Maven downloads Redisson and its dependencies from Maven Central once (into ~/.m2). The jar
# also holds rlock.interop.Bench, the Redisson part of `make bench` (mk/bench.mk needs the jar
# through the phony interop-jar: it is included before this file).
$(INTEROP_JAR): $(INTEROP_SOURCES)
	cd tests/interop/redisson && mvn -q -B package
	@touch $@

# After the 3.x build (order only): `make deps` first, and never two Maven builds at once on ~/.m2.
$(INTEROP_JAR4): $(INTEROP_SOURCES) | interop-jar
	cd tests/interop/redisson && mvn -q -B package -Dredisson.version=$(INTEROP_REDISSON4) \
	  -Dinterop.build=target-$(INTEROP_REDISSON4)
	@touch $@

interop-jar: deps $(INTEROP_JAR)

build-interop: interop-jar $(INTEROP_JAR4)
	$(CARGO) build --release -p rlock-interop

interop: build-interop testbed ## rlock and Redisson 3.52 and 4.7 share locks (one server, then a cluster): mutex, wake-ups, holds, force-unlock, watchdog, fenced, read-write, fair, spin, semaphore, permit-semaphore, multi-lock, latch; RedLock over three servers
	INTEROP_JAVA_DIRS="$(INTEROP_LINES)" bash tests/interop/run.sh
