package rlock.interop;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RBlockingQueue;
import org.redisson.api.RBucket;
import org.redisson.api.RLock;
import org.redisson.api.RQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

import rlock.interop.Main.Failure;

/**
 * What the scenarios share: the Redisson client, the message lists to and from the rlock side,
 * the bounds, and the waits for the rlock side (its messages, its waiters' subscriptions).
 * {@link Main} makes one per run; each scenario class ({@code LockScenarios}, {@code
 * FencedScenario}, ...) is made from it and extends it for these helpers.
 */
class Scenario {
    /** Bound on every hand-shake with the rlock side. */
    static final long HANDSHAKE_S = 60;
    /** A waiter must be woken by the unlock message this fast (the requirement). */
    static final long WAKE_BOUND_US = 100_000;
    /** A waiter woken by a force-unlock: far below the 30 s lease, so only a message explains it. */
    static final long FORCE_WAKE_BOUND_US = 1_000_000;
    /** Measured wake-up rounds after one warm-up round (the JVM compiles its paths in the first). */
    static final int WAKE_ROUNDS = 5;

    final RedissonClient redisson;
    /** Whether Redis is a cluster (sharded pub/sub subscribers are counted too). */
    final boolean cluster;
    /**
     * Whether the servers have sharded pub/sub (a cluster that answers PUBSUB SHARDNUMSUB; Redis
     * 6.2 does not): only then are sharded subscribers counted.
     */
    final boolean countsSharded;
    private final RBlockingQueue<String> inbox;
    private final RQueue<String> outbox;
    /** Every server's URL: one for single and cluster, three for the redlock scenario. */
    final List<String> urls;

    Scenario(String scenario, RedissonClient redisson, boolean cluster, List<String> urls) {
        this.redisson = redisson;
        this.cluster = cluster;
        this.countsSharded = cluster && answersShardNumSub(redisson);
        this.urls = urls;
        this.inbox = redisson.getBlockingQueue("interop:" + scenario + ":to-java", StringCodec.INSTANCE);
        this.outbox = redisson.getQueue("interop:" + scenario + ":to-rust", StringCodec.INSTANCE);
    }

    /** A scenario class on the client and message lists of {@code session}. */
    Scenario(Scenario session) {
        this.redisson = session.redisson;
        this.cluster = session.cluster;
        this.countsSharded = session.countsSharded;
        this.urls = session.urls;
        this.inbox = session.inbox;
        this.outbox = session.outbox;
    }

    /** One thread's work in {@link #runThreads}: its number, from 0. */
    interface ThreadBody {
        void run(int thread) throws Exception;
    }

    /** Runs {@code body} on {@code threads} threads at once; fails when one throws or all of
     * them take longer than 120 s. */
    static void runThreads(int threads, ThreadBody body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int thread = t;
            futures.add(pool.submit(() -> {
                body.run(thread);
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
    }

    /** Makes the lock one thread of {@link #exclusionRound} takes. */
    interface LockMaker {
        RLock make() throws Exception;
    }

    /**
     * lock.rs's {@code exclusion_round}, Redisson's half: 2 threads, 100 critical sections each
     * on {@code name}, each through the lock {@code lockOf} makes, beside rlock's 2 owners.
     */
    void exclusionRound(String name, LockMaker lockOf) throws Exception {
        send("ready");
        recv("ready");
        runThreads(2, thread -> {
            RLock lock = lockOf.make();
            for (int i = 0; i < 100; i++) {
                lock.lock();
                try {
                    criticalSection(name, name);
                } finally {
                    lock.unlock();
                }
            }
        });
        send("done");
    }

    /**
     * The critical section both sides run while holding a lock on {@code name} (lock.rs's
     * {@code critical_section}): a marker that must be absent (an overlap counts in
     * {@code <tally>:violations}), a GET-then-SET increment of {@code <name>:counter}, and a
     * hand-off from the rlock side counted in {@code <tally>:handoffs}.
     */
    void criticalSection(String name, String tally) {
        RBucket<String> marker = redisson.getBucket(name + ":marker", StringCodec.INSTANCE);
        boolean set = marker.setIfAbsent("java");
        if (!set) {
            redisson.getAtomicLong(tally + ":violations").incrementAndGet();
        }
        RBucket<String> counter = redisson.getBucket(name + ":counter", StringCodec.INSTANCE);
        String n = counter.get();
        counter.set(Long.toString((n == null ? 0 : Long.parseLong(n)) + 1));
        String prev = redisson.<String>getBucket(name + ":last", StringCodec.INSTANCE).getAndSet("java");
        if (prev != null && !prev.equals("java")) {
            redisson.getAtomicLong(tally + ":handoffs").incrementAndGet();
        }
        if (set) {
            marker.delete();
        }
    }

    static void check(boolean cond, String message) {
        if (!cond) {
            throw new Failure(message);
        }
    }

    /** Wall-clock microseconds; both processes run on one machine, so their clocks agree. */
    static long nowMicros() {
        return ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
    }

    void send(String message) {
        outbox.add(message);
    }

    /** Waits for the message tagged {@code tag} from the rlock side and returns its value part. */
    String recv(String tag) throws InterruptedException {
        String message = inbox.poll(HANDSHAKE_S, TimeUnit.SECONDS);
        check(message != null, "no '" + tag + "' from the rlock side within " + HANDSHAKE_S + " s");
        check(!message.startsWith("abort"), "the rlock side gave up: " + message);
        String[] parts = message.split(" ", 2);
        check(parts[0].equals(tag), "expected '" + tag + "' from the rlock side, got '" + message + "'");
        return parts.length > 1 ? parts[1] : "";
    }

    /** The channel Redisson and rlock wait on for the lock {@code name}. */
    static String lockChannel(String name) {
        return "redisson_lock__channel:{" + name + "}";
    }

    /**
     * Waits until some client (the rlock side here) is subscribed to the lock {@code name}'s
     * channel, i.e. an rlock waiter is about to sleep on it.
     */
    void awaitSubscriber(String name) throws InterruptedException {
        awaitChannelSubscriber(lockChannel(name), name);
    }

    /**
     * Waits until some client is subscribed to {@code channel} (the waiters' channel of lock
     * {@code what}). No event tells us that, so poll with a bound. On a cluster the subscription
     * may be sharded (SSUBSCRIBE, counted by PUBSUB SHARDNUMSUB) or classic (PUBSUB NUMSUB), both
     * asked of the node that owns the channel's slot.
     */
    void awaitChannelSubscriber(String channel, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        var topic = redisson.getTopic(channel, StringCodec.INSTANCE);
        var sharded = countsSharded ? redisson.getShardedTopic(channel, StringCodec.INSTANCE) : null;
        while (topic.countSubscribers() + (sharded == null ? 0 : sharded.countSubscribers()) < 1) {
            check(System.nanoTime() < deadline, "no rlock waiter subscribed to " + what + " within 20 s");
            Thread.sleep(2);
        }
    }

    /** Whether the server answers PUBSUB SHARDNUMSUB (asked once, through a sharded topic). */
    private static boolean answersShardNumSub(RedissonClient redisson) {
        try {
            redisson.getShardedTopic("interop:probe", StringCodec.INSTANCE).countSubscribers();
            return true;
        } catch (org.redisson.client.RedisException e) {
            return false;
        }
    }

    /** The Redisson owner (hash field) of the calling thread: {@code <client id>:<thread id>}. */
    String threadOwner() {
        return redisson.getId() + ":" + Thread.currentThread().getId();
    }

    /** The lock hash (owner -> hold count) as plain strings. */
    Map<String, String> fields(String name) {
        return redisson.<String, String>getMap(name, StringCodec.INSTANCE).readAllMap();
    }
}
