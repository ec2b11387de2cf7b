/* Shared by the C tests (the tests/c/test_ files, built into one program by tests/c/run.sh):
 * the CHECK macros, the helpers and the test functions. */
#ifndef RLOCK_TEST_CHECK_H
#define RLOCK_TEST_CHECK_H
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

extern int passed, failed;

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

/* A string equal to the one wanted; a failure prints both (a lost hold's reason says why). */
#define CHECK_STR(got, want)                                                     \
    do {                                                                         \
        const char *got_ = (got), *want_ = (want);                               \
        if (got_ && strcmp(got_, want_) == 0) {                                  \
            passed++;                                                            \
        } else {                                                                 \
            failed++;                                                            \
            fprintf(stderr, "FAIL %s:%d: %s = \"%s\", want \"%s\"\n", __FILE__, \
                    __LINE__, #got, got_ ? got_ : "(null)", want_);              \
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

/* The helpers (test_rlock.c). */
double now_ms(void);
void sleep_ms(int ms);
/* The client every test shares (REDIS_URL). */
extern rlock_client *client;
/* A new handle on the lock of `kind` named `name` (NULL when that failed: the CHECK says why). */
rlock_lock *lock_on(rlock_client *c, const char *name, int kind);
/* A client of `url` (NULL: REDIS_URL) with a 3 s watchdog, for tests that run renewals under
 * valgrind; NULL (and a failed check) when it cannot connect. */
rlock_client *client_3s_watchdog(const char *url);
/* Whether this thread's last error message contains `what`. */
int last_error_has(const char *what);
/* The integer reply of `redis-cli <args>` on the test server; -1 when there is none. */
long redis_int(const char *args);
/* LLEN of `key` on the test server. */
long redis_llen(const char *key);
/* The last integer redis-cli prints for `args` on the test server (-1 when none). */
long redis_last_int(const char *args);

/* The lost-hold callback and what it saw last (test_locks.c). */
extern atomic_int lost_calls;
extern char lost_name[64], lost_kind[16], lost_owner[128], lost_reason[32], lost_permit[64];
extern rlock_result rc_in_callback;
extern rlock_lock *callback_probe;
void on_lost(void *userdata, const rlock_lost_event *ev);
/* "<uuid>:<digits>" with the id `id` (any id when NULL). */
int owner_ok(const char *owner, const char *id);

void test_result_str_and_last_error(void);
void test_client_new(void);
void test_options(void);
void test_bad_input(void);
void test_reentrancy_and_queries(void);
void test_explicit_owner(void);
void test_force_unlock_and_lost(void);
void test_lost_per_handle(void);
void test_threads(void);
void test_fenced(void);
void test_read_write_and_fair(void);
void test_spin(void);
void test_non_reentrant(void);
void test_semaphore(void);
void test_permit_semaphore(void);
void test_multi_lock(void);
void test_red_lock(void);
void test_latch(void);
void test_stats(void);
void test_log_callback(void);
void test_describe(void);
void test_fork(void);
void test_free_racing_calls(void);
void test_free_handle_racing_calls(void);
void test_topologies(void);
void test_server_gone(void);
void test_least_privilege(void);
void test_secrets(void);

#endif
