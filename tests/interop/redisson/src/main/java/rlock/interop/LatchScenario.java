package rlock.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RCountDownLatch;

import rlock.interop.Main.Failure;

/** The count-down latch ({@code RCountDownLatch}): the {@code latch} scenario. */
final class LatchScenario extends Scenario {
    /** Waiters per side in each wake-up round of {@link #latch}. */
    private static final int LATCH_WAITERS = 3;

    LatchScenario(Scenario session) {
        super(session);
    }

    /** The channel both sides' waiters on the count-down latch {@code name} sleep on. */
    private static String latchChannel(String name) {
        return "redisson_countdownlatch__channel__{" + name + "}";
    }

    /** The count-down latch across sides; see the rlock side for the parts. */
    void latch() throws Exception {
        // Part 1: this side sets and counts down; rlock's waiters must wake (rlock measures).
        for (int round = 0; round <= WAKE_ROUNDS; round++) {
            String name = "interop:latch:to-rust:" + round;
            RCountDownLatch latch = redisson.getCountDownLatch(name);
            check(latch.trySetCount(1), name + " existed already");
            send("set");
            recv("waiting");
            awaitChannelSubscriber(latchChannel(name), name);
            long t0 = nowMicros();
            latch.countDown();
            send("counted " + t0);
            recv("woken");
        }

        // Part 2: rlock sets and counts down; these Redisson threads await it.
        ExecutorService pool = Executors.newFixedThreadPool(LATCH_WAITERS);
        try {
            List<Long> latencies = new ArrayList<>();
            for (int round = 0; round <= WAKE_ROUNDS; round++) {
                String name = "interop:latch:to-java:" + round;
                recv("set");
                RCountDownLatch latch = redisson.getCountDownLatch(name);
                check(latch.getCount() == 1, "Redisson reads " + latch.getCount() + " on rlock's latch of 1");
                List<Future<Long>> waiters = new ArrayList<>();
                for (int i = 0; i < LATCH_WAITERS; i++) {
                    waiters.add(pool.submit(() -> {
                        check(latch.await(30, TimeUnit.SECONDS), "a Redisson waiter's await ran out");
                        return nowMicros();
                    }));
                }
                send("waiting");
                long t0 = Long.parseLong(recv("counted"));
                long worst = 0;
                for (Future<Long> w : waiters) {
                    worst = Math.max(worst, w.get(60, TimeUnit.SECONDS) - t0);
                }
                check(latch.getCount() == 0, "the latch is not open after rlock's count-down");
                if (round > 0) {
                    // At once, not after every round: a missed message costs each round 30 s.
                    check(worst < WAKE_BOUND_US, "Redisson waiters took " + worst + " us to wake, more than 100 ms");
                    latencies.add(worst);
                }
                send("woken");
            }
            System.out.println("java: latch: all " + LATCH_WAITERS + " Redisson waiters woke " + latencies
                    + " us (the slowest of each round) after rlock's count-down began");

            // Part 3: both sides count down one latch of 4, each with a waiter.
            String name = "interop:latch:both";
            RCountDownLatch shared = redisson.getCountDownLatch(name);
            recv("set");
            check(!shared.trySetCount(5), "trySetCount on rlock's latch was not refused");
            check(shared.getCount() == 4, "Redisson reads " + shared.getCount() + " on rlock's latch of 4");
            Future<Boolean> waiter = pool.submit(() -> shared.await(30, TimeUnit.SECONDS));
            send("refused");
            recv("counted");
            shared.countDown();
            check(shared.getCount() == 2, "Redisson reads " + shared.getCount() + " after two count-downs of 4");
            check(!waiter.isDone(), "the Redisson waiter returned before the latch opened");
            send("counted");
            recv("counted");
            shared.countDown();
            check(waiter.get(10, TimeUnit.SECONDS), "the Redisson waiter's await ran out although the latch opened");
            check(shared.getCount() == 0, "the shared latch is not open after four count-downs");
            send("counted");
            recv("done");
        } finally {
            pool.shutdownNow();
        }

        // Part 4: on a cluster Redisson's own scripts fail on a name with a hash tag.
        if (cluster) {
            RCountDownLatch tagged = redisson.getCountDownLatch("interop:latch{7}");
            try {
                tagged.trySetCount(1);
                throw new Failure("Redisson's trySetCount on a tagged name worked on the cluster");
            } catch (Failure e) {
                throw e;
            } catch (RuntimeException e) {
                check(String.valueOf(e.getMessage()).contains("CROSSSLOT"), "expected CROSSSLOT, got " + e);
            }
            send("refused");
        }
    }
}
