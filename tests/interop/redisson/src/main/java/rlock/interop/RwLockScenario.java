package rlock.interop;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RBucket;
import org.redisson.api.RReadWriteLock;
import org.redisson.client.codec.StringCodec;

/** The read-write lock ({@code RReadWriteLock}): the {@code rwlock} scenario. */
final class RwLockScenario extends Scenario {
    /** Write and read sections per worker in the mixed part of {@link #rwlock}. */
    private static final int RW_WRITES = 60;
    private static final int RW_READS = 60;

    RwLockScenario(Scenario session) {
        super(session);
    }

    /**
     * Readers of both sides overlap; writers exclude everyone across sides; hand-offs between
     * writers wake the other side within 100 ms. See the rlock side for the whole story.
     */
    void rwlock() throws Exception {
        // Part 1: Redisson and rlock readers hold at the same time, each joining the other.
        String name = "interop:rwlock:shared";
        RReadWriteLock rw = redisson.getReadWriteLock(name);
        String me = threadOwner();
        rw.readLock().lock();
        send("reading " + me);
        String rustReader = recv("reading");
        Map<String, String> fields = fields(name);
        check("read".equals(fields.get("mode")) && "1".equals(fields.get(me)) && "1".equals(fields.get(rustReader))
                && fields.size() == 3, "both readers should hold, the hash is " + fields);
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            check(!other.submit(() -> rw.writeLock().tryLock()).get(30, TimeUnit.SECONDS),
                    "a Redisson writer got in while two readers held");
        } finally {
            other.shutdownNow();
        }
        rw.readLock().unlock();
        check(rw.readLock().isLocked(), "Redisson's read unlock freed rlock's read hold too");
        send("released");
        recv("alone");
        check(rw.readLock().tryLock(), "a Redisson reader could not join rlock's read hold");
        fields = fields(name);
        check(fields.size() == 3 && "1".equals(fields.get(me)) && "1".equals(fields.get(rustReader)),
                "both readers should hold again, the hash is " + fields);
        send("reading");
        recv("released");
        fields = fields(name);
        check(fields.size() == 2 && "read".equals(fields.get("mode")) && "1".equals(fields.get(me)),
                "only Redisson's read hold should be left, the hash is " + fields);
        rw.readLock().unlock();
        check(redisson.getKeys().countExists(name) == 0,
                "the last read unlock should delete " + name);
        send("free");

        // Part 2: 2 Redisson threads and 2 rlock owners mix write and read sections.
        String mixed = "interop:rwlock:mixed";
        RReadWriteLock mrw = redisson.getReadWriteLock(mixed);
        send("ready");
        recv("ready");
        runThreads(2, thread -> {
            for (int i = 0; i < RW_WRITES + RW_READS; i++) {
                if ((i + thread) % 2 == 0) {
                    mrw.writeLock().lock();
                    try {
                        writeSection(mixed, "java");
                    } finally {
                        mrw.writeLock().unlock();
                    }
                } else {
                    mrw.readLock().lock();
                    try {
                        readSection(mixed);
                    } finally {
                        mrw.readLock().unlock();
                    }
                }
            }
        });
        send("done");
        recv("checked");

        // Part 3: a Redisson writer holds; an rlock writer waits; Redisson unlocks once it is
        // subscribed to redisson_rwlock:{name}; the rlock side measures.
        LockScenarios wakeUps = new LockScenarios(this);
        wakeUps.holdAndWakeRust(round -> "interop:rwlock:to-rust:" + round,
                n -> redisson.getReadWriteLock(n).writeLock(), n -> "redisson_rwlock:{" + n + "}");

        // Part 4: the other way: an rlock writer holds, this Redisson writer waits.
        List<Long> latencies = wakeUps.waitForRust("a Redisson write waiter",
                round -> redisson.getReadWriteLock("interop:rwlock:to-java:" + round).writeLock());
        System.out.println("java: rwlock: Redisson write waiter held the lock " + latencies
                + " us after rlock's write release began");
    }

    /**
     * A write section: the marker must be free and no reader inside; then a GET-then-SET
     * increment of the counter, which only mutual exclusion keeps exact.
     */
    private void writeSection(String name, String side) {
        RBucket<String> marker = redisson.getBucket(name + ":marker", StringCodec.INSTANCE);
        boolean set = marker.setIfAbsent(side);
        String readers = redisson.<String>getBucket(name + ":readers", StringCodec.INSTANCE).get();
        if (!set || (readers != null && !readers.equals("0"))) {
            redisson.getAtomicLong(name + ":violations").incrementAndGet();
        }
        RBucket<String> counter = redisson.getBucket(name + ":counter", StringCodec.INSTANCE);
        String n = counter.get();
        counter.set(Long.toString((n == null ? 0 : Long.parseLong(n)) + 1));
        if (set) {
            marker.delete();
        }
    }

    /** A read section: counts itself in, and no writer's marker may be set meanwhile. */
    private void readSection(String name) {
        var readers = redisson.getAtomicLong(name + ":readers");
        if (readers.incrementAndGet() > 1) {
            redisson.getAtomicLong(name + ":shared").incrementAndGet();
        }
        if (redisson.getBucket(name + ":marker", StringCodec.INSTANCE).isExists()) {
            redisson.getAtomicLong(name + ":violations").incrementAndGet();
        }
        readers.decrementAndGet();
    }
}
