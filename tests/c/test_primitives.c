/* The semaphore, the permit-expirable semaphore, the multi-lock and the count-down latch. */
#include "check.h"

void test_semaphore(void) {
    bool set = false;
    int64_t n = -7;
    rlock_semaphore *sem = (rlock_semaphore *)0x1;
    CHECK_RC(rlock_semaphore_new(NULL, "c:sem", &sem), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_new(client, "", &sem), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_new(client, "c:sem", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(sem == (rlock_semaphore *)0x1);
    rlock_semaphore_free(NULL); /* no-op */
    CHECK_RC(rlock_semaphore_new(client, "c:sem", &sem), RLOCK_OK);
    CHECK_RC(rlock_semaphore_available_permits(sem, &n), RLOCK_OK);
    CHECK(n == 0); /* a missing key is 0 permits */
    CHECK_RC(rlock_semaphore_acquire(sem, 1, 0), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_semaphore_try_set_permits(sem, 2, RLOCK_FOREVER, &set), RLOCK_OK);
    CHECK(set);
    CHECK_RC(rlock_semaphore_try_set_permits(sem, 5, RLOCK_FOREVER, &set), RLOCK_OK);
    CHECK(!set);
    CHECK_RC(rlock_semaphore_acquire(sem, 2, RLOCK_FOREVER), RLOCK_OK);
    CHECK_RC(rlock_semaphore_acquire(sem, 1, 30), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_semaphore_release(sem, 1, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_semaphore_release(sem, 1, NULL), RLOCK_OK);
    CHECK_RC(rlock_semaphore_add_permits(sem, -1, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_semaphore_drain_permits(sem, &n), RLOCK_OK);
    CHECK(n == 1);
    /* Bad input changes nothing. */
    CHECK_RC(rlock_semaphore_acquire(sem, 0, RLOCK_FOREVER), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_acquire(sem, -3, RLOCK_FOREVER), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_release(sem, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_acquire(sem, 1, -2), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_try_set_permits(sem, -1, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_try_set_permits(sem, 1, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("ttl_ms"));
    CHECK_RC(rlock_semaphore_available_permits(sem, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_semaphore_acquire(NULL, 1, RLOCK_FOREVER), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("semaphore is NULL"));
    CHECK_RC(rlock_semaphore_available_permits(sem, &n), RLOCK_OK);
    CHECK(n == 0);
    rlock_semaphore_free(sem);
}

/* ---- the permit-expirable semaphore ---- */
void test_permit_semaphore(void) {
    rlock_permit_expirable_semaphore *sem = NULL;
    CHECK_RC(rlock_permit_expirable_semaphore_new(NULL, "c:pes", &sem), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_new(client, "", &sem), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_new(client, "c:pes", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(sem == NULL);
    rlock_permit_expirable_semaphore_free(NULL); /* no-op */
    CHECK_RC(rlock_permit_expirable_semaphore_new(client, "c:pes", &sem), RLOCK_OK);
    if (!sem) return;
    char *id = NULL, *id2 = NULL, *none = (char *)"untouched";
    bool set = false;
    int64_t avail = -1, held = -1;
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, 0, RLOCK_FOREVER, &none), RLOCK_NOT_ACQUIRED);
    CHECK(strcmp(none, "untouched") == 0);
    CHECK_RC(rlock_permit_expirable_semaphore_try_set_permits(sem, 2, RLOCK_FOREVER, &set), RLOCK_OK);
    CHECK(set);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, RLOCK_FOREVER, 60000, &id), RLOCK_OK);
    CHECK(id && strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, 100, RLOCK_FOREVER, &id2), RLOCK_OK);
    CHECK(id && id2 && strcmp(id, id2) != 0);
    CHECK_RC(rlock_permit_expirable_semaphore_permits(sem, &avail, &held), RLOCK_OK);
    CHECK(avail == 0 && held == 2);
    CHECK(redis_int("ZCARD '{c:pes}:timeout'") == 2);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, 30, RLOCK_FOREVER, &none), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_permit_expirable_semaphore_update_lease(sem, id, RLOCK_FOREVER), RLOCK_OK);
    CHECK_RC(rlock_permit_expirable_semaphore_release(sem, id), RLOCK_OK);
    CHECK_RC(rlock_permit_expirable_semaphore_release(sem, id), RLOCK_NOT_HELD);
    CHECK_RC(rlock_permit_expirable_semaphore_update_lease(sem, id, 1000), RLOCK_NOT_HELD);
    CHECK_RC(rlock_permit_expirable_semaphore_release(sem, id2), RLOCK_OK);
    rlock_string_free(id);
    rlock_string_free(id2);
    /* Bad input changes nothing. */
    CHECK_RC(rlock_permit_expirable_semaphore_release(sem, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_release(sem, "xyz"), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_update_lease(sem, "+0112233445566778899aabbccddeeff", RLOCK_FOREVER),
             RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_update_lease(sem, "00112233445566778899aabbccddeeff", 0),
             RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, -2, RLOCK_FOREVER, &none), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(sem, 0, 0, &none), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(NULL, 0, RLOCK_FOREVER, &none), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_permit_expirable_semaphore_try_set_permits(sem, -1, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(strcmp(none, "untouched") == 0);
    CHECK_RC(rlock_permit_expirable_semaphore_add_permits(sem, 1, &avail), RLOCK_OK);
    CHECK(avail == 3);
    CHECK_RC(rlock_permit_expirable_semaphore_permits(sem, &avail, &held), RLOCK_OK);
    CHECK(avail == 3 && held == 0);

    /* A permit removed under the watchdog reaches the client's callback (kind "permit", the
     * permit id, the client's owner 0); its release fails with RLOCK_LOST. */
    rlock_client *holder = client_3s_watchdog(NULL);  /* a stall under valgrind must not mean doubt */
    if (!holder) return;
    rlock_permit_expirable_semaphore *hs = NULL;
    CHECK_RC(rlock_permit_expirable_semaphore_new(holder, "c:pes", &hs), RLOCK_OK);
    atomic_int calls = 0;
    CHECK_RC(rlock_client_on_lost(holder, on_lost, &calls), RLOCK_OK);
    id = NULL;
    CHECK_RC(rlock_permit_expirable_semaphore_acquire(hs, RLOCK_FOREVER, RLOCK_FOREVER, &id), RLOCK_OK);
    CHECK(redis_int("DEL '{c:pes}:timeout'") == 1);
    for (int i = 0; i < 1000 && atomic_load(&calls) < 1; i++) sleep_ms(10);
    CHECK(atomic_load(&calls) == 1);
    CHECK(strcmp(lost_name, "c:pes") == 0);
    CHECK_STR(lost_kind, "permit");
    CHECK(id && strcmp(lost_permit, id) == 0);
    CHECK(owner_ok(lost_owner, "0"));
    CHECK_STR(lost_reason, "gone");
    CHECK_RC(rlock_permit_expirable_semaphore_release(hs, id), RLOCK_LOST);
    rlock_string_free(id);
    rlock_permit_expirable_semaphore_free(hs);
    rlock_permit_expirable_semaphore_free(sem);
    rlock_client_free(holder);
}

/* ---- the multi-lock ---- */
struct multi_arg {
    rlock_multi_lock *multi;
    int rounds;
    atomic_int *inside, *total, *errors;
};

/* Takes the members (in this thread's order) `rounds` times; counts overlaps as errors. */
static void *multi_worker(void *p) {
    struct multi_arg *a = p;
    for (int i = 0; i < a->rounds; i++) {
        if (rlock_multi_lock_acquire(a->multi, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER) != RLOCK_OK) {
            atomic_fetch_add(a->errors, 1);
            continue;
        }
        if (atomic_fetch_add(a->inside, 1) != 0) atomic_fetch_add(a->errors, 1);
        sched_yield();
        atomic_fetch_sub(a->inside, 1);
        atomic_fetch_add(a->total, 1);
        if (rlock_multi_lock_release(a->multi, RLOCK_THREAD) != RLOCK_OK) atomic_fetch_add(a->errors, 1);
    }
    return NULL;
}

void test_multi_lock(void) {
    rlock_lock *a = lock_on(client, "c:m:a", RLOCK_LOCK);
    rlock_lock *b = lock_on(client, "c:m:b", RLOCK_FAIR_LOCK);
    rlock_lock *c = lock_on(client, "c:m:c", RLOCK_WRITE_LOCK);
    if (!a || !b || !c) return;
    rlock_lock *members[3] = {a, b, c};
    rlock_multi_lock *m = NULL;
    CHECK_RC(rlock_multi_lock_new(members, 3, &m), RLOCK_OK);
    if (!m) return;
    /* Another owner holds one member: nothing is taken. */
    CHECK_RC(rlock_lock_acquire(b, 5, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_multi_lock_acquire(m, RLOCK_THREAD, 100, RLOCK_FOREVER), RLOCK_NOT_ACQUIRED);
    /* Core's one message, as Node says it (core/src/bindings.rs). */
    CHECK(last_error_has("the multi-lock of 3 members was not acquired within 100 ms"));
    bool locked = true;
    CHECK_RC(rlock_lock_is_locked(a, &locked), RLOCK_OK);
    CHECK(!locked);
    CHECK_RC(rlock_lock_release(b, 5, NULL), RLOCK_OK);
    CHECK_RC(rlock_multi_lock_acquire(m, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER), RLOCK_OK);
    bool held = false;
    CHECK_RC(rlock_lock_is_held(c, RLOCK_THREAD, &held), RLOCK_OK);
    CHECK(held);
    held = false;
    CHECK_RC(rlock_multi_lock_is_held(m, RLOCK_THREAD, &held), RLOCK_OK);
    CHECK(held);
    CHECK_RC(rlock_multi_lock_is_held(m, 99, &held), RLOCK_OK);
    CHECK(!held);
    /* The multi-lock keeps its members: their handles may go. */
    rlock_lock_free(b);
    rlock_lock_free(c);
    /* Release frees every member and reports the failures. */
    CHECK_RC(rlock_lock_force_unlock(a, NULL), RLOCK_OK);
    rlock_result rc = rlock_multi_lock_release(m, RLOCK_THREAD);
    CHECK(rc == RLOCK_NOT_HELD || rc == RLOCK_LOST);
    CHECK(last_error_has("1 of 3") && last_error_has("'c:m:a'"));
    b = lock_on(client, "c:m:b", RLOCK_FAIR_LOCK);
    c = lock_on(client, "c:m:c", RLOCK_WRITE_LOCK);
    CHECK_RC(rlock_lock_is_locked(b, &locked), RLOCK_OK);
    CHECK(!locked);
    CHECK_RC(rlock_lock_is_locked(c, &locked), RLOCK_OK);
    CHECK(!locked);
    rlock_multi_lock_free(m);
    rlock_lock_free(b);
    rlock_lock_free(c);

    /* Threads taking {a, b} and {b, a}: no deadlock, one inside at a time. */
    rlock_lock *da = lock_on(client, "c:d:a", RLOCK_LOCK);
    rlock_lock *db = lock_on(client, "c:d:b", RLOCK_LOCK);
    rlock_lock *ab_members[2] = {da, db}, *ba_members[2] = {db, da};
    rlock_multi_lock *ab = NULL, *ba = NULL;
    CHECK_RC(rlock_multi_lock_new(ab_members, 2, &ab), RLOCK_OK);
    CHECK_RC(rlock_multi_lock_new(ba_members, 2, &ba), RLOCK_OK);
    rlock_lock_free(da);
    rlock_lock_free(db);
    atomic_int inside = 0, total = 0, errs = 0;
    pthread_t t[4];
    struct multi_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct multi_arg){i % 2 ? ba : ab, 50, &inside, &total, &errs};
        pthread_create(&t[i], NULL, multi_worker, &args[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    CHECK(atomic_load(&errs) == 0);
    CHECK(atomic_load(&total) == 200);
    rlock_multi_lock_free(ab);
    rlock_multi_lock_free(ba);

    /* Bad input. */
    rlock_lock *with_null[2] = {a, NULL};
    m = (rlock_multi_lock *)0x1;
    CHECK_RC(rlock_multi_lock_new(NULL, 1, &m), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_new(members, 0, &m), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_new(with_null, 2, &m), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_new(with_null, 1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(m == (rlock_multi_lock *)0x1);
    CHECK_RC(rlock_multi_lock_acquire(NULL, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_release(NULL, RLOCK_THREAD), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_is_held(NULL, RLOCK_THREAD, &held), RLOCK_INVALID_ARGUMENT);
    m = NULL;
    CHECK_RC(rlock_multi_lock_new(with_null, 1, &m), RLOCK_OK);
    CHECK_RC(rlock_multi_lock_acquire(m, RLOCK_THREAD, -2, RLOCK_FOREVER), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_acquire(m, RLOCK_THREAD, 0, 0), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_multi_lock_is_held(m, RLOCK_THREAD, NULL), RLOCK_INVALID_ARGUMENT);
    rlock_multi_lock_free(m);
    rlock_multi_lock_free(NULL); /* no-op */
    CHECK_RC(rlock_lock_is_locked(a, &locked), RLOCK_OK);
    CHECK(!locked);
    rlock_lock_free(a);
}

/* Thread body: waits on the latch "c:latch" without a limit. */
static atomic_int latch_open;
static rlock_count_down_latch *latch;

static void *latch_waiter(void *arg) {
    bool opened = false;
    rlock_result rc = rlock_count_down_latch_wait(latch, RLOCK_FOREVER, &opened);
    *(rlock_result *)arg = rc;
    if (rc == RLOCK_OK && opened) atomic_fetch_add(&latch_open, 1);
    return NULL;
}

void test_latch(void) {
    bool b = false;
    uint64_t n = 7;
    rlock_count_down_latch *bad = (rlock_count_down_latch *)0x1;
    CHECK_RC(rlock_count_down_latch_new(NULL, "c:latch", &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_new(client, NULL, &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_new(client, "", &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_new(client, "c:latch", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(bad == (rlock_count_down_latch *)0x1);
    rlock_count_down_latch_free(NULL); /* no-op */
    CHECK_RC(rlock_count_down_latch_new(client, "c:latch", &latch), RLOCK_OK);
    if (!latch) return;
    CHECK_RC(rlock_count_down_latch_count(latch, &n), RLOCK_OK);
    CHECK(n == 0); /* a missing key is an open latch */
    CHECK_RC(rlock_count_down_latch_wait(latch, 0, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_count_down_latch_try_set_count(latch, 2, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_count_down_latch_try_set_count(latch, 5, &b), RLOCK_OK);
    CHECK(!b); /* only when missing; nothing changed */
    CHECK(redis_last_int("GET c:latch") == 2);

    /* Three threads wait; the first count-down opens nothing, the second opens it for all. */
    pthread_t t[3];
    rlock_result rcs[3];
    for (int i = 0; i < 3; i++) {
        rcs[i] = RLOCK_PANIC;
        pthread_create(&t[i], NULL, latch_waiter, &rcs[i]);
    }
    double until = now_ms() + 20000;
    while (redis_last_int("PUBSUB NUMSUB 'redisson_countdownlatch__channel__{c:latch}'") != 1 && now_ms() < until)
        sleep_ms(5);
    CHECK_RC(rlock_count_down_latch_count_down(latch), RLOCK_OK);
    CHECK_RC(rlock_count_down_latch_count(latch, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK(atomic_load(&latch_open) == 0);
    double zero = now_ms();
    CHECK_RC(rlock_count_down_latch_count_down(latch), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK(rcs[i] == RLOCK_OK);
    }
    CHECK(atomic_load(&latch_open) == 3);
    CHECK(now_ms() - zero < 2000);
    CHECK(redis_last_int("EXISTS c:latch") == 0); /* the key goes at zero */

    /* A timed wait runs out. */
    CHECK_RC(rlock_count_down_latch_try_set_count(latch, 1, NULL), RLOCK_OK);
    double start = now_ms();
    b = true;
    CHECK_RC(rlock_count_down_latch_wait(latch, 150, &b), RLOCK_OK);
    CHECK(!b);
    CHECK(now_ms() - start >= 150);

    /* Bad input changes nothing. */
    CHECK_RC(rlock_count_down_latch_try_set_count(latch, -1, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_wait(latch, -2, &b), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_count(latch, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_count_down_latch_count_down(NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("latch is NULL"));
    rlock_count_down_latch *wrong = NULL;
    CHECK_RC(rlock_count_down_latch_new(client, "wrongtype", &wrong), RLOCK_OK);
    CHECK_RC(rlock_count_down_latch_count_down(wrong), RLOCK_REDIS);
    rlock_count_down_latch_free(wrong);
    CHECK_RC(rlock_count_down_latch_count(latch, &n), RLOCK_OK);
    CHECK(n == 1);

    /* delete: whatever the count; says whether it existed. */
    CHECK_RC(rlock_count_down_latch_delete(latch, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_count_down_latch_delete(latch, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_count_down_latch_delete(latch, NULL), RLOCK_OK);
    rlock_count_down_latch_free(latch);
}

