/* Build: cc example.c $(pkg-config --cflags --libs rlock) */
#include <stdio.h>
#include <rlock.h>

static int fail(const char *what) {
    char *msg = rlock_last_error(); /* allocated by librlock: free with rlock_string_free */
    fprintf(stderr, "%s: %s\n", what, msg ? msg : "?");
    rlock_string_free(msg);
    return 1;
}

int main(void) {
    rlock_client *client;
    rlock_lock *orders;
    if (rlock_client_new(NULL, NULL, &client) != RLOCK_OK) /* NULL: $REDIS_URL or 127.0.0.1:6379 */
        return fail("connect");
    if (rlock_lock_new(client, "orders", RLOCK_LOCK, &orders) != RLOCK_OK) return fail("lock");
    /* The calling thread; wait as long as it takes; no fixed lease (the watchdog renews it). */
    if (rlock_lock_acquire(orders, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) == RLOCK_OK) {
        puts("holding 'orders'");
        rlock_lock_release(orders, RLOCK_THREAD, NULL);
    }
    rlock_lock_free(orders);
    rlock_client_free(client);
    return 0;
}
