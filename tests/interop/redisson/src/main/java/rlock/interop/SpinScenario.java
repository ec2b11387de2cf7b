package rlock.interop;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RLock;

/** The spin lock ({@code RSpinLock}): the {@code spin} scenario (see the rlock side, spin.rs). */
final class SpinScenario extends Scenario {
    SpinScenario(Scenario session) {
        super(session);
    }

    void spin() throws Exception {
        // Part 1: 2 Redisson threads and 2 rlock owners, 100 critical sections each on one spin
        // lock; hand-offs both ways go through polling only.
        String name = "interop:spin";
        exclusionRound(name, () -> redisson.getSpinLock(name));

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
}
