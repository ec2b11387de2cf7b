/* RedLock (rlock_red_lock) over the three independent servers of RLOCK_RED_URLS, which
 * tests/c/run.sh starts (the first is REDIS_URL's). */
#include "check.h"

/* Connects a client to each of the three servers; false (with a FAIL) when one is missing. */
static bool red_clients(rlock_client *out[3]) {
    const char *urls = getenv("RLOCK_RED_URLS");
    if (!urls) {
        fprintf(stderr, "FAIL: RLOCK_RED_URLS is not set (tests/c/run.sh sets it)\n");
        failed++;
        return false;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", urls);
    int n = 0;
    char *save = NULL;
    for (char *u = strtok_r(buf, ",", &save); u && n < 3; u = strtok_r(NULL, ",", &save)) {
        CHECK_RC(rlock_client_new(u, NULL, &out[n]), RLOCK_OK);
        if (!out[n]) return false;
        n++;
    }
    CHECK(n == 3);
    return n == 3;
}

static char red_kind[16];

static void red_heard(void *userdata, const rlock_lost_event *ev) {
    snprintf(red_kind, sizeof red_kind, "%s", ev->kind);
    atomic_fetch_add((atomic_int *)userdata, 1);
}

void test_red_lock(void) {
    rlock_client *c[3] = {NULL, NULL, NULL};
    if (!red_clients(c)) {
        for (int i = 0; i < 3; i++) rlock_client_free(c[i]);
        return;
    }
    const rlock_client *cs[3] = {c[0], c[1], c[2]};
    rlock_red_lock *r = NULL, *other = NULL, *fenced = NULL;
    CHECK_RC(rlock_red_lock_new(cs, 3, "c:red", false, &r), RLOCK_OK);
    CHECK_RC(rlock_red_lock_new(cs, 3, "c:red", false, &other), RLOCK_OK);
    CHECK_RC(rlock_red_lock_new(cs, 3, "c:red:f", true, &fenced), RLOCK_OK);
    if (!r || !other || !fenced) goto done;

    /* The thread's hold: on every server, in Redisson's layout (a hash on the first). */
    CHECK_RC(rlock_red_lock_acquire(r, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    bool held = false, lost = true, unlocked = false;
    CHECK_RC(rlock_red_lock_is_held(r, RLOCK_THREAD, &held), RLOCK_OK);
    CHECK(held);
    CHECK(redis_int("hlen c:red") == 1);
    CHECK_RC(rlock_red_lock_is_lost(r, RLOCK_THREAD, &lost), RLOCK_OK);
    CHECK(!lost);
    /* Another owner gets none of it: one round, then a short wait. */
    CHECK_RC(rlock_red_lock_acquire(other, 7, 0, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    CHECK(last_error_has("RedLock 'c:red'"));
    CHECK_RC(rlock_red_lock_acquire(other, 7, 100, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
    CHECK_RC(rlock_red_lock_is_held(other, 7, &held), RLOCK_OK);
    CHECK(!held);
    CHECK_RC(rlock_red_lock_release(r, RLOCK_THREAD, &unlocked), RLOCK_OK);
    CHECK(unlocked);
    CHECK(redis_int("exists c:red") == 0);
    CHECK_RC(rlock_red_lock_release(r, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);
    /* The explicit owner now, with a lease. */
    CHECK_RC(rlock_red_lock_acquire(other, 7, 0, 5000, NULL), RLOCK_OK);
    CHECK(redis_int("pttl c:red") > 4000);
    CHECK_RC(rlock_red_lock_release(other, 7, NULL), RLOCK_OK);

    /* Fenced: the token comes with the acquire and rises. */
    uint64_t t1 = 0, t2 = 0;
    CHECK_RC(rlock_red_lock_acquire(fenced, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, &t1), RLOCK_OK);
    CHECK(t1 > 0);
    CHECK_RC(rlock_red_lock_release(fenced, RLOCK_THREAD, NULL), RLOCK_OK);
    CHECK_RC(rlock_red_lock_acquire(fenced, RLOCK_THREAD, 0, RLOCK_FOREVER, &t2), RLOCK_OK);
    CHECK(t2 > t1);
    CHECK_RC(rlock_red_lock_release(fenced, RLOCK_THREAD, NULL), RLOCK_OK);

    /* The lost-hold listener of the handle: a lease nobody renews ends on every member, so the
     * hold is left with fewer than a majority (kind "red_lock"); is_lost says so until the
     * release, which is RLOCK_LOST. */
    atomic_int red_calls = 0;
    uint64_t listener = 0;
    bool removed = false;
    CHECK_RC(rlock_red_lock_on_lost(r, RLOCK_THREAD, red_heard, &red_calls, &listener), RLOCK_OK);
    CHECK_RC(rlock_red_lock_acquire(r, RLOCK_THREAD, 0, 1500, NULL), RLOCK_OK);
    for (int i = 0; i < 1000 && atomic_load(&red_calls) < 1; i++) sleep_ms(10);
    CHECK(atomic_load(&red_calls) == 1);
    CHECK(strcmp(red_kind, "red_lock") == 0);
    CHECK_RC(rlock_red_lock_is_lost(r, RLOCK_THREAD, &lost), RLOCK_OK);
    CHECK(lost);
    CHECK_RC(rlock_red_lock_release(r, RLOCK_THREAD, NULL), RLOCK_LOST);
    CHECK_RC(rlock_red_lock_remove_lost_listener(r, listener, &removed), RLOCK_OK);
    CHECK(removed);
    CHECK_RC(rlock_red_lock_on_lost(r, RLOCK_THREAD, NULL, NULL, NULL), RLOCK_INVALID_ARGUMENT);
    /* One left registered: freeing the handle removes it. */
    CHECK_RC(rlock_red_lock_on_lost(other, 7, red_heard, &red_calls, NULL), RLOCK_OK);

    /* Bad input: typed, and nothing taken. */
    uint64_t token = 0;
    CHECK_RC(rlock_red_lock_acquire(r, RLOCK_THREAD, 0, RLOCK_FOREVER, &token), RLOCK_INVALID_ARGUMENT);
    CHECK(redis_int("exists c:red") == 0);
    CHECK_RC(rlock_red_lock_acquire(r, RLOCK_THREAD, -2, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_red_lock_acquire(r, RLOCK_THREAD, 0, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_red_lock_acquire(NULL, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_red_lock_release(NULL, RLOCK_THREAD, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_red_lock_is_held(r, RLOCK_THREAD, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_red_lock_is_lost(NULL, RLOCK_THREAD, &lost), RLOCK_INVALID_ARGUMENT);
    rlock_red_lock *bad = (rlock_red_lock *)0x1;
    const rlock_client *dup[3] = {c[0], c[0], c[1]}, *with_null[3] = {c[0], NULL, c[1]};
    CHECK_RC(rlock_red_lock_new(cs, 2, "x", false, &bad), RLOCK_INVALID_ARGUMENT);
    CHECK(last_error_has("odd"));
    CHECK_RC(rlock_red_lock_new(dup, 3, "x", false, &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_red_lock_new(with_null, 3, "x", false, &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_red_lock_new(NULL, 3, "x", false, &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_red_lock_new(cs, 3, NULL, false, &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_red_lock_new(cs, 3, "", false, &bad), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_red_lock_new(cs, 3, "x", false, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(bad == (rlock_red_lock *)0x1);
    rlock_red_lock_free(NULL);

done:
    rlock_red_lock_free(r);
    rlock_red_lock_free(other);
    rlock_red_lock_free(fenced);
    for (int i = 0; i < 3; i++) rlock_client_free(c[i]);
}
