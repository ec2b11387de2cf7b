package rlock.interop;

import java.util.concurrent.TimeUnit;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import org.redisson.Redisson;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * A Redisson worker for the fault suites (tests/chaos/harness.py, surface {@code redisson}): the
 * part of the fault suite's line protocol (tests/chaos/README.md) that the network-fault
 * scenarios use, so a real Redisson client takes part beside rlock's workers.
 *
 * <p>Usage: {@code Worker <redis-url> [watchdog_ms=N] [command_timeout_ms=N] [replica_sync=0|1]
 * [label=S]}, the URL {@code redis://host:port} or {@code redis+sentinel://h1:p1,h2:p2/master}.
 * Prints {@code {"event":"ready",...}}, then answers one command per stdin line with one JSON
 * line: {@code acquire NAME [WAIT_MS [LEASE_MS]]}, {@code release NAME}, {@code held NAME},
 * {@code write NAME STORE_PORT} (a write to the network-fault suite's fenced store with the token
 * of NAME's last acquire), {@code exit}. {@code fenced@NAME} is the fenced lock (its token in {@code acquired}); any other
 * name the reentrant lock. Every command runs on the main thread, so every hold has one owner.
 * Redisson has no lost-hold signal, so this worker never reports {@code lost}.
 */
public final class Worker {
    private Worker() {
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                default -> b.append(c < 0x20 ? String.format("\\u%04x", (int) c) : String.valueOf(c));
            }
        }
        return b.append('"').toString();
    }

    private static void say(String json) {
        System.out.println(json);
        System.out.flush();
    }

    /**
     * One write to the network-fault suite's fenced store (tests/netfaults/history.py) on
     * 127.0.0.1:{@code port}: the lock's name, the token and this worker's label. Whether the store
     * accepted it (it refuses a token below the highest it has seen).
     */
    static boolean storeWrite(int port, String name, long token, String label) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            OutputStream out = s.getOutputStream();
            out.write(("write " + name + " " + token + " " + label + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
            var in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            return "accepted".equals(in.readLine());
        }
    }

    /** The Redisson configuration for a fault-suite URL and options. */
    static Config config(String url, long watchdogMs, long timeoutMs, Boolean replicaSync) {
        Config config = new Config();
        config.setLockWatchdogTimeout(watchdogMs);
        if (replicaSync != null) {
            config.setCheckLockSyncedSlaves(replicaSync);
        }
        String sentinel = "redis+sentinel://";
        if (url.startsWith(sentinel)) {
            String rest = url.substring(sentinel.length());
            int slash = rest.indexOf('/');
            var servers = config.useSentinelServers()
                    .setMasterName(rest.substring(slash + 1).replaceAll("/+$", ""))
                    .setCheckSentinelsList(false)
                    .setScanInterval(1000)
                    .setTimeout((int) timeoutMs);
            for (String host : rest.substring(0, slash).split(",")) {
                servers.addSentinelAddress("redis://" + host);
            }
        } else {
            config.useSingleServer().setAddress(url.replaceAll("/+$", "")).setTimeout((int) timeoutMs);
        }
        return config;
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        long watchdogMs = 30000;
        long timeoutMs = 3000;
        Boolean replicaSync = null;
        String label = "redisson";
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            switch (kv[0]) {
                case "watchdog_ms" -> watchdogMs = Long.parseLong(kv[1]);
                case "command_timeout_ms" -> timeoutMs = Long.parseLong(kv[1]);
                case "replica_sync" -> replicaSync = "1".equals(kv[1]);
                case "label" -> label = kv[1];
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        RedissonClient redisson = Redisson.create(config(url, watchdogMs, timeoutMs, replicaSync));
        say("{\"event\":\"ready\",\"surface\":\"redisson\",\"label\":" + quote(label) + ",\"pid\":"
                + ProcessHandle.current().pid() + "}");
        // The token of each fenced lock's last acquire, by spec: what `write` writes with.
        Map<String, Long> tokens = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null;) {
            String[] w = line.trim().split("\\s+");
            if (w.length == 0 || w[0].isEmpty()) {
                continue;
            }
            if (w[0].equals("exit")) {
                redisson.shutdown();
                say("{\"event\":\"bye\"}");
                return;
            }
            if (w.length < 2) {
                say("{\"event\":\"error\",\"code\":\"INVALID_ARGUMENT\",\"message\":" + quote(line) + "}");
                continue;
            }
            String spec = w[1];
            boolean fenced = spec.startsWith("fenced@");
            String name = spec.contains("@") ? spec.substring(spec.indexOf('@') + 1) : spec;
            RLock lock = fenced ? redisson.getFencedLock(name) : redisson.getLock(name);
            try {
                switch (w[0]) {
                    case "acquire" -> {
                        long waitMs = w.length > 2 ? Long.parseLong(w[2]) : -1;
                        long leaseMs = w.length > 3 ? Long.parseLong(w[3]) : -1;
                        Long token = null;
                        boolean got;
                        if (fenced) {
                            RFencedLock f = (RFencedLock) lock;
                            token = waitMs < 0 ? f.lockAndGetToken(leaseMs, TimeUnit.MILLISECONDS)
                                    : f.tryLockAndGetToken(waitMs, leaseMs, TimeUnit.MILLISECONDS);
                            got = token != null;
                            if (got) {
                                tokens.put(spec, token);
                            }
                        } else if (waitMs < 0) {
                            lock.lock(leaseMs, TimeUnit.MILLISECONDS);
                            got = true;
                        } else {
                            got = lock.tryLock(waitMs, leaseMs, TimeUnit.MILLISECONDS);
                        }
                        say("{\"event\":\"" + (got ? "acquired" : "not_acquired") + "\",\"name\":" + quote(spec)
                                + ",\"token\":" + token + "}");
                    }
                    case "release" -> {
                        lock.unlock();
                        say("{\"event\":\"released\",\"free\":" + !lock.isHeldByCurrentThread() + "}");
                    }
                    case "write" -> {
                        Long token = tokens.get(spec);
                        if (token == null) {
                            say("{\"event\":\"error\",\"op\":\"write\",\"code\":\"INVALID_ARGUMENT\",\"message\":"
                                    + quote("no fenced acquire of " + spec + " to write with") + "}");
                        } else {
                            boolean accepted = storeWrite(Integer.parseInt(w[2]), name, token, label);
                            say("{\"event\":\"written\",\"name\":" + quote(spec) + ",\"token\":" + token
                                    + ",\"accepted\":" + accepted + "}");
                        }
                    }
                    case "held" -> say("{\"event\":\"held\",\"value\":" + lock.isHeldByCurrentThread() + "}");
                    default -> say("{\"event\":\"error\",\"code\":\"INVALID_ARGUMENT\",\"message\":"
                            + quote("unknown command " + w[0]) + "}");
                }
            } catch (IllegalMonitorStateException e) {
                say("{\"event\":\"error\",\"code\":\"NOT_HELD\",\"message\":" + quote(String.valueOf(e.getMessage())) + "}");
            } catch (IOException e) {
                say("{\"event\":\"error\",\"code\":\"STORE\",\"message\":" + quote(String.valueOf(e)) + "}");
            } catch (RuntimeException e) {
                String code = e.getClass().getSimpleName().contains("Timeout") ? "TIMEOUT" : "REDIS";
                say("{\"event\":\"error\",\"code\":\"" + code + "\",\"message\":"
                        + quote(e.getClass().getSimpleName() + ": " + e.getMessage()) + "}");
            }
        }
        redisson.shutdown();
    }
}
