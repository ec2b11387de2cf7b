/* The C surface's subset on a managed-endpoint stand-in (`make services`; see
 * docs/operations/managed-services.md), at the URL given as the first argument (the second,
 * when given, is the eviction policy the client must report; else it must report none):
 * - a hold of every lock kind (two reentrant locks, fenced, read, write, fair, spin; names of
 *   different hash tags) stays held across three watchdog periods: every hold renewed three
 *   times over, none lost, no renewal failed, and another client can take none of them;
 *   every release unlocks;
 * - the semaphore and the count-down latch work there;
 * - 4 threads x 25 critical sections on a counter in this process, two through the lock and
 *   two through the spin lock of one name, keep it exact.
 * Exits 0 when every check passed. */
#define _DEFAULT_SOURCE /* clock_gettime, usleep under -std=c11 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rlock.h>

static int failed;

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);   \
            failed++;                                                         \
        }                                                                     \
    } while (0)

#define EXPECT(want, call)                                                    \
    do {                                                                      \
        enum rlock_result r_ = (call);                                        \
        if (r_ != (want)) {                                                   \
            char *m_ = rlock_last_error();                                    \
            fprintf(stderr, "FAIL %s:%d: %s = %s, want %s (%s)\n", __FILE__,  \
                    __LINE__, #call, rlock_result_str(r_),                    \
                    rlock_result_str(want), m_ ? m_ : "?");                   \
            rlock_string_free(m_);                                            \
            failed++;                                                         \
        }                                                                     \
    } while (0)

#define OK(call) EXPECT(RLOCK_OK, call)

enum { HOLDS = 7 };

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Deliberately not atomic: only the lock keeps it exact. */
static long counter;
static rlock_lock *counter_locks[2];

static void *worker(void *arg) {
    intptr_t i = (intptr_t)arg;
    rlock_lock *lock = counter_locks[i % 2];
    uint64_t owner = 100 + (uint64_t)i;
    for (int k = 0; k < 25; k++) {
        EXPECT(RLOCK_OK, rlock_lock_acquire(lock, owner, RLOCK_FOREVER, RLOCK_FOREVER, NULL));
        long n = counter;
        usleep(200);
        counter = n + 1;
        bool unlocked = false;
        EXPECT(RLOCK_OK, rlock_lock_release(lock, owner, &unlocked));
        CHECK(unlocked);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: %s URL [EVICTION_POLICY]\n", argv[0]);
        return 2;
    }
    const char *url = argv[1];
    const char *policy = argc == 3 ? argv[2] : "";
    rlock_options *o = rlock_options_new();
    OK(rlock_options_set_watchdog_timeout_ms(o, 1500));
    OK(rlock_options_set_metrics(o, true));
    rlock_client *client = NULL, *other = NULL;
    OK(rlock_client_new(url, o, &client));
    rlock_options_free(o);
    OK(rlock_client_new(url, NULL, &other));
    if (!client || !other) return 1;

    const char *names[HOLDS] = {"c:svc:lock:0", "c:svc:lock:1", "c:svc:fenced", "c:svc:rw:r",
                                "c:svc:rw:w", "c:svc:fair", "c:svc:spin"};
    int kinds[HOLDS] = {RLOCK_LOCK, RLOCK_LOCK, RLOCK_FENCED_LOCK, RLOCK_READ_LOCK,
                        RLOCK_WRITE_LOCK, RLOCK_FAIR_LOCK, RLOCK_SPIN_LOCK};
    /* What another owner tries on each: a read hold is shared, so it tries the write side. */
    int rivals[HOLDS] = {RLOCK_LOCK, RLOCK_LOCK, RLOCK_FENCED_LOCK, RLOCK_WRITE_LOCK,
                         RLOCK_READ_LOCK, RLOCK_FAIR_LOCK, RLOCK_SPIN_LOCK};
    rlock_lock *locks[HOLDS];
    for (int i = 0; i < HOLDS; i++) {
        locks[i] = NULL;
        OK(rlock_lock_new(client, names[i], kinds[i], &locks[i]));
        if (!locks[i]) return 1;
        uint64_t token = 0;
        OK(rlock_lock_acquire(locks[i], 1, RLOCK_FOREVER, RLOCK_FOREVER,
                              kinds[i] == RLOCK_FENCED_LOCK ? &token : NULL));
    }
    /* Three watchdog periods (0.5 s each): every hold renewed three times over, none lost. */
    rlock_stats s;
    OK(rlock_client_stats(client, &s));
    uint64_t before = s.renewals;
    double until = now_ms() + 10000;
    while (s.renewals < before + 3 * HOLDS && s.lost_holds == 0 && now_ms() < until) {
        usleep(20000);
        OK(rlock_client_stats(client, &s));
    }
    CHECK(s.renewals >= before + 3 * HOLDS);
    CHECK(s.lost_holds == 0);
    CHECK(s.renewal_failures == 0);
    for (int i = 0; i < HOLDS; i++) {
        rlock_lock *rival = NULL;
        OK(rlock_lock_new(other, names[i], rivals[i], &rival));
        if (!rival) continue;
        EXPECT(RLOCK_NOT_ACQUIRED, rlock_lock_acquire(rival, 2, 0, RLOCK_FOREVER, NULL));
        rlock_lock_free(rival);
    }
    for (int i = 0; i < HOLDS; i++) {
        bool unlocked = false;
        OK(rlock_lock_release(locks[i], 1, &unlocked));
        CHECK(unlocked);
        rlock_lock_free(locks[i]);
    }
    OK(rlock_client_stats(client, &s));
    CHECK(s.lost_holds == 0);

    rlock_semaphore *sem = NULL;
    OK(rlock_semaphore_new(client, "c:svc:sem", &sem));
    if (sem) {
        bool set = false;
        OK(rlock_semaphore_try_set_permits(sem, 2, RLOCK_FOREVER, &set));
        CHECK(set);
        OK(rlock_semaphore_acquire(sem, 2, 0));
        EXPECT(RLOCK_NOT_ACQUIRED, rlock_semaphore_acquire(sem, 1, 0));
        OK(rlock_semaphore_release(sem, 2, NULL));
        rlock_semaphore_free(sem);
    }
    rlock_count_down_latch *latch = NULL;
    OK(rlock_count_down_latch_new(client, "c:svc:latch", &latch));
    if (latch) {
        bool set = false, opened = false;
        OK(rlock_count_down_latch_try_set_count(latch, 2, &set));
        CHECK(set);
        OK(rlock_count_down_latch_count_down(latch));
        OK(rlock_count_down_latch_count_down(latch));
        OK(rlock_count_down_latch_wait(latch, 5000, &opened));
        CHECK(opened);
        rlock_count_down_latch_free(latch);
    }

    OK(rlock_lock_new(client, "c:svc:counter", RLOCK_LOCK, &counter_locks[0]));
    OK(rlock_lock_new(client, "c:svc:counter", RLOCK_SPIN_LOCK, &counter_locks[1]));
    if (!counter_locks[0] || !counter_locks[1]) return 1;
    pthread_t threads[4];
    for (intptr_t i = 0; i < 4; i++) pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    CHECK(counter == 100);
    rlock_lock_free(counter_locks[0]);
    rlock_lock_free(counter_locks[1]);

    OK(rlock_client_stats(client, &s));
    CHECK(strcmp(s.eviction_policy, policy) == 0);
    printf("services (C) on %s: %d holds renewed %llu times, none lost; semaphore, latch; counter %ld of 100; "
           "eviction policy '%s'\n",
           url, HOLDS, (unsigned long long)(s.renewals - before), counter, s.eviction_policy);
    rlock_client_free(other);
    rlock_client_free(client);
    if (failed) fprintf(stderr, "services (C): %d checks failed\n", failed);
    return failed ? 1 : 0;
}
