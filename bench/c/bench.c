/* make bench, C part: librlock's uncontended pairs/s (N threads, each on its own lock name,
 * rlock_acquire + rlock_release in a loop; holds belong to the calling thread) and hand-off
 * latency (16 threads on one name), against the server in REDIS_URL. Prints one JSON object
 * per line for bench/report.py. Usage: bench [seconds]. BENCH_SHORT=1 (make bench-short): 100
 * hand-off acquisitions instead of 2000, and 0.5 s pairs runs when no seconds are given. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlock.h"

static rlock_client *client;
static double seconds = 3.0;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void die(const char *what) {
    char msg[512];
    rlock_last_error(msg, sizeof msg);
    fprintf(stderr, "bench.c: %s: %s\n", what, msg);
    exit(1);
}

/* ---- uncontended pairs ---- */

static double stop_at;
static atomic_long pairs_done;

static void *pairs_thread(void *arg) {
    char name[64];
    snprintf(name, sizeof name, "bench:c:pairs:%ld", (long)(size_t)arg);
    long n = 0;
    while (now() < stop_at) {
        if (rlock_acquire(client, name, 0) != RLOCK_OK) die("rlock_acquire");
        if (rlock_release(client, name, NULL) != RLOCK_OK) die("rlock_release");
        n++;
    }
    atomic_fetch_add(&pairs_done, n);
    return NULL;
}

static double pairs(int owners) {
    pthread_t *t = calloc((size_t)owners, sizeof *t);
    if (!t) exit(1);
    atomic_store(&pairs_done, 0);
    double start = now();
    stop_at = start + seconds;
    for (int i = 0; i < owners; i++) pthread_create(&t[i], NULL, pairs_thread, (void *)(size_t)i);
    for (int i = 0; i < owners; i++) pthread_join(t[i], NULL);
    free(t);
    return (double)atomic_load(&pairs_done) / (now() - start);
}

/* ---- hand-off: 16 threads on one name ---- */

#define WAITERS 16
#define ROUNDS 2000 /* short mode: SHORT_ROUNDS */
#define SHORT_ROUNDS 100
static long rounds = ROUNDS;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double released_at = -1;
static long released_by = -1;
static long taken;
static int done;
static double samples[ROUNDS + WAITERS];
static int nsamples;

static void *handoff_thread(void *arg) {
    long me = (long)(size_t)arg;
    for (;;) {
        if (rlock_acquire(client, "bench:c:handoff", 0) != RLOCK_OK) die("rlock_acquire");
        double t = now();
        pthread_mutex_lock(&mu);
        if (released_at >= 0 && released_by != me && nsamples < ROUNDS + WAITERS)
            samples[nsamples++] = (t - released_at) * 1e6;
        released_at = -1;
        if (++taken >= rounds) done = 1;
        int stop = done;
        pthread_mutex_unlock(&mu);
        sleep_us(200); /* hold briefly so the others are waiting */
        pthread_mutex_lock(&mu);
        /* Stamped before the call, as in the other surfaces' benches. */
        released_at = now();
        released_by = me;
        pthread_mutex_unlock(&mu);
        if (rlock_release(client, "bench:c:handoff", NULL) != RLOCK_OK) die("rlock_release");
        if (stop) return NULL;
        sleep_us(2000); /* work outside the lock */
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *short_mode = getenv("BENCH_SHORT");
    if (short_mode && *short_mode && strcmp(short_mode, "0") != 0) {
        seconds = 0.5;
        rounds = SHORT_ROUNDS;
    }
    if (argc > 1) seconds = atof(argv[1]);
    if (rlock_client_new(NULL, NULL, &client) != RLOCK_OK) die("rlock_client_new");
    const int owners[] = {1, 16, 64};
    for (size_t k = 0; k < sizeof owners / sizeof owners[0]; k++) {
        double rate = pairs(owners[k]);
        printf("{\"bench\":\"pairs\",\"surface\":\"c\",\"owners\":%d,\"pairs_per_s\":%.0f}\n", owners[k], rate);
        fflush(stdout);
    }
    pthread_t t[WAITERS];
    for (long i = 0; i < WAITERS; i++) pthread_create(&t[i], NULL, handoff_thread, (void *)(size_t)i);
    for (int i = 0; i < WAITERS; i++) pthread_join(t[i], NULL);
    qsort(samples, (size_t)nsamples, sizeof samples[0], cmp);
    double p50 = nsamples ? samples[(int)((nsamples - 1) * 0.5 + 0.5)] : 0;
    double p99 = nsamples ? samples[(int)((nsamples - 1) * 0.99 + 0.5)] : 0;
    printf("{\"bench\":\"handoff\",\"surface\":\"c\",\"waiters\":%d,\"p50_us\":%.0f,\"p99_us\":%.0f,\"samples\":%d}\n",
           WAITERS, p50, p99, nsamples);
    rlock_client_free(client);
    return 0;
}
