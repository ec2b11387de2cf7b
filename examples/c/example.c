/* Build: cc example.c $(pkg-config --cflags --libs rlock) */
#include <stdio.h>
#include <rlock.h>

int main(void) {
    rlock_client *client;
    if (rlock_client_new(NULL, NULL, &client) != RLOCK_OK) { /* NULL: $REDIS_URL or 127.0.0.1:6379 */
        char msg[256];
        rlock_last_error(msg, sizeof msg);
        fprintf(stderr, "connect: %s\n", msg);
        return 1;
    }
    if (rlock_acquire(client, "orders", 0) == RLOCK_OK) { /* 0: watchdog lease */
        puts("holding 'orders'");
        rlock_release(client, "orders", NULL);
    }
    rlock_client_free(client);
    return 0;
}
