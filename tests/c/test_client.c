/* The client's figures, describe and list, fork(), frees racing blocked calls, topologies and
 * the server going away. */
#include "check.h"

/* ---- describe and list: core's JSON text, freed with rlock_string_free ---- */
void test_describe(void) {
    char *json = NULL;
    rlock_lock *l = lock_on(client, "c-describe", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_client_describe(client, "c-describe", &json), RLOCK_OK);
    CHECK(json && strstr(json, "\"kind\":\"lock\""));
    CHECK(json && strstr(json, "\"count\":2"));
    CHECK(json && strstr(json, "\"name\":\"c-describe\""));
    rlock_string_free(json);

    /* The holder record (app_name unset here) is written within about a second. */
    int recorded = 0;
    for (double until = now_ms() + 10000; !recorded && now_ms() < until; sleep_ms(20)) {
        json = NULL;
        CHECK_RC(rlock_client_describe(client, "c-describe", &json), RLOCK_OK);
        char pid[32];
        snprintf(pid, sizeof pid, "\"pid\":%d", (int)getpid());
        recorded = json && strstr(json, pid) != NULL;
        rlock_string_free(json);
    }
    CHECK(recorded);
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    rlock_lock_free(l);

    json = NULL;
    CHECK_RC(rlock_client_describe(client, "c-describe-missing", &json), RLOCK_OK);
    CHECK(json && strstr(json, "\"kind\":\"none\""));
    rlock_string_free(json);
    json = NULL;
    CHECK_RC(rlock_client_describe(client, "wrongtype", &json), RLOCK_OK); /* a foreign key */
    CHECK(json && strstr(json, "\"kind\":\"other\""));
    rlock_string_free(json);

    l = lock_on(client, "c-listed", RLOCK_LOCK);
    if (!l) return;
    CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    json = NULL;
    CHECK_RC(rlock_client_list(client, "c-listed*", 0, &json), RLOCK_OK);
    CHECK(json && strcmp(json, "[{\"name\":\"c-listed\",\"kind\":\"lock\"}]") == 0);
    rlock_string_free(json);
    json = NULL;
    CHECK_RC(rlock_client_list(client, NULL, 1, &json), RLOCK_OK);
    int entries = 0;
    for (const char *p = json; p && (p = strstr(p, "\"name\":")) != NULL; p++) entries++;
    CHECK(json && json[0] == '[' && entries == 1);
    rlock_string_free(json);
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    rlock_lock_free(l);

    /* Bad input: nothing written, nothing sent. */
    json = NULL;
    CHECK_RC(rlock_client_describe(client, "", &json), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_describe(client, NULL, &json), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_describe(NULL, "x", &json), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_describe(client, "x", NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_list(client, "\xff", 0, &json), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_list(client, NULL, 0, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK(json == NULL);
    rlock_string_free(NULL);
}

/* ---- fork(): children make their own clients, inherited ones fail at once ---- */
#define CHILDREN 4
#define CHILD_ROUNDS 50

static long read_counter(const char *path) {
    char buf[32] = "";
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 ? atol(buf) : 0;
}

static int write_counter(const char *path, long v) {
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%ld", v);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -1;
    int ok = write(fd, buf, (size_t)len) == len;
    close(fd);
    return ok ? 0 : -1;
}

/* The child: 0 when all went well, else the number of the failed step. `inherited` is a
 * handle the parent made before fork(). */
static int child_main(const char *path, rlock_lock *inherited) {
    CHILD_NO_LEAK_CHECK();
    /* The inherited client and handles fail at once with RLOCK_FORKED, whatever the call. */
    double start = now_ms();
    bool b = false;
    uint32_t n = 0;
    rlock_connection_info info;
    rlock_lock *l = NULL;
    rlock_semaphore *sem = NULL;
    if (rlock_lock_is_locked(inherited, &b) != RLOCK_FORKED) return 2;
    if (!last_error_has("fork")) return 3;
    if (rlock_lock_acquire(inherited, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_FORKED) return 4;
    if (rlock_lock_new(client, "c-fork", RLOCK_LOCK, &l) != RLOCK_FORKED || l) return 5;
    if (rlock_lock_release(inherited, RLOCK_THREAD, &b) != RLOCK_FORKED) return 6;
    if (rlock_lock_hold_count(inherited, RLOCK_THREAD, &n) != RLOCK_FORKED) return 7;
    if (rlock_client_info(client, &info) != RLOCK_FORKED) return 8;
    if (rlock_client_on_lost(client, NULL, NULL) != RLOCK_FORKED) return 9;
    if (rlock_semaphore_new(client, "c-fork-sem", &sem) != RLOCK_FORKED) return 16;
    if (now_ms() - start > 2000) return 10; /* "at once", even under valgrind */

    rlock_client *mine = NULL;
    if (rlock_client_new(NULL, NULL, &mine) != RLOCK_OK) return 11;
    /* Freeing the inherited handle and client touches nothing of the parent's (nor hangs). */
    rlock_lock_free(inherited);
    rlock_client_free(client);
    if (rlock_lock_new(mine, "c-fork", RLOCK_LOCK, &l) != RLOCK_OK) return 17;
    for (int i = 0; i < CHILD_ROUNDS; i++) {
        if (rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_OK) return 12;
        long v = read_counter(path);
        if (v < 0) return 13;
        if (i % 8 == 0) sleep_ms(1); /* widen the race window */
        if (write_counter(path, v + 1) != 0) return 14;
        bool unlocked = false;
        if (rlock_lock_release(l, RLOCK_THREAD, &unlocked) != RLOCK_OK || !unlocked) return 15;
    }
    rlock_lock_free(l);
    rlock_client_free(mine);
    return 0;
}

void test_fork(void) {
    /* The parent's client is in use (its runtime thread runs) when the children are made. */
    bool b = true;
    rlock_lock *parent = lock_on(client, "c-fork-parent", RLOCK_LOCK);
    rlock_lock *shared = lock_on(client, "c-fork", RLOCK_LOCK);
    if (!parent || !shared) return;
    CHECK_RC(rlock_lock_acquire(parent, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_is_locked(shared, &b), RLOCK_OK);
    CHECK(!b);
    char dir[] = "/tmp/rlock-c-fork-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/counter", dir);
    CHECK(write_counter(path, 0) == 0);

    fflush(stdout);
    fflush(stderr);
    pid_t pids[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        pids[i] = fork();
        if (pids[i] == 0) _exit(child_main(path, shared));
        CHECK(pids[i] > 0);
    }
    for (int i = 0; i < CHILDREN; i++) {
        int status = -1;
        if (pids[i] <= 0) continue;
        while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {}
        CHECK(WIFEXITED(status));
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
            fprintf(stderr, "fork child %d exited %d\n", i, WEXITSTATUS(status));
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK(read_counter(path) == CHILDREN * CHILD_ROUNDS);
    unlink(path);
    rmdir(dir);

    /* The parent's client and handles still work, and it still holds its lock. */
    uint32_t n = 0;
    CHECK_RC(rlock_lock_hold_count(parent, RLOCK_THREAD, &n), RLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(rlock_lock_release(parent, RLOCK_THREAD, NULL), RLOCK_OK);
    CHECK_RC(rlock_lock_is_locked(shared, &b), RLOCK_OK);
    CHECK(!b);
    rlock_lock_free(parent);
    rlock_lock_free(shared);
}

/* ---- rlock_client_free while other threads wait in rlock_lock_acquire ---- */
#define BLOCKED 4
static atomic_int entering;
struct blocked { rlock_lock *lock; rlock_result rc; };

static void *blocked_acquire(void *arg) {
    struct blocked *b = arg;
    atomic_fetch_add(&entering, 1);
    b->rc = rlock_lock_acquire(b->lock, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL);
    return NULL;
}

void test_free_racing_calls(void) {
    rlock_lock *holder = lock_on(client, "c-free-race", RLOCK_LOCK);
    if (!holder) return;
    CHECK_RC(rlock_lock_acquire(holder, 5, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    rlock_client *victim = NULL;
    CHECK_RC(rlock_client_new(NULL, NULL, &victim), RLOCK_OK);
    if (!victim) return;
    rlock_lock *l = lock_on(victim, "c-free-race", RLOCK_LOCK);
    struct blocked b[BLOCKED];
    pthread_t t[BLOCKED];
    atomic_store(&entering, 0);
    for (int i = 0; i < BLOCKED; i++) {
        b[i] = (struct blocked){l, RLOCK_OK};
        pthread_create(&t[i], NULL, blocked_acquire, &b[i]);
    }
    /* Every thread is inside rlock_lock_acquire (a call started before the free), waiting. */
    while (atomic_load(&entering) < BLOCKED) sleep_ms(10);
    sleep_ms(1000);
    double start = now_ms();
    rlock_client_free(victim); /* does not wait for the calls */
    CHECK(now_ms() - start < 1000);
    for (int i = 0; i < BLOCKED; i++) {
        pthread_join(t[i], NULL);
        CHECK(b[i].rc == RLOCK_CLOSED);
    }
    /* The handle outlived its client's free: its calls say the client is closed. */
    bool held = false;
    CHECK_RC(rlock_lock_is_locked(l, &held), RLOCK_CLOSED);
    rlock_lock_free(l);
    CHECK_RC(rlock_lock_is_held(holder, 5, &held), RLOCK_OK);
    CHECK(held); /* the waiters never got it */
    CHECK_RC(rlock_lock_release(holder, 5, NULL), RLOCK_OK);
    rlock_lock_free(holder);
}

/* ---- rlock_lock_free while other threads wait in rlock_lock_acquire on that handle ----
 * Each waiter is inside the call on its handle (its client's subscription to the lock's
 * channel shows it) when the handle is freed. A call holds its own reference, so the free only
 * gives up the caller's: the waiters go on waiting, get the lock in turn and return normally,
 * and valgrind (run.sh) sees no access to freed memory. Each releases through a new handle of
 * its own (the freed one may not be used for a new call). */
struct handle_waiter { rlock_client *client; rlock_lock *lock; rlock_result rc, release_rc; };

static void *blocked_on_handle(void *arg) {
    struct handle_waiter *w = arg;
    w->rc = rlock_lock_acquire(w->lock, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL);
    rlock_lock *mine = lock_on(w->client, "c-handle-free", RLOCK_LOCK);
    w->release_rc = rlock_lock_release(mine, RLOCK_THREAD, NULL);
    rlock_lock_free(mine);
    return NULL;
}

void test_free_handle_racing_calls(void) {
    rlock_lock *holder = lock_on(client, "c-handle-free", RLOCK_LOCK);
    if (!holder) return;
    CHECK_RC(rlock_lock_acquire(holder, 5, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    /* One client per waiter, so each waiter's subscription is counted apart. */
    struct handle_waiter w[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        w[i] = (struct handle_waiter){NULL, NULL, RLOCK_PANIC, RLOCK_PANIC};
        CHECK_RC(rlock_client_new(NULL, NULL, &w[i].client), RLOCK_OK);
        if (!w[i].client) return;
        w[i].lock = lock_on(w[i].client, "c-handle-free", RLOCK_LOCK);
        pthread_create(&t[i], NULL, blocked_on_handle, &w[i]);
    }
    double until = now_ms() + 20000;
    while (redis_last_int("PUBSUB NUMSUB 'redisson_lock__channel:{c-handle-free}'") != 2 && now_ms() < until)
        sleep_ms(10);
    CHECK(redis_last_int("PUBSUB NUMSUB 'redisson_lock__channel:{c-handle-free}'") == 2);
    for (int i = 0; i < 2; i++) rlock_lock_free(w[i].lock);
    sleep_ms(200);
    /* Still waiting after the free: nothing was cut short. */
    CHECK(w[0].rc == RLOCK_PANIC && w[1].rc == RLOCK_PANIC);
    CHECK_RC(rlock_lock_release(holder, 5, NULL), RLOCK_OK);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].rc == RLOCK_OK);
        CHECK(w[i].release_rc == RLOCK_OK);
        rlock_client_free(w[i].client);
    }
    bool locked = true;
    CHECK_RC(rlock_lock_is_locked(holder, &locked), RLOCK_OK);
    CHECK(!locked);
    rlock_lock_free(holder);
}

/* ---- the server goes away ---- */
void test_server_gone(void) {
    const char *pid = getenv("RLOCK_TEST_REDIS_PID");
    CHECK(pid != NULL);
    if (!pid) return;
    rlock_lock *l = lock_on(client, "gone", RLOCK_LOCK);
    if (!l) return;
    kill((pid_t)atoi(pid), SIGKILL);
    sleep_ms(200);
    bool b = false;
    rlock_result rc = rlock_lock_is_locked(l, &b);
    CHECK(rc == RLOCK_CONNECTION || rc == RLOCK_TIMEOUT);
    rc = rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL);
    CHECK(rc == RLOCK_CONNECTION || rc == RLOCK_TIMEOUT);
    char *msg = rlock_last_error();
    CHECK(msg && msg[0] != '\0');
    rlock_string_free(msg);
    rlock_lock_free(l);
}

/* ---- topologies and their options ---- */
/* Whether the cluster at `url` (redis+cluster://HOST:PORT,...) answers PUBSUB SHARDNUMSUB: it
 * has sharded pub/sub (Redis 7 and later; 6.2 answers an error), which decides rlock's choice
 * and Redisson's. */
static bool cluster_answers_shardnumsub(const char *url) {
    const char *seed = strstr(url, "://");
    if (!seed) return false;
    char host_port[128];
    snprintf(host_port, sizeof host_port, "%.*s", (int)strcspn(seed + 3, ",/"), seed + 3);
    char cmd[256], out[256] = "";
    snprintf(cmd, sizeof cmd, "redis-cli -u 'redis://%s' PUBSUB SHARDNUMSUB 2>&1", host_port);
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    pclose(p);
    return strstr(out, "ERR") == NULL;
}

void test_topologies(void) {
    rlock_connection_info info = {RLOCK_TOPOLOGY_CLUSTER, true, true};
    CHECK_RC(rlock_client_info(NULL, &info), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_info(client, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_info(client, &info), RLOCK_OK);
    CHECK(info.topology == RLOCK_TOPOLOGY_SINGLE && !info.sharded_pubsub && !info.replica_sync);

    /* Two command connections to the one server: the same locks. */
    rlock_options *o = rlock_options_new();
    CHECK_RC(rlock_options_set_command_connections(o, 2), RLOCK_OK);
    rlock_client *two = NULL;
    CHECK_RC(rlock_client_new(NULL, o, &two), RLOCK_OK);
    rlock_options_free(o);
    if (two) {
        rlock_lock *l2 = lock_on(two, "c-two-conns", RLOCK_LOCK);
        rlock_lock *l1 = lock_on(client, "c-two-conns", RLOCK_LOCK);
        CHECK_RC(rlock_lock_acquire(l2, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_acquire(l2, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_acquire(l1, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
        CHECK_RC(rlock_lock_release(l2, RLOCK_THREAD, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_release(l2, RLOCK_THREAD, NULL), RLOCK_OK);
        rlock_lock_free(l1);
        rlock_lock_free(l2);
        rlock_client_free(two);
    }
    rlock_client *c = (rlock_client *)0x1;
    CHECK_RC(rlock_client_new("redis+cluster://127.0.0.1:x/", NULL, &c), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_new("redis+sentinel://127.0.0.1:26379/", NULL, &c), RLOCK_INVALID_ARGUMENT);
    CHECK(c == (rlock_client *)0x1);

    /* A 3-master cluster (run.sh): the same calls work through a redis+cluster:// URL. */
    const char *url = getenv("RLOCK_CLUSTER_URL");
    CHECK(url != NULL);
    if (!url) return;
    rlock_client *cl = NULL;
    CHECK_RC(rlock_client_new(url, NULL, &cl), RLOCK_OK);
    if (!cl) return;
    CHECK_RC(rlock_client_info(cl, &info), RLOCK_OK);
    CHECK(info.topology == RLOCK_TOPOLOGY_CLUSTER && info.replica_sync);
    CHECK(info.sharded_pubsub == cluster_answers_shardnumsub(url)); /* as Redisson */
    char name[32];
    for (int i = 0; i < 30; i++) { /* names on every master */
        snprintf(name, sizeof name, "c-cluster-%d", i);
        rlock_lock *l = lock_on(cl, name, RLOCK_LOCK);
        if (!l) continue;
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        uint32_t n = 0;
        CHECK_RC(rlock_lock_hold_count(l, RLOCK_THREAD, &n), RLOCK_OK);
        CHECK(n == 2);
        CHECK_RC(rlock_lock_acquire(l, 7, 0, RLOCK_FOREVER, NULL), RLOCK_NOT_ACQUIRED);
        CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
        bool locked = true;
        CHECK_RC(rlock_lock_is_locked(l, &locked), RLOCK_OK);
        CHECK(!locked);
        rlock_lock_free(l);
    }
    rlock_lock *cross = NULL;
    CHECK_RC(rlock_lock_new(cl, "a{}b", RLOCK_LOCK, &cross), RLOCK_INVALID_ARGUMENT); /* cross-slot name */
    CHECK(cross == NULL);
    /* A latch on the cluster; a tagged latch name would put its channel in another slot. */
    bool set = false, open = false;
    uint64_t count = 9;
    rlock_count_down_latch *cl_latch = NULL, *tagged = NULL;
    CHECK_RC(rlock_count_down_latch_new(cl, "c-cluster-latch", &cl_latch), RLOCK_OK);
    CHECK_RC(rlock_count_down_latch_try_set_count(cl_latch, 1, &set), RLOCK_OK);
    CHECK(set);
    CHECK_RC(rlock_count_down_latch_count_down(cl_latch), RLOCK_OK);
    CHECK_RC(rlock_count_down_latch_wait(cl_latch, 0, &open), RLOCK_OK);
    CHECK(open);
    CHECK_RC(rlock_count_down_latch_count(cl_latch, &count), RLOCK_OK);
    CHECK(count == 0);
    CHECK_RC(rlock_count_down_latch_new(cl, "c{x}latch", &tagged), RLOCK_INVALID_ARGUMENT);
    rlock_count_down_latch_free(cl_latch);
    rlock_client_free(cl);
}

/* ---- stats and the Prometheus text ---- */
void test_stats(void) {
    rlock_options *o = rlock_options_new();
    CHECK_RC(rlock_options_set_app_name(o, "c-stats"), RLOCK_OK);
    CHECK_RC(rlock_options_set_app_name(o, ""), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_options_set_metrics(o, true), RLOCK_OK);
    CHECK_RC(rlock_options_set_holder_record(o, true), RLOCK_OK);
    rlock_client *c = NULL;
    CHECK_RC(rlock_client_new(NULL, o, &c), RLOCK_OK);
    rlock_options_free(o);
    if (!c) return;
    rlock_lock *l = lock_on(c, "c-stats", RLOCK_LOCK);
    rlock_stats s;
    CHECK_RC(rlock_client_stats(c, &s), RLOCK_OK);
    CHECK(s.acquires == 0 && s.wait.count == 0);
    CHECK(s.eviction_policy[0] == '\0'); /* the test server does not evict */
    for (int i = 0; i < 3; i++) {
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
    }
    CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_NOT_HELD);
    CHECK_RC(rlock_client_stats(c, &s), RLOCK_OK);
    CHECK(s.acquires == 3);
    CHECK(s.contended_acquires == 0);
    CHECK(s.releases == 3);
    CHECK(s.wait.count == 3 && s.hold.count == 3);
    CHECK(s.wait.p50_ms > 0 && s.wait.p50_ms <= s.wait.max_ms);
    CHECK(s.errors[RLOCK_NOT_HELD] == 1);
    CHECK(s.errors[RLOCK_TIMEOUT] == 0);

    /* The Prometheus text: a string librlock allocates, freed with rlock_string_free. */
    char *text = NULL;
    CHECK_RC(rlock_client_prometheus_text(c, &text), RLOCK_OK);
    CHECK(text && strlen(text) > 100);
    CHECK(text && strstr(text, "rlock_acquires_total{app=\"c-stats\"} 3\n") != NULL);
    CHECK(text && strstr(text, "rlock_errors_total{app=\"c-stats\",kind=\"not_held\"} 1\n") != NULL);
    rlock_string_free(text);

    CHECK_RC(rlock_client_stats(NULL, &s), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_stats(c, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_prometheus_text(c, NULL), RLOCK_INVALID_ARGUMENT);
    CHECK_RC(rlock_client_prometheus_text(NULL, &text), RLOCK_INVALID_ARGUMENT);
    rlock_lock_free(l);
    rlock_client_free(c);
}


/* ---- core's log records reach the log callback ---- */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_warnings_seen;

static void on_log(void *userdata, rlock_log_level level, const char *target, const char *message) {
    int *calls = userdata;
    pthread_mutex_lock(&log_mu);
    (*calls)++;
    if (level == RLOCK_LOG_WARN && strncmp(target, "rlock", 5) == 0 && strstr(message, "maxmemory-policy"))
        log_warnings_seen++;
    pthread_mutex_unlock(&log_mu);
}

static int log_seen(void) {
    pthread_mutex_lock(&log_mu);
    int n = log_warnings_seen;
    pthread_mutex_unlock(&log_mu);
    return n;
}

/* A server that may evict keys (RedLock's second test server, set so for the test): core warns
 * at connect, and the warning reaches the callback. */
void test_log_callback(void) {
    const char *red = getenv("RLOCK_RED_URLS");
    const char *comma = red ? strchr(red, ',') : NULL;
    if (!comma) {
        CHECK(!"RLOCK_RED_URLS lists the servers (tests/c/run.sh)");
        return;
    }
    char url[256];
    snprintf(url, sizeof url, "%.*s", (int)strcspn(comma + 1, ","), comma + 1);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "redis-cli -u '%s' CONFIG SET maxmemory-policy allkeys-lru >/dev/null", url);
    CHECK(system(cmd) == 0);
    static int calls;
    CHECK_RC(rlock_set_log_callback(on_log, &calls), RLOCK_OK);
    rlock_client *c = NULL;
    CHECK_RC(rlock_client_new(url, NULL, &c), RLOCK_OK);
    /* The warning is logged while the client connects, on whichever thread ran that step. */
    for (int i = 0; i < 500 && log_seen() == 0; i++) sleep_ms(10);
    CHECK(log_seen() == 1);
    rlock_client_free(c);
    /* Removed: once this returns, no call of it is still running. */
    CHECK_RC(rlock_set_log_callback(NULL, NULL), RLOCK_OK);
    snprintf(cmd, sizeof cmd, "redis-cli -u '%s' CONFIG SET maxmemory-policy noeviction >/dev/null", url);
    CHECK(system(cmd) == 0);
}
