# Interop with the real Redisson (Java): tests/interop. `make interop` builds the rlock side
# (binary `interop` of the crate rlock-interop, tests/interop/rlock) and the Maven project, then
# runs tests/interop/run.sh.
APT_PACKAGES += maven openjdk-17-jdk-headless
TEST_TARGETS += interop

INTEROP_JAR := tests/interop/redisson/target/interop.jar
INTEROP_SOURCES := tests/interop/redisson/pom.xml $(shell find tests/interop/redisson/src -name '*.java' 2>/dev/null)

.PHONY: interop build-interop interop-jar

# Maven downloads Redisson and its dependencies from Maven Central once (into ~/.m2). The jar
# also holds rlock.interop.Bench, the Redisson part of `make bench` (mk/bench.mk needs the jar
# through the phony interop-jar: it is included before this file).
$(INTEROP_JAR): $(INTEROP_SOURCES)
	cd tests/interop/redisson && mvn -q -B package
	@touch $@

interop-jar: deps $(INTEROP_JAR)

build-interop: interop-jar
	$(CARGO) build -p rlock-interop

interop: build-interop testbed ## rlock and Redisson share locks (one server, then a cluster): mutex, wake-ups, holds, force-unlock, watchdog, fenced, read-write, fair, spin, semaphore, permit-semaphore, multi-lock, latch; RedLock over three servers
	bash tests/interop/run.sh
