package rlock.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RBucket;
import org.redisson.api.RLock;
import org.redisson.client.codec.StringCodec;

/** The spin lock ({@code RSpinLock}): the {@code spin} scenario (see the rlock side, spin.rs). */
final class SpinScenario extends Scenario {
    SpinScenario(Scenario session) {
        super(session);
    }

    void spin() throws Exception {
        // Part 1: 2 Redisson threads and 2 rlock owners, 100 critical sections each on one spin
        // lock; hand-offs both ways go through polling only.
        String name = "interop:spin";
        send("ready");
        recv("ready");
        ExecutorService pool = Executors.newFixedThreadPool(2);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            futures.add(pool.submit(() -> {
                RLock lock = redisson.getSpinLock(name);
                for (int i = 0; i < 100; i++) {
                    lock.lock();
                    try {
                        criticalSection(name);
                    } finally {
                        lock.unlock();
                    }
                }
                return null;
            }));
        }
        try {
            for (Future<?> f : futures) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        send("done");

        // Part 2: rlock holds the spin lock twice; Redisson's spin lock and lock see it held.
        String held = "interop:spin:held";
        recv("held");
        RLock spin = redisson.getSpinLock(held);
        check(spin.isLocked(), held + " should be locked by rlock");
        check(!spin.isHeldByCurrentThread(), held + " should not be held by this thread");
        check(!spin.tryLock(), "Redisson's spin lock took " + held + " while rlock held it");
        check(!redisson.getLock(held).tryLock(), "Redisson's lock took " + held + " while rlock held it");
        check(spin.remainTimeToLive() > 0, held + " should have a lease");
        // A Redisson spin waiter polls until rlock releases.
        ExecutorService one = Executors.newSingleThreadExecutor();
        try {
            Future<Boolean> waiter = one.submit(() -> {
                boolean got = spin.tryLock(30, TimeUnit.SECONDS);
                if (got) {
                    send("java-holds");
                    recv("rust-waits");
                    spin.unlock();
                }
                return got;
            });
            send("checked");
            check(waiter.get(HANDSHAKE_S, TimeUnit.SECONDS), "Redisson's spin waiter did not get " + held);
        } finally {
            one.shutdownNow();
        }
        recv("rust-holds");
        check(spin.isLocked() && !spin.tryLock(), held + " should be held by rlock's waiter");
        send("ok");
    }

    /** The critical section the rlock side runs too (spin.rs), on {@code name}'s own keys. */
    private void criticalSection(String name) {
        RBucket<String> marker = redisson.getBucket(name + ":marker", StringCodec.INSTANCE);
        boolean set = marker.setIfAbsent("java");
        if (!set) {
            redisson.getAtomicLong(name + ":violations").incrementAndGet();
        }
        RBucket<String> counter = redisson.getBucket(name + ":counter", StringCodec.INSTANCE);
        String n = counter.get();
        counter.set(Long.toString((n == null ? 0 : Long.parseLong(n)) + 1));
        String prev = redisson.<String>getBucket(name + ":last", StringCodec.INSTANCE).getAndSet("java");
        if (prev != null && !prev.equals("java")) {
            redisson.getAtomicLong(name + ":handoffs").incrementAndGet();
        }
        if (set) {
            marker.delete();
        }
    }
}
