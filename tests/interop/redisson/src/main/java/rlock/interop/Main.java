package rlock.interop;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RBucket;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RFencedLock;
import org.redisson.api.RList;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RQueue;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * The Redisson side of the rlock interop test (driver: tests/interop/run.sh).
 *
 * <p>Usage: {@code Main <scenario>}, Redis URL from {@code REDIS_URL}: {@code redis://host:port}
 * for one server, {@code redis+cluster://host:port,host:port/} for a Redis Cluster (the URL rlock
 * takes; here it becomes {@code useClusterServers()} with those seed nodes). The driver starts this
 * program and the rlock side ({@code core/examples/interop.rs}) with the same scenario at the same
 * time; they talk through two Redis lists ({@code interop:<scenario>:to-java} / {@code :to-rust},
 * RPUSH and BLPOP with a generous timeout), so every step waits for an event, never for a sleep. A
 * side that fails pushes {@code abort <reason>} so the other stops at once.
 *
 * <p>The {@code redlock} scenario runs over three independent servers: the driver passes
 * {@code REDIS_URLS=redis://a,redis://b,redis://c}; the first is the server of the message lists
 * and the scenario's data, and every server holds one member of the RedLock.
 *
 * <p>Prints {@code java: <scenario> ok} and exits 0, or {@code java: <scenario> FAILED: ...} and
 * exits 1.
 */
public final class Main {
    /** Bound on every hand-shake with the rlock side. */
    private static final long HANDSHAKE_S = 60;
    /** A waiter must be woken by the unlock message this fast (the requirement). */
    private static final long WAKE_BOUND_US = 100_000;
    /** A waiter woken by a force-unlock: far below the 30 s lease, so only a message explains it. */
    private static final long FORCE_WAKE_BOUND_US = 1_000_000;
    /** Measured wake-up rounds after one warm-up round (the JVM compiles its paths in the first). */
    private static final int WAKE_ROUNDS = 5;

    private final RedissonClient redisson;
    /** Whether Redis is a cluster (sharded pub/sub subscribers are counted too). */
    private final boolean cluster;
    private final RBlockingQueue<String> inbox;
    private final RQueue<String> outbox;
    /** Every server's URL: one for single and cluster, three for the redlock scenario. */
    private final List<String> urls;

    /** A failed assertion of a scenario. */
    static final class Failure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Failure(String message) {
            super(message);
        }
    }

    private Main(String scenario, RedissonClient redisson, boolean cluster, List<String> urls) {
        this.redisson = redisson;
        this.cluster = cluster;
        this.urls = urls;
        this.inbox = redisson.getBlockingQueue("interop:" + scenario + ":to-java", StringCodec.INSTANCE);
        this.outbox = redisson.getQueue("interop:" + scenario + ":to-rust", StringCodec.INSTANCE);
    }

    public static void main(String[] args) {
        String scenario = args.length > 0 ? args[0] : "";
        String url = System.getenv().getOrDefault("REDIS_URL", "redis://127.0.0.1:6379");
        // Three independent servers (the redlock scenario): the first one is the main client's.
        String many = System.getenv().getOrDefault("REDIS_URLS", "");
        List<String> urls = new ArrayList<>();
        for (String u : (many.isEmpty() ? url : many).split(",")) {
            // Redisson wants redis://host:port without a path.
            urls.add(u.replaceAll("/+$", ""));
        }
        url = urls.get(0);
        Config config = new Config();
        // The watchdog scenario shortens the lease on both sides so holds outlive it many times;
        // every other scenario keeps the 30 s default, so a fast wake-up must be a message.
        config.setLockWatchdogTimeout("watchdog".equals(scenario) ? 1000 : 30000);
        boolean cluster = url.startsWith("redis+cluster://");
        if (cluster) {
            // Every other setting at its default: sharded pub/sub AUTO, as rlock's sharded_pubsub None.
            var servers = config.useClusterServers();
            for (String node : url.substring("redis+cluster://".length()).split(",")) {
                servers.addNodeAddress("redis://" + node);
            }
        } else {
            config.useSingleServer().setAddress(url);
        }
        RedissonClient redisson = Redisson.create(config);
        if (cluster) {
            boolean sharded = ((Redisson) redisson).getCommandExecutor().getConnectionManager()
                    .getSubscribeService().isShardingSupported();
            System.out.println("java: cluster, sharded pub/sub " + (sharded ? "on" : "off"));
        }
        Main main = new Main(scenario, redisson, cluster, urls);
        int code = 0;
        try {
            switch (scenario) {
                case "mutex" -> main.mutex();
                case "wake-to-java" -> main.wakeToJava();
                case "wake-to-rust" -> main.wakeToRust();
                case "holds" -> main.holds();
                case "force" -> main.force();
                case "watchdog" -> main.watchdog();
                case "fenced" -> main.fenced();
                case "rwlock" -> main.rwlock();
                case "fair" -> main.fair();
                case "semaphore" -> main.semaphore();
                case "permit-semaphore" -> main.permitSemaphore();
                case "multi-lock" -> main.multiLock();
                case "latch" -> main.latch();
                case "redlock" -> main.redLock();
                default -> throw new Failure("unknown scenario '" + scenario + "'");
            }
            System.out.println("java: " + scenario + " ok");
        } catch (Throwable e) {
            code = 1;
            System.out.println("java: " + scenario + " FAILED: " + e);
            if (!(e instanceof Failure)) {
                // An unexpected exception: where it came from.
                e.printStackTrace(System.out);
            }
            try {
                main.send("abort java: " + e);
            } catch (RuntimeException ignored) {
                // Redis is gone: the rlock side will time out on its own.
            }
        } finally {
            redisson.shutdown();
        }
        System.exit(code);
    }

    private static void check(boolean cond, String message) {
        if (!cond) {
            throw new Failure(message);
        }
    }

    /** Wall-clock microseconds; both processes run on one machine, so their clocks agree. */
    private static long nowMicros() {
        return ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
    }

    private void send(String message) {
        outbox.add(message);
    }

    /** Waits for the message tagged {@code tag} from the rlock side and returns its value part. */
    private String recv(String tag) throws InterruptedException {
        String message = inbox.poll(HANDSHAKE_S, TimeUnit.SECONDS);
        check(message != null, "no '" + tag + "' from the rlock side within " + HANDSHAKE_S + " s");
        check(!message.startsWith("abort"), "the rlock side gave up: " + message);
        String[] parts = message.split(" ", 2);
        check(parts[0].equals(tag), "expected '" + tag + "' from the rlock side, got '" + message + "'");
        return parts.length > 1 ? parts[1] : "";
    }

    /** The channel Redisson and rlock wait on for the lock {@code name}. */
    private static String lockChannel(String name) {
        return "redisson_lock__channel:{" + name + "}";
    }

    /**
     * Waits until some client (the rlock side here) is subscribed to the lock {@code name}'s
     * channel, i.e. an rlock waiter is about to sleep on it.
     */
    private void awaitSubscriber(String name) throws InterruptedException {
        awaitChannelSubscriber(lockChannel(name), name);
    }

    /**
     * Waits until some client is subscribed to {@code channel} (the waiters' channel of lock
     * {@code what}). No event tells us that, so poll with a bound. On a cluster the subscription
     * may be sharded (SSUBSCRIBE, counted by PUBSUB SHARDNUMSUB) or classic (PUBSUB NUMSUB), both
     * asked of the node that owns the channel's slot.
     */
    private void awaitChannelSubscriber(String channel, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        var topic = redisson.getTopic(channel, StringCodec.INSTANCE);
        var sharded = cluster ? redisson.getShardedTopic(channel, StringCodec.INSTANCE) : null;
        while (topic.countSubscribers() + (sharded == null ? 0 : sharded.countSubscribers()) < 1) {
            check(System.nanoTime() < deadline, "no rlock waiter subscribed to " + what + " within 20 s");
            Thread.sleep(2);
        }
    }

    /** The Redisson owner (hash field) of the calling thread: {@code <client id>:<thread id>}. */
    private String threadOwner() {
        return redisson.getId() + ":" + Thread.currentThread().getId();
    }

    /** The lock hash (owner -> hold count) as plain strings. */
    private Map<String, String> fields(String name) {
        return redisson.<String, String>getMap(name, StringCodec.INSTANCE).readAllMap();
    }

    // ---------------------------------------------------------------------------------------

    /** 4 Redisson threads, 200 critical sections each; see the rlock side for the checks. */
    private void mutex() throws Exception {
        String[] names = {"interop:mutex:a", "interop:mutex:b"};
        send("ready");
        recv("ready");
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            final int thread = t;
            futures.add(pool.submit(() -> {
                for (int i = 0; i < 200; i++) {
                    criticalSection(names[(i + thread) % 2]);
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
    }

    private void criticalSection(String name) {
        RLock lock = redisson.getLock(name);
        lock.lock();
        try {
            RBucket<String> marker = redisson.getBucket(name + ":marker", StringCodec.INSTANCE);
            boolean set = marker.setIfAbsent("java");
            if (!set) {
                redisson.getAtomicLong("interop:mutex:violations").incrementAndGet();
            }
            RBucket<String> counter = redisson.getBucket(name + ":counter", StringCodec.INSTANCE);
            String n = counter.get();
            counter.set(Long.toString((n == null ? 0 : Long.parseLong(n)) + 1));
            String prev = redisson.<String>getBucket(name + ":last", StringCodec.INSTANCE).getAndSet("java");
            if (prev != null && !prev.equals("java")) {
                redisson.getAtomicLong("interop:mutex:handoffs").incrementAndGet();
            }
            if (set) {
                marker.delete();
            }
        } finally {
            lock.unlock();
        }
    }

    /** rlock holds (30 s lease) and releases; this Redisson waiter must hold within 100 ms. */
    private void wakeToJava() throws InterruptedException {
        List<Long> latencies = waitForRust("a Redisson waiter", round -> redisson.getLock("interop:wake-to-java:" + round));
        System.out.println("java: wake-to-java: Redisson waiter held the lock " + latencies
                + " us after rlock's release began");
    }

    /** Redisson holds (30 s lease) and releases once the rlock waiter is subscribed. */
    private void wakeToRust() throws InterruptedException {
        holdAndWakeRust(round -> "interop:wake-to-rust:" + round, name -> redisson.getLock(name), Main::lockChannel);
    }

    /**
     * The waiter's side of a wake-up from an rlock holder (30 s lease), for WAKE_ROUNDS + 1 rounds
     * on {@code lockOf(round)}: it must hold the lock within 100 ms of the start of rlock's release
     * ({@code what} names the waiter in messages). The measured latencies (us; the first round
     * warms up).
     */
    private List<Long> waitForRust(String what, java.util.function.IntFunction<RLock> lockOf) throws InterruptedException {
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
    private void holdAndWakeRust(java.util.function.IntFunction<String> nameOf,
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
    private void holds() throws InterruptedException {
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
    private void force() throws Exception {
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
    private void watchdog() throws Exception {
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

    // ---------------------------------------------------------------------------------------
    // Fenced lock

    /** Acquires per side (Redisson and rlock alike), split over two threads / owners. */
    private static final int FENCED_PER_SIDE = 500;

    /**
     * 2 Redisson threads take the fenced lock 250 times each (lockAndGetToken and
     * tryLockAndGetToken in turn) while 2 rlock owners do the same. Each holder appends "java
     * <token>" to a list while holding, so the list is in acquisition order; the tokens in it
     * must strictly increase, whichever side took them.
     */
    private void fenced() throws Exception {
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

    // ---------------------------------------------------------------------------------------
    // Semaphore

    /** Permits of the shared semaphore, and acquires per side (split over 4 threads / owners). */
    private static final int SEM_PERMITS = 5;
    private static final int SEM_PER_SIDE = 1000;

    /**
     * 4 Redisson threads take a permit of the semaphore rlock set up (5 permits) 250 times each
     * while 4 rlock owners do the same. Inside, each holder increments a shared holders counter
     * (INCR) and counts a violation when it exceeds the permits, then decrements it. See the rlock
     * side for the checks.
     */
    private void semaphore() throws Exception {
        String name = "interop:sem";
        RSemaphore sem = redisson.getSemaphore(name);
        recv("ready"); // rlock has set the permits
        check(sem.availablePermits() == SEM_PERMITS, "the semaphore rlock set has " + sem.availablePermits() + " permits");
        send("ready");
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<Long>> futures = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            futures.add(pool.submit(() -> {
                long most = 0;
                for (int i = 0; i < SEM_PER_SIDE / 4; i++) {
                    check(sem.tryAcquire(1, 30, TimeUnit.SECONDS), "no permit within 30 s");
                    try {
                        long holders = redisson.getAtomicLong(name + ":counter").incrementAndGet();
                        most = Math.max(most, holders);
                        if (holders > SEM_PERMITS) {
                            redisson.getAtomicLong(name + ":violations").incrementAndGet();
                        }
                        redisson.getAtomicLong(name + ":counter").decrementAndGet();
                    } finally {
                        sem.release();
                    }
                }
                return most;
            }));
        }
        long most = 0;
        try {
            for (Future<Long> f : futures) {
                most = Math.max(most, f.get(120, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
        send("done " + most);
        recv("done");
        check(redisson.getKeys().countExists(name + ":violations") == 0, "more holders than permits");
        check(sem.availablePermits() == SEM_PERMITS, "the semaphore ends with " + sem.availablePermits() + " permits");
        send("checked");
    }

    // ---------------------------------------------------------------------------------------
    // Permit-expirable semaphore

    /** A waiter must hold a permit whose 300 ms lease ran out within this long after it was taken. */
    private static final long PES_RECLAIM_BOUND_US = 1_000_000;
    /** Redisson must get back a permit of a closed rlock client (1 s watchdog) within this long. */
    private static final long PES_CLOSED_BOUND_US = 1_500_000;

    /** The channel semaphore waiters (Java's and rlock's) sleep on. */
    private static String semaphoreChannel(String name) {
        return "redisson_sc:{" + name + "}";
    }

    /** Fails unless the semaphore has {@code available} free and {@code acquired} held permits. */
    private static void checkPermits(RPermitExpirableSemaphore sem, int available, int acquired, String when) {
        int a = sem.availablePermits();
        int h = sem.acquiredPermits();
        check(a == available && h == acquired, when + ": " + sem.getName() + " has " + a + " free and " + h
                + " held permits, expected " + available + " and " + acquired);
    }

    /** Sleeps until the wall clock reads {@code micros} (waiting for a lease to run out: no event tells). */
    private static void sleepUntil(long micros) throws InterruptedException {
        long left = micros - nowMicros();
        if (left > 0) {
            TimeUnit.MICROSECONDS.sleep(left);
        }
    }

    /**
     * Ids cross over, wake-ups both ways, expiry reclaimed by the other side's waiter, and an
     * rlock watchdog permit that outlives its 1 s leases and comes back when its client closes.
     * See the rlock side for the whole story.
     */
    private void permitSemaphore() throws Exception {
        String name = "interop:pes";
        // Part 1: ids released by the other side.
        RPermitExpirableSemaphore sem = redisson.getPermitExpirableSemaphore(name);
        recv("ready");
        checkPermits(sem, 2, 0, "the semaphore rlock set up");
        String mine = sem.acquire();
        check(mine != null && mine.matches("[0-9a-f]{32}"), "Redisson's permit id '" + mine + "'");
        checkPermits(sem, 1, 1, "after Redisson's acquire");
        send("acquired " + mine);
        String rust = recv("acquired");
        checkPermits(sem, 1, 1, "after rlock released Redisson's permit and took one");
        long lease = sem.getLeaseTime(rust);
        check(lease > 20_000 && lease <= 30_000, "rlock's permit should have its 30 s lease, it has " + lease + " ms");
        check(sem.tryRelease(rust), "Redisson could not release rlock's permit " + rust);
        checkPermits(sem, 2, 0, "after Redisson released rlock's permit");
        check(!sem.tryRelease(mine), "Redisson released its permit " + mine + " again after rlock had released it");
        checkPermits(sem, 2, 0, "after a release of a released permit");
        send("released");

        // Part 2: rlock's release wakes this side's waiter (a fresh semaphore per round).
        List<Long> latencies = new ArrayList<>();
        for (int round = 0; round <= WAKE_ROUNDS; round++) {
            RPermitExpirableSemaphore s = redisson.getPermitExpirableSemaphore(name + ":to-java:" + round);
            recv("held");
            checkPermits(s, 0, 1, "while rlock holds the only permit");
            String id = s.tryAcquire(30, TimeUnit.SECONDS);
            long t1 = nowMicros();
            check(id != null, "the Redisson waiter got no permit within 30 s");
            long t0 = Long.parseLong(recv("released"));
            check(s.tryRelease(id), "the Redisson waiter could not release its permit");
            send("unlocked");
            if (round > 0) {
                latencies.add(t1 - t0);
            }
        }
        long worst = latencies.stream().mapToLong(Long::longValue).max().orElse(Long.MAX_VALUE);
        check(worst < WAKE_BOUND_US, "a Redisson permit waiter took " + worst + " us to wake, more than 100 ms");
        System.out.println("java: permit-semaphore: Redisson waiter held a permit " + latencies
                + " us after rlock's release began");
        // ... and this side's release wakes rlock's waiter (rlock measures).
        for (int round = 0; round <= WAKE_ROUNDS; round++) {
            String n = name + ":to-rust:" + round;
            RPermitExpirableSemaphore s = redisson.getPermitExpirableSemaphore(n);
            recv("ready");
            String id = s.acquire(); // no lease: never expires, only the release frees it
            send("held " + id);
            awaitChannelSubscriber(semaphoreChannel(n), n);
            long t0 = nowMicros();
            check(s.tryRelease(id), "Redisson could not release its permit");
            send("released " + t0);
            recv("unlocked");
            checkPermits(s, 1, 0, "after the rlock waiter released");
        }

        // Part 3a: rlock's 300 ms permit expires; this side's waiter takes it.
        RPermitExpirableSemaphore s = redisson.getPermitExpirableSemaphore(name + ":expiry");
        String[] held = recv("held").split(" ");
        String got = s.tryAcquire(10, TimeUnit.SECONDS);
        long reclaim = nowMicros() - Long.parseLong(held[1]);
        check(got != null, "Redisson's waiter did not get rlock's expired permit within 10 s");
        check(reclaim >= 299_000, "Redisson took rlock's permit " + reclaim
                + " us after it was taken, before its 300 ms lease ran out");
        check(reclaim < PES_RECLAIM_BOUND_US, "Redisson took rlock's 300 ms permit only " + reclaim
                + " us after it was taken");
        check(!s.tryRelease(held[0]), "Redisson released rlock's expired permit " + held[0]);
        checkPermits(s, 0, 1, "after Redisson's waiter took rlock's expired permit");
        System.out.println("java: permit-semaphore: Redisson's waiter took rlock's expired 300 ms permit "
                + reclaim + " us after it was taken");
        send("reclaimed " + got + " " + reclaim);
        recv("released");
        checkPermits(s, 1, 0, "after rlock released Redisson's permit");
        // 3b: this side's 300 ms permit expires; rlock's waiter takes it.
        long before = nowMicros();
        String shortId = s.acquire(300, TimeUnit.MILLISECONDS);
        send("held " + shortId + " " + before);
        String[] reclaimed = recv("reclaimed").split(" ");
        check(!s.tryRelease(shortId), "Redisson released its expired permit " + shortId);
        checkPermits(s, 0, 1, "after rlock's waiter took Redisson's expired permit");
        check(s.tryRelease(reclaimed[0]), "Redisson could not release rlock's permit " + reclaimed[0]);
        checkPermits(s, 1, 0, "after Redisson released rlock's permit");
        send("released");
        // 3c: an expired permit nobody reclaimed yet: a failing release gives it back once.
        held = recv("held").split(" ");
        sleepUntil(Long.parseLong(held[1]) + 400_000);
        check(!s.tryRelease(held[0]), "Redisson released rlock's expired permit " + held[0]);
        checkPermits(s, 1, 0, "after Redisson's release of rlock's expired permit");
        send("checked");
        recv("seen"); // rlock has read the counts too
        before = nowMicros();
        shortId = s.acquire(300, TimeUnit.MILLISECONDS);
        send("held " + shortId + " " + before);
        recv("checked");

        // Part 4: rlock's watchdog permit (1 s leases) stays held while this side tries for 3 s.
        RPermitExpirableSemaphore w = redisson.getPermitExpirableSemaphore(name + ":watchdog");
        String rustId = recv("held");
        ExecutorService pool = Executors.newSingleThreadExecutor();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        Future<List<Long>> sampler = pool.submit(() -> {
            List<Long> samples = new ArrayList<>();
            while (System.nanoTime() < end) {
                try {
                    samples.add(w.getLeaseTime(rustId));
                } catch (RuntimeException notHeld) {
                    samples.add(0L); // Redisson throws for a permit that is gone: not held
                }
                Thread.sleep(100);
            }
            return samples;
        });
        long start = System.nanoTime();
        String stolen = w.tryAcquire(3000, TimeUnit.MILLISECONDS);
        long waited = System.nanoTime() - start;
        List<Long> samples;
        try {
            samples = sampler.get(30, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        if (stolen != null) {
            w.tryRelease(stolen);
        }
        check(stolen == null, "Redisson took the permit rlock's watchdog should keep");
        check(waited >= TimeUnit.MILLISECONDS.toNanos(2950), "tryAcquire gave up early");
        check(samples.size() >= 15, "only " + samples.size() + " lease samples");
        // Redisson's getLeaseTime subtracts a clock reading it takes before its command travels:
        // a renewal by rlock's watchdog that runs in between reads as up to one round trip more
        // than the 1 s lease (CI saw 1001 ms). 200 ms of slack still tells the 1 s lease from
        // a longer one (the default lease is 30 s).
        List<Long> bad = samples.stream().filter(t -> t <= 0 || t > 1_200).toList();
        check(bad.isEmpty(), "rlock's permit had leases outside (0, 1000 + 200 slack] ms: " + bad);
        checkPermits(w, 0, 1, "while rlock's watchdog keeps the only permit");
        send("checked");
        // ... and comes back once the rlock client is closed without releasing it.
        long closed = Long.parseLong(recv("closed"));
        String back = w.tryAcquire(10, TimeUnit.SECONDS);
        long backAfter = nowMicros() - closed;
        check(back != null, "Redisson did not get the closed client's permit back within 10 s");
        check(backAfter < PES_CLOSED_BOUND_US, "Redisson got the closed client's permit back only "
                + backAfter + " us after the close");
        check(!w.tryRelease(rustId), "Redisson released the closed client's expired permit");
        checkPermits(w, 0, 1, "after Redisson got the permit back");
        check(w.tryRelease(back), "Redisson could not release its permit");
        checkPermits(w, 1, 0, "after Redisson released its permit");
        System.out.println("java: permit-semaphore: rlock's watchdog permit held for 3 s (" + samples.size()
                + " lease samples in (0, 1200] ms); back " + backAfter + " us after its client closed");
        send("done " + backAfter);
    }

    // ---------------------------------------------------------------------------------------
    // Multi-lock

    /** Sections per Redisson thread in part 1 of {@link #multiLock} and of its multi-lock in part 2. */
    private static final int MULTI_JAVA_SECTIONS = 150;
    private static final int MULTI_PAIR_SECTIONS = 60;

    /**
     * Part 1: 3 Redisson threads lock the names rlock's multi-locks take, one name at a time.
     * Part 2: a Redisson multi-lock over y, x against rlock multi-locks over x, y and y, x. See
     * the rlock side for the checks.
     */
    private void multiLock() throws Exception {
        String[] names = {"interop:multi:a", "interop:multi:b", "interop:multi:c"};
        send("ready");
        recv("ready");
        ExecutorService pool = Executors.newFixedThreadPool(3);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < 3; t++) {
            final int thread = t;
            futures.add(pool.submit(() -> {
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
    private void heldSection(String scope, String side, String... names) {
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

    // ---------------------------------------------------------------------------------------
    // Count-down latch

    /** Waiters per side in each wake-up round of {@link #latch}. */
    private static final int LATCH_WAITERS = 3;

    /** The channel both sides' waiters on the count-down latch {@code name} sleep on. */
    private static String latchChannel(String name) {
        return "redisson_countdownlatch__channel__{" + name + "}";
    }

    /** The count-down latch across sides; see the rlock side for the parts. */
    private void latch() throws Exception {
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

    // ---------------------------------------------------------------------------------------
    // Read-write lock

    /** Write and read sections per worker in the mixed part of {@link #rwlock}. */
    private static final int RW_WRITES = 60;
    private static final int RW_READS = 60;

    /**
     * Readers of both sides overlap; writers exclude everyone across sides; hand-offs between
     * writers wake the other side within 100 ms. See the rlock side for the whole story.
     */
    private void rwlock() throws Exception {
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
        ExecutorService pool = Executors.newFixedThreadPool(2);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            final int thread = t;
            futures.add(pool.submit(() -> {
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
        recv("checked");

        // Part 3: a Redisson writer holds; an rlock writer waits; Redisson unlocks once it is
        // subscribed to redisson_rwlock:{name}; the rlock side measures.
        holdAndWakeRust(round -> "interop:rwlock:to-rust:" + round, n -> redisson.getReadWriteLock(n).writeLock(),
                n -> "redisson_rwlock:{" + n + "}");

        // Part 4: the other way: an rlock writer holds, this Redisson writer waits.
        List<Long> latencies = waitForRust("a Redisson write waiter",
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

    // ---------------------------------------------------------------------------------------
    // Fair lock

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
    private void fair() throws Exception {
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

    // ---------------------------------------------------------------------------------------
    // RedLock over three independent servers

    /** Critical sections per Redisson thread (and per rlock owner) in part 2 of {@link #redLock}. */
    private static final int REDLOCK_SECTIONS = 100;

    /**
     * Redisson's {@code RedissonRedLock} over three {@code RLock}s of three clients (one per
     * server, {@code REDIS_URLS}) against rlock's RedLock on the same servers.
     * Part 1: each side's hold is the other's layout on every server (the rlock side checks
     * Redisson's fields, this side rlock's), and the other side cannot take it.
     * Part 2: 2 Redisson threads and 2 rlock owners run critical sections on the same name; the
     * rlock side checks the counter, the overlaps and the hand-offs.
     */
    private void redLock() throws Exception {
        check(urls.size() == 3, "the redlock scenario needs REDIS_URLS with three servers, got " + urls);
        String name = "interop:redlock";
        List<RedissonClient> clients = new ArrayList<>(List.of(redisson));
        try {
            for (String u : urls.subList(1, urls.size())) {
                Config config = new Config();
                config.useSingleServer().setAddress(u);
                clients.add(Redisson.create(config));
            }
            java.util.function.Supplier<RLock> redLockOf = () -> new org.redisson.RedissonRedLock(
                    clients.stream().map(c -> c.getLock(name)).toArray(RLock[]::new));

            // Part 1: Redisson holds, rlock looks; rlock holds, Redisson looks.
            send("ready");
            recv("ready");
            RLock red = redLockOf.get();
            check(red.tryLock(30, TimeUnit.SECONDS), "Redisson's RedLock was not taken within 30 s");
            List<String> owners = new ArrayList<>();
            for (RedissonClient c : clients) {
                owners.add(c.getId() + ":" + Thread.currentThread().getId());
            }
            send("held " + String.join(",", owners));
            recv("checked");
            red.unlock();
            for (RedissonClient c : clients) {
                check(c.getKeys().countExists(name) == 0, "Redisson's unlock left " + name + " on a server");
            }
            send("released");
            String[] rlockFields = recv("held").split(",");
            check(rlockFields.length == 3, "expected 3 rlock fields, got " + rlockFields.length);
            for (int i = 0; i < 3; i++) {
                Map<String, String> hash = clients.get(i).<String, String>getMap(name, StringCodec.INSTANCE).readAllMap();
                check(hash.equals(Map.of(rlockFields[i], "1")),
                        "server " + (i + 1) + " holds " + hash + ", expected rlock's field " + rlockFields[i] + " = 1");
                check(!clients.get(i).getLock(name).isHeldByCurrentThread(), "a Redisson member thinks it holds rlock's lock");
            }
            RLock rival = redLockOf.get();
            check(!rival.tryLock(), "Redisson's RedLock was taken while rlock held a majority");
            for (int i = 0; i < 3; i++) {
                check(clients.get(i).getLock(name).isLocked(), "the failed tryLock released rlock's member on server " + (i + 1));
            }
            send("checked");
            recv("released");

            // Part 2: contention with an exact counter.
            send("ready");
            recv("ready");
            ExecutorService pool = Executors.newFixedThreadPool(2);
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                futures.add(pool.submit(() -> {
                    RLock lock = redLockOf.get();
                    for (int i = 0; i < REDLOCK_SECTIONS; i++) {
                        check(lock.tryLock(30, TimeUnit.SECONDS), "Redisson's RedLock was not taken within 30 s");
                        try {
                            heldSection(name, "java", name);
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
            recv("checked");
        } finally {
            for (RedissonClient c : clients.subList(1, clients.size())) {
                c.shutdown();
            }
        }
    }
}
