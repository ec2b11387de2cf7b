package rlock.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RBucket;
import org.redisson.api.RFencedLock;
import org.redisson.client.codec.StringCodec;

/** The fenced lock ({@code RFencedLock}): the {@code fenced} scenario. */
final class FencedScenario extends Scenario {
    /** Acquires per side (Redisson and rlock alike), split over two threads / owners. */
    private static final int FENCED_PER_SIDE = 500;

    FencedScenario(Scenario session) {
        super(session);
    }

    /**
     * 2 Redisson threads take the fenced lock 250 times each (lockAndGetToken and
     * tryLockAndGetToken in turn) while 2 rlock owners do the same. Each holder appends "java
     * <token>" to a list while holding, so the list is in acquisition order; the tokens in it
     * must strictly increase, whichever side took them.
     */
    void fenced() throws Exception {
        String name = "interop:fenced";
        RFencedLock lock = redisson.getFencedLock(name);
        send("ready");
        recv("ready");
        ExecutorService pool = Executors.newFixedThreadPool(2);
        List<Future<List<Long>>> futures = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            futures.add(pool.submit(() -> {
                List<Long> mine = new ArrayList<>();
                for (int i = 0; i < FENCED_PER_SIDE / 2; i++) {
                    Long token = i % 2 == 0 ? lock.lockAndGetToken() : lock.tryLockAndGetToken(30, TimeUnit.SECONDS);
                    check(token != null, "tryLockAndGetToken did not get the lock within 30 s");
                    try {
                        long prev = mine.isEmpty() ? 0 : mine.get(mine.size() - 1);
                        check(token > prev, "token " + token + " after this thread's " + prev);
                        fencedSection(name, "java", token);
                        mine.add(token);
                    } finally {
                        lock.unlock();
                    }
                }
                return mine;
            }));
        }
        List<Long> mine = new ArrayList<>();
        try {
            for (Future<List<Long>> f : futures) {
                mine.addAll(f.get(120, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
        send("done");
        recv("done");
        List<String> entries = redisson.<String>getList(name + ":tokens", StringCodec.INSTANCE).readAll();
        check(entries.size() == 2 * FENCED_PER_SIDE, entries.size() + " tokens recorded, expected " + 2 * FENCED_PER_SIDE);
        long prev = 0;
        List<Long> javaInList = new ArrayList<>();
        for (String e : entries) {
            String[] parts = e.split(" ");
            long token = Long.parseLong(parts[1]);
            check(token > prev, "token " + token + " (" + parts[0] + ") was taken after token " + prev);
            prev = token;
            if (parts[0].equals("java")) {
                javaInList.add(token);
            }
        }
        mine.sort(null);
        check(javaInList.equals(mine), "the list's Redisson tokens differ from the ones lockAndGetToken returned");
        Long last = lock.getToken();
        check(last != null && last == prev, "getToken() is " + last + ", the last token taken was " + prev);
        check(redisson.getKeys().countExists(name + ":violations") == 0, "fenced critical sections overlapped");
        check(!lock.isLocked(), name + " is still locked");
    }

    /** One critical section of {@link #fenced}: marker check, then the token into the list. */
    private void fencedSection(String name, String side, long token) {
        RBucket<String> marker = redisson.getBucket(name + ":marker", StringCodec.INSTANCE);
        boolean set = marker.setIfAbsent(side);
        if (!set) {
            redisson.getAtomicLong(name + ":violations").incrementAndGet();
        }
        redisson.<String>getList(name + ":tokens", StringCodec.INSTANCE).add(side + " " + token);
        if (set) {
            marker.delete();
        }
    }
}
