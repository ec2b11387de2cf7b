/* The lost-hold pair on each handle that holds: a state query (rlock_*_is_lost) and listeners
 * per handle (rlock_*_on_lost, removed by rlock_*_remove_lost_listener or by freeing the
 * handle), beside the client's one callback (test_locks.c). */
#include "check.h"

typedef struct {
    atomic_int calls;
    char kind[16], reason[32], permit[64];
} heard_t;

static void heard(void *userdata, const rlock_lost_event *ev) {
    heard_t *h = userdata;
    snprintf(h->kind, sizeof h->kind, "%s", ev->kind);
    snprintf(h->reason, sizeof h->reason, "%s", ev->reason);
    snprintf(h->permit, sizeof h->permit, "%s", ev->permit_id ? ev->permit_id : "(null)");
    atomic_fetch_add(&h->calls, 1);
}

static void wait_calls(heard_t *h, int want) {
    for (int i = 0; i < 1000 && atomic_load(&h->calls) < want; i++) sleep_ms(10);
}

static heard_t mine, other_owner, freed_handle, permit_heard;

static void lock_pair(void) {
    rlock_lock *l = lock_on(client, "c-lost-handle", RLOCK_LOCK);
    rlock_lock *freed = lock_on(client, "c-lost-handle", RLOCK_LOCK);
    if (!l || !freed) return;
    uint64_t id = 0, other_id = 0, freed_id = 0;
    CHECK_RC(rlock_lock_on_lost(l, RLOCK_THREAD, heard, &mine, &id), RLOCK_OK);
    CHECK_RC(rlock_lock_on_lost(l, 77, heard, &other_owner, &other_id), RLOCK_OK);
    CHECK_RC(rlock_lock_on_lost(freed, RLOCK_THREAD, heard, &freed_handle, &freed_id), RLOCK_OK);
    CHECK(id != other_id && id != freed_id);
    rlock_lock_free(freed); /* takes its listener with it */

    bool lost = true, removed = false;
    CHECK_RC(rlock_lock_is_lost(l, RLOCK_THREAD, &lost), RLOCK_OK);
    CHECK(!lost);
    /* Twice: a lease nobody renews, which the holder hears of (lease_ending) before it ends.
     * After the second event reached this handle's listener, the first had reached every
     * listener: the other owner's and the freed handle's heard nothing. */
    uint64_t valid_ms = 1;
    CHECK_RC(rlock_lock_valid_for_ms(l, RLOCK_THREAD, &valid_ms), RLOCK_OK);
    CHECK(valid_ms == 0); /* not held */
    for (int round = 1; round <= 2; round++) {
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 0, 1500, NULL), RLOCK_OK);
        /* The lease from its send, less the margin (a quarter of 1.5 s, under the default 1 s). */
        CHECK_RC(rlock_lock_valid_for_ms(l, RLOCK_THREAD, &valid_ms), RLOCK_OK);
        CHECK(valid_ms <= 1125);
        wait_calls(&mine, round);
        CHECK(atomic_load(&mine.calls) == round);
        CHECK_STR(mine.kind, "lock");
        CHECK_STR(mine.reason, "lease_ending");
        CHECK_RC(rlock_lock_is_lost(l, RLOCK_THREAD, &lost), RLOCK_OK);
        CHECK(lost);
        CHECK_RC(rlock_lock_valid_for_ms(l, RLOCK_THREAD, &valid_ms), RLOCK_OK);
        CHECK(valid_ms == 0);
        CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_LOST);
        CHECK_RC(rlock_lock_is_lost(l, RLOCK_THREAD, &lost), RLOCK_OK);
        CHECK(!lost);
    }
    CHECK(atomic_load(&other_owner.calls) == 0);
    CHECK(atomic_load(&freed_handle.calls) == 0);

    CHECK_RC(rlock_lock_remove_lost_listener(l, id, &removed), RLOCK_OK);
    CHECK(removed);
    CHECK_RC(rlock_lock_remove_lost_listener(l, id, &removed), RLOCK_OK);
    CHECK(!removed);
    CHECK_RC(rlock_lock_remove_lost_listener(l, freed_id, NULL), RLOCK_OK);

    /* Bad input: typed, nothing registered. */
    CHECK_RC(rlock_lock_on_lost(l, RLOCK_THREAD, NULL, NULL, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_on_lost(NULL, RLOCK_THREAD, heard, &mine, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_is_lost(l, RLOCK_THREAD, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_is_lost(NULL, RLOCK_THREAD, &lost), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_valid_for_ms(l, RLOCK_THREAD, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_valid_for_ms(NULL, RLOCK_THREAD, &valid_ms), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_remove_lost_listener(NULL, other_id, NULL), RLOCK_INVALID_ARGUMENT);
    rlock_lock_free(l); /* still has the other owner's listener: freed with it (valgrind) */
}

static void permit_pair(void) {
    /* A 3 s lease, renewed every second: long enough that a stall under valgrind does not put
     * it in doubt before the watchdog finds the permit gone (see client_3s_watchdog). */
    rlock_client *holder = client_3s_watchdog(NULL);
    if (!holder) return;
    rlock_permit_expirable_semaphore *s = NULL;
    CHECK_RC(rlock_permit_expirable_semaphore_new(holder, "c:lost-pes", &s), RLOCK_OK);
    if (!s) {
        rlock_client_free(holder);
        return;
    }
    bool set = false, lost = true;
    CHECK_RC(rlock_permit_expirable_semaphore_try_set_permits(s, 1, RLOCK_FOREVER, &set), RLOCK_OK);
    CHECK_RC(rlock_permit_expirable_semaphore_on_lost(s, heard, &permit_heard, NULL), RLOCK_OK);
    char *id = NULL;
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(s, RLOCK_FOREVER, RLOCK_FOREVER, &id), RLOCK_OK);
    if (!id) goto done;
    CHECK_RC(rlock_permit_expirable_semaphore_is_lost(s, id, &lost), RLOCK_OK);
    CHECK(!lost);
    CHECK(redis_int("DEL '{c:lost-pes}:timeout'") == 1); /* the watchdog finds it gone */
    wait_calls(&permit_heard, 1);
    CHECK(atomic_load(&permit_heard.calls) == 1);
    CHECK_STR(permit_heard.kind, "permit");
    CHECK_STR(permit_heard.reason, "gone");
    CHECK(strcmp(permit_heard.permit, id) == 0);
    CHECK_RC(rlock_permit_expirable_semaphore_is_lost(s, id, &lost), RLOCK_OK);
    CHECK(lost);
    CHECK_RC(rlock_permit_expirable_semaphore_release(s, id), RLOCK_LOST);
    CHECK_RC(rlock_permit_expirable_semaphore_is_lost(s, NULL, &lost), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_on_lost(s, NULL, NULL, NULL), RLOCK_INVALID_ARGUMENT);
    rlock_string_free(id);
done:
    rlock_permit_expirable_semaphore_free(s); /* its listener goes with it */
    rlock_client_free(holder);
}

void test_lost_per_handle(void) {
    lock_pair();
    permit_pair();
}
