/* Tests of the C API against a private redis-server (REDIS_URL, set by tests/c/run.sh).
 * Every function, every bad input, the options object, 8 threads x 1000 critical sections,
 * clients after fork(), a client free and a lock handle free racing blocked calls, a 3-master
 * cluster (RLOCK_CLUSTER_URL),
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
            char *msg_ = rlock_last_error();                                     \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__,       \
                    __LINE__, #cond, msg_ ? msg_ : "?");                         \
            rlock_string_free(msg_);                                             \
        }                                                                        \
    } while (0)

#define CHECK_RC(call, want)                                                     \
    do {                                                                         \
        rlock_result rc_ = (call);                                               \
        if (rc_ != (want)) {                                                     \
            char *msg_ = rlock_last_error();                                     \
            fprintf(stderr, "FAIL %s:%d: %s = %s, want %s (%s)\n", __FILE__,     \
                    __LINE__, #call, rlock_result_str(rc_),                      \
                    rlock_result_str(want), msg_ ? msg_ : "?");                  \
            rlock_string_free(msg_);                                             \
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

/* A new handle on the lock of `kind` named `name` (NULL when that failed: the CHECK says why). */
static rlock_lock *lock_on(rlock_client *c, const char *name, int kind) {
    rlock_lock *l = NULL;
    CHECK_RC(rlock_lock_new(c, name, kind, &l), RLOCK_OK);
    return l;
}

/* Whether this thread's last error message contains `what`. */
static int last_error_has(const char *what) {
    char *msg = rlock_last_error();
    int has = msg && strstr(msg, what) != NULL;
    rlock_string_free(msg);
    return has;
}


/* ---- result codes and the last error ---- */
static void *last_error_of_new_thread(void *arg) {
    char *msg = rlock_last_error();
    *(int *)arg = msg && msg[0] == '\0';
    rlock_string_free(msg);
    return NULL;
}

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
    rlock_connection_info info = {RLOCK_TOPOLOGY_CLUSTER, true, false};
    CHECK_RC(rlock_client_info(c, &info), RLOCK_OK);
    CHECK(info.topology == RLOCK_TOPOLOGY_SINGLE && info.replica_sync);
    int64_t ms = 0;
    rlock_lock *l = lock_on(c, "c-options", RLOCK_LOCK);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_remaining_ttl(l, &ms), RLOCK_OK);
    CHECK(ms > 0 && ms <= 1000); /* the 1000 ms watchdog lease, not 30000 nor 60000 */
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
static void test_bad_input(void) {
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
    CHECK_RC(rlock_lock_new(client, "x", 5, &l), RLOCK_INVALID_ARGUMENT);
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

/* ---- one thread: reentrancy, queries, leases ---- */
struct probe { rlock_lock *lock; rlock_result try_rc; bool held; rlock_result unlock_rc; };

static void *probe_thread(void *arg) {
    struct probe *p = arg;
    p->try_rc = rlock_lock_acquire(p->lock, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL);
    rlock_lock_is_held(p->lock, RLOCK_THREAD, &p->held);
    p->unlock_rc = rlock_lock_release(p->lock, RLOCK_THREAD, NULL);
    return NULL;
}

static void test_reentrancy_and_queries(void) {
    bool b = false;
    uint32_t n = 0;
    int64_t ms = 0;
    rlock_lock *l = lock_on(client, "c-reentrant", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_remaining_ttl(l, &ms), RLOCK_OK);
    CHECK(ms == -2);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_hold_count(l, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 2);
    CHECK_RC(rlock_lock_is_held(l, RLOCK_THREAD, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_lock_is_locked(l, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_lock_remaining_ttl(l, &ms), RLOCK_OK);
    CHECK(ms > 25000 && ms <= 30000);

    /* Another thread is another owner (on the same handle): it contends and cannot unlock. */
    struct probe p = {l, RLOCK_OK, true, RLOCK_OK};
    pthread_t t;
    pthread_create(&t, NULL, probe_thread, &p);
    pthread_join(t, NULL);
    CHECK(p.try_rc == RLOCK_NOT_ACQUIRED);
    CHECK(p.held == false);
    CHECK(p.unlock_rc == RLOCK_NOT_HELD);

    /* A second handle on the same name is the same lock. */
    rlock_lock *same = lock_on(client, "c-reentrant", RLOCK_LOCK);
    CHECK_RC(rlock_lock_hold_count(same, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 2);
    rlock_lock_free(same);

    bool unlocked = true;
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, &unlocked), RLOCK_OK);
    CHECK(!unlocked); /* re-entered: still held */
    CHECK_RC(rlock_lock_hold_count(l, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, &unlocked), RLOCK_OK);
    CHECK(unlocked); /* the last level: free now */
    CHECK_RC(rlock_lock_is_locked(l, &b), RLOCK_OK);
    CHECK(!b);
    unlocked = true;
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, &unlocked), RLOCK_NOT_HELD);
    CHECK(unlocked); /* untouched on failure */

    /* A bounded wait on a held lock waits the bound, then gives up. */
    CHECK_RC(rlock_lock_acquire(l, 42, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    double start = now_ms();
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 200, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    double took = now_ms() - start;
    CHECK(took >= 200 && took < 5000);
    CHECK_RC(rlock_lock_release(l, 42, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    rlock_lock_free(l);

    /* A fixed lease ends by itself; the holder was told (lease_ending), and its late unlock is
     * LOST. */
    l = lock_on(client, "c-lease", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, 300, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_remaining_ttl(l, &ms), RLOCK_OK);
    CHECK(ms > 0 && ms <= 300);
    CHECK_RC(rlock_lock_acquire(l, 9, 5000, RLOCK_FOREVER, NULL), RLOCK_OK); /* gets in after expiry */
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_LOST);
    CHECK_RC(rlock_lock_release(l, 9, NULL), RLOCK_OK);
    rlock_lock_free(l);
}

/* ---- explicit owners ---- */
struct as_args { rlock_lock *lock; uint64_t owner; rlock_result rc; bool unlocked; };
static void *unlock_as_thread(void *arg) {
    struct as_args *a = arg;
    a->rc = rlock_lock_release(a->lock, a->owner, &a->unlocked);
    return NULL;
}

static void test_explicit_owner(void) {
    bool b = false;
    uint32_t n = 0;
    rlock_lock *l = lock_on(client, "c-owner", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_acquire(l, 7, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(l, 7, 0, RLOCK_FOREVER, NULL), RLOCK_OK); /* re-enters */
    CHECK_RC(rlock_lock_hold_count(l, 7, &n), RLOCK_OK);
    CHECK(n == 2);
    CHECK_RC(rlock_lock_is_held(l, 7, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_lock_is_held(l, 8, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_lock_is_held(l, RLOCK_THREAD, &b), RLOCK_OK); /* the thread is a different owner */
    CHECK(!b);
    CHECK_RC(rlock_lock_acquire(l, 8, 0, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    /* Any thread may release for an explicit owner. */
    struct as_args a = {l, 7, RLOCK_PANIC, true};
    pthread_t t;
    pthread_create(&t, NULL, unlock_as_thread, &a);
    pthread_join(t, NULL);
    CHECK(a.rc == RLOCK_OK && !a.unlocked);
    pthread_create(&t, NULL, unlock_as_thread, &a);
    pthread_join(t, NULL);
    CHECK(a.rc == RLOCK_OK && a.unlocked);
    CHECK_RC(rlock_lock_release(l, 7, NULL), RLOCK_NOT_HELD);
    rlock_lock_free(l);
}

/* ---- force unlock and the lost-lock callback ---- */
static atomic_int lost_calls;
static char lost_name[64], lost_kind[16], lost_owner[128], lost_reason[32], lost_permit[64];
static rlock_result rc_in_callback = RLOCK_OK;
static rlock_lock *callback_probe; /* a handle the callback tries a blocking call on */

static void on_lost(void *userdata, const rlock_lost_event *ev) {
    atomic_int *counter = userdata;
    snprintf(lost_name, sizeof lost_name, "%s", ev->name);
    snprintf(lost_kind, sizeof lost_kind, "%s", ev->kind);
    snprintf(lost_owner, sizeof lost_owner, "%s", ev->owner);
    snprintf(lost_reason, sizeof lost_reason, "%s", ev->reason);
    snprintf(lost_permit, sizeof lost_permit, "%s", ev->permit_id ? ev->permit_id : "(null)");
    bool b;
    rc_in_callback = rlock_lock_is_locked(callback_probe, &b); /* must be refused, not deadlock */
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
    callback_probe = lock_on(client, "c-force", RLOCK_LOCK);
    rlock_lock *held = lock_on(holder, "c-force", RLOCK_LOCK);
    rlock_lock *forcer = lock_on(client, "c-force", RLOCK_LOCK);
    CHECK_RC(rlock_client_on_lost(holder, on_lost, &lost_calls), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(held, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);

    bool released = false;
    CHECK_RC(rlock_lock_force_unlock(forcer, &released), RLOCK_OK);
    CHECK(released);
    CHECK_RC(rlock_lock_force_unlock(forcer, &released), RLOCK_OK);
    CHECK(!released);
    CHECK_RC(rlock_lock_force_unlock(forcer, NULL), RLOCK_OK);

    wait_lost(1);
    CHECK(atomic_load(&lost_calls) == 1);
    CHECK(strcmp(lost_name, "c-force") == 0);
    CHECK(strcmp(lost_kind, "lock") == 0);
    CHECK(owner_ok(lost_owner, NULL));
    CHECK(strcmp(lost_reason, "gone") == 0);
    CHECK(strcmp(lost_permit, "(null)") == 0);
    CHECK(rc_in_callback == RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_release(held, RLOCK_THREAD, NULL), RLOCK_LOST);
    CHECK_RC(rlock_lock_release(held, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);

    /* An explicit owner: its id ends the owner string; same client, same UUID. The read side
     * of a read-write lock reports kind "read". */
    char thread_owner[128];
    snprintf(thread_owner, sizeof thread_owner, "%s", lost_owner);
    rlock_lock *read = lock_on(holder, "c-force-as", RLOCK_READ_LOCK);
    rlock_lock *read_forcer = lock_on(client, "c-force-as", RLOCK_READ_LOCK);
    CHECK_RC(rlock_lock_acquire(read, 77, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_force_unlock(read_forcer, NULL), RLOCK_OK);
    wait_lost(2);
    CHECK(atomic_load(&lost_calls) == 2);
    CHECK(strcmp(lost_name, "c-force-as") == 0);
    CHECK(strcmp(lost_kind, "read") == 0);
    CHECK(owner_ok(lost_owner, "77"));
    CHECK(strncmp(lost_owner, thread_owner, 37) == 0);
    CHECK(strcmp(lost_reason, "gone") == 0);
    CHECK_RC(rlock_lock_release(read, 77, NULL), RLOCK_LOST);
    rlock_lock_free(read);
    rlock_lock_free(read_forcer);

    /* Removing the callback: a further loss calls nothing. */
    CHECK_RC(rlock_client_on_lost(holder, NULL, NULL), RLOCK_OK);
    rlock_lock *quiet = lock_on(holder, "c-force2", RLOCK_LOCK);
    rlock_lock *quiet_forcer = lock_on(client, "c-force2", RLOCK_LOCK);
    CHECK_RC(rlock_lock_acquire(quiet, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_force_unlock(quiet_forcer, NULL), RLOCK_OK);
    sleep_ms(1500); /* over one renewal period: the loss is detected, nobody is called */
    CHECK(atomic_load(&lost_calls) == 2);
    CHECK_RC(rlock_lock_release(quiet, RLOCK_THREAD, NULL), RLOCK_LOST);
    rlock_lock_free(quiet);
    rlock_lock_free(quiet_forcer);
    rlock_lock_free(held);
    rlock_lock_free(forcer);
    rlock_client_free(holder);
}

/* ---- 8 threads x 1000 critical sections, on one shared handle ---- */
#define THREADS 8
#define ROUNDS 1000
static long counter; /* deliberately not atomic */
static atomic_int errors;

static void *worker(void *arg) {
    rlock_lock *l = arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_OK) {
            atomic_fetch_add(&errors, 1);
            continue;
        }
        long v = counter;
        if (i % 64 == 0) sched_yield(); /* widen the race window */
        counter = v + 1;
        if (rlock_lock_release(l, RLOCK_THREAD, NULL) != RLOCK_OK) atomic_fetch_add(&errors, 1);
    }
    return NULL;
}

static void test_threads(void) {
    rlock_lock *l = lock_on(client, "c-counter", RLOCK_LOCK);
    if (!l) return;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, l);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK(atomic_load(&errors) == 0);
    CHECK(counter == THREADS * ROUNDS);
    bool b = true;
    CHECK_RC(rlock_lock_is_locked(l, &b), RLOCK_OK);
    CHECK(!b);
    rlock_lock_free(l);
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

/* The child: 0 when all went well, else the number of the failed step. `inherited` is a
 * handle the parent made before fork(). */
static int child_main(const char *path, rlock_lock *inherited) {
    CHILD_NO_LEAK_CHECK();
    /* The inherited client and handles fail at once with RLOCK_FORKED, whatever the call. */
    double start = now_ms();
    bool b = false;
    uint32_t n = 0;
    rlock_connection_info info;
    rlock_lock *l = NULL;
    rlock_semaphore *sem = NULL;
    if (rlock_lock_is_locked(inherited, &b) != RLOCK_FORKED) return 2;
    if (!last_error_has("fork")) return 3;
    if (rlock_lock_acquire(inherited, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_FORKED) return 4;
    if (rlock_lock_new(client, "c-fork", RLOCK_LOCK, &l) != RLOCK_FORKED || l) return 5;
    if (rlock_lock_release(inherited, RLOCK_THREAD, &b) != RLOCK_FORKED) return 6;
    if (rlock_lock_hold_count(inherited, RLOCK_THREAD, &n) != RLOCK_FORKED) return 7;
    if (rlock_client_info(client, &info) != RLOCK_FORKED) return 8;
    if (rlock_client_on_lost(client, NULL, NULL) != RLOCK_FORKED) return 9;
    if (rlock_semaphore_new(client, "c-fork-sem", &sem) != RLOCK_FORKED) return 16;
    if (now_ms() - start > 2000) return 10; /* "at once", even under valgrind */

    rlock_client *mine = NULL;
    if (rlock_client_new(NULL, NULL, &mine) != RLOCK_OK) return 11;
    /* Freeing the inherited handle and client touches nothing of the parent's (nor hangs). */
    rlock_lock_free(inherited);
    rlock_client_free(client);
    if (rlock_lock_new(mine, "c-fork", RLOCK_LOCK, &l) != RLOCK_OK) return 17;
    for (int i = 0; i < CHILD_ROUNDS; i++) {
        if (rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_OK) return 12;
        long v = read_counter(path);
        if (v < 0) return 13;
        if (i % 8 == 0) sleep_ms(1); /* widen the race window */
        if (write_counter(path, v + 1) != 0) return 14;
        bool unlocked = false;
        if (rlock_lock_release(l, RLOCK_THREAD, &unlocked) != RLOCK_OK || !unlocked) return 15;
    }
    rlock_lock_free(l);
    rlock_client_free(mine);
    return 0;
}

/* Fenced lock: every acquire takes a strictly larger token, read with the acquire. */
static long redis_int(const char *args);

static void test_fenced(void) {
    uint64_t t1 = 0, t2 = 0, t3 = 0, untouched = 77;
    bool unlocked = true;
    rlock_lock *f = lock_on(client, "c:fenced", RLOCK_FENCED_LOCK);
    rlock_lock *plain = lock_on(client, "c:fenced", RLOCK_LOCK);
    if (!f || !plain) return;
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, -2, RLOCK_FOREVER, &t1), RLOCK_INVALID_ARGUMENT);
    CHECK(t1 == 0);
    bool locked = true;
    CHECK_RC(rlock_lock_is_locked(f, &locked), RLOCK_OK);
    CHECK(!locked);
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, &t1), RLOCK_OK);
    CHECK(t1 >= 1);
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, &t2), RLOCK_OK); /* re-entry: a new token */
    CHECK(t2 > t1);
    CHECK_RC(rlock_lock_release(f, RLOCK_THREAD, &unlocked), RLOCK_OK);
    CHECK(!unlocked);
    CHECK_RC(rlock_lock_release(f, RLOCK_THREAD, &unlocked), RLOCK_OK);
    CHECK(unlocked);
    /* NULL out_token: the acquire takes a token all the same, and nobody reads it. */
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK(redis_int("GET 'redisson_lock_token:{c:fenced}'") == (long)t2 + 1);
    CHECK_RC(rlock_lock_release(f, RLOCK_THREAD, NULL), RLOCK_OK);
    /* Another owner (through a plain handle: the same lock) holds it: a bounded wait gets no
     * token and writes nothing. */
    CHECK_RC(rlock_lock_acquire(plain, 7, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, 20, RLOCK_FOREVER, &untouched), RLOCK_NOT_ACQUIRED);
    CHECK(untouched == 77);
    CHECK_RC(rlock_lock_release(plain, 7, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, 1000, 5000, &t3), RLOCK_OK);
    CHECK(t3 > t2);
    CHECK_RC(rlock_lock_release(f, RLOCK_THREAD, NULL), RLOCK_OK);
    /* The token comes in the acquire's own reply: a hold force-unlocked by this very client
     * right after (so nothing is left to read back) still gave the token it took. */
    uint64_t t4 = 0;
    bool released = false;
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, &t4), RLOCK_OK);
    CHECK_RC(rlock_lock_force_unlock(f, &released), RLOCK_OK);
    CHECK(released && t4 > t3);
    CHECK(redis_int("GET 'redisson_lock_token:{c:fenced}'") == (long)t4);
    CHECK_RC(rlock_lock_release(f, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);
    rlock_lock_free(f);
    rlock_lock_free(plain);
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
static rlock_lock *fair;

static void *fair_waiter(void *arg) {
    uint64_t owner = (uint64_t)(intptr_t)arg;
    if (rlock_lock_acquire(fair, owner, RLOCK_FOREVER, RLOCK_FOREVER, NULL) == RLOCK_OK) {
        fair_order[atomic_fetch_add(&fair_next, 1)] = (int)owner;
        rlock_lock_release(fair, owner, NULL);
    }
    return NULL;
}

static void test_read_write_and_fair(void) {
    bool b = false;
    uint32_t n = 0;
    rlock_lock *rd = lock_on(client, "c:rw", RLOCK_READ_LOCK);
    rlock_lock *wr = lock_on(client, "c:rw", RLOCK_WRITE_LOCK);
    rlock_lock *plain = lock_on(client, "c:rw", RLOCK_LOCK);
    if (!rd || !wr || !plain) return;
    CHECK_RC(rlock_lock_release(rd, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_lock_is_locked(plain, &b), RLOCK_OK);
    CHECK(!b);

    /* Readers share (this thread and owner 1); a writer (owner 2) waits. */
    uint64_t token = 5;
    CHECK_RC(rlock_lock_acquire(rd, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, &token), RLOCK_INVALID_ARGUMENT);
    CHECK(token == 5); /* not fenced: no token, and nothing taken */
    CHECK_RC(rlock_lock_acquire(rd, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(rd, 1, 0, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_hold_count(rd, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_lock_is_locked(rd, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_lock_is_locked(wr, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_lock_acquire(wr, 2, 20, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    /* A reader asking for the write lock: refused at once. */
    CHECK_RC(rlock_lock_acquire(wr, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_WOULD_DEADLOCK);
    CHECK(strcmp(rlock_result_str(RLOCK_WOULD_DEADLOCK), "RLOCK_WOULD_DEADLOCK") == 0);
    CHECK_RC(rlock_lock_release(rd, RLOCK_THREAD, &b), RLOCK_OK);
    CHECK(!b); /* owner 1 still reads */
    CHECK_RC(rlock_lock_release(rd, 1, &b), RLOCK_OK);
    CHECK(b);

    /* The writer downgrades: write, then read, then release the write hold. */
    CHECK_RC(rlock_lock_acquire(wr, 2, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_is_held(wr, 2, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_lock_acquire(rd, 1, 20, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_lock_acquire(rd, 2, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_release(wr, 2, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_lock_acquire(rd, 1, 0, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_force_unlock(wr, &b), RLOCK_OK);
    CHECK(!b); /* read locked: the write side does not unlock it */
    CHECK_RC(rlock_lock_force_unlock(rd, &b), RLOCK_OK);
    CHECK(b);
    /* Force-unlocked through this client, which forgot its holds there. */
    CHECK_RC(rlock_lock_release(rd, 2, NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_lock_release(rd, 1, NULL), RLOCK_NOT_HELD);
    rlock_lock_free(rd);
    rlock_lock_free(wr);
    rlock_lock_free(plain);

    /* Fair: a holder, then 4 waiters queued one after another, granted in that order. */
    fair = lock_on(client, "c:fair", RLOCK_FAIR_LOCK);
    if (!fair) return;
    CHECK_RC(rlock_lock_acquire(fair, 10, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(fair, 11, 50, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        pthread_create(&threads[i], NULL, fair_waiter, (void *)(intptr_t)(20 + i));
        /* The next waiter starts once this one is queued. */
        double until = now_ms() + 20000;
        while (redis_llen("redisson_lock_queue:{c:fair}") != i + 1 && now_ms() < until) sleep_ms(5);
        CHECK(redis_llen("redisson_lock_queue:{c:fair}") == i + 1);
    }
    CHECK_RC(rlock_lock_release(fair, 10, &b), RLOCK_OK);
    CHECK(b);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    CHECK(atomic_load(&fair_next) == 4);
    for (int i = 0; i < 4; i++) CHECK(fair_order[i] == 20 + i);
    CHECK(redis_llen("redisson_lock_queue:{c:fair}") == 0);

    /* A waiter whose wait runs out leaves the queue before the call returns. */
    CHECK_RC(rlock_lock_acquire(fair, 10, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(fair, 11, 200, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    CHECK(redis_llen("redisson_lock_queue:{c:fair}") == 0);
    CHECK_RC(rlock_lock_release(fair, 10, NULL), RLOCK_OK);
    rlock_lock_free(fair);
}

static void test_semaphore(void) {
    bool set = false;
    int64_t n = -7;
    rlock_semaphore *sem = (rlock_semaphore *)0x1;
    CHECK_RC(rlock_semaphore_new(NULL, "c:sem", &sem), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_new(client, "", &sem), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_new(client, "c:sem", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(sem == (rlock_semaphore *)0x1);
    rlock_semaphore_free(NULL); /* no-op */
    CHECK_RC(rlock_semaphore_new(client, "c:sem", &sem), RLOCK_OK);
    CHECK_RC(rlock_semaphore_available_permits(sem, &n), RLOCK_OK);
    CHECK(n == 0); /* a missing key is 0 permits */
    CHECK_RC(rlock_semaphore_acquire(sem, 1, 0), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_semaphore_try_set_permits(sem, 2, RLOCK_FOREVER, &set), RLOCK_OK);
    CHECK(set);
    CHECK_RC(rlock_semaphore_try_set_permits(sem, 5, RLOCK_FOREVER, &set), RLOCK_OK);
    CHECK(!set);
    CHECK_RC(rlock_semaphore_acquire(sem, 2, RLOCK_FOREVER), RLOCK_OK);
    CHECK_RC(rlock_semaphore_acquire(sem, 1, 30), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_semaphore_release(sem, 1, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_semaphore_release(sem, 1, NULL), RLOCK_OK);
    CHECK_RC(rlock_semaphore_add_permits(sem, -1, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_semaphore_drain_permits(sem, &n), RLOCK_OK);
    CHECK(n == 1);
    /* Bad input changes nothing. */
    CHECK_RC(rlock_semaphore_acquire(sem, 0, RLOCK_FOREVER), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_acquire(sem, -3, RLOCK_FOREVER), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_release(sem, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_acquire(sem, 1, -2), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_try_set_permits(sem, -1, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_try_set_permits(sem, 1, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("ttl_ms"));
    CHECK_RC(rlock_semaphore_available_permits(sem, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_acquire(NULL, 1, RLOCK_FOREVER), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("semaphore is NULL"));
    CHECK_RC(rlock_semaphore_available_permits(sem, &n), RLOCK_OK);
    CHECK(n == 0);
    rlock_semaphore_free(sem);
}

/* ---- the permit-expirable semaphore ---- */
static void test_permit_semaphore(void) {
    rlock_permit_expirable_semaphore *sem = NULL;
    CHECK_RC(rlock_permit_expirable_semaphore_new(NULL, "c:pes", &sem), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_new(client, "", &sem), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_new(client, "c:pes", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(sem == NULL);
    rlock_permit_expirable_semaphore_free(NULL); /* no-op */
    CHECK_RC(rlock_permit_expirable_semaphore_new(client, "c:pes", &sem), RLOCK_OK);
    if (!sem) return;
    char *id = NULL, *id2 = NULL, *none = (char *)"untouched";
    bool set = false;
    int64_t avail = -1, held = -1;
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, 0, RLOCK_FOREVER, &none), RLOCK_NOT_ACQUIRED);
    CHECK(strcmp(none, "untouched") == 0);
    CHECK_RC(rlock_permit_expirable_semaphore_try_set_permits(sem, 2, RLOCK_FOREVER, &set), RLOCK_OK);
    CHECK(set);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, RLOCK_FOREVER, 60000, &id), RLOCK_OK);
    CHECK(id && strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, 100, RLOCK_FOREVER, &id2), RLOCK_OK);
    CHECK(id && id2 && strcmp(id, id2) != 0);
    CHECK_RC(rlock_permit_expirable_semaphore_permits(sem, &avail, &held), RLOCK_OK);
    CHECK(avail == 0 && held == 2);
    CHECK(redis_int("ZCARD '{c:pes}:timeout'") == 2);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, 30, RLOCK_FOREVER, &none), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_permit_expirable_semaphore_update_lease(sem, id, RLOCK_FOREVER), RLOCK_OK);
    CHECK_RC(rlock_permit_expirable_semaphore_release(sem, id), RLOCK_OK);
    CHECK_RC(rlock_permit_expirable_semaphore_release(sem, id), RLOCK_NOT_HELD);
    CHECK_RC(rlock_permit_expirable_semaphore_update_lease(sem, id, 1000), RLOCK_NOT_HELD);
    CHECK_RC(rlock_permit_expirable_semaphore_release(sem, id2), RLOCK_OK);
    rlock_string_free(id);
    rlock_string_free(id2);
    /* Bad input changes nothing. */
    CHECK_RC(rlock_permit_expirable_semaphore_release(sem, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_release(sem, "xyz"), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_update_lease(sem, "+0112233445566778899aabbccddeeff", RLOCK_FOREVER),
             RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_update_lease(sem, "00112233445566778899aabbccddeeff", 0),
             RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, -2, RLOCK_FOREVER, &none), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, 0, 0, &none), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(NULL, 0, RLOCK_FOREVER, &none), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_try_set_permits(sem, -1, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(strcmp(none, "untouched") == 0);
    CHECK_RC(rlock_permit_expirable_semaphore_add_permits(sem, 1, &avail), RLOCK_OK);
    CHECK(avail == 3);
    CHECK_RC(rlock_permit_expirable_semaphore_permits(sem, &avail, &held), RLOCK_OK);
    CHECK(avail == 3 && held == 0);

    /* A permit removed under the watchdog reaches the client's callback (kind "permit", the
     * permit id, the client's owner 0); its release fails with RLOCK_LOST. */
    rlock_options *o = rlock_options_new();
    CHECK_RC(rlock_options_set_watchdog_timeout_ms(o, 600), RLOCK_OK);
    rlock_client *holder = NULL;
    CHECK_RC(rlock_client_new(NULL, o, &holder), RLOCK_OK);
    rlock_options_free(o);
    if (!holder) return;
    rlock_permit_expirable_semaphore *hs = NULL;
    CHECK_RC(rlock_permit_expirable_semaphore_new(holder, "c:pes", &hs), RLOCK_OK);
    atomic_int calls = 0;
    CHECK_RC(rlock_client_on_lost(holder, on_lost, &calls), RLOCK_OK);
    id = NULL;
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(hs, RLOCK_FOREVER, RLOCK_FOREVER, &id), RLOCK_OK);
    CHECK(redis_int("DEL '{c:pes}:timeout'") == 1);
    for (int i = 0; i < 500 && atomic_load(&calls) < 1; i++) sleep_ms(10);
    CHECK(atomic_load(&calls) == 1);
    CHECK(strcmp(lost_name, "c:pes") == 0);
    CHECK(strcmp(lost_kind, "permit") == 0);
    CHECK(id && strcmp(lost_permit, id) == 0);
    CHECK(owner_ok(lost_owner, "0"));
    CHECK(strcmp(lost_reason, "gone") == 0);
    CHECK_RC(rlock_permit_expirable_semaphore_release(hs, id), RLOCK_LOST);
    rlock_string_free(id);
    rlock_permit_expirable_semaphore_free(hs);
    rlock_permit_expirable_semaphore_free(sem);
    rlock_client_free(holder);
}

/* ---- the multi-lock ---- */
struct multi_arg {
    rlock_multi_lock *multi;
    int rounds;
    atomic_int *inside, *total, *errors;
};

/* Takes the members (in this thread's order) `rounds` times; counts overlaps as errors. */
static void *multi_worker(void *p) {
    struct multi_arg *a = p;
    for (int i = 0; i < a->rounds; i++) {
        if (rlock_multi_lock_acquire(a->multi, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER) != RLOCK_OK) {
            atomic_fetch_add(a->errors, 1);
            continue;
        }
        if (atomic_fetch_add(a->inside, 1) != 0) atomic_fetch_add(a->errors, 1);
        sched_yield();
        atomic_fetch_sub(a->inside, 1);
        atomic_fetch_add(a->total, 1);
        if (rlock_multi_lock_release(a->multi, RLOCK_THREAD) != RLOCK_OK) atomic_fetch_add(a->errors, 1);
    }
    return NULL;
}

static void test_multi_lock(void) {
    rlock_lock *a = lock_on(client, "c:m:a", RLOCK_LOCK);
    rlock_lock *b = lock_on(client, "c:m:b", RLOCK_FAIR_LOCK);
    rlock_lock *c = lock_on(client, "c:m:c", RLOCK_WRITE_LOCK);
    if (!a || !b || !c) return;
    rlock_lock *members[3] = {a, b, c};
    rlock_multi_lock *m = NULL;
    CHECK_RC(rlock_multi_lock_new(members, 3, &m), RLOCK_OK);
    if (!m) return;
    /* Another owner holds one member: nothing is taken. */
    CHECK_RC(rlock_lock_acquire(b, 5, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_multi_lock_acquire(m, RLOCK_THREAD, 100, RLOCK_FOREVER), RLOCK_NOT_ACQUIRED);
    bool locked = true;
    CHECK_RC(rlock_lock_is_locked(a, &locked), RLOCK_OK);
    CHECK(!locked);
    CHECK_RC(rlock_lock_release(b, 5, NULL), RLOCK_OK);
    CHECK_RC(rlock_multi_lock_acquire(m, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER), RLOCK_OK);
    bool held = false;
    CHECK_RC(rlock_lock_is_held(c, RLOCK_THREAD, &held), RLOCK_OK);
    CHECK(held);
    held = false;
    CHECK_RC(rlock_multi_lock_is_held(m, RLOCK_THREAD, &held), RLOCK_OK);
    CHECK(held);
    CHECK_RC(rlock_multi_lock_is_held(m, 99, &held), RLOCK_OK);
    CHECK(!held);
    /* The multi-lock keeps its members: their handles may go. */
    rlock_lock_free(b);
    rlock_lock_free(c);
    /* Release frees every member and reports the failures. */
    CHECK_RC(rlock_lock_force_unlock(a, NULL), RLOCK_OK);
    rlock_result rc = rlock_multi_lock_release(m, RLOCK_THREAD);
    CHECK(rc == RLOCK_NOT_HELD || rc == RLOCK_LOST);
    CHECK(last_error_has("1 of 3") && last_error_has("'c:m:a'"));
    b = lock_on(client, "c:m:b", RLOCK_FAIR_LOCK);
    c = lock_on(client, "c:m:c", RLOCK_WRITE_LOCK);
    CHECK_RC(rlock_lock_is_locked(b, &locked), RLOCK_OK);
    CHECK(!locked);
    CHECK_RC(rlock_lock_is_locked(c, &locked), RLOCK_OK);
    CHECK(!locked);
    rlock_multi_lock_free(m);
    rlock_lock_free(b);
    rlock_lock_free(c);

    /* Threads taking {a, b} and {b, a}: no deadlock, one inside at a time. */
    rlock_lock *da = lock_on(client, "c:d:a", RLOCK_LOCK);
    rlock_lock *db = lock_on(client, "c:d:b", RLOCK_LOCK);
    rlock_lock *ab_members[2] = {da, db}, *ba_members[2] = {db, da};
    rlock_multi_lock *ab = NULL, *ba = NULL;
    CHECK_RC(rlock_multi_lock_new(ab_members, 2, &ab), RLOCK_OK);
    CHECK_RC(rlock_multi_lock_new(ba_members, 2, &ba), RLOCK_OK);
    rlock_lock_free(da);
    rlock_lock_free(db);
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
    rlock_multi_lock_free(ab);
    rlock_multi_lock_free(ba);

    /* Bad input. */
    rlock_lock *with_null[2] = {a, NULL};
    m = (rlock_multi_lock *)0x1;
    CHECK_RC(rlock_multi_lock_new(NULL, 1, &m), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_new(members, 0, &m), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_new(with_null, 2, &m), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_new(with_null, 1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(m == (rlock_multi_lock *)0x1);
    CHECK_RC(rlock_multi_lock_acquire(NULL, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_release(NULL, RLOCK_THREAD), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_is_held(NULL, RLOCK_THREAD, &held), RLOCK_INVALID_ARGUMENT);
    m = NULL;
    CHECK_RC(rlock_multi_lock_new(with_null, 1, &m), RLOCK_OK);
    CHECK_RC(rlock_multi_lock_acquire(m, RLOCK_THREAD, -2, RLOCK_FOREVER), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_acquire(m, RLOCK_THREAD, 0, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_is_held(m, RLOCK_THREAD, NULL), RLOCK_INVALID_ARGUMENT);
    rlock_multi_lock_free(m);
    rlock_multi_lock_free(NULL); /* no-op */
    CHECK_RC(rlock_lock_is_locked(a, &locked), RLOCK_OK);
    CHECK(!locked);
    rlock_lock_free(a);
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
static rlock_count_down_latch *latch;

static void *latch_waiter(void *arg) {
    bool opened = false;
    rlock_result rc = rlock_count_down_latch_wait(latch, RLOCK_FOREVER, &opened);
    *(rlock_result *)arg = rc;
    if (rc == RLOCK_OK && opened) atomic_fetch_add(&latch_open, 1);
    return NULL;
}

static void test_latch(void) {
    bool b = false;
    uint64_t n = 7;
    rlock_count_down_latch *bad = (rlock_count_down_latch *)0x1;
    CHECK_RC(rlock_count_down_latch_new(NULL, "c:latch", &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_new(client, NULL, &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_new(client, "", &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_new(client, "c:latch", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(bad == (rlock_count_down_latch *)0x1);
    rlock_count_down_latch_free(NULL); /* no-op */
    CHECK_RC(rlock_count_down_latch_new(client, "c:latch", &latch), RLOCK_OK);
    if (!latch) return;
    CHECK_RC(rlock_count_down_latch_count(latch, &n), RLOCK_OK);
    CHECK(n == 0); /* a missing key is an open latch */
    CHECK_RC(rlock_count_down_latch_wait(latch, 0, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_count_down_latch_try_set_count(latch, 2, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_count_down_latch_try_set_count(latch, 5, &b), RLOCK_OK);
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
    CHECK_RC(rlock_count_down_latch_count_down(latch), RLOCK_OK);
    CHECK_RC(rlock_count_down_latch_count(latch, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK(atomic_load(&latch_open) == 0);
    double zero = now_ms();
    CHECK_RC(rlock_count_down_latch_count_down(latch), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK(rcs[i] == RLOCK_OK);
    }
    CHECK(atomic_load(&latch_open) == 3);
    CHECK(now_ms() - zero < 2000);
    CHECK(redis_last_int("EXISTS c:latch") == 0); /* the key goes at zero */

    /* A timed wait runs out. */
    CHECK_RC(rlock_count_down_latch_try_set_count(latch, 1, NULL), RLOCK_OK);
    double start = now_ms();
    b = true;
    CHECK_RC(rlock_count_down_latch_wait(latch, 150, &b), RLOCK_OK);
    CHECK(!b);
    CHECK(now_ms() - start >= 150);

    /* Bad input changes nothing. */
    CHECK_RC(rlock_count_down_latch_try_set_count(latch, -1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_wait(latch, -2, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_count(latch, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_count_down(NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("latch is NULL"));
    rlock_count_down_latch *wrong = NULL;
    CHECK_RC(rlock_count_down_latch_new(client, "wrongtype", &wrong), RLOCK_OK);
    CHECK_RC(rlock_count_down_latch_count_down(wrong), RLOCK_REDIS);
    rlock_count_down_latch_free(wrong);
    CHECK_RC(rlock_count_down_latch_count(latch, &n), RLOCK_OK);
    CHECK(n == 1);

    /* delete: whatever the count; says whether it existed. */
    CHECK_RC(rlock_count_down_latch_delete(latch, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_count_down_latch_delete(latch, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_count_down_latch_delete(latch, NULL), RLOCK_OK);
    rlock_count_down_latch_free(latch);
}

/* ---- describe and list: core's JSON text, freed with rlock_string_free ---- */
static void test_describe(void) {
    char *json = NULL;
    rlock_lock *l = lock_on(client, "c-describe", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
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
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    rlock_lock_free(l);

    json = NULL;
    CHECK_RC(rlock_client_describe(client, "c-describe-missing", &json), RLOCK_OK);
    CHECK(json && strstr(json, "\"kind\":\"none\""));
    rlock_string_free(json);
    json = NULL;
    CHECK_RC(rlock_client_describe(client, "wrongtype", &json), RLOCK_OK); /* a foreign key */
    CHECK(json && strstr(json, "\"kind\":\"other\""));
    rlock_string_free(json);

    l = lock_on(client, "c-listed", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
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
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    rlock_lock_free(l);

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
    rlock_lock *parent = lock_on(client, "c-fork-parent", RLOCK_LOCK);
    rlock_lock *shared = lock_on(client, "c-fork", RLOCK_LOCK);
    if (!parent || !shared) return;
    CHECK_RC(rlock_lock_acquire(parent, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_is_locked(shared, &b), RLOCK_OK);
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
        if (pids[i] == 0) _exit(child_main(path, shared));
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

    /* The parent's client and handles still work, and it still holds its lock. */
    uint32_t n = 0;
    CHECK_RC(rlock_lock_hold_count(parent, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_lock_release(parent, RLOCK_THREAD, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_is_locked(shared, &b), RLOCK_OK);
    CHECK(!b);
    rlock_lock_free(parent);
    rlock_lock_free(shared);
}

/* ---- rlock_client_free while other threads wait in rlock_lock_acquire ---- */
#define BLOCKED 4
static atomic_int entering;
struct blocked { rlock_lock *lock; rlock_result rc; rlock_result release_rc; };

static void *blocked_acquire(void *arg) {
    struct blocked *b = arg;
    atomic_fetch_add(&entering, 1);
    b->rc = rlock_lock_acquire(b->lock, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL);
    return NULL;
}

static void test_free_racing_calls(void) {
    rlock_lock *holder = lock_on(client, "c-free-race", RLOCK_LOCK);
    if (!holder) return;
    CHECK_RC(rlock_lock_acquire(holder, 5, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    rlock_client *victim = NULL;
    CHECK_RC(rlock_client_new(NULL, NULL, &victim), RLOCK_OK);
    if (!victim) return;
    rlock_lock *l = lock_on(victim, "c-free-race", RLOCK_LOCK);
    struct blocked b[BLOCKED];
    pthread_t t[BLOCKED];
    atomic_store(&entering, 0);
    for (int i = 0; i < BLOCKED; i++) {
        b[i] = (struct blocked){l, RLOCK_OK, RLOCK_OK};
        pthread_create(&t[i], NULL, blocked_acquire, &b[i]);
    }
    /* Every thread is inside rlock_lock_acquire (a call started before the free), waiting. */
    while (atomic_load(&entering) < BLOCKED) sleep_ms(10);
    sleep_ms(1000);
    double start = now_ms();
    rlock_client_free(victim); /* does not wait for the calls */
    CHECK(now_ms() - start < 1000);
    for (int i = 0; i < BLOCKED; i++) {
        pthread_join(t[i], NULL);
        CHECK(b[i].rc == RLOCK_CLOSED);
    }
    /* The handle outlived its client's free: its calls say the client is closed. */
    bool held = false;
    CHECK_RC(rlock_lock_is_locked(l, &held), RLOCK_CLOSED);
    rlock_lock_free(l);
    CHECK_RC(rlock_lock_is_held(holder, 5, &held), RLOCK_OK);
    CHECK(held); /* the waiters never got it */
    CHECK_RC(rlock_lock_release(holder, 5, NULL), RLOCK_OK);
    rlock_lock_free(holder);
}

/* ---- rlock_lock_free while other threads wait in rlock_lock_acquire on that handle ----
 * The waiters hold their own reference for the call, so the free only gives up the caller's:
 * they go on waiting, get the lock in turn and return normally, and valgrind (run.sh) sees no
 * access to freed memory. Each releases through a handle of its own (the freed one may not be
 * used for a new call). */
static void *blocked_on_handle(void *arg) {
    struct blocked *b = arg;
    atomic_fetch_add(&entering, 1);
    b->rc = rlock_lock_acquire(b->lock, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL);
    rlock_lock *mine = lock_on(client, "c-handle-free", RLOCK_LOCK);
    b->release_rc = rlock_lock_release(mine, RLOCK_THREAD, NULL);
    rlock_lock_free(mine);
    return NULL;
}

static void test_free_handle_racing_calls(void) {
    rlock_lock *holder = lock_on(client, "c-handle-free", RLOCK_LOCK);
    rlock_lock *doomed = lock_on(client, "c-handle-free", RLOCK_LOCK);
    if (!holder || !doomed) return;
    CHECK_RC(rlock_lock_acquire(holder, 5, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    struct blocked b[2];
    pthread_t t[2];
    atomic_store(&entering, 0);
    for (int i = 0; i < 2; i++) {
        b[i] = (struct blocked){doomed, RLOCK_PANIC, RLOCK_PANIC};
        pthread_create(&t[i], NULL, blocked_on_handle, &b[i]);
    }
    while (atomic_load(&entering) < 2) sleep_ms(10);
    sleep_ms(500); /* both are waiting inside the call */
    rlock_lock_free(doomed);
    sleep_ms(200);
    /* Still waiting after the free: nothing was cut short. */
    CHECK(b[0].rc == RLOCK_PANIC && b[1].rc == RLOCK_PANIC);
    CHECK_RC(rlock_lock_release(holder, 5, NULL), RLOCK_OK);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECK(b[i].rc == RLOCK_OK);
        CHECK(b[i].release_rc == RLOCK_OK);
    }
    bool locked = true;
    CHECK_RC(rlock_lock_is_locked(holder, &locked), RLOCK_OK);
    CHECK(!locked);
    rlock_lock_free(holder);
}

/* ---- the server goes away ---- */
static void test_server_gone(void) {
    const char *pid = getenv("RLOCK_TEST_REDIS_PID");
    CHECK(pid != NULL);
    if (!pid) return;
    rlock_lock *l = lock_on(client, "gone", RLOCK_LOCK);
    if (!l) return;
    kill((pid_t)atoi(pid), SIGKILL);
    sleep_ms(200);
    bool b = false;
    rlock_result rc = rlock_lock_is_locked(l, &b);
    CHECK(rc == RLOCK_CONNECTION || rc == RLOCK_TIMEOUT);
    rc = rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL);
    CHECK(rc == RLOCK_CONNECTION || rc == RLOCK_TIMEOUT);
    char *msg = rlock_last_error();
    CHECK(msg && msg[0] != '\0');
    rlock_string_free(msg);
    rlock_lock_free(l);
}

/* ---- topologies and their options ---- */
static void test_topologies(void) {
    rlock_connection_info info = {RLOCK_TOPOLOGY_CLUSTER, true, true};
    CHECK_RC(rlock_client_info(NULL, &info), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_info(client, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_info(client, &info), RLOCK_OK);
    CHECK(info.topology == RLOCK_TOPOLOGY_SINGLE && !info.sharded_pubsub && !info.replica_sync);

    /* Two command connections to the one server: the same locks. */
    rlock_options *o = rlock_options_new();
    CHECK_RC(rlock_options_set_command_connections(o, 2), RLOCK_OK);
    rlock_client *two = NULL;
    CHECK_RC(rlock_client_new(NULL, o, &two), RLOCK_OK);
    rlock_options_free(o);
    if (two) {
        rlock_lock *l2 = lock_on(two, "c-two-conns", RLOCK_LOCK);
        rlock_lock *l1 = lock_on(client, "c-two-conns", RLOCK_LOCK);
        CHECK_RC(rlock_lock_acquire(l2, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_acquire(l2, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_acquire(l1, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
        CHECK_RC(rlock_lock_release(l2, RLOCK_THREAD, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_release(l2, RLOCK_THREAD, NULL), RLOCK_OK);
        rlock_lock_free(l1);
        rlock_lock_free(l2);
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
    CHECK_RC(rlock_client_info(cl, &info), RLOCK_OK);
    CHECK(info.topology == RLOCK_TOPOLOGY_CLUSTER && info.sharded_pubsub && info.replica_sync);
    char name[32];
    for (int i = 0; i < 30; i++) { /* names on every master */
        snprintf(name, sizeof name, "c-cluster-%d", i);
        rlock_lock *l = lock_on(cl, name, RLOCK_LOCK);
        if (!l) continue;
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        uint32_t n = 0;
        CHECK_RC(rlock_lock_hold_count(l, RLOCK_THREAD, &n), RLOCK_OK);
        CHECK(n == 2);
        CHECK_RC(rlock_lock_acquire(l, 7, 0, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
        CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
        bool locked = true;
        CHECK_RC(rlock_lock_is_locked(l, &locked), RLOCK_OK);
        CHECK(!locked);
        rlock_lock_free(l);
    }
    rlock_lock *cross = NULL;
    CHECK_RC(rlock_lock_new(cl, "a{}b", RLOCK_LOCK, &cross), RLOCK_INVALID_ARGUMENT); /* cross-slot name */
    CHECK(cross == NULL);
    /* A latch on the cluster; a tagged latch name would put its channel in another slot. */
    bool set = false, open = false;
    uint64_t count = 9;
    rlock_count_down_latch *cl_latch = NULL, *tagged = NULL;
    CHECK_RC(rlock_count_down_latch_new(cl, "c-cluster-latch", &cl_latch), RLOCK_OK);
    CHECK_RC(rlock_count_down_latch_try_set_count(cl_latch, 1, &set), RLOCK_OK);
    CHECK(set);
    CHECK_RC(rlock_count_down_latch_count_down(cl_latch), RLOCK_OK);
    CHECK_RC(rlock_count_down_latch_wait(cl_latch, 0, &open), RLOCK_OK);
    CHECK(open);
    CHECK_RC(rlock_count_down_latch_count(cl_latch, &count), RLOCK_OK);
    CHECK(count == 0);
    CHECK_RC(rlock_count_down_latch_new(cl, "c{x}latch", &tagged), RLOCK_INVALID_ARGUMENT);
    rlock_count_down_latch_free(cl_latch);
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
    rlock_lock *l = lock_on(c, "c-stats", RLOCK_LOCK);
    rlock_stats s;
    CHECK_RC(rlock_client_stats(c, &s), RLOCK_OK);
    CHECK(s.acquires == 0 && s.wait.count == 0);
    for (int i = 0; i < 3; i++) {
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    }
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_client_stats(c, &s), RLOCK_OK);
    CHECK(s.acquires == 3);
    CHECK(s.contended_acquires == 0);
    CHECK(s.releases == 3);
    CHECK(s.wait.count == 3 && s.hold.count == 3);
    CHECK(s.wait.p50_ms > 0 && s.wait.p50_ms <= s.wait.max_ms);
    CHECK(s.errors[RLOCK_NOT_HELD] == 1);
    CHECK(s.errors[RLOCK_TIMEOUT] == 0);

    /* The Prometheus text: a string librlock allocates, freed with rlock_string_free. */
    char *text = NULL;
    CHECK_RC(rlock_client_prometheus_text(c, &text), RLOCK_OK);
    CHECK(text && strlen(text) > 100);
    CHECK(text && strstr(text, "rlock_acquires_total{app=\"c-stats\"} 3\n") != NULL);
    CHECK(text && strstr(text, "rlock_errors_total{app=\"c-stats\",kind=\"not_held\"} 1\n") != NULL);
    rlock_string_free(text);

    CHECK_RC(rlock_client_stats(NULL, &s), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_stats(c, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_prometheus_text(c, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_prometheus_text(NULL, &text), RLOCK_INVALID_ARGUMENT);
    rlock_lock_free(l);
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
    test_read_write_and_fair();
    test_semaphore();
    test_permit_semaphore();
    test_multi_lock();
    test_latch();
    test_stats();
    test_describe();
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
