/* Tests of the C API against a private redis-server (REDIS_URL, set by tests/c/run.sh).
 * Every function, every bad input, 8 threads x 1000 critical sections, a 3-master cluster
 * (RLOCK_CLUSTER_URL), the server going away. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rlock.h"

static int passed, failed;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            passed++;                                                            \
        } else {                                                                 \
            failed++;                                                            \
            char msg_[256];                                                      \
            rlock_last_error(msg_, sizeof msg_);                                 \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__,       \
                    __LINE__, #cond, msg_);                                      \
        }                                                                        \
    } while (0)

#define CHECK_RC(call, want)                                                     \
    do {                                                                         \
        rlock_result rc_ = (call);                                               \
        if (rc_ != (want)) {                                                     \
            char msg_[256];                                                      \
            rlock_last_error(msg_, sizeof msg_);                                 \
            fprintf(stderr, "FAIL %s:%d: %s = %s, want %s (%s)\n", __FILE__,     \
                    __LINE__, #call, rlock_result_str(rc_),                      \
                    rlock_result_str(want), msg_);                               \
            failed++;                                                            \
        } else {                                                                 \
            passed++;                                                            \
        }                                                                        \
    } while (0)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static rlock_client *client;

/* ---- result codes and the last error ---- */
static void test_result_str_and_last_error(void) {
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
    CHECK(strcmp(rlock_result_str(12345), "RLOCK_UNKNOWN") == 0);
    CHECK(strcmp(rlock_result_str(-1), "RLOCK_UNKNOWN") == 0);
    CHECK(RLOCK_OK == 0 && RLOCK_NOT_ACQUIRED == 1 && RLOCK_NOT_HELD == 2 && RLOCK_LOST == 3 &&
          RLOCK_INVALID_ARGUMENT == 4 && RLOCK_CONNECTION == 5 && RLOCK_TIMEOUT == 6 &&
          RLOCK_REDIS == 7 && RLOCK_CLOSED == 8 && RLOCK_PANIC == 9);

    CHECK_RC(rlock_lock(NULL, "x", 0), RLOCK_INVALID_ARGUMENT);
    size_t full = rlock_last_error(NULL, 0);
    CHECK(full == strlen("client is NULL"));
    char small[7];
    memset(small, 'Z', sizeof small);
    CHECK(rlock_last_error(small, sizeof small) == full);
    CHECK(strcmp(small, "client") == 0); /* 6 bytes + NUL */
    char one[1] = {'Z'};
    CHECK(rlock_last_error(one, 1) == full && one[0] == '\0');
    char big[64];
    CHECK(rlock_last_error(big, sizeof big) == full && strcmp(big, "client is NULL") == 0);
}

/* ---- client creation ---- */
static void test_client_new(void) {
    rlock_client *c = (rlock_client *)0x1;
    CHECK_RC(rlock_client_new("nonsense", &c), RLOCK_INVALID_ARGUMENT);
    CHECK(c == (rlock_client *)0x1); /* out untouched on failure */
    CHECK_RC(rlock_client_new("http://127.0.0.1/", &c), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_new("redis://\xff\xfe/", &c), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_new(NULL, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(c == (rlock_client *)0x1);

    rlock_options o = rlock_options_default();
    CHECK(o.watchdog_timeout_ms == 30000 && o.renewal_batch_size == 100 && o.retry_attempts == 3);
    o.watchdog_timeout_ms = -5;
    CHECK_RC(rlock_client_new_with_options(NULL, &o, &c), RLOCK_INVALID_ARGUMENT);
    o = rlock_options_default();
    o.renewal_batch_size = 0;
    CHECK_RC(rlock_client_new_with_options(NULL, &o, &c), RLOCK_INVALID_ARGUMENT);

    /* A port nobody listens on: a connection error, quickly. */
    o = rlock_options_default();
    o.retry_attempts = 0;
    o.connect_timeout_ms = 2000;
    CHECK_RC(rlock_client_new_with_options("redis://127.0.0.1:1/", &o, &c), RLOCK_CONNECTION);
    CHECK(c == (rlock_client *)0x1);

    /* NULL url: REDIS_URL from the environment. */
    CHECK_RC(rlock_client_new(NULL, &client), RLOCK_OK);
    CHECK(client != NULL);
    rlock_client_free(NULL); /* no-op */
}

/* ---- bad input on every function ---- */
static void test_bad_input(void) {
    bool b = true;
    uint32_t n = 77;
    int64_t ms = 77;
    const char *bad_utf8 = "lock-\xc3\x28";
    CHECK_RC(rlock_lock(NULL, "x", 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock(client, NULL, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock(client, bad_utf8, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock(client, "", 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_lock(NULL, "x", 0, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_lock(client, NULL, 0, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_lock(client, bad_utf8, 0, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_lock(client, "x", -1, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_lock(client, "x", INT64_MAX, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock(client, "x", INT64_MAX), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_unlock(NULL, "x"), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_unlock(client, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_unlock(client, bad_utf8), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_unlock(client, "never-locked"), RLOCK_NOT_HELD);
    CHECK_RC(rlock_force_unlock(NULL, "x", &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_force_unlock(client, NULL, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_is_locked(NULL, "x", &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_is_locked(client, NULL, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_is_locked(client, "x", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_is_locked(client, bad_utf8, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_is_held(NULL, "x", &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_is_held(client, "x", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_hold_count(NULL, "x", &n), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_hold_count(client, "x", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_remaining_ttl(NULL, "x", &ms), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_remaining_ttl(client, "x", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_as(NULL, "x", 1, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_lock_as(client, "x", 1, -5, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_unlock_as(client, NULL, 1), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_is_held_as(client, "x", 1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_hold_count_as(client, "x", 1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_on_lost(NULL, NULL, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(b == true && n == 77 && ms == 77); /* out-parameters untouched on failure */
    CHECK_RC(rlock_is_locked(client, "x", &b), RLOCK_OK);
    CHECK(b == false); /* nothing above created the lock */

    /* A key of the wrong type (run.sh SETs "wrongtype" to a string): typed error. */
    CHECK_RC(rlock_lock(client, "wrongtype", 0), RLOCK_REDIS);
    CHECK_RC(rlock_try_lock(client, "wrongtype", 10, 0), RLOCK_REDIS);
    CHECK_RC(rlock_force_unlock(client, "wrongtype", &b), RLOCK_REDIS);
    CHECK_RC(rlock_is_locked(client, "wrongtype", &b), RLOCK_OK);
    CHECK(b == true); /* still there, untouched */
}

/* ---- one thread: reentrancy, queries, leases ---- */
struct probe { const char *name; rlock_result try_rc; bool held; rlock_result unlock_rc; };

static void *probe_thread(void *arg) {
    struct probe *p = arg;
    p->try_rc = rlock_try_lock(client, p->name, 0, 0);
    rlock_is_held(client, p->name, &p->held);
    p->unlock_rc = rlock_unlock(client, p->name);
    return NULL;
}

static void test_reentrancy_and_queries(void) {
    bool b = false;
    uint32_t n = 0;
    int64_t ms = 0;
    const char *name = "c-reentrant";
    CHECK_RC(rlock_remaining_ttl(client, name, &ms), RLOCK_OK);
    CHECK(ms == -2);
    CHECK_RC(rlock_lock(client, name, 0), RLOCK_OK);
    CHECK_RC(rlock_lock(client, name, 0), RLOCK_OK);
    CHECK_RC(rlock_hold_count(client, name, &n), RLOCK_OK);
    CHECK(n == 2);
    CHECK_RC(rlock_is_held(client, name, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_is_locked(client, name, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_remaining_ttl(client, name, &ms), RLOCK_OK);
    CHECK(ms > 25000 && ms <= 30000);

    /* Another thread is another owner: it contends and cannot unlock. */
    struct probe p = {name, RLOCK_OK, true, RLOCK_OK};
    pthread_t t;
    pthread_create(&t, NULL, probe_thread, &p);
    pthread_join(t, NULL);
    CHECK(p.try_rc == RLOCK_NOT_ACQUIRED);
    CHECK(p.held == false);
    CHECK(p.unlock_rc == RLOCK_NOT_HELD);

    CHECK_RC(rlock_unlock(client, name), RLOCK_OK);
    CHECK_RC(rlock_hold_count(client, name, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_unlock(client, name), RLOCK_OK);
    CHECK_RC(rlock_is_locked(client, name, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_unlock(client, name), RLOCK_NOT_HELD);

    /* try_lock on a held lock waits the bound, then gives up. */
    CHECK_RC(rlock_lock_as(client, name, 42, 0), RLOCK_OK);
    double start = now_ms();
    CHECK_RC(rlock_try_lock(client, name, 200, 0), RLOCK_NOT_ACQUIRED);
    double took = now_ms() - start;
    CHECK(took >= 200 && took < 5000);
    CHECK_RC(rlock_unlock_as(client, name, 42), RLOCK_OK);
    CHECK_RC(rlock_try_lock(client, name, 0, 0), RLOCK_OK);
    CHECK_RC(rlock_unlock(client, name), RLOCK_OK);

    /* A fixed lease ends by itself; the late unlock is NOT_HELD. */
    CHECK_RC(rlock_lock(client, "c-lease", 300), RLOCK_OK);
    CHECK_RC(rlock_remaining_ttl(client, "c-lease", &ms), RLOCK_OK);
    CHECK(ms > 0 && ms <= 300);
    CHECK_RC(rlock_try_lock_as(client, "c-lease", 9, 5000, 0), RLOCK_OK); /* gets in after expiry */
    CHECK_RC(rlock_unlock(client, "c-lease"), RLOCK_NOT_HELD);
    CHECK_RC(rlock_unlock_as(client, "c-lease", 9), RLOCK_OK);
}

/* ---- explicit owners ---- */
struct as_args { const char *name; uint64_t owner; rlock_result rc; };
static void *unlock_as_thread(void *arg) {
    struct as_args *a = arg;
    a->rc = rlock_unlock_as(client, a->name, a->owner);
    return NULL;
}

static void test_explicit_owner(void) {
    bool b = false;
    uint32_t n = 0;
    const char *name = "c-owner";
    CHECK_RC(rlock_lock_as(client, name, 7, 0), RLOCK_OK);
    CHECK_RC(rlock_try_lock_as(client, name, 7, 0, 0), RLOCK_OK); /* re-enters */
    CHECK_RC(rlock_hold_count_as(client, name, 7, &n), RLOCK_OK);
    CHECK(n == 2);
    CHECK_RC(rlock_is_held_as(client, name, 7, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_is_held_as(client, name, 8, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_is_held(client, name, &b), RLOCK_OK); /* the thread is a different owner */
    CHECK(!b);
    CHECK_RC(rlock_try_lock_as(client, name, 8, 0, 0), RLOCK_NOT_ACQUIRED);
    /* Any thread may release for an explicit owner. */
    struct as_args a = {name, 7, RLOCK_PANIC};
    pthread_t t;
    pthread_create(&t, NULL, unlock_as_thread, &a);
    pthread_join(t, NULL);
    CHECK(a.rc == RLOCK_OK);
    pthread_create(&t, NULL, unlock_as_thread, &a);
    pthread_join(t, NULL);
    CHECK(a.rc == RLOCK_OK);
    CHECK_RC(rlock_unlock_as(client, name, 7), RLOCK_NOT_HELD);
}

/* ---- force unlock and the lost-lock callback ---- */
static atomic_int lost_calls;
static char lost_name[64];
static rlock_result rc_in_callback = RLOCK_OK;

static void on_lost(void *userdata, const char *name) {
    atomic_int *counter = userdata;
    snprintf(lost_name, sizeof lost_name, "%s", name);
    bool b;
    rc_in_callback = rlock_is_locked(client, name, &b); /* must be refused, not deadlock */
    atomic_fetch_add(counter, 1);
}

static void test_force_unlock_and_lost(void) {
    rlock_options o = rlock_options_default();
    o.watchdog_timeout_ms = 1000;
    rlock_client *holder = NULL;
    CHECK_RC(rlock_client_new_with_options(NULL, &o, &holder), RLOCK_OK);
    CHECK_RC(rlock_client_on_lost(holder, on_lost, &lost_calls), RLOCK_OK);
    CHECK_RC(rlock_lock(holder, "c-force", 0), RLOCK_OK);

    bool released = false;
    CHECK_RC(rlock_force_unlock(client, "c-force", &released), RLOCK_OK);
    CHECK(released);
    CHECK_RC(rlock_force_unlock(client, "c-force", &released), RLOCK_OK);
    CHECK(!released);
    CHECK_RC(rlock_force_unlock(client, "c-force", NULL), RLOCK_OK);

    for (int i = 0; i < 500 && atomic_load(&lost_calls) == 0; i++) sleep_ms(10);
    CHECK(atomic_load(&lost_calls) == 1);
    CHECK(strcmp(lost_name, "c-force") == 0);
    CHECK(rc_in_callback == RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_unlock(holder, "c-force"), RLOCK_LOST);
    CHECK_RC(rlock_unlock(holder, "c-force"), RLOCK_NOT_HELD);

    /* Removing the callback: a second loss calls nothing. */
    CHECK_RC(rlock_client_on_lost(holder, NULL, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock(holder, "c-force2", 0), RLOCK_OK);
    CHECK_RC(rlock_force_unlock(client, "c-force2", NULL), RLOCK_OK);
    sleep_ms(1500); /* over one renewal period: the loss is detected, nobody is called */
    CHECK(atomic_load(&lost_calls) == 1);
    CHECK_RC(rlock_unlock(holder, "c-force2"), RLOCK_LOST);
    rlock_client_free(holder);
}

/* ---- 8 threads x 1000 critical sections ---- */
#define THREADS 8
#define ROUNDS 1000
static long counter; /* deliberately not atomic */
static atomic_int errors;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (rlock_lock(client, "c-counter", 0) != RLOCK_OK) { atomic_fetch_add(&errors, 1); continue; }
        long v = counter;
        if (i % 64 == 0) sched_yield(); /* widen the race window */
        counter = v + 1;
        if (rlock_unlock(client, "c-counter") != RLOCK_OK) atomic_fetch_add(&errors, 1);
    }
    return NULL;
}

static void test_threads(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK(atomic_load(&errors) == 0);
    CHECK(counter == THREADS * ROUNDS);
    bool b = true;
    CHECK_RC(rlock_is_locked(client, "c-counter", &b), RLOCK_OK);
    CHECK(!b);
}

/* ---- the server goes away ---- */
static void test_server_gone(void) {
    const char *pid = getenv("RLOCK_TEST_REDIS_PID");
    CHECK(pid != NULL);
    if (!pid) return;
    kill((pid_t)atoi(pid), SIGKILL);
    sleep_ms(200);
    bool b = false;
    rlock_result rc = rlock_is_locked(client, "gone", &b);
    CHECK(rc == RLOCK_CONNECTION || rc == RLOCK_TIMEOUT);
    rc = rlock_lock(client, "gone", 0);
    CHECK(rc == RLOCK_CONNECTION || rc == RLOCK_TIMEOUT);
    char msg[256];
    CHECK(rlock_last_error(msg, sizeof msg) > 0);
}

/* ---- topologies and their options ---- */
static void test_topologies(void) {
    rlock_client_info info = {RLOCK_TOPOLOGY_CLUSTER, true, true};
    CHECK_RC(rlock_client_get_info(NULL, &info), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_get_info(client, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_get_info(client, &info), RLOCK_OK);
    CHECK(info.topology == RLOCK_TOPOLOGY_SINGLE && !info.sharded_pubsub && !info.replica_sync);

    rlock_options o = rlock_options_default();
    CHECK(o.tls_ca_file == NULL && o.sharded_pubsub == -1 && o.replica_sync == -1);
    CHECK(o.replica_sync_timeout_ms == 1000 && o.command_connections == 1);
    rlock_client *c = (rlock_client *)0x1;
    o.sharded_pubsub = 2;
    CHECK_RC(rlock_client_new_with_options(NULL, &o, &c), RLOCK_INVALID_ARGUMENT);
    o = rlock_options_default();
    o.replica_sync = -7;
    CHECK_RC(rlock_client_new_with_options(NULL, &o, &c), RLOCK_INVALID_ARGUMENT);
    o = rlock_options_default();
    o.replica_sync_timeout_ms = 0;
    CHECK_RC(rlock_client_new_with_options(NULL, &o, &c), RLOCK_INVALID_ARGUMENT);
    o = rlock_options_default();
    o.command_connections = 0;
    CHECK_RC(rlock_client_new_with_options(NULL, &o, &c), RLOCK_INVALID_ARGUMENT);
    o.command_connections = 9;
    CHECK_RC(rlock_client_new_with_options(NULL, &o, &c), RLOCK_INVALID_ARGUMENT);
    /* Two command connections to the one server: the same locks. */
    o.command_connections = 2;
    rlock_client *two = NULL;
    CHECK_RC(rlock_client_new_with_options(NULL, &o, &two), RLOCK_OK);
    if (two) {
        CHECK_RC(rlock_lock(two, "c-two-conns", 0), RLOCK_OK);
        CHECK_RC(rlock_lock(two, "c-two-conns", 0), RLOCK_OK);
        CHECK_RC(rlock_try_lock(client, "c-two-conns", 0, 0), RLOCK_NOT_ACQUIRED);
        CHECK_RC(rlock_unlock(two, "c-two-conns"), RLOCK_OK);
        CHECK_RC(rlock_unlock(two, "c-two-conns"), RLOCK_OK);
        rlock_client_free(two);
    }
    o = rlock_options_default();
    o.tls_ca_file = "/nonexistent/ca.pem";
    CHECK_RC(rlock_client_new_with_options("rediss://127.0.0.1:1/", &o, &c), RLOCK_INVALID_ARGUMENT);
    o.tls_ca_file = "ca-\xc3\x28.pem";
    CHECK_RC(rlock_client_new_with_options(NULL, &o, &c), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_new("redis+cluster://127.0.0.1:x/", &c), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_new("redis+sentinel://127.0.0.1:26379/", &c), RLOCK_INVALID_ARGUMENT);
    CHECK(c == (rlock_client *)0x1);

    /* A 3-master cluster (run.sh): the same calls work through a redis+cluster:// URL. */
    const char *url = getenv("RLOCK_CLUSTER_URL");
    CHECK(url != NULL);
    if (!url) return;
    rlock_client *cl = NULL;
    CHECK_RC(rlock_client_new(url, &cl), RLOCK_OK);
    if (!cl) return;
    CHECK_RC(rlock_client_get_info(cl, &info), RLOCK_OK);
    CHECK(info.topology == RLOCK_TOPOLOGY_CLUSTER && info.sharded_pubsub && info.replica_sync);
    char name[32];
    for (int i = 0; i < 30; i++) { /* names on every master */
        snprintf(name, sizeof name, "c-cluster-%d", i);
        CHECK_RC(rlock_lock(cl, name, 0), RLOCK_OK);
        CHECK_RC(rlock_lock(cl, name, 0), RLOCK_OK);
        uint32_t n = 0;
        CHECK_RC(rlock_hold_count(cl, name, &n), RLOCK_OK);
        CHECK(n == 2);
        CHECK_RC(rlock_try_lock_as(cl, name, 7, 0, 0), RLOCK_NOT_ACQUIRED);
        CHECK_RC(rlock_unlock(cl, name), RLOCK_OK);
        CHECK_RC(rlock_unlock(cl, name), RLOCK_OK);
        bool locked = true;
        CHECK_RC(rlock_is_locked(cl, name, &locked), RLOCK_OK);
        CHECK(!locked);
    }
    CHECK_RC(rlock_lock(cl, "a{}b", 0), RLOCK_INVALID_ARGUMENT); /* cross-slot name */
    rlock_client_free(cl);
}

int main(void) {
    test_result_str_and_last_error();
    test_client_new();
    if (!client) {
        fprintf(stderr, "no client: is REDIS_URL set?\n");
        return 1;
    }
    test_bad_input();
    test_reentrancy_and_queries();
    test_explicit_owner();
    test_force_unlock_and_lost();
    test_threads();
    test_topologies();
    test_server_gone();
    rlock_client_free(client);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
