package rlock.interop;

import java.lang.reflect.InvocationTargetException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RLock;

/**
 * The non-reentrant locks (Redisson 4.4's {@code getNonReentrantLock} and {@code
 * getNonReentrantFairLock}): the {@code non-reentrant} scenario (see the rlock side,
 * non_reentrant.rs). Reached by reflection, so the project still compiles against Redisson 3.x,
 * which has neither (tests/interop/run.sh runs the scenario on 4.x lines only).
 */
final class NonReentrantScenario extends Scenario {
    NonReentrantScenario(Scenario session) {
        super(session);
    }

    /** {@code redisson.<method>(name)}, a method Redisson 4.4 added. */
    private RLock lock(String method, String name) throws Exception {
        try {
            return (RLock) redisson.getClass().getMethod(method, String.class).invoke(redisson, name);
        } catch (InvocationTargetException e) {
            throw (Exception) e.getCause();
        }
    }

    /** Whether {@code lock.tryLock()} by a thread that holds it is refused as Redisson refuses a
     * re-entry of a non-reentrant lock. */
    private static boolean reentryRefused(RLock lock) {
        try {
            lock.tryLock();
            return false;
        } catch (IllegalMonitorStateException e) {
            return true;
        }
    }

    void nonReentrant() throws Exception {
        // Part 1: 2 Redisson threads and 2 rlock owners, 100 critical sections each on one
        // non-reentrant lock, woken by each other's unlock messages.
        String name = "interop:nr";
        exclusionRound(name, () -> lock("getNonReentrantLock", name));

        // Part 2: rlock holds a non-reentrant lock; Redisson sees it held and cannot take it,
        // through its non-reentrant lock or its lock.
        String held = "interop:nr:held";
        recv("held");
        RLock nr = lock("getNonReentrantLock", held);
        check(nr.isLocked() && !nr.isHeldByCurrentThread(), held + " should be locked by rlock");
        check(!nr.tryLock(), "Redisson's non-reentrant lock took " + held + " while rlock held it");
        check(!redisson.getLock(held).tryLock(), "Redisson's lock took " + held + " while rlock held it");
        send("checked");

        // Part 3, the fair variant: Redisson holds it, its own re-entry is refused, rlock sees one
        // hold level and waits in the queue; Redisson's unlock hands it over.
        String fair = "interop:nr:fair";
        ExecutorService one = Executors.newSingleThreadExecutor();
        try {
            Future<?> holder = one.submit(() -> {
                RLock lock = lock("getNonReentrantFairLock", fair);
                check(lock.tryLock(), "Redisson could not take " + fair);
                check(reentryRefused(lock), "Redisson re-entered its non-reentrant fair lock");
                check(lock.getHoldCount() == 1, fair + " should be held once");
                send("java-holds");
                recv("rust-refused");
                // rlock's waiter queued behind this hold.
                recv("rust-waits");
                lock.unlock();
                return null;
            });
            holder.get(HANDSHAKE_S, TimeUnit.SECONDS);
        } finally {
            one.shutdownNow();
        }
        recv("rust-holds");
        RLock after = lock("getNonReentrantFairLock", fair);
        check(after.isLocked() && !after.tryLock(), fair + " should be held by rlock's waiter");
        send("ok");
    }
}
