/* The C worker of `make demo`: takes lock "demo:lock" N times and, inside each critical
 * section, increments the non-atomic counter demo:counter (GET, then SET) with hiredis.
 * Usage: worker <label> <iterations>; Redis URL from REDIS_URL. */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock.h"

static int fail(const char *what) {
    char *msg = rlock_last_error();
    fprintf(stderr, "%s: %s\n", what, msg ? msg : "?");
    rlock_string_free(msg);
    return 1;
}

int main(int argc, char **argv) {
    const char *label = argc > 1 ? argv[1] : "c";
    int iterations = argc > 2 ? atoi(argv[2]) : 100;
    const char *url = getenv("REDIS_URL");
    char host[256] = "127.0.0.1";
    int port = 6379;
    if (url) sscanf(url, "redis://%255[^:]:%d", host, &port);

    rlock_client *client;
    rlock_lock *lock;
    if (rlock_client_new(url, NULL, &client) != RLOCK_OK) return fail("connect");
    if (rlock_lock_new(client, "demo:lock", RLOCK_LOCK, &lock) != RLOCK_OK) return fail("lock");
    redisContext *data = redisConnect(host, port);
    if (!data || data->err) {
        fprintf(stderr, "hiredis connect failed\n");
        return 1;
    }
    int handoffs = 0;
    for (int i = 0; i < iterations; i++) {
        if (rlock_lock_acquire(lock, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_OK) return fail("acquire");
        redisReply *r = redisCommand(data, "GET demo:counter");
        long n = (r && r->type == REDIS_REPLY_STRING ? atol(r->str) : 0) + 1;
        freeReplyObject(r);
        r = redisCommand(data, "GET demo:last");
        char last[64] = "";
        if (r && r->type == REDIS_REPLY_STRING) snprintf(last, sizeof last, "%s", r->str);
        freeReplyObject(r);
        freeReplyObject(redisCommand(data, "SET demo:counter %ld", n));
        freeReplyObject(redisCommand(data, "SET demo:last %s", label));
        if (rlock_lock_release(lock, RLOCK_THREAD, NULL) != RLOCK_OK) return fail("release");
        if (last[0] && strcmp(last, label) != 0 && ++handoffs <= 3)
            printf("[%s] got the lock from %s, counter = %ld\n", label, last, n);
    }
    printf("[%s] done: %d critical sections, %d hand-offs from other workers\n", label, iterations, handoffs);
    redisFree(data);
    rlock_lock_free(lock);
    rlock_client_free(client);
    return 0;
}
