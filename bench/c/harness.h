/* The measuring of make bench's C programs (bench.c: librlock; peer.c: hiredis), so both time
 * the same way: uncontended pairs/s (N threads, each on its own lock, acquire + release in a
 * loop until the deadline) and the hand-off (16 threads on one name, from the holder calling
 * release to another thread's acquire returning). Included by one file per program. */
#ifndef RLOCK_BENCH_HARNESS_H
#define RLOCK_BENCH_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds = 3.0;

#define WAITERS 16
#define ROUNDS 2000 /* short mode: SHORT_ROUNDS */
#define SHORT_ROUNDS 100
static long rounds = ROUNDS;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* BENCH_SHORT=1 (make bench-short): 100 hand-off acquisitions instead of 2000, and 0.5 s pairs
 * runs unless the first argument gives the seconds. */
static void harness_args(int argc, char **argv) {
    const char *short_mode = getenv("BENCH_SHORT");
    if (short_mode && *short_mode && strcmp(short_mode, "0") != 0) {
        seconds = 0.5;
        rounds = SHORT_ROUNDS;
    }
    if (argc > 1) seconds = atof(argv[1]);
}

/* ---- uncontended pairs ---- */

static double stop_at;
static atomic_long pairs_done;

/* Whether a pairs thread goes on. */
static int pairs_running(void) { return now() < stop_at; }

/* A pairs thread's count, when it stops. */
static void pairs_add(long n) { atomic_fetch_add(&pairs_done, n); }

/* Pairs per second of `owners` threads running `thread` (its argument: the thread's index). */
static double run_pairs(int owners, void *(*thread)(void *)) {
    pthread_t *t = calloc((size_t)owners, sizeof *t);
    if (!t) exit(1);
    atomic_store(&pairs_done, 0);
    double start = now();
    stop_at = start + seconds;
    for (int i = 0; i < owners; i++) pthread_create(&t[i], NULL, thread, (void *)(size_t)i);
    for (int i = 0; i < owners; i++) pthread_join(t[i], NULL);
    free(t);
    return (double)atomic_load(&pairs_done) / (now() - start);
}

/* ---- hand-off: WAITERS threads on one name ---- */

/* What a hand-off thread does: open its owner (thread index), acquire and release the one
 * name (blocking until it is had), close. */
struct handoff_ops {
    void *(*open)(long id);
    void (*acquire)(void *owner);
    void (*release)(void *owner);
    void (*close)(void *owner);
};

static const struct handoff_ops *handoff_ops;
static pthread_mutex_t handoff_mu = PTHREAD_MUTEX_INITIALIZER;
static double released_at = -1;
static long released_by = -1;
static long taken;
static int handoff_done;
static double samples[ROUNDS + WAITERS];
static int nsamples;

static void *handoff_thread(void *arg) {
    long me = (long)(size_t)arg;
    void *owner = handoff_ops->open(me);
    for (;;) {
        handoff_ops->acquire(owner);
        double t = now();
        pthread_mutex_lock(&handoff_mu);
        if (released_at >= 0 && released_by != me && nsamples < ROUNDS + WAITERS)
            samples[nsamples++] = (t - released_at) * 1e6;
        released_at = -1;
        if (++taken >= rounds) handoff_done = 1;
        int stop = handoff_done;
        pthread_mutex_unlock(&handoff_mu);
        sleep_us(200); /* hold briefly so the others are waiting */
        pthread_mutex_lock(&handoff_mu);
        /* Stamped before the call, as in the other surfaces' benches. */
        released_at = now();
        released_by = me;
        pthread_mutex_unlock(&handoff_mu);
        handoff_ops->release(owner);
        if (stop) break;
        sleep_us(2000); /* work outside the lock */
    }
    handoff_ops->close(owner);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs the hand-off and gives its p50 and p99 in microseconds, and the sample count. */
static void run_handoff(const struct handoff_ops *ops, double *p50, double *p99, int *count) {
    handoff_ops = ops;
    pthread_t t[WAITERS];
    for (long i = 0; i < WAITERS; i++) pthread_create(&t[i], NULL, handoff_thread, (void *)(size_t)i);
    for (int i = 0; i < WAITERS; i++) pthread_join(t[i], NULL);
    qsort(samples, (size_t)nsamples, sizeof samples[0], cmp_double);
    *p50 = nsamples ? samples[(int)((nsamples - 1) * 0.5 + 0.5)] : 0;
    *p99 = nsamples ? samples[(int)((nsamples - 1) * 0.99 + 0.5)] : 0;
    *count = nsamples;
}

#endif
