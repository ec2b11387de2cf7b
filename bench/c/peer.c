/* make bench, C peers: what a C program gets on hiredis without rlock, against the server in
 * REDIS_URL (redis://HOST:PORT, loopback in make bench). Prints one JSON object per line for
 * bench/report.py. Usage: peer [seconds]. BENCH_SHORT=1 (make bench-short): 100 hand-off
 * acquisitions instead of 2000, and 0.5 s pairs runs when no seconds are given.
 *
 * A hiredis context is not thread-safe, so each thread has its own connection and blocks in
 * its own socket read: no thread hop at all, the leanest a thread-per-owner client can be.
 *
 * - "peer hiredis SET NX lock": the textbook single-instance Redis lock (SET name token NX PX
 *   30000; release: a compare-and-delete script), pairs with 1, 16 and 64 threads and the
 *   hand-off with 16 waiters. A waiter polls every 10 ms (redis-semaphore's default): the
 *   textbook lock has no release message to wait for.
 * - "peer hiredis + rlock's scripts": the same threads sending rlock's own acquire and release
 *   scripts (Redisson's layout, the same keys and arguments as rlock's calls): what the
 *   thread-per-owner model gets for the same Redis work per pair as rlock's C surface. Pairs
 *   only (no pub/sub waiting, so no hand-off). */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>

#include "harness.h"

static char host[256] = "127.0.0.1";
static int port = 6379;
static char acquire_sha[41], release_sha[41], unlock_sha[41];

/* Compare-and-delete: the textbook release (redis.io's "Distributed Locks with Redis"). */
static const char *UNLOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then "
                            "return redis.call('del', KEYS[1]) else return 0 end";

static void die(const char *what, redisContext *c, redisReply *r) {
    fprintf(stderr, "peer.c: %s: %s\n", what,
            r && r->type == REDIS_REPLY_ERROR ? r->str : c && c->err ? c->errstr : "unexpected reply");
    exit(1);
}

static redisContext *connect_one(void) {
    redisContext *c = redisConnect(host, port);
    if (!c || c->err) die("connect", c, NULL);
    return c;
}

/* Loads a script: `body`, or (is_path) the files `body` names, separated by '+', in the order
 * core loads them (core/src/scripts/mod.rs: the shared functions first). */
static void load(redisContext *c, const char *path_or_body, int is_path, char sha[41]) {
    char body[16384];
    const char *text = path_or_body;
    if (is_path) {
        char paths[512];
        snprintf(paths, sizeof paths, "%s", path_or_body);
        size_t n = 0;
        for (char *save = NULL, *p = strtok_r(paths, "+", &save); p; p = strtok_r(NULL, "+", &save)) {
            FILE *f = fopen(p, "r");
            if (!f) {
                fprintf(stderr, "peer.c: cannot open %s\n", p);
                exit(1);
            }
            size_t got = fread(body + n, 1, sizeof body - 1 - n, f);
            fclose(f);
            if (got == 0) {
                fprintf(stderr, "peer.c: %s is empty\n", p);
                exit(1);
            }
            n += got;
        }
        body[n] = 0;
        text = body;
    }
    redisReply *r = redisCommand(c, "SCRIPT LOAD %s", text);
    if (!r || r->type != REDIS_REPLY_STRING || r->len != 40) die("SCRIPT LOAD", c, r);
    memcpy(sha, r->str, 41);
    freeReplyObject(r);
}

/* ---- the two locks, one acquire + release each ---- */

struct owner {
    redisContext *c;
    char name[64], token[64], channel[128], latch[192];
    long id, seq;
};

static void owner_init(struct owner *o, long id, const char *prefix) {
    memset(o, 0, sizeof *o);
    o->c = connect_one();
    o->id = id;
    snprintf(o->name, sizeof o->name, "%s%ld", prefix, id);
    snprintf(o->channel, sizeof o->channel, "redisson_lock__channel:{%s}", o->name);
}

/* Textbook lock: SET NX PX with a fresh token, polling every 10 ms while another holds it. */
static void setnx_acquire(struct owner *o) {
    snprintf(o->token, sizeof o->token, "%ld:%ld", o->id, ++o->seq);
    for (;;) {
        redisReply *r = redisCommand(o->c, "SET %s %s NX PX 30000", o->name, o->token);
        if (!r) die("SET NX", o->c, r);
        int got = r->type == REDIS_REPLY_STATUS;
        if (r->type != REDIS_REPLY_STATUS && r->type != REDIS_REPLY_NIL) die("SET NX", o->c, r);
        freeReplyObject(r);
        if (got) return;
        sleep_us(10000);
    }
}

static void setnx_release(struct owner *o) {
    redisReply *r = redisCommand(o->c, "EVALSHA %s 1 %s %s", unlock_sha, o->name, o->token);
    if (!r || r->type != REDIS_REPLY_INTEGER || r->integer != 1) die("release (compare-and-delete)", o->c, r);
    freeReplyObject(r);
}

/* rlock's scripts: owner "<uuid>:<id>" as rlock's, a fresh latch per release as rlock's. */
static void scripts_pair(struct owner *o) {
    char owner[64];
    snprintf(owner, sizeof owner, "6f0c2a3e-6a57-4e0b-9b35-3d2b7c0e8a11:%ld", o->id);
    redisReply *r = redisCommand(o->c, "EVALSHA %s 1 %s 30000 %s", acquire_sha, o->name, owner);
    if (!r || r->type != REDIS_REPLY_NIL) die("acquire script", o->c, r);
    freeReplyObject(r);
    snprintf(o->latch, sizeof o->latch, "redisson_unlock_latch:{%s}:%016lx%016lx", o->name, o->id, ++o->seq);
    r = redisCommand(o->c, "EVALSHA %s 3 %s %s %s 0 30000 %s PUBLISH 20000", release_sha, o->name, o->channel,
                     o->latch, owner);
    if (!r || r->type != REDIS_REPLY_INTEGER || r->integer != 1) die("release script", o->c, r);
    freeReplyObject(r);
    /* The latch is left to expire (20 s); rlock deletes its latches in batches, one DEL per
     * 10 ms, which costs Redis about as much per pair. */
}

/* ---- uncontended pairs ---- */

static int use_scripts;

static void *pairs_thread(void *arg) {
    struct owner o;
    owner_init(&o, (long)(size_t)arg, use_scripts ? "bench:c:peer:scripts:" : "bench:c:peer:setnx:");
    long n = 0;
    while (pairs_running()) {
        if (use_scripts) {
            scripts_pair(&o);
        } else {
            setnx_acquire(&o);
            setnx_release(&o);
        }
        n++;
    }
    pairs_add(n);
    redisFree(o.c);
    return NULL;
}

/* ---- hand-off: the textbook lock, 16 threads on one name ---- */

static void *handoff_open(long id) {
    struct owner *o = malloc(sizeof *o);
    if (!o) exit(1);
    owner_init(o, id, "bench:c:peer:handoff");
    snprintf(o->name, sizeof o->name, "bench:c:peer:handoff");
    return o;
}

static void handoff_acquire(void *o) { setnx_acquire(o); }

static void handoff_release(void *o) { setnx_release(o); }

static void handoff_close(void *o) {
    redisFree(((struct owner *)o)->c);
    free(o);
}

int main(int argc, char **argv) {
    harness_args(argc, argv);
    const char *url = getenv("REDIS_URL");
    if (url && sscanf(url, "redis://%255[^:/]:%d", host, &port) < 1) {
        fprintf(stderr, "peer.c: REDIS_URL '%s' is not redis://HOST:PORT\n", url);
        return 1;
    }
    redisContext *c = connect_one();
    load(c, "core/src/scripts/lua/acquire.lua", 1, acquire_sha);
    load(c, "core/src/scripts/lua/publish.lua+core/src/scripts/lua/release.lua", 1, release_sha);
    load(c, UNLOCK, 0, unlock_sha);
    redisFree(c);

    const int owners[] = {1, 16, 64};
    const char *surfaces[] = {"peer hiredis SET NX lock", "peer hiredis + rlock's scripts"};
    for (use_scripts = 0; use_scripts < 2; use_scripts++) {
        for (size_t k = 0; k < sizeof owners / sizeof owners[0]; k++) {
            double rate = run_pairs(owners[k], pairs_thread);
            printf("{\"bench\":\"pairs\",\"surface\":\"%s\",\"vs\":\"c\",\"owners\":%d,\"pairs_per_s\":%.0f}\n",
                   surfaces[use_scripts], owners[k], rate);
            fflush(stdout);
        }
    }
    static const struct handoff_ops ops = {handoff_open, handoff_acquire, handoff_release, handoff_close};
    double p50, p99;
    int n;
    run_handoff(&ops, &p50, &p99, &n);
    printf("{\"bench\":\"handoff\",\"surface\":\"%s\",\"vs\":\"c\",\"waiters\":%d,\"p50_us\":%.0f,\"p99_us\":%.0f,"
           "\"samples\":%d}\n",
           surfaces[0], WAITERS, p50, p99, n);
    return 0;
}
