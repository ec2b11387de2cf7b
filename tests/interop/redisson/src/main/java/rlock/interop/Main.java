package rlock.interop;

import java.util.ArrayList;
import java.util.List;

import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The Redisson side of the rlock interop test (driver: tests/interop/run.sh).
 *
 * <p>Usage: {@code Main <scenario>}, Redis URL from {@code REDIS_URL}: {@code redis://host:port}
 * for one server, {@code redis+cluster://host:port,host:port/} for a Redis Cluster (the URL rlock
 * takes; here it becomes {@code useClusterServers()} with those seed nodes). The driver starts this
 * program and the rlock side ({@code tests/interop/rlock}) with the same scenario at the same
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
 *
 * <p>This class holds the command line and the dispatch; {@link Scenario} the client, the
 * message lists and the helpers every scenario shares; the other classes one primitive's
 * scenarios each (the rlock side has the same split).
 */
public final class Main {
    /** A failed assertion of a scenario. */
    static final class Failure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Failure(String message) {
            super(message);
        }
    }

    private Main() {
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
        Scenario session = new Scenario(scenario, redisson, cluster, urls);
        int code = 0;
        try {
            switch (scenario) {
                case "mutex" -> new LockScenarios(session).mutex();
                case "wake-to-java" -> new LockScenarios(session).wakeToJava();
                case "wake-to-rust" -> new LockScenarios(session).wakeToRust();
                case "holds" -> new LockScenarios(session).holds();
                case "force" -> new LockScenarios(session).force();
                case "watchdog" -> new LockScenarios(session).watchdog();
                case "fenced" -> new FencedScenario(session).fenced();
                case "rwlock" -> new RwLockScenario(session).rwlock();
                case "fair" -> new FairScenario(session).fair();
                case "spin" -> new SpinScenario(session).spin();
                case "non-reentrant" -> new NonReentrantScenario(session).nonReentrant();
                case "semaphore" -> new SemaphoreScenarios(session).semaphore();
                case "permit-semaphore" -> new SemaphoreScenarios(session).permitSemaphore();
                case "multi-lock" -> new MultiLockScenario(session).multiLock();
                case "latch" -> new LatchScenario(session).latch();
                case "redlock" -> new RedLockScenario(session).redLock();
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
                session.send("abort java: " + e);
            } catch (RuntimeException ignored) {
                // Redis is gone: the rlock side will time out on its own.
            }
        } finally {
            redisson.shutdown();
        }
        System.exit(code);
    }
}
