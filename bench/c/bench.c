/* make bench, C part: librlock's uncontended pairs/s (1, 16, 64 and 256 threads, each on its own lock name,
 * rlock_lock_acquire + rlock_lock_release in a loop on a handle made once; holds belong to the calling thread),
 * what a handle costs (rlock_lock_new + rlock_lock_free alone, and the pairs at 1 and 64 threads with a
 * handle made per pair), and hand-off
 * latency (16 threads on one name), against the server in REDIS_URL. Prints one JSON object
 * per line for bench/report.py. Usage: bench [seconds]. BENCH_SHORT=1 (make bench-short): 100
 * hand-off acquisitions instead of 2000, and 0.5 s pairs runs when no seconds are given. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "rlock.h"

static rlock_client *client;

static rlock_lock *handoff_lock;

static void die(const char *what) {
    char *msg = rlock_last_error();
    fprintf(stderr, "bench.c: %s: %s\n", what, msg ? msg : "?");
    rlock_string_free(msg);
    exit(1);
}

static rlock_lock *new_lock(const char *name) {
    rlock_lock *lock;
    if (rlock_lock_new(client, name, RLOCK_LOCK, &lock) != RLOCK_OK) die("rlock_lock_new");
    return lock;
}

/* One pairs thread on its own name: acquire + release until the run ends, on a handle made
 * once, or made and freed around every pair when `handle_per_pair` (as a program that does
 * not keep its handles would; issue 46: what a handle costs per call). */
static void pairs_loop(long i, int handle_per_pair) {
    char name[64];
    snprintf(name, sizeof name, "bench:c:%s:%ld", handle_per_pair ? "fresh" : "pairs", i);
    rlock_lock *lock = handle_per_pair ? NULL : new_lock(name);
    long n = 0;
    while (pairs_running()) {
        if (handle_per_pair) lock = new_lock(name);
        if (rlock_lock_acquire(lock, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_OK)
            die("rlock_lock_acquire");
        if (rlock_lock_release(lock, RLOCK_THREAD, NULL) != RLOCK_OK) die("rlock_lock_release");
        if (handle_per_pair) rlock_lock_free(lock);
        n++;
    }
    if (!handle_per_pair) rlock_lock_free(lock);
    pairs_add(n);
}

static void *pairs_thread(void *arg) {
    pairs_loop((long)(size_t)arg, 0);
    return NULL;
}

static void *pairs_fresh_handle_thread(void *arg) {
    pairs_loop((long)(size_t)arg, 1);
    return NULL;
}

/* Nanoseconds of one rlock_lock_new + rlock_lock_free on one thread (nothing goes to Redis). */
static double handle_ns(void) {
    const long rounds = 200000;
    double start = now();
    for (long i = 0; i < rounds; i++) {
        rlock_lock_free(new_lock("bench:c:handle"));
    }
    return (now() - start) / (double)rounds * 1e9;
}

/* Hand-off owners: the calling threads themselves (holds belong to the thread). */
static void *handoff_open(long id) {
    (void)id;
    return NULL;
}

static void handoff_acquire(void *owner) {
    (void)owner;
    if (rlock_lock_acquire(handoff_lock, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_OK)
        die("rlock_lock_acquire");
}

static void handoff_release(void *owner) {
    (void)owner;
    if (rlock_lock_release(handoff_lock, RLOCK_THREAD, NULL) != RLOCK_OK) die("rlock_lock_release");
}

static void handoff_close(void *owner) { (void)owner; }

int main(int argc, char **argv) {
    harness_args(argc, argv);
    /* BENCH_THREAD_CONNECTIONS: the client's thread_connections (default 32; 0 puts every
     * thread on the shared connection), for comparing the two (bench/README.md). */
    rlock_options *options = rlock_options_new();
    if (!options) die("rlock_options_new");
    const char *tc = getenv("BENCH_THREAD_CONNECTIONS");
    if (tc && rlock_options_set_thread_connections(options, (uint32_t)strtoul(tc, NULL, 10)) != RLOCK_OK)
        die("rlock_options_set_thread_connections");
    if (rlock_client_new(NULL, options, &client) != RLOCK_OK) die("rlock_client_new");
    rlock_options_free(options);
    handoff_lock = new_lock("bench:c:handoff");
    int owners[] = {1, 16, 64, 256};
    size_t counts = sizeof owners / sizeof owners[0];
    /* BENCH_ONLY_OWNERS=N: the pairs with N threads only, then exit (for a profiler). */
    const char *only = getenv("BENCH_ONLY_OWNERS");
    if (only) {
        owners[0] = atoi(only);
        counts = 1;
        if (owners[0] < 1 || owners[0] > 4096) {
            fprintf(stderr, "bench.c: BENCH_ONLY_OWNERS must be a thread count from 1 to 4096, not '%s'\n", only);
            return 2;
        }
    }
    for (size_t k = 0; k < counts; k++) {
        double rate = run_pairs(owners[k], pairs_thread);
        printf("{\"bench\":\"pairs\",\"surface\":\"c\",\"owners\":%d,\"pairs_per_s\":%.0f}\n", owners[k], rate);
        fflush(stdout);
    }
    if (only) return 0;
    printf("{\"bench\":\"handle\",\"surface\":\"c\",\"new_free_ns\":%.0f}\n", handle_ns());
    const int fresh_owners[] = {1, 64};
    for (size_t k = 0; k < sizeof fresh_owners / sizeof fresh_owners[0]; k++) {
        double rate = run_pairs(fresh_owners[k], pairs_fresh_handle_thread);
        printf("{\"bench\":\"pairs\",\"surface\":\"c (handle per pair)\",\"owners\":%d,\"pairs_per_s\":%.0f}\n",
               fresh_owners[k], rate);
        fflush(stdout);
    }
    static const struct handoff_ops ops = {handoff_open, handoff_acquire, handoff_release, handoff_close};
    double p50, p99;
    int n;
    run_handoff(&ops, &p50, &p99, &n);
    printf("{\"bench\":\"handoff\",\"surface\":\"c\",\"waiters\":%d,\"p50_us\":%.0f,\"p99_us\":%.0f,\"samples\":%d}\n",
           WAITERS, p50, p99, n);
    rlock_lock_free(handoff_lock);
    rlock_client_free(client);
    return 0;
}
