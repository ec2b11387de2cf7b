/* The lock family through rlock_lock handles: reentrancy, owners, leases, force unlock and the
 * lost-hold callback, threads, the fenced lock, the read-write and fair locks. */
#include "check.h"

/* ---- one thread: reentrancy, queries, leases ---- */
struct probe { rlock_lock *lock; rlock_result try_rc; bool held; rlock_result unlock_rc; };

static void *probe_thread(void *arg) {
    struct probe *p = arg;
    p->try_rc = rlock_lock_acquire(p->lock, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL);
    rlock_lock_is_held(p->lock, RLOCK_THREAD, &p->held);
    p->unlock_rc = rlock_lock_release(p->lock, RLOCK_THREAD, NULL);
    return NULL;
}

void test_reentrancy_and_queries(void) {
    bool b = false;
    uint32_t n = 0;
    int64_t ms = 0;
    rlock_lock *l = lock_on(client, "c-reentrant", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_remaining_ttl(l, &ms), RLOCK_OK);
    CHECK(ms == -2);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_hold_count(l, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 2);
    CHECK_RC(rlock_lock_is_held(l, RLOCK_THREAD, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_lock_is_locked(l, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_lock_remaining_ttl(l, &ms), RLOCK_OK);
    CHECK(ms > 25000 && ms <= 30000);

    /* Another thread is another owner (on the same handle): it contends and cannot unlock. */
    struct probe p = {l, RLOCK_OK, true, RLOCK_OK};
    pthread_t t;
    pthread_create(&t, NULL, probe_thread, &p);
    pthread_join(t, NULL);
    CHECK(p.try_rc == RLOCK_NOT_ACQUIRED);
    CHECK(p.held == false);
    CHECK(p.unlock_rc == RLOCK_NOT_HELD);

    /* A second handle on the same name is the same lock. */
    rlock_lock *same = lock_on(client, "c-reentrant", RLOCK_LOCK);
    CHECK_RC(rlock_lock_hold_count(same, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 2);
    rlock_lock_free(same);

    bool unlocked = true;
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, &unlocked), RLOCK_OK);
    CHECK(!unlocked); /* re-entered: still held */
    CHECK_RC(rlock_lock_hold_count(l, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, &unlocked), RLOCK_OK);
    CHECK(unlocked); /* the last level: free now */
    CHECK_RC(rlock_lock_is_locked(l, &b), RLOCK_OK);
    CHECK(!b);
    unlocked = true;
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, &unlocked), RLOCK_NOT_HELD);
    CHECK(unlocked); /* untouched on failure */

    /* A bounded wait on a held lock waits the bound, then gives up. */
    CHECK_RC(rlock_lock_acquire(l, 42, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    double start = now_ms();
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 200, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    double took = now_ms() - start;
    CHECK(took >= 200 && took < 5000);
    CHECK_RC(rlock_lock_release(l, 42, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    rlock_lock_free(l);

    /* A fixed lease ends by itself; the holder was told (lease_ending), and its late unlock is
     * LOST. */
    l = lock_on(client, "c-lease", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, 300, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_remaining_ttl(l, &ms), RLOCK_OK);
    CHECK(ms > 0 && ms <= 300);
    CHECK_RC(rlock_lock_acquire(l, 9, 5000, RLOCK_FOREVER, NULL), RLOCK_OK); /* gets in after expiry */
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_LOST);
    CHECK_RC(rlock_lock_release(l, 9, NULL), RLOCK_OK);
    rlock_lock_free(l);
}

/* ---- explicit owners ---- */
struct as_args { rlock_lock *lock; uint64_t owner; rlock_result rc; bool unlocked; };
static void *unlock_as_thread(void *arg) {
    struct as_args *a = arg;
    a->rc = rlock_lock_release(a->lock, a->owner, &a->unlocked);
    return NULL;
}

void test_explicit_owner(void) {
    bool b = false;
    uint32_t n = 0;
    rlock_lock *l = lock_on(client, "c-owner", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_acquire(l, 7, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(l, 7, 0, RLOCK_FOREVER, NULL), RLOCK_OK); /* re-enters */
    CHECK_RC(rlock_lock_hold_count(l, 7, &n), RLOCK_OK);
    CHECK(n == 2);
    CHECK_RC(rlock_lock_is_held(l, 7, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_lock_is_held(l, 8, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_lock_is_held(l, RLOCK_THREAD, &b), RLOCK_OK); /* the thread is a different owner */
    CHECK(!b);
    CHECK_RC(rlock_lock_acquire(l, 8, 0, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    /* Any thread may release for an explicit owner. */
    struct as_args a = {l, 7, RLOCK_PANIC, true};
    pthread_t t;
    pthread_create(&t, NULL, unlock_as_thread, &a);
    pthread_join(t, NULL);
    CHECK(a.rc == RLOCK_OK && !a.unlocked);
    pthread_create(&t, NULL, unlock_as_thread, &a);
    pthread_join(t, NULL);
    CHECK(a.rc == RLOCK_OK && a.unlocked);
    CHECK_RC(rlock_lock_release(l, 7, NULL), RLOCK_NOT_HELD);
    rlock_lock_free(l);
}

/* ---- force unlock and the lost-lock callback ---- */
atomic_int lost_calls;
char lost_name[64], lost_kind[16], lost_owner[128], lost_reason[32], lost_permit[64];
rlock_result rc_in_callback = RLOCK_OK;
rlock_lock *callback_probe; /* a handle the callback tries a blocking call on */

void on_lost(void *userdata, const rlock_lost_event *ev) {
    atomic_int *counter = userdata;
    snprintf(lost_name, sizeof lost_name, "%s", ev->name);
    snprintf(lost_kind, sizeof lost_kind, "%s", ev->kind);
    snprintf(lost_owner, sizeof lost_owner, "%s", ev->owner);
    snprintf(lost_reason, sizeof lost_reason, "%s", ev->reason);
    snprintf(lost_permit, sizeof lost_permit, "%s", ev->permit_id ? ev->permit_id : "(null)");
    bool b;
    rc_in_callback = rlock_lock_is_locked(callback_probe, &b); /* must be refused, not deadlock */
    atomic_fetch_add(counter, 1);
}

/* "<uuid>:<digits>": a 36-character UUID, a colon, the owner id. */
int owner_ok(const char *owner, const char *id) {
    if (strlen(owner) < 38 || owner[36] != ':') return 0;
    for (int i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? owner[i] != '-' : !strchr("0123456789abcdef", owner[i])) return 0;
    }
    for (const char *p = owner + 37; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return id == NULL || strcmp(owner + 37, id) == 0;
}

static void wait_lost(int want) {
    for (int i = 0; i < 1000 && atomic_load(&lost_calls) < want; i++) sleep_ms(10);
}

static void count_call(void *userdata, const rlock_lost_event *ev) {
    (void)ev;
    atomic_fetch_add((atomic_int *)userdata, 1);
}

void test_force_unlock_and_lost(void) {
    rlock_client *holder = client_3s_watchdog(NULL);
    if (!holder) return;
    callback_probe = lock_on(client, "c-force", RLOCK_LOCK);
    rlock_lock *held = lock_on(holder, "c-force", RLOCK_LOCK);
    rlock_lock *forcer = lock_on(client, "c-force", RLOCK_LOCK);
    CHECK_RC(rlock_client_on_lost(holder, on_lost, &lost_calls), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(held, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);

    bool released = false;
    CHECK_RC(rlock_lock_force_unlock(forcer, &released), RLOCK_OK);
    CHECK(released);
    CHECK_RC(rlock_lock_force_unlock(forcer, &released), RLOCK_OK);
    CHECK(!released);
    CHECK_RC(rlock_lock_force_unlock(forcer, NULL), RLOCK_OK);

    wait_lost(1);
    CHECK(atomic_load(&lost_calls) == 1);
    CHECK(strcmp(lost_name, "c-force") == 0);
    CHECK_STR(lost_kind, "lock");
    CHECK(owner_ok(lost_owner, NULL));
    CHECK_STR(lost_reason, "gone");
    CHECK(strcmp(lost_permit, "(null)") == 0);
    CHECK(rc_in_callback == RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_lock_release(held, RLOCK_THREAD, NULL), RLOCK_LOST);
    CHECK_RC(rlock_lock_release(held, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);

    /* An explicit owner: its id ends the owner string; same client, same UUID. The read side
     * of a read-write lock reports kind "read". */
    char thread_owner[128];
    snprintf(thread_owner, sizeof thread_owner, "%s", lost_owner);
    rlock_lock *read = lock_on(holder, "c-force-as", RLOCK_READ_LOCK);
    rlock_lock *read_forcer = lock_on(client, "c-force-as", RLOCK_READ_LOCK);
    CHECK_RC(rlock_lock_acquire(read, 77, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_force_unlock(read_forcer, NULL), RLOCK_OK);
    wait_lost(2);
    CHECK(atomic_load(&lost_calls) == 2);
    CHECK(strcmp(lost_name, "c-force-as") == 0);
    CHECK(strcmp(lost_kind, "read") == 0);
    CHECK(owner_ok(lost_owner, "77"));
    CHECK(strncmp(lost_owner, thread_owner, 37) == 0);
    CHECK_STR(lost_reason, "gone");
    CHECK_RC(rlock_lock_release(read, 77, NULL), RLOCK_LOST);
    rlock_lock_free(read);
    rlock_lock_free(read_forcer);

    /* Removing the callback: a further loss calls nothing. */
    CHECK_RC(rlock_client_on_lost(holder, NULL, NULL), RLOCK_OK);
    rlock_lock *quiet = lock_on(holder, "c-force2", RLOCK_LOCK);
    rlock_lock *quiet_forcer = lock_on(client, "c-force2", RLOCK_LOCK);
    atomic_int quiet_heard = 0;
    CHECK_RC(rlock_lock_on_lost(quiet, RLOCK_THREAD, count_call, &quiet_heard, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(quiet, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_force_unlock(quiet_forcer, NULL), RLOCK_OK);
    /* The loss is detected (the handle's own listener heard it); the client's is not called. */
    for (int i = 0; i < 1000 && atomic_load(&quiet_heard) < 1; i++) sleep_ms(10);
    CHECK(atomic_load(&quiet_heard) == 1);
    CHECK(atomic_load(&lost_calls) == 2);
    CHECK_RC(rlock_lock_release(quiet, RLOCK_THREAD, NULL), RLOCK_LOST);
    rlock_lock_free(quiet);
    rlock_lock_free(quiet_forcer);
    rlock_lock_free(held);
    rlock_lock_free(forcer);
    rlock_client_free(holder);
}

/* ---- 8 threads x 1000 critical sections, on one shared handle ---- */
#define THREADS 8
#define ROUNDS 1000
static long counter; /* deliberately not atomic */
static atomic_int errors;

static void *worker(void *arg) {
    rlock_lock *l = arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_OK) {
            atomic_fetch_add(&errors, 1);
            continue;
        }
        long v = counter;
        if (i % 64 == 0) sched_yield(); /* widen the race window */
        counter = v + 1;
        if (rlock_lock_release(l, RLOCK_THREAD, NULL) != RLOCK_OK) atomic_fetch_add(&errors, 1);
    }
    return NULL;
}

void test_threads(void) {
    rlock_lock *l = lock_on(client, "c-counter", RLOCK_LOCK);
    if (!l) return;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, l);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK(atomic_load(&errors) == 0);
    CHECK(counter == THREADS * ROUNDS);
    bool b = true;
    CHECK_RC(rlock_lock_is_locked(l, &b), RLOCK_OK);
    CHECK(!b);
    rlock_lock_free(l);
}

/* Fenced lock: every acquire takes a strictly larger token, read with the acquire. */
void test_fenced(void) {
    uint64_t t1 = 0, t2 = 0, t3 = 0, untouched = 77;
    bool unlocked = true;
    rlock_lock *f = lock_on(client, "c:fenced", RLOCK_FENCED_LOCK);
    rlock_lock *plain = lock_on(client, "c:fenced", RLOCK_LOCK);
    if (!f || !plain) return;
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, -2, RLOCK_FOREVER, &t1), RLOCK_INVALID_ARGUMENT);
    CHECK(t1 == 0);
    bool locked = true;
    CHECK_RC(rlock_lock_is_locked(f, &locked), RLOCK_OK);
    CHECK(!locked);
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, &t1), RLOCK_OK);
    CHECK(t1 >= 1);
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, &t2), RLOCK_OK); /* re-entry: a new token */
    CHECK(t2 > t1);
    CHECK_RC(rlock_lock_release(f, RLOCK_THREAD, &unlocked), RLOCK_OK);
    CHECK(!unlocked);
    CHECK_RC(rlock_lock_release(f, RLOCK_THREAD, &unlocked), RLOCK_OK);
    CHECK(unlocked);
    /* NULL out_token: the acquire takes a token all the same, and nobody reads it. */
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK(redis_int("GET 'redisson_lock_token:{c:fenced}'") == (long)t2 + 1);
    CHECK_RC(rlock_lock_release(f, RLOCK_THREAD, NULL), RLOCK_OK);
    /* Another owner (through a plain handle: the same lock) holds it: a bounded wait gets no
     * token and writes nothing. */
    CHECK_RC(rlock_lock_acquire(plain, 7, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, 20, RLOCK_FOREVER, &untouched), RLOCK_NOT_ACQUIRED);
    CHECK(untouched == 77);
    CHECK_RC(rlock_lock_release(plain, 7, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, 1000, 5000, &t3), RLOCK_OK);
    CHECK(t3 > t2);
    CHECK_RC(rlock_lock_release(f, RLOCK_THREAD, NULL), RLOCK_OK);
    /* The token comes in the acquire's own reply: a hold force-unlocked by this very client
     * right after (so nothing is left to read back) still gave the token it took. */
    uint64_t t4 = 0;
    bool released = false;
    CHECK_RC(rlock_lock_acquire(f, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, &t4), RLOCK_OK);
    CHECK_RC(rlock_lock_force_unlock(f, &released), RLOCK_OK);
    CHECK(released && t4 > t3);
    CHECK(redis_int("GET 'redisson_lock_token:{c:fenced}'") == (long)t4);
    CHECK_RC(rlock_lock_release(f, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);
    rlock_lock_free(f);
    rlock_lock_free(plain);
}

/* Thread body: waits for the fair lock as owner (intptr_t)arg, then releases it. */
static atomic_int fair_order[4];
static atomic_int fair_next;
static rlock_lock *fair;

static void *fair_waiter(void *arg) {
    uint64_t owner = (uint64_t)(intptr_t)arg;
    if (rlock_lock_acquire(fair, owner, RLOCK_FOREVER, RLOCK_FOREVER, NULL) == RLOCK_OK) {
        fair_order[atomic_fetch_add(&fair_next, 1)] = (int)owner;
        rlock_lock_release(fair, owner, NULL);
    }
    return NULL;
}

void test_read_write_and_fair(void) {
    bool b = false;
    uint32_t n = 0;
    rlock_lock *rd = lock_on(client, "c:rw", RLOCK_READ_LOCK);
    rlock_lock *wr = lock_on(client, "c:rw", RLOCK_WRITE_LOCK);
    rlock_lock *plain = lock_on(client, "c:rw", RLOCK_LOCK);
    if (!rd || !wr || !plain) return;
    CHECK_RC(rlock_lock_release(rd, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_lock_is_locked(plain, &b), RLOCK_OK);
    CHECK(!b);

    /* Readers share (this thread and owner 1); a writer (owner 2) waits. */
    uint64_t token = 5;
    CHECK_RC(rlock_lock_acquire(rd, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, &token), RLOCK_INVALID_ARGUMENT);
    CHECK(token == 5); /* not fenced: no token, and nothing taken */
    CHECK_RC(rlock_lock_acquire(rd, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(rd, 1, 0, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_hold_count(rd, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_lock_is_locked(rd, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_lock_is_locked(wr, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_lock_acquire(wr, 2, 20, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    /* A reader asking for the write lock: refused at once. */
    CHECK_RC(rlock_lock_acquire(wr, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_WOULD_DEADLOCK);
    CHECK(strcmp(rlock_result_str(RLOCK_WOULD_DEADLOCK), "RLOCK_WOULD_DEADLOCK") == 0);
    CHECK_RC(rlock_lock_release(rd, RLOCK_THREAD, &b), RLOCK_OK);
    CHECK(!b); /* owner 1 still reads */
    CHECK_RC(rlock_lock_release(rd, 1, &b), RLOCK_OK);
    CHECK(b);

    /* The writer downgrades: write, then read, then release the write hold. */
    CHECK_RC(rlock_lock_acquire(wr, 2, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_is_held(wr, 2, &b), RLOCK_OK);
    CHECK(b);
    CHECK_RC(rlock_lock_acquire(rd, 1, 20, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_lock_acquire(rd, 2, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_release(wr, 2, &b), RLOCK_OK);
    CHECK(!b);
    CHECK_RC(rlock_lock_acquire(rd, 1, 0, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_force_unlock(wr, &b), RLOCK_OK);
    CHECK(!b); /* read locked: the write side does not unlock it */
    CHECK_RC(rlock_lock_force_unlock(rd, &b), RLOCK_OK);
    CHECK(b);
    /* Force-unlocked through this client, which forgot its holds there. */
    CHECK_RC(rlock_lock_release(rd, 2, NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_lock_release(rd, 1, NULL), RLOCK_NOT_HELD);
    rlock_lock_free(rd);
    rlock_lock_free(wr);
    rlock_lock_free(plain);

    /* Fair: a holder, then 4 waiters queued one after another, granted in that order. */
    fair = lock_on(client, "c:fair", RLOCK_FAIR_LOCK);
    if (!fair) return;
    CHECK_RC(rlock_lock_acquire(fair, 10, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(fair, 11, 50, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        pthread_create(&threads[i], NULL, fair_waiter, (void *)(intptr_t)(20 + i));
        /* The next waiter starts once this one is queued. */
        double until = now_ms() + 20000;
        while (redis_llen("redisson_lock_queue:{c:fair}") != i + 1 && now_ms() < until) sleep_ms(5);
        CHECK(redis_llen("redisson_lock_queue:{c:fair}") == i + 1);
    }
    CHECK_RC(rlock_lock_release(fair, 10, &b), RLOCK_OK);
    CHECK(b);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    CHECK(atomic_load(&fair_next) == 4);
    for (int i = 0; i < 4; i++) CHECK(fair_order[i] == 20 + i);
    CHECK(redis_llen("redisson_lock_queue:{c:fair}") == 0);

    /* A waiter whose wait runs out leaves the queue before the call returns. */
    CHECK_RC(rlock_lock_acquire(fair, 10, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(fair, 11, 200, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    CHECK(redis_llen("redisson_lock_queue:{c:fair}") == 0);
    CHECK_RC(rlock_lock_release(fair, 10, NULL), RLOCK_OK);
    rlock_lock_free(fair);
}


/* The spin lock: the reentrant lock's hash, and a waiter that polls instead of subscribing. */
static rlock_lock *spin;
static atomic_int spin_got;

static void *spin_waiter(void *arg) {
    (void)arg;
    if (rlock_lock_acquire(spin, 31, RLOCK_FOREVER, RLOCK_FOREVER, NULL) == RLOCK_OK) atomic_store(&spin_got, 1);
    return NULL;
}

/* How many EVALSHA calls the test server has run. */
static long evalsha_calls(void) {
    return redis_last_int("INFO commandstats | grep -o 'cmdstat_evalsha:calls=[0-9]*' | cut -d= -f2");
}

void test_spin(void) {
    bool b = false;
    rlock_lock *plain = lock_on(client, "c:spin", RLOCK_LOCK);
    spin = lock_on(client, "c:spin", RLOCK_SPIN_LOCK);
    if (!plain || !spin) return;
    CHECK_RC(rlock_lock_acquire(spin, 30, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    /* The same lock as the reentrant lock of its name. */
    CHECK_RC(rlock_lock_acquire(plain, 32, 0, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_lock_is_held(plain, 30, &b), RLOCK_OK);
    CHECK(b);
    long tries = evalsha_calls();
    pthread_t t;
    pthread_create(&t, NULL, spin_waiter, NULL);
    /* The waiter tries again and again... */
    double until = now_ms() + 20000;
    while (evalsha_calls() < tries + 3 && now_ms() < until) sleep_ms(5);
    CHECK(evalsha_calls() >= tries + 3);
    /* ...without a subscription, and gets the lock once it is released. */
    CHECK(redis_last_int("PUBSUB NUMSUB 'redisson_lock__channel:{c:spin}'") == 0);
    CHECK(!atomic_load(&spin_got));
    CHECK_RC(rlock_lock_release(spin, 30, &b), RLOCK_OK);
    CHECK(b);
    pthread_join(t, NULL);
    CHECK(atomic_load(&spin_got));
    CHECK_RC(rlock_lock_release(spin, 31, &b), RLOCK_OK);
    CHECK(b);
    rlock_lock_free(spin);
    rlock_lock_free(plain);
}

/* The non-reentrant locks (Redisson 4.4): a re-entry fails at once with RLOCK_WOULD_DEADLOCK,
   with any wait, and changes nothing; another owner contends as on the reentrant lock. */
void test_non_reentrant(void) {
    static const int kinds[] = {RLOCK_NON_REENTRANT_LOCK, RLOCK_NON_REENTRANT_FAIR_LOCK};
    static const char *names[] = {"c:nr", "c:nrf"};
    for (int k = 0; k < 2; k++) {
        bool b = false;
        uint32_t count = 0;
        int64_t ttl = 0;
        rlock_lock *nr = lock_on(client, names[k], kinds[k]);
        rlock_lock *plain = lock_on(client, names[k], RLOCK_LOCK);
        if (!nr || !plain) return;
        CHECK_RC(rlock_lock_acquire(nr, 40, RLOCK_FOREVER, 60000, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_acquire(nr, 40, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_WOULD_DEADLOCK);
        CHECK(last_error_has("not reentrant"));
        CHECK_RC(rlock_lock_acquire(nr, 40, 0, RLOCK_FOREVER, NULL), RLOCK_WOULD_DEADLOCK);
        CHECK_RC(rlock_lock_acquire(nr, 40, 2000, 90000, NULL), RLOCK_WOULD_DEADLOCK);
        /* Nothing changed: one level, the 60 s lease (not 90 s), no queue. */
        CHECK_RC(rlock_lock_hold_count(nr, 40, &count), RLOCK_OK);
        CHECK(count == 1);
        CHECK_RC(rlock_lock_remaining_ttl(nr, &ttl), RLOCK_OK);
        CHECK(ttl > 0 && ttl <= 60000);
        CHECK(redis_int(k == 0 ? "EXISTS 'redisson_lock_queue:{c:nr}'" : "EXISTS 'redisson_lock_queue:{c:nrf}'") == 0);
        /* Another owner is kept out, through either handle. */
        CHECK_RC(rlock_lock_acquire(nr, 41, 0, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
        CHECK_RC(rlock_lock_acquire(plain, 41, 0, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
        CHECK_RC(rlock_lock_release(nr, 40, &b), RLOCK_OK);
        CHECK(b);
        CHECK_RC(rlock_lock_release(nr, 40, &b), RLOCK_NOT_HELD);
        /* Free again: taken once more, by the thread's own owner too. */
        CHECK_RC(rlock_lock_acquire(nr, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_acquire(nr, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_WOULD_DEADLOCK);
        CHECK_RC(rlock_lock_release(nr, RLOCK_THREAD, &b), RLOCK_OK);
        CHECK(b);
        rlock_lock_free(plain);
        rlock_lock_free(nr);
    }
}
