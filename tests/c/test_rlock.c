/* Tests of the C API against a private redis-server (REDIS_URL, set by tests/c/run.sh).
 * Every function, every bad input, the options object, 8 threads x 1000 critical sections,
 * clients after fork(), a free racing blocked calls, a 3-master cluster (RLOCK_CLUSTER_URL),
 * count-down latches woken across threads, stats and the Prometheus text, describe and list
 * as JSON,
 * the server going away. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rlock.h"

/* Under valgrind, a forked child turns its leak check off: the parent's runtime threads do
 * not exist in the child, so the memory they own there (their thread-locals, the worker's
 * state) looks lost at the child's exit. Memory errors in the child are still reported and
 * still fail it (its exit status). */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define CHILD_NO_LEAK_CHECK() VALGRIND_CLO_CHANGE("--leak-check=no")
#endif
#endif
#ifndef CHILD_NO_LEAK_CHECK
#define CHILD_NO_LEAK_CHECK() ((void)0)
#endif

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
    CHECK(strcmp(rlock_result_str(RLOCK_FORKED), "RLOCK_FORKED") == 0);
    CHECK(strcmp(rlock_result_str(12345), "RLOCK_UNKNOWN") == 0);
    CHECK(strcmp(rlock_result_str(-1), "RLOCK_UNKNOWN") == 0);
    CHECK(RLOCK_OK == 0 && RLOCK_NOT_ACQUIRED == 1 && RLOCK_NOT_HELD == 2 && RLOCK_LOST == 3 &&
          RLOCK_INVALID_ARGUMENT == 4 && RLOCK_CONNECTION == 5 && RLOCK_TIMEOUT == 6 &&
          RLOCK_REDIS == 7 && RLOCK_CLOSED == 8 && RLOCK_PANIC == 9 && RLOCK_FORKED == 10);

    CHECK_RC(rlock_acquire(NULL, "x", 0), RLOCK_INVALID_ARGUMENT);
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

    /* The header's version is the loaded library's (both from the workspace version). */
    CHECK(strcmp(rlock_version(), RLOCK_VERSION) == 0);
    CHECK(RLOCK_VERSION_NUMBER ==
          RLOCK_VERSION_MAJOR * 10000 + RLOCK_VERSION_MINOR * 100 + RLOCK_VERSION_PATCH);
}

/* ---- client creation ---- */
static void test_client_new(void) {
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
static int last_error_has(const char *what) {
    char msg[512];
    rlock_last_error(msg, sizeof msg);
    return strstr(msg, what) != NULL;
}

#define GOOD(setter, value) CHECK_RC(rlock_options_set_##setter(o, value), RLOCK_OK)
#define BAD(setter, value)                                                       \
    do {                                                                         \
        CHECK_RC(rlock_options_set_##setter(o, value), RLOCK_INVALID_ARGUMENT);  \
        CHECK(last_error_has(#setter));                                          \
    } while (0)

static void test_options(void) {
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
    GOOD(watchdog_timeout_ms, 1000);
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
    rlock_client_info info = {RLOCK_TOPOLOGY_CLUSTER, true, false};
    CHECK_RC(rlock_client_get_info(c, &info), RLOCK_OK);
    CHECK(info.topology == RLOCK_TOPOLOGY_SINGLE && info.replica_sync);
    int64_t ms = 0;
    CHECK_RC(rlock_acquire(c, "c-options", 0), RLOCK_OK);
    CHECK_RC(rlock_remaining_ttl(c, "c-options", &ms), RLOCK_OK);
    CHECK(ms > 0 && ms <= 1000); /* the 1000 ms watchdog lease, not 30000 nor 60000 */
    CHECK_RC(rlock_release(c, "c-options", NULL), RLOCK_OK);
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
static void test_bad_input(void) {
    bool b = true;
    uint32_t n = 77;
    int64_t ms = 77;
    const char *bad_utf8 = "lock-\xc3\x28";
    CHECK_RC(rlock_acquire(NULL, "x", 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_acquire(client, NULL, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_acquire(client, bad_utf8, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_acquire(client, "", 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_acquire(NULL, "x", 0, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_acquire(client, NULL, 0, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_acquire(client, bad_utf8, 0, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_acquire(client, "x", -1, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_acquire(client, "x", INT64_MAX, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_acquire(client, "x", INT64_MAX), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_release(NULL, "x", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_release(client, NULL, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_release(client, bad_utf8, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_release(client, "never-locked", NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_release(client, "never-locked", &b), RLOCK_NOT_HELD);
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
    CHECK_RC(rlock_acquire_as(NULL, "x", 1, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_try_acquire_as(client, "x", 1, -5, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_release_as(client, NULL, 1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_is_held_as(client, "x", 1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_hold_count_as(client, "x", 1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_release_as(NULL, "x", 1, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_on_lost(NULL, NULL, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(b == true && n == 77 && ms == 77); /* out-parameters untouched on failure */
    CHECK_RC(rlock_is_locked(client, "x", &b), RLOCK_OK);
    CHECK(b == false); /* nothing above created the lock */

    /* A key of the wrong type (run.sh SETs "wrongtype" to a string): typed error. */
    CHECK_RC(rlock_acquire(client, "wrongtype", 0), RLOCK_REDIS);
    CHECK_RC(rlock_try_acquire(client, "wrongtype", 10, 0), RLOCK_REDIS);
    CHECK_RC(rlock_force_unlock(client, "wrongtype", &b), RLOCK_REDIS);
    CHECK_RC(rlock_is_locked(client, "wrongtype", &b), RLOCK_OK);
    CHECK(b == true); /* still there, untouched */
}

/* ---- one thread: reentrancy, queries, leases ---- */
struct probe { const char *name; rlock_result try_rc; bool held; rlock_result unlock_rc; };

static void *probe_thread(void *arg) {
    struct probe *p = arg;
    p->try_rc = rlock_try_acquire(client, p->name, 0, 0);
    rlock_is_held(client, p->name, &p->held);
    p->unlock_rc = rlock_release(client, p->name, NULL);
    return NULL;
}

static void test_reentrancy_and_queries(void) {
    bool b = false;
    uint32_t n = 0;
    int64_t ms = 0;
    const char *name = "c-reentrant";
    CHECK_RC(rlock_remaining_ttl(client, name, &ms), RLOCK_OK);
    CHECK(ms == -2);
    CHECK_RC(rlock_acquire(client, name, 0), RLOCK_OK);
    CHECK_RC(rlock_acquire(client, name, 0), RLOCK_OK);
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

    bool unlocked = true;
    CHECK_RC(rlock_release(client, name, &unlocked), RLOCK_OK);
    CHECK(!unlocked); /* re-entered: still held */
    CHECK_RC(rlock_hold_count(client, name, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_release(client, name, &unlocked), RLOCK_OK);
    CHECK(unlocked); /* the last level: free now */
    CHECK_RC(rlock_is_locked(client, name, &b), RLOCK_OK);
    CHECK(!b);
    unlocked = true;
    CHECK_RC(rlock_release(client, name, &unlocked), RLOCK_NOT_HELD);
    CHECK(unlocked); /* untouched on failure */

    /* try_acquire on a held lock waits the bound, then gives up. */
    CHECK_RC(rlock_acquire_as(client, name, 42, 0), RLOCK_OK);
    double start = now_ms();
    CHECK_RC(rlock_try_acquire(client, name, 200, 0), RLOCK_NOT_ACQUIRED);
    double took = now_ms() - start;
    CHECK(took >= 200 && took < 5000);
    CHECK_RC(rlock_release_as(client, name, 42, NULL), RLOCK_OK);
    CHECK_RC(rlock_try_acquire(client, name, 0, 0), RLOCK_OK);
    CHECK_RC(rlock_release(client, name, NULL), RLOCK_OK);

    /* A fixed lease ends by itself; the holder was told (lease_ending), and its late unlock is
     * LOST. */
    CHECK_RC(rlock_acquire(client, "c-lease", 300), RLOCK_OK);
    CHECK_RC(rlock_remaining_ttl(client, "c-lease", &ms), RLOCK_OK);
    CHECK(ms > 0 && ms <= 300);
    CHECK_RC(rlock_try_acquire_as(client, "c-lease", 9, 5000, 0), RLOCK_OK); /* gets in after expiry */
    CHECK_RC(rlock_release(client, "c-lease", NULL), RLOCK_LOST);
    CHECK_RC(rlock_release_as(client, "c-lease", 9, NULL), RLOCK_OK);
}

/* ---- explicit owners ---- */
struct as_args { const char *name; uint64_t owner; rlock_result rc; bool unlocked; };
static void *unlock_as_thread(void *arg) {
    struct as_args *a = arg;
    a->rc = rlock_release_as(client, a->name, a->owner, &a->unlocked);
    return NULL;
}

static void test_explicit_owner(void) {
    bool b = false;
    uint32_t n = 0;
    const char *name = "c-owner";
    CHECK_RC(rlock_acquire_as(client, name, 7, 0), RLOCK_OK);
    CHECK_RC(rlock_try_acquire_as(client, name, 7, 0, 0), RLOCK_OK); /* re-enters */
    CHECK_RC(rlock_hold_count_as(client, name, 7, &n), RLOCK_OK);
    CHECK(n == 2);
    CHECK_RC(rlock_is_held_as(client, name, 7, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_is_held_as(client, name, 8, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_is_held(client, name, &b), RLOCK_OK); /* the thread is a different owner */
    CHECK(!b);
    CHECK_RC(rlock_try_acquire_as(client, name, 8, 0, 0), RLOCK_NOT_ACQUIRED);
    /* Any thread may release for an explicit owner. */
    struct as_args a = {name, 7, RLOCK_PANIC, true};
    pthread_t t;
    pthread_create(&t, NULL, unlock_as_thread, &a);
    pthread_join(t, NULL);
    CHECK(a.rc == RLOCK_OK && !a.unlocked);
    pthread_create(&t, NULL, unlock_as_thread, &a);
    pthread_join(t, NULL);
    CHECK(a.rc == RLOCK_OK && a.unlocked);
    CHECK_RC(rlock_release_as(client, name, 7, NULL), RLOCK_NOT_HELD);
}

/* ---- force unlock and the lost-lock callback ---- */
static atomic_int lost_calls;
static char lost_name[64], lost_owner[128], lost_reason[32];
static rlock_result rc_in_callback = RLOCK_OK;

static void on_lost(void *userdata, const char *name, const char *owner, const char *reason) {
    atomic_int *counter = userdata;
    snprintf(lost_name, sizeof lost_name, "%s", name);
    snprintf(lost_owner, sizeof lost_owner, "%s", owner);
    snprintf(lost_reason, sizeof lost_reason, "%s", reason);
    bool b;
    rc_in_callback = rlock_is_locked(client, name, &b); /* must be refused, not deadlock */
    atomic_fetch_add(counter, 1);
}

/* "<uuid>:<digits>": a 36-character UUID, a colon, the owner id. */
static int owner_ok(const char *owner, const char *id) {
    if (strlen(owner) < 38 || owner[36] != ':') return 0;
    for (int i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? owner[i] != '-' : !strchr("0123456789abcdef", owner[i])) return 0;
    }
    for (const char *p = owner + 37; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return id == NULL || strcmp(owner + 37, id) == 0;
}

static void wait_lost(int want) {
    for (int i = 0; i < 500 && atomic_load(&lost_calls) < want; i++) sleep_ms(10);
}

static void test_force_unlock_and_lost(void) {
    rlock_options *o = rlock_options_new();
    CHECK_RC(rlock_options_set_watchdog_timeout_ms(o, 1000), RLOCK_OK);
    rlock_client *holder = NULL;
    CHECK_RC(rlock_client_new(NULL, o, &holder), RLOCK_OK);
    rlock_options_free(o);
    if (!holder) return;
    CHECK_RC(rlock_client_on_lost(holder, on_lost, &lost_calls), RLOCK_OK);
    CHECK_RC(rlock_acquire(holder, "c-force", 0), RLOCK_OK);

    bool released = false;
    CHECK_RC(rlock_force_unlock(client, "c-force", &released), RLOCK_OK);
    CHECK(released);
    CHECK_RC(rlock_force_unlock(client, "c-force", &released), RLOCK_OK);
    CHECK(!released);
    CHECK_RC(rlock_force_unlock(client, "c-force", NULL), RLOCK_OK);

    wait_lost(1);
    CHECK(atomic_load(&lost_calls) == 1);
    CHECK(strcmp(lost_name, "c-force") == 0);
    CHECK(owner_ok(lost_owner, NULL));
    CHECK(strcmp(lost_reason, "gone") == 0);
    CHECK(rc_in_callback == RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_release(holder, "c-force", NULL), RLOCK_LOST);
    CHECK_RC(rlock_release(holder, "c-force", NULL), RLOCK_NOT_HELD);

    /* An explicit owner: its id ends the owner string; same client, same UUID. */
    char thread_owner[128];
    snprintf(thread_owner, sizeof thread_owner, "%s", lost_owner);
    CHECK_RC(rlock_acquire_as(holder, "c-force-as", 77, 0), RLOCK_OK);
    CHECK_RC(rlock_force_unlock(client, "c-force-as", NULL), RLOCK_OK);
    wait_lost(2);
    CHECK(atomic_load(&lost_calls) == 2);
    CHECK(strcmp(lost_name, "c-force-as") == 0);
    CHECK(owner_ok(lost_owner, "77"));
    CHECK(strncmp(lost_owner, thread_owner, 37) == 0);
    CHECK(strcmp(lost_reason, "gone") == 0);
    CHECK_RC(rlock_release_as(holder, "c-force-as", 77, NULL), RLOCK_LOST);

    /* Removing the callback: a further loss calls nothing. */
    CHECK_RC(rlock_client_on_lost(holder, NULL, NULL), RLOCK_OK);
    CHECK_RC(rlock_acquire(holder, "c-force2", 0), RLOCK_OK);
    CHECK_RC(rlock_force_unlock(client, "c-force2", NULL), RLOCK_OK);
    sleep_ms(1500); /* over one renewal period: the loss is detected, nobody is called */
    CHECK(atomic_load(&lost_calls) == 2);
    CHECK_RC(rlock_release(holder, "c-force2", NULL), RLOCK_LOST);
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
        if (rlock_acquire(client, "c-counter", 0) != RLOCK_OK) { atomic_fetch_add(&errors, 1); continue; }
        long v = counter;
        if (i % 64 == 0) sched_yield(); /* widen the race window */
        counter = v + 1;
        if (rlock_release(client, "c-counter", NULL) != RLOCK_OK) atomic_fetch_add(&errors, 1);
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

/* ---- fork(): children make their own clients, inherited ones fail at once ---- */
#define CHILDREN 4
#define CHILD_ROUNDS 50

static long read_counter(const char *path) {
    char buf[32] = "";
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 ? atol(buf) : 0;
}

static int write_counter(const char *path, long v) {
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%ld", v);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -1;
    int ok = write(fd, buf, (size_t)len) == len;
    close(fd);
    return ok ? 0 : -1;
}

/* The child: 0 when all went well, else the number of the failed step. */
static int child_main(const char *path) {
    CHILD_NO_LEAK_CHECK();
    /* The inherited client fails at once with RLOCK_FORKED, whatever the call. */
    double start = now_ms();
    bool b = false;
    uint32_t n = 0;
    rlock_client_info info;
    if (rlock_is_locked(client, "c-fork", &b) != RLOCK_FORKED) return 2;
    if (!last_error_has("fork")) return 3;
    if (rlock_acquire(client, "c-fork", 0) != RLOCK_FORKED) return 4;
    if (rlock_try_acquire(client, "c-fork", 0, 0) != RLOCK_FORKED) return 5;
    if (rlock_release(client, "c-fork", &b) != RLOCK_FORKED) return 6;
    if (rlock_hold_count(client, "c-fork", &n) != RLOCK_FORKED) return 7;
    if (rlock_client_get_info(client, &info) != RLOCK_FORKED) return 8;
    if (rlock_client_on_lost(client, NULL, NULL) != RLOCK_FORKED) return 9;
    if (now_ms() - start > 2000) return 10; /* "at once", even under valgrind */

    rlock_client *mine = NULL;
    if (rlock_client_new(NULL, NULL, &mine) != RLOCK_OK) return 11;
    /* Freeing the inherited client touches nothing of the parent's (and does not hang). */
    rlock_client_free(client);
    for (int i = 0; i < CHILD_ROUNDS; i++) {
        if (rlock_acquire(mine, "c-fork", 0) != RLOCK_OK) return 12;
        long v = read_counter(path);
        if (v < 0) return 13;
        if (i % 8 == 0) sleep_ms(1); /* widen the race window */
        if (write_counter(path, v + 1) != 0) return 14;
        bool unlocked = false;
        if (rlock_release(mine, "c-fork", &unlocked) != RLOCK_OK || !unlocked) return 15;
    }
    rlock_client_free(mine);
    return 0;
}

/* Fenced lock: every acquire takes a strictly larger token; NULL out_token changes nothing. */
static long redis_int(const char *args);

static void test_fenced(void) {
    const char *name = "c:fenced";
    uint64_t t1 = 0, t2 = 0, t3 = 0, untouched = 77;
    bool unlocked = true;
    CHECK_RC(rlock_fenced_acquire(client, name, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_fenced_try_acquire(client, name, 0, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_fenced_acquire(NULL, name, 0, &t1), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_fenced_acquire(client, "", 0, &t1), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_fenced_try_acquire(client, name, -1, 0, &t1), RLOCK_INVALID_ARGUMENT);
    bool locked = true;
    CHECK_RC(rlock_is_locked(client, name, &locked), RLOCK_OK);
    CHECK(!locked);
    CHECK_RC(rlock_fenced_acquire(client, name, 0, &t1), RLOCK_OK);
    CHECK(t1 >= 1);
    CHECK_RC(rlock_fenced_acquire(client, name, 0, &t2), RLOCK_OK); /* re-entry: a new token */
    CHECK(t2 > t1);
    CHECK_RC(rlock_release(client, name, &unlocked), RLOCK_OK);
    CHECK(!unlocked);
    CHECK_RC(rlock_release(client, name, &unlocked), RLOCK_OK);
    CHECK(unlocked);
    /* Another owner: held by it, a bounded try gets no token and writes nothing. */
    CHECK_RC(rlock_acquire_as(client, name, 7, 0), RLOCK_OK);
    CHECK_RC(rlock_fenced_try_acquire(client, name, 20, 0, &untouched), RLOCK_NOT_ACQUIRED);
    CHECK(untouched == 77);
    CHECK_RC(rlock_release_as(client, name, 7, NULL), RLOCK_OK);
    CHECK_RC(rlock_fenced_try_acquire(client, name, 1000, 5000, &t3), RLOCK_OK);
    CHECK(t3 > t2);
    CHECK_RC(rlock_release(client, name, NULL), RLOCK_OK);
    /* The token comes in the acquire's own reply: a hold force-unlocked by this very client
     * right after (so nothing is left to read back) still gave the token it took. */
    uint64_t t4 = 0;
    bool released = false;
    CHECK_RC(rlock_fenced_acquire(client, name, 0, &t4), RLOCK_OK);
    CHECK_RC(rlock_force_unlock(client, name, &released), RLOCK_OK);
    CHECK(released && t4 > t3);
    CHECK(redis_int("GET 'redisson_lock_token:{c:fenced}'") == (long)t4);
    CHECK_RC(rlock_release(client, name, NULL), RLOCK_NOT_HELD);
}

/* The integer reply of `redis-cli <args>` on the test server (redis-tools comes with
 * `make deps`); -1 when there is none. */
static long redis_int(const char *args) {
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
static long redis_llen(const char *key) {
    char args[256];
    snprintf(args, sizeof args, "LLEN '%s'", key);
    return redis_int(args);
}

/* Thread body: waits for the fair lock as owner (intptr_t)arg, then releases it. */
static atomic_int fair_order[4];
static atomic_int fair_next;

static void *fair_waiter(void *arg) {
    uint64_t owner = (uint64_t)(intptr_t)arg;
    if (rlock_family_acquire(client, RLOCK_FAIR_LOCK, "c:fair", owner, 0, NULL) == RLOCK_OK) {
        fair_order[atomic_fetch_add(&fair_next, 1)] = (int)owner;
        rlock_family_release(client, RLOCK_FAIR_LOCK, "c:fair", owner, NULL);
    }
    return NULL;
}

static void test_family(void) {
    const char *rw = "c:rw";
    bool b = false;
    uint32_t n = 0;
    uint64_t token = 5;
    /* Bad kinds and arguments change nothing. */
    CHECK_RC(rlock_family_acquire(client, 5, rw, RLOCK_THREAD, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_family_acquire(client, -1, rw, RLOCK_THREAD, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_family_is_locked(client, 9, rw, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_family_acquire(client, RLOCK_READ_LOCK, "", RLOCK_THREAD, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_family_release(client, RLOCK_READ_LOCK, rw, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_is_locked(client, rw, &b), RLOCK_OK);
    CHECK(!b);

    /* Readers share (this thread and owner 1); a writer (owner 2) waits. */
    CHECK_RC(rlock_family_acquire(client, RLOCK_READ_LOCK, rw, RLOCK_THREAD, 0, &token), RLOCK_OK);
    CHECK(token == 0);
    CHECK_RC(rlock_family_try_acquire(client, RLOCK_READ_LOCK, rw, 1, 0, 0, NULL), RLOCK_OK);
    CHECK_RC(rlock_family_hold_count(client, RLOCK_READ_LOCK, rw, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_family_is_locked(client, RLOCK_READ_LOCK, rw, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_family_is_locked(client, RLOCK_WRITE_LOCK, rw, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_family_try_acquire(client, RLOCK_WRITE_LOCK, rw, 2, 20, 0, NULL), RLOCK_NOT_ACQUIRED);
    /* A reader asking for the write lock: refused at once. */
    CHECK_RC(rlock_family_acquire(client, RLOCK_WRITE_LOCK, rw, RLOCK_THREAD, 0, NULL), RLOCK_WOULD_DEADLOCK);
    CHECK(strcmp(rlock_result_str(RLOCK_WOULD_DEADLOCK), "RLOCK_WOULD_DEADLOCK") == 0);
    CHECK_RC(rlock_family_release(client, RLOCK_READ_LOCK, rw, RLOCK_THREAD, &b), RLOCK_OK);
    CHECK(!b); /* owner 1 still reads */
    CHECK_RC(rlock_family_release(client, RLOCK_READ_LOCK, rw, 1, &b), RLOCK_OK);
    CHECK(b);

    /* The writer downgrades: write, then read, then release the write hold. */
    CHECK_RC(rlock_family_acquire(client, RLOCK_WRITE_LOCK, rw, 2, 0, NULL), RLOCK_OK);
    CHECK_RC(rlock_family_is_held(client, RLOCK_WRITE_LOCK, rw, 2, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_family_try_acquire(client, RLOCK_READ_LOCK, rw, 1, 20, 0, NULL), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_family_acquire(client, RLOCK_READ_LOCK, rw, 2, 0, NULL), RLOCK_OK);
    CHECK_RC(rlock_family_release(client, RLOCK_WRITE_LOCK, rw, 2, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_family_try_acquire(client, RLOCK_READ_LOCK, rw, 1, 0, 0, NULL), RLOCK_OK);
    CHECK_RC(rlock_family_force_unlock(client, RLOCK_WRITE_LOCK, rw, &b), RLOCK_OK);
    CHECK(!b); /* read locked: the write side does not unlock it */
    CHECK_RC(rlock_family_force_unlock(client, RLOCK_READ_LOCK, rw, &b), RLOCK_OK);
    CHECK(b);
    /* Force-unlocked through this client, which forgot its holds there. */
    CHECK_RC(rlock_family_release(client, RLOCK_READ_LOCK, rw, 2, NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_family_release(client, RLOCK_READ_LOCK, rw, 1, NULL), RLOCK_NOT_HELD);

    /* Fair: a holder, then 4 waiters queued one after another, granted in that order. */
    CHECK_RC(rlock_family_acquire(client, RLOCK_FAIR_LOCK, "c:fair", 10, 0, NULL), RLOCK_OK);
    CHECK_RC(rlock_family_try_acquire(client, RLOCK_FAIR_LOCK, "c:fair", 11, 50, 0, NULL), RLOCK_NOT_ACQUIRED);
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        pthread_create(&threads[i], NULL, fair_waiter, (void *)(intptr_t)(20 + i));
        /* The next waiter starts once this one is queued. */
        double until = now_ms() + 20000;
        while (redis_llen("redisson_lock_queue:{c:fair}") != i + 1 && now_ms() < until) sleep_ms(5);
        CHECK(redis_llen("redisson_lock_queue:{c:fair}") == i + 1);
    }
    CHECK_RC(rlock_family_release(client, RLOCK_FAIR_LOCK, "c:fair", 10, &b), RLOCK_OK);
    CHECK(b);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    CHECK(atomic_load(&fair_next) == 4);
    for (int i = 0; i < 4; i++) CHECK(fair_order[i] == 20 + i);
    CHECK(redis_llen("redisson_lock_queue:{c:fair}") == 0);

    /* A waiter whose wait runs out leaves the queue before the call returns. */
    CHECK_RC(rlock_family_acquire(client, RLOCK_FAIR_LOCK, "c:fair", 10, 0, NULL), RLOCK_OK);
    CHECK_RC(rlock_family_try_acquire(client, RLOCK_FAIR_LOCK, "c:fair", 11, 200, 0, NULL), RLOCK_NOT_ACQUIRED);
    CHECK(redis_llen("redisson_lock_queue:{c:fair}") == 0);
    CHECK_RC(rlock_family_release(client, RLOCK_FAIR_LOCK, "c:fair", 10, NULL), RLOCK_OK);
}

static void test_semaphore(void) {
    const char *sem = "c:sem";
    bool set = false;
    int64_t n = -7;
    CHECK_RC(rlock_semaphore_available_permits(client, sem, &n), RLOCK_OK);
    CHECK(n == 0); /* a missing key is 0 permits */
    CHECK_RC(rlock_semaphore_try_acquire(client, sem, 1, 0), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_semaphore_try_set_permits(client, sem, 2, 0, &set), RLOCK_OK);
    CHECK(set);
    CHECK_RC(rlock_semaphore_try_set_permits(client, sem, 5, 0, &set), RLOCK_OK);
    CHECK(!set);
    CHECK_RC(rlock_semaphore_acquire(client, sem, 2), RLOCK_OK);
    CHECK_RC(rlock_semaphore_try_acquire(client, sem, 1, 30), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_semaphore_release(client, sem, 1, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_semaphore_release(client, sem, 1, NULL), RLOCK_OK);
    CHECK_RC(rlock_semaphore_add_permits(client, sem, -1, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_semaphore_drain_permits(client, sem, &n), RLOCK_OK);
    CHECK(n == 1);
    /* Bad input changes nothing. */
    CHECK_RC(rlock_semaphore_acquire(client, sem, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_acquire(client, sem, -3), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_release(client, sem, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_try_acquire(client, sem, 1, -1), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_try_set_permits(client, sem, -1, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_available_permits(client, sem, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_acquire(NULL, sem, 1), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_acquire(client, "", 1), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_available_permits(client, sem, &n), RLOCK_OK);
    CHECK(n == 0);
}

/* ---- the permit-expirable semaphore ---- */
static void test_permit_semaphore(void) {
    const char *sem = "c:pes";
    char id[RLOCK_PERMIT_ID_SIZE], id2[RLOCK_PERMIT_ID_SIZE], none[RLOCK_PERMIT_ID_SIZE] = "untouched";
    bool set = false;
    int64_t avail = -1, held = -1;
    CHECK_RC(rlock_permit_semaphore_try_acquire(client, sem, 0, 0, none), RLOCK_NOT_ACQUIRED);
    CHECK(strcmp(none, "untouched") == 0);
    CHECK_RC(rlock_permit_semaphore_try_set_permits(client, sem, 2, 0, &set), RLOCK_OK);
    CHECK(set);
    CHECK_RC(rlock_permit_semaphore_acquire(client, sem, 60000, id), RLOCK_OK);
    CHECK(strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32);
    CHECK_RC(rlock_permit_semaphore_try_acquire(client, sem, 100, 0, id2), RLOCK_OK);
    CHECK(strcmp(id, id2) != 0);
    CHECK_RC(rlock_permit_semaphore_permits(client, sem, &avail, &held), RLOCK_OK);
    CHECK(avail == 0 && held == 2);
    CHECK(redis_int("ZCARD '{c:pes}:timeout'") == 2);
    CHECK_RC(rlock_permit_semaphore_try_acquire(client, sem, 30, 0, none), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_permit_semaphore_update_lease(client, sem, id, 0), RLOCK_OK);
    CHECK_RC(rlock_permit_semaphore_release(client, sem, id), RLOCK_OK);
    CHECK_RC(rlock_permit_semaphore_release(client, sem, id), RLOCK_NOT_HELD);
    CHECK_RC(rlock_permit_semaphore_update_lease(client, sem, id, 1000), RLOCK_NOT_HELD);
    CHECK_RC(rlock_permit_semaphore_release(client, sem, id2), RLOCK_OK);
    /* Bad input changes nothing. */
    CHECK_RC(rlock_permit_semaphore_release(client, sem, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_semaphore_release(client, sem, "xyz"), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_semaphore_update_lease(client, sem, "+0112233445566778899aabbccddeeff", 0),
             RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_semaphore_acquire(client, sem, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_semaphore_try_acquire(client, sem, -1, 0, none), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_semaphore_acquire(NULL, sem, 0, none), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_semaphore_acquire(client, "", 0, none), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_semaphore_try_set_permits(client, sem, -1, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(strcmp(none, "untouched") == 0);
    CHECK_RC(rlock_permit_semaphore_add_permits(client, sem, 1, &avail), RLOCK_OK);
    CHECK(avail == 3);
    CHECK_RC(rlock_permit_semaphore_permits(client, sem, &avail, &held), RLOCK_OK);
    CHECK(avail == 3 && held == 0);

    /* A permit removed under the watchdog reaches the client's callback, the permit id in the
     * owner argument; its release fails with RLOCK_LOST. */
    rlock_options *o = rlock_options_new();
    CHECK_RC(rlock_options_set_watchdog_timeout_ms(o, 600), RLOCK_OK);
    rlock_client *holder = NULL;
    CHECK_RC(rlock_client_new(NULL, o, &holder), RLOCK_OK);
    rlock_options_free(o);
    if (!holder) return;
    atomic_int calls = 0;
    CHECK_RC(rlock_client_on_lost(holder, on_lost, &calls), RLOCK_OK);
    CHECK_RC(rlock_permit_semaphore_acquire(holder, sem, 0, id), RLOCK_OK);
    CHECK(redis_int("DEL '{c:pes}:timeout'") == 1);
    for (int i = 0; i < 500 && atomic_load(&calls) < 1; i++) sleep_ms(10);
    CHECK(atomic_load(&calls) == 1);
    CHECK(strcmp(lost_name, sem) == 0);
    CHECK(strcmp(lost_owner, id) == 0);
    CHECK(strcmp(lost_reason, "gone") == 0);
    CHECK_RC(rlock_permit_semaphore_release(holder, sem, id), RLOCK_LOST);
    rlock_client_free(holder);
}

/* ---- the multi-lock ---- */
struct multi_arg {
    const rlock_lock_ref *members;
    int rounds;
    atomic_int *inside, *total, *errors;
};

/* Takes the members (in this thread's order) `rounds` times; counts overlaps as errors. */
static void *multi_worker(void *p) {
    struct multi_arg *a = p;
    for (int i = 0; i < a->rounds; i++) {
        if (rlock_multi_acquire(a->members, 2, RLOCK_THREAD, 0) != RLOCK_OK) { atomic_fetch_add(a->errors, 1); continue; }
        if (atomic_fetch_add(a->inside, 1) != 0) atomic_fetch_add(a->errors, 1);
        sched_yield();
        atomic_fetch_sub(a->inside, 1);
        atomic_fetch_add(a->total, 1);
        if (rlock_multi_release(a->members, 2, RLOCK_THREAD) != RLOCK_OK) atomic_fetch_add(a->errors, 1);
    }
    return NULL;
}

static void test_multi_lock(void) {
    rlock_lock_ref m[3] = {
        {client, "c:m:a", RLOCK_LOCK},
        {client, "c:m:b", RLOCK_FAIR_LOCK},
        {client, "c:m:c", RLOCK_WRITE_LOCK},
    };
    /* Another owner holds one member: nothing is taken. */
    CHECK_RC(rlock_family_acquire(client, RLOCK_FAIR_LOCK, "c:m:b", 5, 0, NULL), RLOCK_OK);
    CHECK_RC(rlock_multi_try_acquire(m, 3, RLOCK_THREAD, 100, 0), RLOCK_NOT_ACQUIRED);
    bool locked = true;
    CHECK_RC(rlock_is_locked(client, "c:m:a", &locked), RLOCK_OK);
    CHECK(!locked);
    CHECK_RC(rlock_family_release(client, RLOCK_FAIR_LOCK, "c:m:b", 5, NULL), RLOCK_OK);
    CHECK_RC(rlock_multi_acquire(m, 3, RLOCK_THREAD, 0), RLOCK_OK);
    bool held = false;
    CHECK_RC(rlock_family_is_held(client, RLOCK_WRITE_LOCK, "c:m:c", RLOCK_THREAD, &held), RLOCK_OK);
    CHECK(held);
    /* Release frees every member and reports the failures. */
    CHECK_RC(rlock_force_unlock(client, "c:m:a", NULL), RLOCK_OK);
    rlock_result rc = rlock_multi_release(m, 3, RLOCK_THREAD);
    CHECK(rc == RLOCK_NOT_HELD || rc == RLOCK_LOST);
    char msg[512];
    rlock_last_error(msg, sizeof msg);
    CHECK(strstr(msg, "1 of 3") != NULL && strstr(msg, "'c:m:a'") != NULL);
    CHECK_RC(rlock_family_is_locked(client, RLOCK_FAIR_LOCK, "c:m:b", &locked), RLOCK_OK);
    CHECK(!locked);
    CHECK_RC(rlock_family_is_locked(client, RLOCK_WRITE_LOCK, "c:m:c", &locked), RLOCK_OK);
    CHECK(!locked);

    /* Threads taking {a, b} and {b, a}: no deadlock, one inside at a time. */
    rlock_lock_ref ab[2] = {{client, "c:d:a", RLOCK_LOCK}, {client, "c:d:b", RLOCK_LOCK}};
    rlock_lock_ref ba[2] = {{client, "c:d:b", RLOCK_LOCK}, {client, "c:d:a", RLOCK_LOCK}};
    atomic_int inside = 0, total = 0, errs = 0;
    pthread_t t[4];
    struct multi_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct multi_arg){i % 2 ? ba : ab, 50, &inside, &total, &errs};
        pthread_create(&t[i], NULL, multi_worker, &args[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    CHECK(atomic_load(&errs) == 0);
    CHECK(atomic_load(&total) == 200);

    /* Bad input. */
    rlock_lock_ref bad_kind[1] = {{client, "c:m:a", 42}};
    rlock_lock_ref no_client[1] = {{NULL, "c:m:a", RLOCK_LOCK}};
    CHECK_RC(rlock_multi_acquire(NULL, 1, RLOCK_THREAD, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_acquire(m, 0, RLOCK_THREAD, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_acquire(bad_kind, 1, RLOCK_THREAD, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_acquire(no_client, 1, RLOCK_THREAD, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_try_acquire(m, 3, RLOCK_THREAD, -1, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_is_locked(client, "c:m:a", &locked), RLOCK_OK);
    CHECK(!locked);
}

/* The last integer redis-cli prints for `args` on the test server (-1 when none). */
static long redis_last_int(const char *args) {
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

/* Thread body: waits on the latch "c:latch" without a limit. */
static atomic_int latch_open;

static void *latch_waiter(void *arg) {
    bool reached = false;
    rlock_result rc = rlock_latch_wait(client, "c:latch", -1, &reached);
    *(rlock_result *)arg = rc;
    if (rc == RLOCK_OK && reached) atomic_fetch_add(&latch_open, 1);
    return NULL;
}

static void test_latch(void) {
    const char *latch = "c:latch";
    bool b = false;
    uint64_t n = 7;
    CHECK_RC(rlock_latch_count(client, latch, &n), RLOCK_OK);
    CHECK(n == 0); /* a missing key is an open latch */
    CHECK_RC(rlock_latch_wait(client, latch, 0, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_latch_try_set_count(client, latch, 2, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_latch_try_set_count(client, latch, 5, &b), RLOCK_OK);
    CHECK(!b); /* only when missing; nothing changed */
    CHECK(redis_last_int("GET c:latch") == 2);

    /* Three threads wait; the first count-down opens nothing, the second opens it for all. */
    pthread_t t[3];
    rlock_result rcs[3];
    for (int i = 0; i < 3; i++) {
        rcs[i] = RLOCK_PANIC;
        pthread_create(&t[i], NULL, latch_waiter, &rcs[i]);
    }
    double until = now_ms() + 20000;
    while (redis_last_int("PUBSUB NUMSUB 'redisson_countdownlatch__channel__{c:latch}'") != 1 && now_ms() < until)
        sleep_ms(5);
    CHECK_RC(rlock_latch_count_down(client, latch), RLOCK_OK);
    CHECK_RC(rlock_latch_count(client, latch, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK(atomic_load(&latch_open) == 0);
    double zero = now_ms();
    CHECK_RC(rlock_latch_count_down(client, latch), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK(rcs[i] == RLOCK_OK);
    }
    CHECK(atomic_load(&latch_open) == 3);
    CHECK(now_ms() - zero < 2000);
    CHECK(redis_last_int("EXISTS c:latch") == 0); /* the key goes at zero */

    /* A timed wait runs out. */
    CHECK_RC(rlock_latch_try_set_count(client, latch, 1, NULL), RLOCK_OK);
    double start = now_ms();
    b = true;
    CHECK_RC(rlock_latch_wait(client, latch, 150, &b), RLOCK_OK);
    CHECK(!b);
    CHECK(now_ms() - start >= 150);

    /* Bad input changes nothing. */
    CHECK_RC(rlock_latch_try_set_count(client, latch, -1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_latch_wait(client, latch, -2, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_latch_count(client, latch, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_latch_count_down(NULL, latch), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_latch_count_down(client, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_latch_count_down(client, ""), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_latch_count_down(client, "wrongtype"), RLOCK_REDIS);
    CHECK_RC(rlock_latch_count(client, latch, &n), RLOCK_OK);
    CHECK(n == 1);

    /* delete: whatever the count; says whether it existed. */
    CHECK_RC(rlock_latch_delete(client, latch, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_latch_delete(client, latch, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_latch_delete(client, latch, NULL), RLOCK_OK);
}

/* ---- describe and list: core's JSON text, freed with rlock_string_free ---- */
static void test_describe(void) {
    char *json = NULL;
    CHECK_RC(rlock_acquire(client, "c-describe", 0), RLOCK_OK);
    CHECK_RC(rlock_acquire(client, "c-describe", 0), RLOCK_OK);
    CHECK_RC(rlock_client_describe(client, "c-describe", &json), RLOCK_OK);
    CHECK(json && strstr(json, "\"kind\":\"lock\""));
    CHECK(json && strstr(json, "\"count\":2"));
    CHECK(json && strstr(json, "\"name\":\"c-describe\""));
    rlock_string_free(json);

    /* The holder record (app_name unset here) is written within about a second. */
    int recorded = 0;
    for (double until = now_ms() + 10000; !recorded && now_ms() < until; sleep_ms(20)) {
        json = NULL;
        CHECK_RC(rlock_client_describe(client, "c-describe", &json), RLOCK_OK);
        char pid[32];
        snprintf(pid, sizeof pid, "\"pid\":%d", (int)getpid());
        recorded = json && strstr(json, pid) != NULL;
        rlock_string_free(json);
    }
    CHECK(recorded);
    CHECK_RC(rlock_release(client, "c-describe", NULL), RLOCK_OK);
    CHECK_RC(rlock_release(client, "c-describe", NULL), RLOCK_OK);

    json = NULL;
    CHECK_RC(rlock_client_describe(client, "c-describe-missing", &json), RLOCK_OK);
    CHECK(json && strstr(json, "\"kind\":\"none\""));
    rlock_string_free(json);
    json = NULL;
    CHECK_RC(rlock_client_describe(client, "wrongtype", &json), RLOCK_OK); /* a foreign key */
    CHECK(json && strstr(json, "\"kind\":\"other\""));
    rlock_string_free(json);

    CHECK_RC(rlock_acquire(client, "c-listed", 0), RLOCK_OK);
    json = NULL;
    CHECK_RC(rlock_client_list(client, "c-listed*", 0, &json), RLOCK_OK);
    CHECK(json && strcmp(json, "[{\"name\":\"c-listed\",\"kind\":\"lock\"}]") == 0);
    rlock_string_free(json);
    json = NULL;
    CHECK_RC(rlock_client_list(client, NULL, 1, &json), RLOCK_OK);
    int entries = 0;
    for (const char *p = json; p && (p = strstr(p, "\"name\":")) != NULL; p++) entries++;
    CHECK(json && json[0] == '[' && entries == 1);
    rlock_string_free(json);
    CHECK_RC(rlock_release(client, "c-listed", NULL), RLOCK_OK);

    /* Bad input: nothing written, nothing sent. */
    json = NULL;
    CHECK_RC(rlock_client_describe(client, "", &json), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_describe(client, NULL, &json), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_describe(NULL, "x", &json), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_describe(client, "x", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_list(client, "\xff", 0, &json), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_list(client, NULL, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(json == NULL);
    rlock_string_free(NULL);
}

static void test_fork(void) {
    /* The parent's client is in use (its runtime thread runs) when the children are made. */
    bool b = true;
    CHECK_RC(rlock_acquire(client, "c-fork-parent", 0), RLOCK_OK);
    CHECK_RC(rlock_is_locked(client, "c-fork", &b), RLOCK_OK);
    CHECK(!b);
    char dir[] = "/tmp/rlock-c-fork-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/counter", dir);
    CHECK(write_counter(path, 0) == 0);

    fflush(stdout);
    fflush(stderr);
    pid_t pids[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        pids[i] = fork();
        if (pids[i] == 0) _exit(child_main(path));
        CHECK(pids[i] > 0);
    }
    for (int i = 0; i < CHILDREN; i++) {
        int status = -1;
        if (pids[i] <= 0) continue;
        while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {}
        CHECK(WIFEXITED(status));
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
            fprintf(stderr, "fork child %d exited %d\n", i, WEXITSTATUS(status));
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK(read_counter(path) == CHILDREN * CHILD_ROUNDS);
    unlink(path);
    rmdir(dir);

    /* The parent's client still works, and still holds its lock. */
    uint32_t n = 0;
    CHECK_RC(rlock_hold_count(client, "c-fork-parent", &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_release(client, "c-fork-parent", NULL), RLOCK_OK);
    CHECK_RC(rlock_is_locked(client, "c-fork", &b), RLOCK_OK);
    CHECK(!b);
}

/* ---- rlock_client_free while other threads wait in rlock_acquire ---- */
#define BLOCKED 4
static rlock_client *victim;
static atomic_int entering;
struct blocked { rlock_result rc; };

static void *blocked_acquire(void *arg) {
    struct blocked *b = arg;
    atomic_fetch_add(&entering, 1);
    b->rc = rlock_acquire(victim, "c-free-race", 0);
    return NULL;
}

static void test_free_racing_calls(void) {
    CHECK_RC(rlock_acquire_as(client, "c-free-race", 5, 0), RLOCK_OK);
    CHECK_RC(rlock_client_new(NULL, NULL, &victim), RLOCK_OK);
    if (!victim) return;
    struct blocked b[BLOCKED];
    pthread_t t[BLOCKED];
    for (int i = 0; i < BLOCKED; i++) {
        b[i].rc = RLOCK_OK;
        pthread_create(&t[i], NULL, blocked_acquire, &b[i]);
    }
    /* Every thread is inside rlock_acquire (a call started before the free), waiting. */
    while (atomic_load(&entering) < BLOCKED) sleep_ms(10);
    sleep_ms(1000);
    double start = now_ms();
    rlock_client_free(victim); /* does not wait for the calls */
    CHECK(now_ms() - start < 1000);
    for (int i = 0; i < BLOCKED; i++) {
        pthread_join(t[i], NULL);
        CHECK(b[i].rc == RLOCK_CLOSED);
    }
    bool held = false;
    CHECK_RC(rlock_is_held_as(client, "c-free-race", 5, &held), RLOCK_OK);
    CHECK(held); /* the waiters never got it */
    CHECK_RC(rlock_release_as(client, "c-free-race", 5, NULL), RLOCK_OK);
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
    rc = rlock_acquire(client, "gone", 0);
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

    /* Two command connections to the one server: the same locks. */
    rlock_options *o = rlock_options_new();
    CHECK_RC(rlock_options_set_command_connections(o, 2), RLOCK_OK);
    rlock_client *two = NULL;
    CHECK_RC(rlock_client_new(NULL, o, &two), RLOCK_OK);
    rlock_options_free(o);
    if (two) {
        CHECK_RC(rlock_acquire(two, "c-two-conns", 0), RLOCK_OK);
        CHECK_RC(rlock_acquire(two, "c-two-conns", 0), RLOCK_OK);
        CHECK_RC(rlock_try_acquire(client, "c-two-conns", 0, 0), RLOCK_NOT_ACQUIRED);
        CHECK_RC(rlock_release(two, "c-two-conns", NULL), RLOCK_OK);
        CHECK_RC(rlock_release(two, "c-two-conns", NULL), RLOCK_OK);
        rlock_client_free(two);
    }
    rlock_client *c = (rlock_client *)0x1;
    CHECK_RC(rlock_client_new("redis+cluster://127.0.0.1:x/", NULL, &c), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_new("redis+sentinel://127.0.0.1:26379/", NULL, &c), RLOCK_INVALID_ARGUMENT);
    CHECK(c == (rlock_client *)0x1);

    /* A 3-master cluster (run.sh): the same calls work through a redis+cluster:// URL. */
    const char *url = getenv("RLOCK_CLUSTER_URL");
    CHECK(url != NULL);
    if (!url) return;
    rlock_client *cl = NULL;
    CHECK_RC(rlock_client_new(url, NULL, &cl), RLOCK_OK);
    if (!cl) return;
    CHECK_RC(rlock_client_get_info(cl, &info), RLOCK_OK);
    CHECK(info.topology == RLOCK_TOPOLOGY_CLUSTER && info.sharded_pubsub && info.replica_sync);
    char name[32];
    for (int i = 0; i < 30; i++) { /* names on every master */
        snprintf(name, sizeof name, "c-cluster-%d", i);
        CHECK_RC(rlock_acquire(cl, name, 0), RLOCK_OK);
        CHECK_RC(rlock_acquire(cl, name, 0), RLOCK_OK);
        uint32_t n = 0;
        CHECK_RC(rlock_hold_count(cl, name, &n), RLOCK_OK);
        CHECK(n == 2);
        CHECK_RC(rlock_try_acquire_as(cl, name, 7, 0, 0), RLOCK_NOT_ACQUIRED);
        CHECK_RC(rlock_release(cl, name, NULL), RLOCK_OK);
        CHECK_RC(rlock_release(cl, name, NULL), RLOCK_OK);
        bool locked = true;
        CHECK_RC(rlock_is_locked(cl, name, &locked), RLOCK_OK);
        CHECK(!locked);
    }
    CHECK_RC(rlock_acquire(cl, "a{}b", 0), RLOCK_INVALID_ARGUMENT); /* cross-slot name */
    /* A latch on the cluster; a tagged latch name would put its channel in another slot. */
    bool set = false, open = false;
    uint64_t count = 9;
    CHECK_RC(rlock_latch_try_set_count(cl, "c-cluster-latch", 1, &set), RLOCK_OK);
    CHECK(set);
    CHECK_RC(rlock_latch_count_down(cl, "c-cluster-latch"), RLOCK_OK);
    CHECK_RC(rlock_latch_wait(cl, "c-cluster-latch", 0, &open), RLOCK_OK);
    CHECK(open);
    CHECK_RC(rlock_latch_count(cl, "c-cluster-latch", &count), RLOCK_OK);
    CHECK(count == 0);
    CHECK_RC(rlock_latch_try_set_count(cl, "c{x}latch", 1, NULL), RLOCK_INVALID_ARGUMENT);
    rlock_client_free(cl);
}

/* ---- stats and the Prometheus text ---- */
static void test_stats(void) {
    rlock_options *o = rlock_options_new();
    CHECK_RC(rlock_options_set_app_name(o, "c-stats"), RLOCK_OK);
    CHECK_RC(rlock_options_set_app_name(o, ""), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_metrics(o, true), RLOCK_OK);
    CHECK_RC(rlock_options_set_holder_record(o, true), RLOCK_OK);
    rlock_client *c = NULL;
    CHECK_RC(rlock_client_new(NULL, o, &c), RLOCK_OK);
    rlock_options_free(o);
    if (!c) return;
    rlock_stats s;
    CHECK_RC(rlock_client_get_stats(c, &s), RLOCK_OK);
    CHECK(s.acquires == 0 && s.wait.count == 0);
    for (int i = 0; i < 3; i++) {
        CHECK_RC(rlock_acquire(c, "c-stats", 0), RLOCK_OK);
        CHECK_RC(rlock_release(c, "c-stats", NULL), RLOCK_OK);
    }
    CHECK_RC(rlock_release(c, "c-stats", NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_client_get_stats(c, &s), RLOCK_OK);
    CHECK(s.acquires == 3);
    CHECK(s.contended_acquires == 0);
    CHECK(s.releases == 3);
    CHECK(s.wait.count == 3 && s.hold.count == 3);
    CHECK(s.wait.p50_ms > 0 && s.wait.p50_ms <= s.wait.max_ms);
    CHECK(s.errors[RLOCK_NOT_HELD] == 1);
    CHECK(s.errors[RLOCK_TIMEOUT] == 0);

    size_t needed = 0;
    CHECK_RC(rlock_client_prometheus_text(c, NULL, 0, &needed), RLOCK_OK);
    CHECK(needed > 100);
    char small[16];
    size_t again = 0;
    CHECK_RC(rlock_client_prometheus_text(c, small, sizeof small, &again), RLOCK_OK);
    CHECK(again == needed && strlen(small) == sizeof small - 1);
    char *text = malloc(needed + 1);
    CHECK_RC(rlock_client_prometheus_text(c, text, needed + 1, &again), RLOCK_OK);
    CHECK(strlen(text) == needed);
    CHECK(strstr(text, "rlock_acquires_total{app=\"c-stats\"} 3\n") != NULL);
    CHECK(strstr(text, "rlock_errors_total{app=\"c-stats\",kind=\"not_held\"} 1\n") != NULL);
    free(text);

    CHECK_RC(rlock_client_get_stats(NULL, &s), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_get_stats(c, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_prometheus_text(c, NULL, 0, NULL), RLOCK_INVALID_ARGUMENT);
    rlock_client_free(c);
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
    test_threads();
    test_fenced();
    test_family();
    test_semaphore();
    test_permit_semaphore();
    test_multi_lock();
    test_latch();
    test_stats();
    test_describe();
    test_fork();
    test_free_racing_calls();
    test_topologies();
    test_server_gone();
    rlock_client_free(client);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
