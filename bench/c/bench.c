/* make bench, C part: librlock's uncontended pairs/s (N threads, each on its own lock name,
 * rlock_acquire + rlock_release in a loop; holds belong to the calling thread) and hand-off
 * latency (16 threads on one name), against the server in REDIS_URL. Prints one JSON object
 * per line for bench/report.py. Usage: bench [seconds]. BENCH_SHORT=1 (make bench-short): 100
 * hand-off acquisitions instead of 2000, and 0.5 s pairs runs when no seconds are given. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "rlock.h"

static rlock_client *client;

static void die(const char *what) {
    char msg[512];
    rlock_last_error(msg, sizeof msg);
    fprintf(stderr, "bench.c: %s: %s\n", what, msg);
    exit(1);
}

static void *pairs_thread(void *arg) {
    char name[64];
    snprintf(name, sizeof name, "bench:c:pairs:%ld", (long)(size_t)arg);
    long n = 0;
    while (pairs_running()) {
        if (rlock_acquire(client, name, 0) != RLOCK_OK) die("rlock_acquire");
        if (rlock_release(client, name, NULL) != RLOCK_OK) die("rlock_release");
        n++;
    }
    pairs_add(n);
    return NULL;
}

/* Hand-off owners: the calling threads themselves (holds belong to the thread). */
static void *handoff_open(long id) {
    (void)id;
    return NULL;
}

static void handoff_acquire(void *owner) {
    (void)owner;
    if (rlock_acquire(client, "bench:c:handoff", 0) != RLOCK_OK) die("rlock_acquire");
}

static void handoff_release(void *owner) {
    (void)owner;
    if (rlock_release(client, "bench:c:handoff", NULL) != RLOCK_OK) die("rlock_release");
}

static void handoff_close(void *owner) { (void)owner; }

int main(int argc, char **argv) {
    harness_args(argc, argv);
    if (rlock_client_new(NULL, NULL, &client) != RLOCK_OK) die("rlock_client_new");
    const int owners[] = {1, 16, 64};
    for (size_t k = 0; k < sizeof owners / sizeof owners[0]; k++) {
        double rate = run_pairs(owners[k], pairs_thread);
        printf("{\"bench\":\"pairs\",\"surface\":\"c\",\"owners\":%d,\"pairs_per_s\":%.0f}\n", owners[k], rate);
        fflush(stdout);
    }
    static const struct handoff_ops ops = {handoff_open, handoff_acquire, handoff_release, handoff_close};
    double p50, p99;
    int n;
    run_handoff(&ops, &p50, &p99, &n);
    printf("{\"bench\":\"handoff\",\"surface\":\"c\",\"waiters\":%d,\"p50_us\":%.0f,\"p99_us\":%.0f,\"samples\":%d}\n",
           WAITERS, p50, p99, n);
    rlock_client_free(client);
    return 0;
}
