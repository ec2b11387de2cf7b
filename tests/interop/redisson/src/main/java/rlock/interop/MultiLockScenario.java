package rlock.interop;

import java.util.concurrent.TimeUnit;

import org.redisson.api.RBucket;
import org.redisson.api.RLock;
import org.redisson.client.codec.StringCodec;

/**
 * The multi-lock ({@code RedissonMultiLock}): the {@code multi-lock} scenario, and the critical
 * section over several names that the RedLock's scenario reuses.
 */
final class MultiLockScenario extends Scenario {
    /** Sections per Redisson thread in part 1 of {@link #multiLock} and of its multi-lock in part 2. */
    private static final int MULTI_JAVA_SECTIONS = 150;
    private static final int MULTI_PAIR_SECTIONS = 60;

    MultiLockScenario(Scenario session) {
        super(session);
    }

    /**
     * Part 1: 3 Redisson threads lock the names rlock's multi-locks take, one name at a time.
     * Part 2: a Redisson multi-lock over y, x against rlock multi-locks over x, y and y, x. See
     * the rlock side for the checks.
     */
    void multiLock() throws Exception {
        String[] names = {"interop:multi:a", "interop:multi:b", "interop:multi:c"};
        send("ready");
        recv("ready");
        runThreads(3, thread -> {
            for (int i = 0; i < MULTI_JAVA_SECTIONS; i++) {
                String n = names[(i + thread) % 3];
                RLock lock = redisson.getLock(n);
                lock.lock();
                try {
                    heldSection("interop:multi", "java", n);
                } finally {
                    lock.unlock();
                }
            }
        });
        send("done");
        recv("checked");

        // Part 2: the pair in the opposite order to one of rlock's multi-locks.
        String x = "interop:multi:x";
        String y = "interop:multi:y";
        send("ready");
        recv("ready");
        RLock multi = redisson.getMultiLock(redisson.getLock(y), redisson.getLock(x));
        long start = System.nanoTime();
        for (int i = 0; i < MULTI_PAIR_SECTIONS; i++) {
            check(multi.tryLock(30, TimeUnit.SECONDS), "Redisson's multi-lock over y, x was not taken within 30 s");
            try {
                heldSection("interop:multi:pair", "java", y, x);
            } finally {
                multi.unlock();
            }
        }
        System.out.println("java: multi-lock: Redisson's multi-lock over y, x took the pair " + MULTI_PAIR_SECTIONS
                + " times in " + (System.nanoTime() - start) / 1_000_000 + " ms");
        check(redisson.getKeys().countExists("interop:multi:violations", "interop:multi:pair:violations") == 0,
                "sections overlapped");
        send("done");
    }

    /**
     * A section holding the locks {@code names}: a marker per name (SET NX; finding one set counts
     * a violation in {@code <scope>:violations}) kept for the whole section, a GET-then-SET
     * increment of each name's counter, and a count of names whose previous holder was the other
     * side.
     */
    void heldSection(String scope, String side, String... names) {
        boolean[] marked = new boolean[names.length];
        for (int i = 0; i < names.length; i++) {
            marked[i] = redisson.getBucket(names[i] + ":marker", StringCodec.INSTANCE).setIfAbsent(side);
            if (!marked[i]) {
                redisson.getAtomicLong(scope + ":violations").incrementAndGet();
            }
        }
        for (String name : names) {
            RBucket<String> counter = redisson.getBucket(name + ":counter", StringCodec.INSTANCE);
            String n = counter.get();
            counter.set(Long.toString((n == null ? 0 : Long.parseLong(n)) + 1));
            String prev = redisson.<String>getBucket(name + ":last", StringCodec.INSTANCE).getAndSet(side);
            if (prev != null && !prev.equals(side)) {
                redisson.getAtomicLong(scope + ":handoffs").incrementAndGet();
            }
        }
        for (int i = 0; i < names.length; i++) {
            if (marked[i]) {
                redisson.getBucket(names[i] + ":marker", StringCodec.INSTANCE).delete();
            }
        }
    }
}
