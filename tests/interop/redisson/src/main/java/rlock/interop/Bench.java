package rlock.interop;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.Supplier;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.SingleServerConfig;

/**
 * {@code make bench}, Redisson part (driver: bench/run.sh): the real Redisson measured exactly as
 * {@code rlock-bench} (bench/src/main.rs) measures the rlock core, on the same private
 * redis-server in the same run. Prints the same JSON rows with surfaces named {@code redisson...}.
 *
 * <p>Usage: {@code Bench [section...]} with sections {@code pairs} (1, 16, 64, 256 owners on
 * distinct names, as threads and as chains of async calls, each with Redisson's defaults and
 * tuned: see {@link Setup}), {@code latency} (one thread, 5000 pairs), {@code handoff} (16
 * waiters on one {@code RLock}, defaults and tuned), {@code family} (64 readers of one
 * {@code RReadWriteLock}; write-lock and {@code RFairLock} hand-offs with 16 waiters),
 * {@code semaphore} (64 threads on one {@code RSemaphore} of 64 permits, a permit handed off
 * among 16 waiters of a 1-permit one; the same for {@code RPermitExpirableSemaphore}); none: all
 * of them. Redis from {@code REDIS_URL},
 * {@code BENCH_SECONDS} (default 3) per pairs run. {@code BENCH_SHORT=1} ({@code make bench-short}):
 * every figure scaled down to about a second (see {@link Scale#SHORT}), to show it still runs.
 *
 * <p>The reentrant lock's pairs and hand-off run twice: with Redisson's defaults, nothing changed
 * (30 s watchdog, {@code lock()} without a lease time, as rlock's acquire; a pool of 64
 * connections), and tuned: the same with the connection pool sized for the largest owner count
 * (256). Redisson holds a pooled connection per command until its reply, so with its defaults 256
 * owners queue for 64 connections. The latency, the lock family and the semaphores run tuned.
 * Redisson's locks are owned by threads: one platform thread per owner ({@code lock()},
 * {@code unlock()}); the async rows give each owner an explicit thread id instead and run it as a
 * chain of {@code lockAsync(id)} and {@code unlockAsync(id)} calls, each call made when the
 * previous one's future completes, on Redisson's own (Netty) threads (see asyncPairs). Each
 * measurement runs on a fresh client, as in rlock-bench. A warm-up (see warmUp: 5 s first, and
 * each workload once unmeasured just before it is first measured) lets the JIT compile the paths
 * the measurement takes; rlock's Rust binary needs none.
 */
public final class Bench {
    /** The largest number of owners a measurement runs (the pairs run with 256 owners). */
    private static final int MAX_OWNERS = 256;

    /** The owner counts of the pairs runs. */
    private static final int[] OWNERS = {1, 16, 64, 256};

    /** The first explicit thread id of the async owners (owner i is FIRST_ID + i). */
    private static final long FIRST_ID = 1_000_000;

    /**
     * How much work each figure does: the full run ({@code make bench}) or the short one
     * ({@code BENCH_SHORT=1}). {@code preSecs}, {@code prePairs}, {@code preHandoffs}: each
     * workload runs this long (so many pairs, acquisitions) unmeasured before it is first
     * measured, and {@code warmUpRounds} single-thread seconds come before everything: see
     * warmUp. {@code clientSecs}, {@code clientHandoffs}: the same workload measured again (the
     * other configuration) only warms its fresh client this long (its connections, its
     * subscriptions): the JVM has just run it.
     */
    record Scale(double secs, int latencyPairs, int handoffs, int warmUpRounds, double preSecs, int prePairs,
            int preHandoffs, double clientSecs, int clientHandoffs) {
        static final Scale FULL = new Scale(3.0, 5000, 2000, 5, 1.0, 1000, 300, 0.3, 50);
        static final Scale SHORT = new Scale(0.5, 300, 100, 1, 0.2, 100, 20, 0.1, 10);
    }

    /**
     * A configuration of Redisson the reentrant lock is measured with, and the suffix of its rows'
     * surfaces: {@code redisson (defaults)}, {@code redisson (async, tuned)}...
     */
    record Setup(String name, Config config) {}

    /** Redisson's defaults, nothing changed but the server's address. */
    private final Setup defaults;
    /** The defaults with a connection pool of MAX_OWNERS: the latency, family and semaphores run on it. */
    private final Setup tuned;
    private final double secs;
    private final Scale scale;

    private Bench(Setup defaults, Setup tuned, double secs, Scale scale) {
        this.defaults = defaults;
        this.tuned = tuned;
        this.secs = secs;
        this.scale = scale;
    }

    public static void main(String[] args) {
        String url = System.getenv().getOrDefault("REDIS_URL", "redis://127.0.0.1:6379");
        // Redisson wants redis://host:port without a path.
        url = url.replaceAll("/+$", "");
        String shortMode = System.getenv().getOrDefault("BENCH_SHORT", "");
        Scale scale = shortMode.isEmpty() || shortMode.equals("0") ? Scale.FULL : Scale.SHORT;
        double secs = scale.secs();
        String s = System.getenv("BENCH_SECONDS");
        if (s != null && !s.isEmpty()) {
            secs = Double.parseDouble(s);
        }
        Config plain = new Config();
        plain.useSingleServer().setAddress(url);
        Config sized = new Config();
        sized.useSingleServer().setAddress(url).setConnectionPoolSize(MAX_OWNERS);
        int code = 0;
        try {
            new Bench(new Setup("defaults", plain), new Setup("tuned", sized), secs, scale).run(Arrays.asList(args));
        } catch (Throwable e) {
            code = 1;
            System.err.println("redisson bench FAILED: " + e);
            e.printStackTrace();
        }
        System.exit(code);
    }

    /** What a pairs or hand-off thread takes and gives back: a lock, a semaphore permit. */
    interface Contender {
        void take() throws Exception;

        void give() throws Exception;

        /** The lock (its thread's owner). */
        static Contender of(RLock lock) {
            return new Contender() {
                public void take() {
                    lock.lock();
                }

                public void give() {
                    lock.unlock();
                }
            };
        }

        /** One permit of {@code sem}. */
        static Contender of(RSemaphore sem) {
            return new Contender() {
                public void take() throws InterruptedException {
                    sem.acquire();
                }

                public void give() {
                    sem.release();
                }
            };
        }

        /** One permit of {@code sem} (no lease: Redisson's permits then never expire), released by id. */
        static Contender of(RPermitExpirableSemaphore sem) {
            return new Contender() {
                private String id;

                public void take() throws InterruptedException {
                    id = sem.acquire();
                }

                public void give() {
                    sem.release(id);
                }
            };
        }
    }

    /** A measurement on a client of its own. */
    interface Measure<T> {
        T on(RedissonClient redisson) throws Exception;
    }

    /** Runs {@code m} on a fresh client of the tuned configuration (see the other fresh). */
    private <T> T fresh(Measure<T> m) throws Exception {
        return fresh(tuned, m);
    }

    /**
     * Runs {@code m} on a fresh client of {@code setup}, shut down afterwards, as rlock-bench
     * connects a fresh {@code Client} per measurement: nothing one measurement leaves in the
     * client (Redisson's renewal timers, say) runs into the next.
     */
    private <T> T fresh(Setup setup, Measure<T> m) throws Exception {
        RedissonClient redisson = Redisson.create(setup.config());
        try {
            return m.on(redisson);
        } finally {
            // Redisson's shutdown() waits up to 10 s for its commands still in flight. Right after
            // a pairs run with more owners than pooled connections it waited the whole 10 s in
            // trial runs, for commands no owner waits for (every owner's pairs had returned; 200 ms
            // later none was in flight): half a second at most.
            redisson.shutdown(0, 500, TimeUnit.MILLISECONDS);
        }
    }

    private void run(List<String> sections) throws Exception {
        boolean all = sections.isEmpty();
        String version = Redisson.class.getPackage().getImplementationVersion();
        Config d = defaults.config();
        SingleServerConfig ds = d.useSingleServer();
        System.out.printf(Locale.ROOT,
                "{\"bench\":\"redisson\",\"version\":\"%s\",\"java\":\"%s\",\"connection_pool_defaults\":%d,"
                        + "\"connection_pool_tuned\":%d,\"min_idle\":%d,\"netty_threads\":%d}%n",
                version == null ? "?" : version, System.getProperty("java.version"), ds.getConnectionPoolSize(),
                tuned.config().useSingleServer().getConnectionPoolSize(), ds.getConnectionMinimumIdleSize(),
                d.getNettyThreads());
        warmUp();
        if (all || sections.contains("pairs")) {
            for (int owners : OWNERS) {
                for (boolean async : new boolean[] {false, true}) {
                    // The warm-up has just run the single-thread loop: its first run here only
                    // warms its client. The second configuration of a workload follows the first.
                    boolean warm = owners == 1 && !async;
                    for (Setup s : new Setup[] {defaults, tuned}) {
                        double pre = warm ? scale.clientSecs() : scale.preSecs();
                        double rate = fresh(s, r -> {
                            IntFunction<RLock> lockOf = i -> r.getLock("bench:pairs:" + i);
                            if (async) {
                                asyncPairs(owners, pre, lockOf);
                                return asyncPairs(owners, secs, lockOf);
                            }
                            pairs(owners, pre, lockOf);
                            return pairs(owners, secs, lockOf);
                        });
                        warm = true;
                        System.out.printf(Locale.ROOT,
                                "{\"bench\":\"pairs\",\"surface\":\"redisson (%s%s)\",\"owners\":%d,\"pairs_per_s\":%.0f}%n",
                                async ? "async, " : "", s.name(), owners, rate);
                    }
                }
            }
        }
        if (all || sections.contains("latency")) {
            double[] p = fresh(r -> {
                RLock lock = r.getLock("bench:latency");
                latency(lock, scale.prePairs());
                return latency(lock, scale.latencyPairs());
            });
            System.out.printf(Locale.ROOT, "{\"bench\":\"latency\",\"surface\":\"redisson (tuned)\",\"p50_us\":%.0f,\"p99_us\":%.0f}%n",
                    p[0], p[1]);
        }
        if (all || sections.contains("handoff")) {
            // Defaults first; tuned is the same workload again (16 waiters: the pool does not
            // bind), only its client warmed.
            printHandoff("redisson (defaults)",
                    handoffOn(defaults, scale.preHandoffs(), r -> () -> r.getLock("bench:handoff")));
            printHandoff("redisson (tuned)",
                    handoffOn(tuned, scale.clientHandoffs(), r -> () -> r.getLock("bench:handoff")));
        }
        // The lock family beside the reentrant lock.
        if (all || sections.contains("family")) {
            double rate = fresh(r -> {
                RReadWriteLock read = r.getReadWriteLock("bench:read");
                pairs(64, scale.preSecs(), i -> read.readLock());
                return pairs(64, secs, i -> read.readLock());
            });
            System.out.printf(Locale.ROOT,
                    "{\"bench\":\"pairs\",\"surface\":\"redisson (read lock, one name)\",\"owners\":64,\"pairs_per_s\":%.0f}%n",
                    rate);
            printHandoff("redisson (write lock)", handoffOn(r -> r.getReadWriteLock("bench:handoff:rw")::writeLock));
            printHandoff("redisson (fair lock)", handoffOn(r -> () -> r.getFairLock("bench:handoff:fair")));
        }
        // Semaphores: 64 threads on one semaphore of 64 permits; a permit handed off among 16.
        if (all || sections.contains("semaphore")) {
            semaphoreRows("redisson (semaphore)", (r, permits) -> {
                RSemaphore sem = r.getSemaphore(freshName("sem"));
                sem.trySetPermits(permits);
                return new Contended(() -> Contender.of(sem), () -> sem.addPermits(1));
            });
            semaphoreRows("redisson (permit semaphore)", (r, permits) -> {
                RPermitExpirableSemaphore sem = r.getPermitExpirableSemaphore(freshName("pes"));
                sem.trySetPermits(permits);
                return new Contended(() -> Contender.of(sem), () -> sem.addPermits(1));
            });
        }
    }

    /** Contenders for one thing, and how to free it if a contender failed holding it. */
    record Contended(Supplier<Contender> contenders, Runnable unstick) {}

    /** A semaphore of so many permits on a client. */
    interface SemaphoreOf {
        Contended make(RedissonClient redisson, int permits);
    }

    /** A name no earlier run used (semaphores keep their counts between runs). */
    private static String freshName(String what) {
        return "bench:" + what + ":" + System.nanoTime();
    }

    /** The pairs (64 threads, 64 permits) and hand-off (16 threads, 1 permit) rows of a semaphore. */
    private void semaphoreRows(String surface, SemaphoreOf of) throws Exception {
        double rate = fresh(r -> {
            Contended c = of.make(r, 64);
            pairsOf(64, scale.preSecs(), i -> c.contenders().get());
            return pairsOf(64, secs, i -> c.contenders().get());
        });
        System.out.printf(Locale.ROOT, "{\"bench\":\"pairs\",\"surface\":\"%s\",\"owners\":64,\"pairs_per_s\":%.0f}%n",
                surface, rate);
        printHandoff(surface, fresh(r -> {
            Contended c = of.make(r, 1);
            handoffOf(c.contenders(), 16, scale.preHandoffs(), c.unstick());
            return handoffOf(c.contenders(), 16, scale.handoffs(), c.unstick());
        }));
    }

    /** The 16-waiter hand-off on a fresh tuned client, after scale.preHandoffs() unmeasured acquisitions. */
    private double[] handoffOn(Function<RedissonClient, Supplier<RLock>> lockOf) throws Exception {
        return handoffOn(tuned, scale.preHandoffs(), lockOf);
    }

    /** The 16-waiter hand-off on a fresh client of {@code setup}, after {@code pre} unmeasured acquisitions. */
    private double[] handoffOn(Setup setup, int pre, Function<RedissonClient, Supplier<RLock>> lockOf)
            throws Exception {
        return fresh(setup, r -> {
            Supplier<RLock> lock = lockOf.apply(r);
            handoff(lock, 16, pre);
            return handoff(lock, 16, scale.handoffs());
        });
    }

    private static void printHandoff(String surface, double[] p) {
        System.out.printf(Locale.ROOT, "{\"bench\":\"handoff\",\"surface\":\"%s\",\"waiters\":16,\"p50_us\":%.0f,\"p99_us\":%.0f}%n",
                surface, p[0], p[1]);
    }

    /**
     * The JIT compiles Redisson's lock paths (and ours) before anything is measured. On two cores
     * one thread's pairs/s climbs for several seconds of a fresh JVM (from about 1.5k pairs/s in
     * its first second to about 6k), and after other work (more threads, other lock classes) it
     * falls back for a second or two while the JIT recompiles. So: 5 s of the single-thread loop
     * first (rates on stderr), and each measurement runs unmeasured for scale.preSecs()
     * (prePairs, preHandoffs) on its client just before it is measured. The short run (which
     * only shows that everything runs) does 1 s and a fraction of each.
     */
    private void warmUp() throws Exception {
        StringBuilder rates = new StringBuilder("== redisson warm-up (not measured), 1 thread, pairs/s:");
        for (int k = 0; k < scale.warmUpRounds(); k++) {
            double rate = fresh(tuned, r -> pairs(1, 1.0, i -> r.getLock("bench:warmup:one")));
            rates.append(String.format(Locale.ROOT, " %.0f", rate));
        }
        System.err.println(rates);
    }

    /** The sample at quantile {@code p} of sorted nanoseconds, in microseconds (as rlock-bench). */
    private static double percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0.0;
        }
        int i = (int) Math.round((sorted.length - 1) * p);
        return sorted[i] / 1e3;
    }

    private static void rethrow(AtomicReference<Throwable> failed) throws Exception {
        Throwable e = failed.get();
        if (e instanceof Exception ex) {
            throw ex;
        }
        if (e != null) {
            throw new RuntimeException(e);
        }
    }

    /**
     * {@code owners} threads, thread i looping lock() + unlock() of {@code lockOf(i)} for
     * {@code secs} seconds, all starting together. Pairs per second.
     */
    private static double pairs(int owners, double secs, IntFunction<RLock> lockOf) throws Exception {
        return pairsOf(owners, secs, i -> Contender.of(lockOf.apply(i)));
    }

    /** {@link #pairs} over any contenders: thread i takes and gives back {@code of(i)}. */
    private static double pairsOf(int owners, double secs, IntFunction<Contender> of) throws Exception {
        AtomicLong done = new AtomicLong();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        CountDownLatch go = new CountDownLatch(1);
        long[] deadline = new long[1]; // written before go opens, read after
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < owners; i++) {
            Contender c = of.apply(i);
            Thread t = new Thread(() -> {
                try {
                    go.await();
                    while (System.nanoTime() < deadline[0]) {
                        c.take();
                        c.give();
                        done.incrementAndGet();
                    }
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
            }, "pairs-" + i);
            t.start();
            threads.add(t);
        }
        long start = System.nanoTime();
        deadline[0] = start + (long) (secs * 1e9);
        go.countDown();
        for (Thread t : threads) {
            t.join();
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        rethrow(failed);
        return done.get() / elapsed;
    }

    /**
     * {@code owners} owners, owner i with the explicit thread id FIRST_ID + i looping
     * {@code lockAsync(id)} + {@code unlockAsync(id)} of {@code lockOf(i)} for {@code secs} seconds
     * as a chain of calls (see AsyncOwner), all started together from this thread. No thread per
     * owner: each next call is made by the callback of the previous one's future, on the thread
     * that completes it (Redisson's Netty event loops). Pairs per second, as {@link #pairs}.
     */
    private static double asyncPairs(int owners, double secs, IntFunction<RLock> lockOf) throws Exception {
        AtomicLong done = new AtomicLong();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        CountDownLatch finished = new CountDownLatch(owners);
        List<AsyncOwner> chains = new ArrayList<>();
        for (int i = 0; i < owners; i++) {
            chains.add(new AsyncOwner(lockOf.apply(i), FIRST_ID + i, done, failed, finished));
        }
        long start = System.nanoTime();
        long deadline = start + (long) (secs * 1e9);
        for (AsyncOwner c : chains) {
            c.next(deadline);
        }
        // A pair takes well under a second; a chain that has not finished long after the
        // deadline has lost a future.
        if (!finished.await((long) (secs * 1e3) + 60_000, TimeUnit.MILLISECONDS)) {
            failed.compareAndSet(null,
                    new IllegalStateException(finished.getCount() + " async owners never finished"));
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        rethrow(failed);
        return done.get() / elapsed;
    }

    /** One async owner of {@link #asyncPairs}: its lock and its explicit thread id. */
    private record AsyncOwner(RLock lock, long id, AtomicLong done, AtomicReference<Throwable> failed,
            CountDownLatch finished) {
        /** Starts the next pair, or finishes the chain at the deadline or on a failure. */
        void next(long deadline) {
            if (System.nanoTime() >= deadline || failed.get() != null) {
                finished.countDown();
                return;
            }
            lock.lockAsync(id).thenCompose(v -> lock.unlockAsync(id)).whenComplete((v, e) -> {
                if (e != null) {
                    failed.compareAndSet(null, e);
                    finished.countDown();
                    return;
                }
                done.incrementAndGet();
                next(deadline);
            });
        }
    }

    /** One thread, {@code n} sequential lock() + unlock() pairs: p50 and p99 in microseconds. */
    private static double[] latency(RLock lock, int n) {
        long[] samples = new long[n];
        for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            lock.lock();
            lock.unlock();
            samples[i] = System.nanoTime() - t;
        }
        Arrays.sort(samples);
        return new double[] {percentile(samples, 0.5), percentile(samples, 0.99)};
    }

    /** Who released last, and when (System.nanoTime()). */
    private record Stamp(long at, long by) {}

    /** Parks at least {@code nanos} (parkNanos may return early). */
    private static void pause(long nanos) {
        long end = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    /**
     * {@code waiters} threads on one lock ({@code lockOf} gives each thread its handle), until
     * {@code rounds} acquisitions in all. Each hand-off is measured from the moment the previous
     * holder called unlock to another thread's lock() returning: p50 and p99 in microseconds.
     */
    private static double[] handoff(Supplier<RLock> lockOf, int waiters, int rounds) throws Exception {
        return handoffOf(() -> Contender.of(lockOf.get()), waiters, rounds, () -> lockOf.get().forceUnlock());
    }

    /**
     * {@link #handoff} over any contenders ({@code of} gives each thread its own); {@code unstick}
     * frees the contended thing if a thread failed holding it.
     */
    private static double[] handoffOf(Supplier<Contender> of, int waiters, int rounds, Runnable unstick) throws Exception {
        AtomicReference<Stamp> releasedAt = new AtomicReference<>();
        ConcurrentLinkedQueue<Long> samples = new ConcurrentLinkedQueue<>();
        AtomicLong taken = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            Contender lock = of.get();
            Thread t = new Thread(() -> {
                long me = Thread.currentThread().getId();
                try {
                    while (!stop.get()) {
                        lock.take();
                        long now = System.nanoTime();
                        if (stop.get()) {
                            // The rounds are done: pass it on so every waiter gets out.
                            lock.give();
                            break;
                        }
                        // Only hand-offs to another thread count (a releaser re-taking its lock is not one).
                        Stamp r = releasedAt.getAndSet(null);
                        if (r != null && r.by() != me) {
                            samples.add(now - r.at());
                        }
                        if (taken.incrementAndGet() >= rounds) {
                            stop.set(true);
                        }
                        // Hold briefly so the others are waiting when we release.
                        pause(200_000);
                        // Stamped before the call: a woken waiter often holds the lock before the
                        // unlock's own reply is back, so "unlock returned" would read as zero.
                        releasedAt.set(new Stamp(System.nanoTime(), me));
                        lock.give();
                        // Work outside the lock, so a waiter (not the releaser barging back) takes it.
                        Thread.sleep(2);
                    }
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                    stop.set(true);
                }
            }, "handoff-" + i);
            t.start();
            threads.add(t);
        }
        while (!stop.get()) {
            Thread.sleep(10);
        }
        for (Thread t : threads) {
            // Each thread leaves at its next turn. Only if one failed holding the lock can the
            // others be stuck: free them.
            for (t.join(10_000); t.isAlive(); t.join(1_000)) {
                unstick.run();
            }
        }
        rethrow(failed);
        long[] s = samples.stream().mapToLong(Long::longValue).sorted().toArray();
        return new double[] {percentile(s, 0.5), percentile(s, 0.99)};
    }
}
