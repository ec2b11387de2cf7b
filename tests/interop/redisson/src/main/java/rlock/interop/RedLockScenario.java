package rlock.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/** The RedLock ({@code RedissonRedLock}) over three independent servers: the {@code redlock} scenario. */
final class RedLockScenario extends Scenario {
    /** Critical sections per Redisson thread (and per rlock owner) in part 2 of {@link #redLock}. */
    private static final int REDLOCK_SECTIONS = 100;

    RedLockScenario(Scenario session) {
        super(session);
    }

    /**
     * Redisson's {@code RedissonRedLock} over three {@code RLock}s of three clients (one per
     * server, {@code REDIS_URLS}) against rlock's RedLock on the same servers.
     * Part 1: each side's hold is the other's layout on every server (the rlock side checks
     * Redisson's fields, this side rlock's), and the other side cannot take it.
     * Part 2: 2 Redisson threads and 2 rlock owners run critical sections on the same name; the
     * rlock side checks the counter, the overlaps and the hand-offs.
     */
    void redLock() throws Exception {
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
            MultiLockScenario sections = new MultiLockScenario(this);
            runThreads(2, thread -> {
                RLock lock = redLockOf.get();
                for (int i = 0; i < REDLOCK_SECTIONS; i++) {
                    check(lock.tryLock(30, TimeUnit.SECONDS), "Redisson's RedLock was not taken within 30 s");
                    try {
                        sections.heldSection(name, "java", name);
                    } finally {
                        lock.unlock();
                    }
                }
            });
            send("done");
            recv("checked");
        } finally {
            for (RedissonClient c : clients.subList(1, clients.size())) {
                c.shutdown();
            }
        }
    }
}
