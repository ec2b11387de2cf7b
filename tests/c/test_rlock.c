/* Tests of the C API against a private redis-server (REDIS_URL, set by tests/c/run.sh), in
 * four files built into one program: this one (the helpers, result codes, client creation, the
 * options object, bad input, main), test_client.c (stats, describe, fork, frees racing calls,
 * topologies, the server going away), test_locks.c (the lock family) and test_primitives.c
 * (semaphores, the multi-lock, the count-down latch). */
#include "check.h"

int passed, failed;

double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

rlock_client *client;

/* A new handle on the lock of `kind` named `name` (NULL when that failed: the CHECK says why). */
rlock_lock *lock_on(rlock_client *c, const char *name, int kind) {
    rlock_lock *l = NULL;
    CHECK_RC(rlock_lock_new(c, name, kind, &l), RLOCK_OK);
    return l;
}

/* A client of `url` (NULL: REDIS_URL) with a 3 s watchdog: renewals every second, so a removed
 * hold is found within about a second, while a stall of the process under valgrind (over 250 ms
 * was seen on a loaded CI machine) does not put a lease in doubt first (its margin is 750 ms).
 * NULL (and a failed check) when it cannot connect. */
rlock_client *client_3s_watchdog(const char *url) {
    rlock_options *o = rlock_options_new();
    CHECK_RC(rlock_options_set_watchdog_timeout_ms(o, 3000), RLOCK_OK);
    rlock_client *c = NULL;
    CHECK_RC(rlock_client_new(url, o, &c), RLOCK_OK);
    rlock_options_free(o);
    return c;
}

/* Whether this thread's last error message contains `what`. */
int last_error_has(const char *what) {
    char *msg = rlock_last_error();
    int has = msg && strstr(msg, what) != NULL;
    rlock_string_free(msg);
    return has;
}


/* The integer reply of `redis-cli <args>` on the test server (redis-tools comes with
 * `make deps`); -1 when there is none. */
long redis_int(const char *args) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "redis-cli -u '%s' %s", getenv("REDIS_URL"), args);
    FILE *p = popen(cmd, "r");
    long n = -1;
    if (p) {
        if (fscanf(p, "%ld", &n) != 1) n = -1;
        pclose(p);
    }
    return n;
}

/* LLEN of `key` on the test server. */
long redis_llen(const char *key) {
    char args[256];
    snprintf(args, sizeof args, "LLEN '%s'", key);
    return redis_int(args);
}

/* The last integer redis-cli prints for `args` on the test server (-1 when none). */
long redis_last_int(const char *args) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "redis-cli -u '%s' %s", getenv("REDIS_URL"), args);
    FILE *p = popen(cmd, "r");
    long n = -1;
    char line[256];
    if (p) {
        while (fgets(line, sizeof line, p)) {
            char *end;
            long v = strtol(line, &end, 10);
            if (end != line && (*end == '\n' || *end == '\0')) n = v;
        }
        pclose(p);
    }
    return n;
}

/* ---- result codes and the last error ---- */
static void *last_error_of_new_thread(void *arg) {
    char *msg = rlock_last_error();
    *(int *)arg = msg && msg[0] == '\0';
    rlock_string_free(msg);
    return NULL;
}

void test_result_str_and_last_error(void) {
    CHECK(strcmp(rlock_result_str(RLOCK_OK), "RLOCK_OK") == 0);
    CHECK(strcmp(rlock_result_str(RLOCK_NOT_ACQUIRED), "RLOCK_NOT_ACQUIRED") == 0);
    CHECK(strcmp(rlock_result_str(RLOCK_NOT_HELD), "RLOCK_NOT_HELD") == 0);
    CHECK(strcmp(rlock_result_str(RLOCK_LOST), "RLOCK_LOST") == 0);
    CHECK(strcmp(rlock_result_str(RLOCK_INVALID_ARGUMENT), "RLOCK_INVALID_ARGUMENT") == 0);
    CHECK(strcmp(rlock_result_str(RLOCK_CONNECTION), "RLOCK_CONNECTION") == 0);
    CHECK(strcmp(rlock_result_str(RLOCK_TIMEOUT), "RLOCK_TIMEOUT") == 0);
    CHECK(strcmp(rlock_result_str(RLOCK_REDIS), "RLOCK_REDIS") == 0);
    CHECK(strcmp(rlock_result_str(RLOCK_CLOSED), "RLOCK_CLOSED") == 0);
    CHECK(strcmp(rlock_result_str(RLOCK_PANIC), "RLOCK_PANIC") == 0);
    CHECK(strcmp(rlock_result_str(RLOCK_FORKED), "RLOCK_FORKED") == 0);
    CHECK(strcmp(rlock_result_str(12345), "RLOCK_UNKNOWN") == 0);
    CHECK(strcmp(rlock_result_str(-1), "RLOCK_UNKNOWN") == 0);
    CHECK(RLOCK_OK == 0 && RLOCK_NOT_ACQUIRED == 1 && RLOCK_NOT_HELD == 2 && RLOCK_LOST == 3 &&
          RLOCK_INVALID_ARGUMENT == 4 && RLOCK_CONNECTION == 5 && RLOCK_TIMEOUT == 6 &&
          RLOCK_REDIS == 7 && RLOCK_CLOSED == 8 && RLOCK_PANIC == 9 && RLOCK_FORKED == 10);

    /* A thread that never failed has the empty message. */
    int empty = 0;
    pthread_t t;
    pthread_create(&t, NULL, last_error_of_new_thread, &empty);
    pthread_join(t, NULL);
    CHECK(empty);

    /* The message is a string librlock allocates; reading it does not clear it. */
    rlock_lock *l = (rlock_lock *)0x1;
    CHECK_RC(rlock_lock_new(NULL, "x", RLOCK_LOCK, &l), RLOCK_INVALID_ARGUMENT);
    CHECK(l == (rlock_lock *)0x1); /* out untouched on failure */
    char *msg = rlock_last_error();
    CHECK(msg && strcmp(msg, "client is NULL") == 0);
    rlock_string_free(msg);
    msg = rlock_last_error();
    CHECK(msg && strcmp(msg, "client is NULL") == 0);
    rlock_string_free(msg);
    CHECK_RC(rlock_lock_acquire(NULL, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("lock is NULL"));

    /* The header's version is the loaded library's (both from the workspace version). */
    CHECK(strcmp(rlock_version(), RLOCK_VERSION) == 0);
    CHECK(RLOCK_VERSION_NUMBER ==
          RLOCK_VERSION_MAJOR * 10000 + RLOCK_VERSION_MINOR * 100 + RLOCK_VERSION_PATCH);
    CHECK(RLOCK_FOREVER == -1 && RLOCK_THREAD == UINT64_MAX);
}

/* ---- client creation ---- */
void test_client_new(void) {
    rlock_client *c = (rlock_client *)0x1;
    CHECK_RC(rlock_client_new("nonsense", NULL, &c), RLOCK_INVALID_ARGUMENT);
    CHECK(c == (rlock_client *)0x1); /* out untouched on failure */
    CHECK_RC(rlock_client_new("http://127.0.0.1/", NULL, &c), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_new("redis://\xff\xfe/", NULL, &c), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_new(NULL, NULL, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(c == (rlock_client *)0x1);

    /* A port nobody listens on: a connection error, quickly. */
    rlock_options *o = rlock_options_new();
    CHECK(o != NULL);
    CHECK_RC(rlock_options_set_retry_attempts(o, 0), RLOCK_OK);
    CHECK_RC(rlock_options_set_connect_timeout_ms(o, 2000), RLOCK_OK);
    CHECK_RC(rlock_client_new("redis://127.0.0.1:1/", o, &c), RLOCK_CONNECTION);
    CHECK(c == (rlock_client *)0x1);
    rlock_options_free(o);

    /* NULL url: REDIS_URL from the environment; NULL options: the defaults. */
    CHECK_RC(rlock_client_new(NULL, NULL, &client), RLOCK_OK);
    CHECK(client != NULL);
    rlock_client_free(NULL); /* no-op */
}

/* ---- the options object: every setter, good and bad values ---- */
#define GOOD(setter, value) CHECK_RC(rlock_options_set_##setter(o, value), RLOCK_OK)
#define BAD(setter, value)                                                       \
    do {                                                                         \
        CHECK_RC(rlock_options_set_##setter(o, value), RLOCK_INVALID_ARGUMENT);  \
        CHECK(last_error_has(#setter));                                          \
    } while (0)

void test_options(void) {
    rlock_options_free(NULL); /* no-op */
    rlock_options *o = rlock_options_new();
    CHECK(o != NULL);
    if (!o) return;

    /* NULL options: refused by every setter. */
    CHECK_RC(rlock_options_set_watchdog_timeout_ms(NULL, 1000), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_renewal_batch_size(NULL, 10), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_command_timeout_ms(NULL, 10), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_connect_timeout_ms(NULL, 10), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_retry_attempts(NULL, 1), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_retry_delay_ms(NULL, 10), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_subscription_timeout_ms(NULL, 10), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_poll_interval_ms(NULL, 10), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_max_hold_ms(NULL, 10), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_tls_ca_file(NULL, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_sharded_pubsub(NULL, 1), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_replica_sync(NULL, 1), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_replica_sync_timeout_ms(NULL, 10), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_command_connections(NULL, 2), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("options is NULL"));

    GOOD(watchdog_timeout_ms, 30000);
    BAD(watchdog_timeout_ms, -5);
    BAD(watchdog_timeout_ms, 10); /* under 30 ms */
    BAD(watchdog_timeout_ms, INT64_MAX);
    GOOD(renewal_batch_size, 50);
    BAD(renewal_batch_size, 0);
    BAD(renewal_batch_size, 10001);
    GOOD(command_timeout_ms, 5000);
    GOOD(command_timeout_ms, 0);  /* none: wait forever */
    GOOD(command_timeout_ms, -1); /* none */
    BAD(command_timeout_ms, INT64_MAX);
    GOOD(connect_timeout_ms, 2000);
    BAD(connect_timeout_ms, -1);
    BAD(connect_timeout_ms, 0);
    GOOD(retry_attempts, 0);
    GOOD(retry_attempts, 5);
    BAD(retry_attempts, 1001);
    BAD(retry_attempts, UINT32_MAX);
    GOOD(retry_delay_ms, 0);
    GOOD(retry_delay_ms, 100);
    BAD(retry_delay_ms, -1);
    BAD(retry_delay_ms, INT64_MAX);
    GOOD(subscription_timeout_ms, 5000);
    BAD(subscription_timeout_ms, 0);
    BAD(subscription_timeout_ms, -1);
    GOOD(poll_interval_ms, 50);
    BAD(poll_interval_ms, 0);
    GOOD(max_hold_ms, 60000);
    GOOD(max_hold_ms, 0); /* none: renew until release */
    BAD(max_hold_ms, INT64_MAX);
    GOOD(tls_ca_file, "/tmp/ca.pem");
    GOOD(tls_ca_file, NULL); /* none: the system's roots */
    BAD(tls_ca_file, "");
    BAD(tls_ca_file, "ca-\xc3\x28.pem");
    GOOD(sharded_pubsub, -1);
    GOOD(sharded_pubsub, 0);
    GOOD(sharded_pubsub, 1);
    BAD(sharded_pubsub, 2);
    BAD(sharded_pubsub, -2);
    GOOD(replica_sync, -1);
    GOOD(replica_sync, 0);
    GOOD(replica_sync, 1);
    BAD(replica_sync, 2);
    BAD(replica_sync, -7);
    GOOD(replica_sync_timeout_ms, 500);
    BAD(replica_sync_timeout_ms, 0);
    BAD(replica_sync_timeout_ms, -1);
    GOOD(command_connections, 2);
    BAD(command_connections, 0);
    BAD(command_connections, 9);
    rlock_options_free(o);

    /* A bad value leaves the previous one: the client runs with the good ones. */
    o = rlock_options_new();
    if (!o) return;
    GOOD(watchdog_timeout_ms, 5000); /* not shorter: a stall under valgrind would mean doubt */
    BAD(watchdog_timeout_ms, -5);
    BAD(watchdog_timeout_ms, 10);
    GOOD(replica_sync, 1);
    BAD(replica_sync, 5);
    GOOD(command_connections, 2);
    BAD(command_connections, 9);
    rlock_client *c = NULL;
    CHECK_RC(rlock_client_new(NULL, o, &c), RLOCK_OK);
    /* The client copied the settings: the object may go at once, and changes do not reach it. */
    GOOD(watchdog_timeout_ms, 60000);
    rlock_options_free(o);
    if (!c) return;
    rlock_connection_info info = {RLOCK_TOPOLOGY_CLUSTER, true, false};
    CHECK_RC(rlock_client_info(c, &info), RLOCK_OK);
    CHECK(info.topology == RLOCK_TOPOLOGY_SINGLE && info.replica_sync);
    int64_t ms = 0;
    rlock_lock *l = lock_on(c, "c-options", RLOCK_LOCK);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_remaining_ttl(l, &ms), RLOCK_OK);
    CHECK(ms > 0 && ms <= 5000); /* the 5000 ms watchdog lease, not 30000 nor 60000 */
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    rlock_lock_free(l);
    rlock_client_free(c);

    /* A CA path kept over a bad one: reading it fails at connect. */
    o = rlock_options_new();
    if (!o) return;
    GOOD(tls_ca_file, "/nonexistent/ca.pem");
    BAD(tls_ca_file, "");
    c = (rlock_client *)0x1;
    CHECK_RC(rlock_client_new("rediss://127.0.0.1:1/", o, &c), RLOCK_INVALID_ARGUMENT);
    CHECK(c == (rlock_client *)0x1);
    rlock_options_free(o);
}
#undef GOOD
#undef BAD

/* ---- bad input on every function ---- */
void test_bad_input(void) {
    bool b = true;
    uint32_t n = 77;
    int64_t ms = 77;
    uint64_t token = 77;
    const char *bad_utf8 = "lock-\xc3\x28";
    rlock_lock *l = (rlock_lock *)0x1;
    CHECK_RC(rlock_lock_new(NULL, "x", RLOCK_LOCK, &l), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_new(client, NULL, RLOCK_LOCK, &l), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_new(client, bad_utf8, RLOCK_LOCK, &l), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_new(client, "", RLOCK_LOCK, &l), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_new(client, "x", RLOCK_NON_REENTRANT_FAIR_LOCK + 1, &l), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_new(client, "x", -1, &l), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("kind -1"));
    CHECK_RC(rlock_lock_new(client, "x", RLOCK_LOCK, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(l == (rlock_lock *)0x1);
    rlock_lock_free(NULL); /* no-op */

    l = lock_on(client, "x", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_acquire(NULL, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, -2, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("wait_ms"));
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, INT64_MAX, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 0, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("lease_ms"));
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 0, -2, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 0, INT64_MAX, NULL), RLOCK_INVALID_ARGUMENT);
    /* A token is only for fenced locks: asking one of a plain lock is refused, nothing taken. */
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 0, RLOCK_FOREVER, &token), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("RLOCK_FENCED_LOCK"));
    CHECK_RC(rlock_lock_release(NULL, RLOCK_THREAD, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, &b), RLOCK_NOT_HELD);
    CHECK_RC(rlock_lock_release(l, 1, &b), RLOCK_NOT_HELD);
    CHECK_RC(rlock_lock_force_unlock(NULL, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_is_locked(NULL, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_is_locked(l, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_is_held(NULL, RLOCK_THREAD, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_is_held(l, RLOCK_THREAD, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_is_held(l, 1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_hold_count(NULL, RLOCK_THREAD, &n), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_hold_count(l, RLOCK_THREAD, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_remaining_ttl(NULL, &ms), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_remaining_ttl(l, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_on_lost(NULL, NULL, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(b == true && n == 77 && ms == 77 && token == 77); /* out-parameters untouched on failure */
    CHECK_RC(rlock_lock_is_locked(l, &b), RLOCK_OK);
    CHECK(b == false); /* nothing above created the lock */
    rlock_lock_free(l);

    /* A key of the wrong type (run.sh SETs "wrongtype" to a string): typed error. */
    l = lock_on(client, "wrongtype", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_REDIS);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 10, RLOCK_FOREVER, NULL), RLOCK_REDIS);
    CHECK_RC(rlock_lock_force_unlock(l, &b), RLOCK_REDIS);
    CHECK_RC(rlock_lock_is_locked(l, &b), RLOCK_OK);
    CHECK(b == true); /* still there, untouched */
    rlock_lock_free(l);
}

int main(void) {
    test_result_str_and_last_error();
    test_client_new();
    if (!client) {
        fprintf(stderr, "no client: is REDIS_URL set?\n");
        return 1;
    }
    test_options();
    test_bad_input();
    test_reentrancy_and_queries();
    test_explicit_owner();
    test_force_unlock_and_lost();
    test_lost_per_handle();
    test_threads();
    test_fenced();
    test_read_write_and_fair();
    test_spin();
    test_non_reentrant();
    test_semaphore();
    test_permit_semaphore();
    test_multi_lock();
    test_red_lock();
    test_latch();
    test_stats();
    test_log_callback();
    test_describe();
    test_least_privilege();
    test_secrets();
    test_fork();
    test_free_racing_calls();
    test_free_handle_racing_calls();
    test_topologies();
    test_server_gone();
    rlock_lock_free(callback_probe);
    rlock_client_free(client);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
