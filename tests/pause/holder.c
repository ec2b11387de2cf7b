/* The C holder of the pause test (run.py): see core/examples/pause_holder.rs for the protocol.
 * Usage: holder URL NAME. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rlock.h"

/* A gap between two looks this long (ms) can only be the parent's pause. */
#define GAP_MS 1000.0

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

/* When the lost callback ran (0: not yet), written on a librlock thread. */
static double heard_at = 0;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t heard = PTHREAD_COND_INITIALIZER;

static void on_lost(void *userdata, const rlock_lost_event *event) {
    (void)userdata;
    (void)event;
    pthread_mutex_lock(&mutex);
    heard_at = now_ms();
    pthread_cond_signal(&heard);
    pthread_mutex_unlock(&mutex);
}

static int fail(const char *what) {
    char *msg = rlock_last_error();
    fprintf(stderr, "%s: %s\n", what, msg ? msg : "?");
    rlock_string_free(msg);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    rlock_options *options = rlock_options_new();
    rlock_client *client;
    rlock_lock *lock;
    if (rlock_options_set_watchdog_timeout_ms(options, 1500) != RLOCK_OK) return fail("options");
    if (rlock_client_new(argv[1], options, &client) != RLOCK_OK) return fail("connect");
    rlock_options_free(options);
    if (rlock_lock_new(client, argv[2], RLOCK_LOCK, &lock) != RLOCK_OK) return fail("lock");
    if (rlock_lock_acquire(lock, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_OK) return fail("acquire");
    if (rlock_lock_on_lost(lock, RLOCK_THREAD, on_lost, NULL, NULL) != RLOCK_OK) return fail("on_lost");
    printf("held\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) return fail("stdin");
    /* Before "armed": the parent may stop this process as soon as it reads it. */
    double prev = now_ms(), looked;
    printf("armed\n");
    fflush(stdout);

    bool after_pause = false, first;
    for (;;) {
        double a = now_ms();
        bool lost;
        if (rlock_lock_is_lost(lock, RLOCK_THREAD, &lost) != RLOCK_OK) return fail("is_lost");
        double b = now_ms();
        if (after_pause || a - prev > GAP_MS) {
            first = lost;
            looked = a;
            break;
        }
        /* Paused inside the look: it may have answered before the pause; the next one is first. */
        after_pause = b - a > GAP_MS;
        prev = b;
    }
    uint64_t valid_for = 0;
    if (rlock_lock_valid_for_ms(lock, RLOCK_THREAD, &valid_for) != RLOCK_OK) return fail("valid_for");
    /* Waits up to 5 s for the callback. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&mutex);
    while (heard_at == 0 && pthread_cond_timedwait(&heard, &mutex, &until) == 0) {
    }
    double at = heard_at;
    pthread_mutex_unlock(&mutex);
    long callback_ms = at == 0 ? -1 : (at < looked ? 0 : (long)(at - looked + 0.5));
    enum rlock_result r = rlock_lock_release(lock, RLOCK_THREAD, NULL);
    const char *release = r == RLOCK_OK ? "released" : r == RLOCK_LOST ? "lost" : "error";
    printf("{\"first\": %s, \"valid_for_ms\": %llu, \"callback_ms\": %ld, \"release\": \"%s\"}\n",
           first ? "true" : "false", (unsigned long long)valid_for, callback_ms, release);
    fflush(stdout);
    rlock_lock_free(lock);
    rlock_client_free(client);
    return 0;
}
