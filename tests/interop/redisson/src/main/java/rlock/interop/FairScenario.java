package rlock.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RList;
import org.redisson.api.RLock;
import org.redisson.client.codec.StringCodec;

import rlock.interop.Main.Failure;

/** The fair lock ({@code RFairLock}): the {@code fair} scenario. */
final class FairScenario extends Scenario {
    FairScenario(Scenario session) {
        super(session);
    }

    /** The fair lock's queue of waiting owners (Redisson's layout). */
    private RList<String> fairQueue(String name) {
        return redisson.getList("redisson_lock_queue:{" + name + "}", StringCodec.INSTANCE);
    }

    /** Whether the fair lock's queue and deadline keys are both gone. */
    private boolean fairKeysGone(String name) {
        return redisson.getKeys().countExists("redisson_lock_queue:{" + name + "}",
                "redisson_lock_timeout:{" + name + "}") == 0;
    }

    /**
     * Waits until {@code owner} is the last of {@code n} waiters in the fair lock's queue. No
     * event tells us that, so poll with a bound.
     */
    private void awaitQueued(String name, int n, String owner) throws InterruptedException {
        RList<String> queue = fairQueue(name);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            List<String> q = queue.readAll();
            if (q.size() == n && q.get(n - 1).equals(owner)) {
                return;
            }
            // Nobody else queues meanwhile: a full queue without the owner last is wrong at once.
            check(q.size() < n && System.nanoTime() < deadline,
                    owner + " did not queue up as waiter " + n + " of " + name + "; the queue is " + q);
            Thread.sleep(2);
        }
    }

    /** The time (wall-clock us) the waiter {@code w} held the lock, failing after {@code seconds}. */
    private static long grantedAt(Future<Long> w, String what, long seconds) throws Exception {
        try {
            return w.get(seconds, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new Failure(what + " did not get the fair lock within " + seconds + " s");
        }
    }

    /** A Redisson thread that takes the fair lock and hands its owner string over first. */
    private Future<Long> fairWaiter(ExecutorService pool, RLock lock, CompletableFuture<String> owner,
            String label, String orderList) {
        return pool.submit(() -> {
            owner.complete(threadOwner());
            lock.lock();
            long t = nowMicros();
            try {
                if (orderList != null) {
                    redisson.<String>getList(orderList, StringCodec.INSTANCE).add(label);
                }
            } finally {
                lock.unlock();
            }
            return t;
        });
    }

    /**
     * Part 1: 4 Redisson and 4 rlock waiters queue alternately behind a Redisson holder and are
     * granted in exactly that order. Parts 2 and 3: an rlock waiter that stops waiting (its
     * acquire is aborted; its try_acquire runs out) does not delay the Redisson waiter behind it.
     */
    void fair() throws Exception {
        String name = "interop:fair";
        String orderList = name + ":order";
        RLock lock = redisson.getFairLock(name);
        lock.lock();
        send("held");
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Long>> waiters = new ArrayList<>();
            List<String> expected = new ArrayList<>();
            for (int k = 1; k <= 4; k++) {
                if (k > 1) {
                    expected.add(recv("queued"));
                }
                CompletableFuture<String> owner = new CompletableFuture<>();
                waiters.add(fairWaiter(pool, lock, owner, "J" + k, orderList));
                String o = owner.get(30, TimeUnit.SECONDS);
                awaitQueued(name, 2 * k - 1, o);
                expected.add(o);
                send("queued " + o);
            }
            expected.add(recv("queued"));
            List<String> queue = fairQueue(name).readAll();
            check(queue.equals(expected), "the queue should be " + expected + ", it is " + queue);
            lock.unlock();
            for (int k = 0; k < waiters.size(); k++) {
                grantedAt(waiters.get(k), "J" + (k + 1), 60);
            }
            send("granted");
            recv("granted");
            List<String> order = redisson.<String>getList(orderList, StringCodec.INSTANCE).readAll();
            List<String> arrival = List.of("J1", "R1", "J2", "R2", "J3", "R3", "J4", "R4");
            check(order.equals(arrival), "granted in the order " + order + ", they arrived as " + arrival);
            check(fairKeysGone(name), "the queue or deadline keys of " + name + " are left");

            // Part 2: an rlock holder, rlock waiter W1, this side's J2 behind it; rlock aborts
            // W1's acquire, then releases; J2 must get the lock at once, not at W1's deadline.
            String a = "interop:fair:cancel";
            RLock la = redisson.getFairLock(a);
            String w1 = recv("queued");
            CompletableFuture<String> j2 = new CompletableFuture<>();
            Future<Long> got = fairWaiter(pool, la, j2, "J2", null);
            String j2Owner = j2.get(30, TimeUnit.SECONDS);
            awaitQueued(a, 2, j2Owner);
            check(fairQueue(a).readAll().equals(List.of(w1, j2Owner)), "J2 should queue behind W1");
            send("queued " + j2Owner);
            long t0 = Long.parseLong(recv("released"));
            long t1 = grantedAt(got, "J2 (behind the cancelled W1)", 10);
            System.out.println("java: fair: after rlock's W1 was cancelled, Redisson's J2 held the lock "
                    + (t1 - t0) + " us after rlock's release began");
            check(t1 - t0 < 5_000_000, "J2 waited " + (t1 - t0) + " us behind a cancelled waiter");
            check(fairKeysGone(a), "the queue or deadline keys of " + a + " are left");
            send("done");

            // Part 3: this side holds, rlock's W1 try_acquires for 5 s behind it, J2 queues
            // behind W1; W1's wait runs out; then this side unlocks.
            String b = "interop:fair:timeout";
            RLock lb = redisson.getFairLock(b);
            lb.lock();
            send("held");
            w1 = recv("queued");
            CompletableFuture<String> j2b = new CompletableFuture<>();
            Future<Long> gotB = fairWaiter(pool, lb, j2b, "J2", null);
            String j2bOwner = j2b.get(30, TimeUnit.SECONDS);
            awaitQueued(b, 2, j2bOwner);
            send("queued " + j2bOwner);
            recv("gave-up");
            List<String> left = fairQueue(b).readAll();
            check(left.equals(List.of(j2bOwner)), "only J2 should be queued after W1 gave up, the queue is " + left);
            long t2 = nowMicros();
            lb.unlock();
            long t3 = grantedAt(gotB, "J2 (behind W1, whose wait ran out)", 10);
            System.out.println("java: fair: after rlock's W1 gave up, Redisson's J2 held the lock "
                    + (t3 - t2) + " us after the holder's unlock began");
            check(t3 - t2 < 5_000_000, "J2 waited " + (t3 - t2) + " us behind a waiter that gave up");
            check(fairKeysGone(b), "the queue or deadline keys of " + b + " are left");
            send("done");
        } finally {
            pool.shutdownNow();
        }
    }
}
