package rlock.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RLock;

import rlock.interop.Main.Failure;

/**
 * The reentrant lock ({@code RLock}): {@code mutex}, {@code wake-to-java}, {@code wake-to-rust},
 * {@code holds}, {@code force} and {@code watchdog}, and the wake-up rounds the read-write lock's
 * scenario reuses.
 */
final class LockScenarios extends Scenario {
    LockScenarios(Scenario session) {
        super(session);
    }

    /** 4 Redisson threads, 200 critical sections each; see the rlock side for the checks. */
    void mutex() throws Exception {
        String[] names = {"interop:mutex:a", "interop:mutex:b"};
        send("ready");
        recv("ready");
        runThreads(4, thread -> {
            for (int i = 0; i < 200; i++) {
                String name = names[(i + thread) % 2];
                RLock lock = redisson.getLock(name);
                lock.lock();
                try {
                    criticalSection(name, "interop:mutex");
                } finally {
                    lock.unlock();
                }
            }
        });
        send("done");
    }

    /** rlock holds (30 s lease) and releases; this Redisson waiter must hold within 100 ms. */
    void wakeToJava() throws InterruptedException {
        List<Long> latencies = waitForRust("a Redisson waiter", round -> redisson.getLock("interop:wake-to-java:" + round));
        System.out.println("java: wake-to-java: Redisson waiter held the lock " + latencies
                + " us after rlock's release began");
    }

    /** Redisson holds (30 s lease) and releases once the rlock waiter is subscribed. */
    void wakeToRust() throws InterruptedException {
        holdAndWakeRust(round -> "interop:wake-to-rust:" + round, name -> redisson.getLock(name), Scenario::lockChannel);
    }

    /**
     * The waiter's side of a wake-up from an rlock holder (30 s lease), for WAKE_ROUNDS + 1 rounds
     * on {@code lockOf(round)}: it must hold the lock within 100 ms of the start of rlock's release
     * ({@code what} names the waiter in messages). The measured latencies (us; the first round
     * warms up).
     */
    List<Long> waitForRust(String what, java.util.function.IntFunction<RLock> lockOf) throws InterruptedException {
        List<Long> latencies = new ArrayList<>();
        for (int round = 0; round <= WAKE_ROUNDS; round++) {
            RLock lock = lockOf.apply(round);
            recv("held");
            long ttl = lock.remainTimeToLive();
            check(ttl > 20_000, "rlock's hold should carry its 30 s watchdog lease, TTL is " + ttl + " ms");
            check(lock.tryLock(30, TimeUnit.SECONDS), what + " did not get the lock within 30 s");
            long t1 = nowMicros();
            long t0 = Long.parseLong(recv("released"));
            lock.unlock();
            send("unlocked");
            if (round > 0) {
                latencies.add(t1 - t0);
            }
        }
        long worst = latencies.stream().mapToLong(Long::longValue).max().orElse(Long.MAX_VALUE);
        check(worst < WAKE_BOUND_US, what + " took " + worst + " us to wake, more than 100 ms");
        return latencies;
    }

    /**
     * The holder's side of a wake-up measured by rlock, for WAKE_ROUNDS + 1 rounds: holds the lock
     * {@code lockOf} makes of {@code nameOf(round)}, waits until the rlock waiter is subscribed to
     * {@code channelOf} that name, stamps the time and unlocks.
     */
    void holdAndWakeRust(java.util.function.IntFunction<String> nameOf,
            java.util.function.Function<String, RLock> lockOf,
            java.util.function.Function<String, String> channelOf) throws InterruptedException {
        for (int round = 0; round <= WAKE_ROUNDS; round++) {
            String name = nameOf.apply(round);
            RLock lock = lockOf.apply(name);
            lock.lock();
            send("held");
            awaitChannelSubscriber(channelOf.apply(name), name);
            long t0 = nowMicros();
            lock.unlock();
            send("released " + t0);
            recv("unlocked");
        }
    }

    /** Holds never mix, and both sides read the same hold counts and TTLs. */
    void holds() throws InterruptedException {
        String name = "interop:holds";
        RLock lock = redisson.getLock(name);
        long me = Thread.currentThread().getId();

        // Part 1: this thread holds twice; the rlock side checks it cannot see it as its own.
        lock.lock();
        lock.lock();
        check(lock.getHoldCount() == 2, "Redisson should hold twice, getHoldCount = " + lock.getHoldCount());
        long ttl = lock.remainTimeToLive();
        send("held " + me + " " + ttl);
        long rustTtl = Long.parseLong(recv("checked"));
        check(Math.abs(rustTtl - ttl) <= 1_500, "Redisson read TTL " + ttl + " ms, rlock " + rustTtl + " ms");
        check(lock.isHeldByCurrentThread() && lock.getHoldCount() == 2, "rlock's attempts changed Redisson's hold");
        lock.unlock();
        check(lock.getHoldCount() == 1 && lock.isLocked(), "one unlock should leave one hold");
        lock.unlock();
        check(!lock.isLocked() && lock.remainTimeToLive() == -2, "two unlocks should free the lock");
        send("free");

        // Part 2: rlock holds twice as the owner whose integer is this thread's id.
        long rlockTtl = Long.parseLong(recv("held"));
        check(lock.isLocked(), "Redisson does not see rlock's hold");
        check(!lock.isHeldByCurrentThread(), "Redisson thread " + me + " reads as holding rlock's hold");
        check(!lock.isHeldByThread(me), "isHeldByThread(" + me + ") is true for rlock's hold");
        check(lock.getHoldCount() == 0, "Redisson has a hold count on rlock's hold");
        check(!lock.tryLock(), "Redisson re-entered rlock's hold");
        try {
            lock.unlock();
            throw new Failure("Redisson unlocked rlock's hold");
        } catch (IllegalMonitorStateException expected) {
            // Redisson refuses to release a hold it does not own.
        }
        Map<String, String> fields = fields(name);
        check(fields.size() == 1 && fields.values().iterator().next().equals("2")
                && fields.keySet().iterator().next().endsWith(":" + me),
                "the lock hash should be rlock's single field with count 2, it is " + fields);
        long ttlNow = lock.remainTimeToLive();
        check(ttlNow > 0 && Math.abs(ttlNow - rlockTtl) <= 1_500,
                "Redisson reads TTL " + ttlNow + " ms, rlock read " + rlockTtl + " ms");
        send("checked");
        recv("one");
        fields = fields(name);
        check(fields.size() == 1 && fields.values().iterator().next().equals("1"),
                "after one rlock release the hash should hold count 1, it is " + fields);
        check(lock.isLocked() && lock.getHoldCount() == 0, "Redisson misreads rlock's remaining hold");
        send("seen");
        recv("free");
        check(!lock.isLocked() && lock.remainTimeToLive() == -2, "rlock's full release should free the lock");
        send("seen");
    }

    /** A force-unlock from either side wakes the other side's waiters. */
    void force() throws Exception {
        // Part 1: rlock holds, two Redisson threads wait, rlock force-releases.
        RLock a = redisson.getLock("interop:force:a");
        recv("held");
        check(a.remainTimeToLive() > 20_000, "rlock's hold should carry its 30 s lease");
        ExecutorService pool = Executors.newFixedThreadPool(2);
        List<Future<Long>> waiters = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            waiters.add(pool.submit(() -> {
                check(a.tryLock(30, TimeUnit.SECONDS), "Redisson waiter did not get the lock within 30 s");
                long t = nowMicros();
                // Throws IllegalMonitorStateException if the rlock side's failed release took it.
                a.unlock();
                return t;
            }));
        }
        long t0 = Long.parseLong(recv("forced"));
        long first = Long.MAX_VALUE;
        try {
            for (Future<Long> w : waiters) {
                first = Math.min(first, w.get(60, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
        long latency = first - t0;
        System.out.println("java: force: first Redisson waiter held the lock " + latency
                + " us after rlock's force_release began");
        check(latency < FORCE_WAKE_BOUND_US, "Redisson waiter woke " + latency + " us after force_release");
        check(!a.isLocked(), "interop:force:a is still locked");
        send("woken");

        // Part 2: this thread holds, rlock owners wait, Redisson force-unlocks.
        RLock b = redisson.getLock("interop:force:b");
        b.lock();
        send("held");
        awaitSubscriber("interop:force:b");
        long t1 = nowMicros();
        check(b.forceUnlock(), "forceUnlock found no lock");
        send("forced " + t1);
        recv("woken");
        try {
            b.unlock();
            throw new Failure("unlock after forceUnlock succeeded");
        } catch (IllegalMonitorStateException expected) {
            // The hold was force-unlocked; Redisson must not release anyone else's.
        }
        send("done");
    }

    /** With 1 s watchdog leases, each side's hold outlives four leases while the other waits. */
    void watchdog() throws Exception {
        // Part 1: this thread holds (watchdog lease 1 s) while the rlock side waits 4 s.
        RLock a = redisson.getLock("interop:watchdog:a");
        a.lock();
        long heldAt = System.nanoTime();
        send("held");
        recv("checked");
        check(System.nanoTime() - heldAt >= TimeUnit.SECONDS.toNanos(4), "rlock stopped waiting too early");
        check(a.isHeldByCurrentThread(), "Redisson's watchdog let the hold expire");
        a.unlock();
        send("released");

        // Part 2: rlock holds; this thread waits 4 s in vain while a second thread samples the TTL.
        RLock b = redisson.getLock("interop:watchdog:b");
        recv("held");
        ExecutorService pool = Executors.newSingleThreadExecutor();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
        Future<List<Long>> sampler = pool.submit(() -> {
            List<Long> samples = new ArrayList<>();
            while (System.nanoTime() < end) {
                samples.add(b.remainTimeToLive());
                Thread.sleep(100);
            }
            return samples;
        });
        long start = System.nanoTime();
        boolean got = b.tryLock(4000, TimeUnit.MILLISECONDS);
        long waited = System.nanoTime() - start;
        List<Long> samples;
        try {
            samples = sampler.get(30, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        if (got) {
            b.unlock();
        }
        check(!got, "Redisson took the lock rlock's watchdog should keep alive");
        check(waited >= TimeUnit.MILLISECONDS.toNanos(3950), "tryLock gave up early");
        check(samples.size() >= 20, "only " + samples.size() + " TTL samples");
        List<Long> bad = samples.stream().filter(t -> t <= 0 || t > 1_000).toList();
        check(bad.isEmpty(), "rlock's hold had TTLs outside (0, 1000] ms: " + bad);
        send("checked");
        recv("released");
        check(!b.isLocked(), "rlock's release left interop:watchdog:b held");
        send("done");
    }
}
