/* The C worker of the fault suite (make chaos, driver tests/chaos/run.py), built against librlock
 * and hiredis (for the critical sections' marker and counter).
 *
 * Usage: worker <redis-url> [watchdog_ms=N] [command_timeout_ms=N] [retry_attempts=N]
 *        [retry_delay_ms=N] [label=S] [red_urls=U2,U3]
 * Connects, prints {"event":"ready",...}, then answers one command per stdin line with one JSON
 * line (see tests/chaos/README.md). Holds belong to the main thread (RLOCK_THREAD); a handle is
 * made for each operation and freed after it (holds live in Redis and the client, not in
 * handles). The lost-hold callback prints {"event":"lost","name":...,"kind":...,"owner":...,
 * "reason":...,"permit_id":...} from the librlock thread. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rlock.h"

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *url;
static char label[64] = "c";
static rlock_client *client;
/* The RedLock's other two servers' clients (red_urls), NULL without them. */
static rlock_client *red_clients[2];
static char red_urls[1024];

/* One line on stdout, whole and flushed (the lost callback prints from another thread). */
static void emit(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&out_mu);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
    va_end(ap);
}

/* The part of a result code after RLOCK_, e.g. "NOT_HELD". */
static const char *code(rlock_result r) { return rlock_result_str(r) + strlen("RLOCK_"); }

/* Set when the worker itself refuses a call (a release of nothing it took); reported once. */
static const char *own_error;

/* The last error as a JSON-safe string (quotes and control bytes replaced). */
static const char *last_error(void) {
    static char msg[512];
    if (own_error) {
        snprintf(msg, sizeof msg, "%s", own_error);
    } else {
        char *m = rlock_last_error();
        snprintf(msg, sizeof msg, "%s", m ? m : "?");
        rlock_string_free(m);
    }
    own_error = NULL;
    for (char *p = msg; *p; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) *p = '\'';
    return msg;
}

static void reply_error(const char *op, rlock_result rc) {
    emit("{\"event\":\"error\",\"op\":\"%s\",\"code\":\"%s\",\"message\":\"%s\"}", op, code(rc), last_error());
}

static void on_lost(void *userdata, const rlock_lost_event *ev) {
    (void)userdata;
    if (ev->permit_id)
        emit("{\"event\":\"lost\",\"name\":\"%s\",\"kind\":\"%s\",\"owner\":\"%s\",\"reason\":\"%s\",\"permit_id\":\"%s\"}",
             ev->name, ev->kind, ev->owner, ev->reason, ev->permit_id);
    else
        emit("{\"event\":\"lost\",\"name\":\"%s\",\"kind\":\"%s\",\"owner\":\"%s\",\"reason\":\"%s\",\"permit_id\":null}",
             ev->name, ev->kind, ev->owner, ev->reason);
}

/* Host, port and password of a redis://[user:pass@]host:port URL, for hiredis. */
static redisContext *data_connect(const char *u) {
    char host[256] = "127.0.0.1", pass[256] = "";
    int port = 6379;
    const char *p = strstr(u, "://");
    p = p ? p + 3 : u;
    const char *at = strchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) snprintf(pass, sizeof pass, "%.*s", (int)(at - colon - 1), colon + 1);
        p = at + 1;
    }
    sscanf(p, "%255[^:/]:%d", host, &port);
    redisContext *c = redisConnect(host, port);
    if (!c || c->err) return NULL;
    if (pass[0]) freeReplyObject(redisCommand(c, "AUTH %s", pass));
    return c;
}

/* A lock spec is NAME (the reentrant lock), KIND@NAME with KIND read, write, fair, nr or nrf
 * (that lock of the family; nr and nrf the non-reentrant and non-reentrant fair locks), sem@NAME, pes@NAME (one permit of a semaphore or of a permit-expirable
 * semaphore per acquire) or multi@NAME (the multi-lock over NAME:x and NAME:y, taken x,y when
 * the label ends in an even digit, else y,x) or red@NAME (the RedLock NAME over this server and
 * those of red_urls): the kind (an rlock_lock_kind or a KIND_*), and *name set to the name. */
enum { KIND_SEM = 100, KIND_PES, KIND_MULTI, KIND_RED };
static int kind_of(const char *spec, const char **name) {
    static const struct { const char *prefix; int kind; } kinds[] = {
        {"lock@", RLOCK_LOCK}, {"fenced@", RLOCK_FENCED_LOCK}, {"read@", RLOCK_READ_LOCK},
        {"write@", RLOCK_WRITE_LOCK}, {"fair@", RLOCK_FAIR_LOCK}, {"nr@", RLOCK_NON_REENTRANT_LOCK},
        {"nrf@", RLOCK_NON_REENTRANT_FAIR_LOCK}, {"sem@", KIND_SEM}, {"pes@", KIND_PES},
        {"multi@", KIND_MULTI}, {"red@", KIND_RED}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        size_t n = strlen(kinds[k].prefix);
        if (strncmp(spec, kinds[k].prefix, n) == 0) {
            *name = spec + n;
            return kinds[k].kind;
        }
    }
    *name = spec;
    return RLOCK_LOCK;
}

/* What the sem, pes and multi acquires of a spec took and did not give back yet: how many, and
 * a permit-expirable semaphore's permit ids. */
#define MAX_SPECS 64
#define MAX_IDS 16
static struct taken {
    char spec[256];
    int n;
    char *ids[MAX_IDS]; /* allocated by librlock, freed (rlock_string_free) on release */
    uint64_t token;     /* a fenced lock's last acquire's token: what `write` writes with */
} taken[MAX_SPECS];
static int ntaken;

static struct taken *taken_of(const char *spec) {
    for (int i = 0; i < ntaken; i++)
        if (strcmp(taken[i].spec, spec) == 0) return &taken[i];
    if (ntaken == MAX_SPECS || strlen(spec) >= sizeof taken[0].spec) {
        fprintf(stderr, "worker: too many specs (or one too long) for its table\n");
        exit(3);
    }
    snprintf(taken[ntaken].spec, sizeof taken[0].spec, "%s", spec);
    return &taken[ntaken++];
}

/* One write to the network-fault suite's fenced store (tests/netfaults/history.py) on
 * 127.0.0.1:port: the lock's name, the token and this worker's label. 1 when the store accepted
 * it (it refuses a token below the highest it has seen), 0 when it refused, -1 on a socket error. */
static int store_write(int port, const char *key, uint64_t token) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char buf[512];
    int n = snprintf(buf, sizeof buf, "write %s %llu %s\n", key, (unsigned long long)token, label);
    int result = -1;
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 && n > 0 && n < (int)sizeof buf &&
        write(fd, buf, (size_t)n) == n) {
        size_t got = 0;
        ssize_t r;
        while (got < sizeof buf - 1 && (r = read(fd, buf + got, sizeof buf - 1 - got)) > 0) {
            got += (size_t)r;
            if (memchr(buf, '\n', got)) break;
        }
        buf[got] = 0;
        if (memchr(buf, '\n', got)) result = strncmp(buf, "accepted\n", 9) == 0;
    }
    close(fd);
    return result;
}

/* A new handle on the lock of `kind` named `name` on the worker's client (NULL on failure). */
static rlock_lock *lock_of(const char *name, int kind) {
    rlock_lock *l = NULL;
    return rlock_lock_new(client, name, kind, &l) == RLOCK_OK ? l : NULL;
}

/* The multi-lock over name:x and name:y, in this worker's order (NULL on failure). */
static rlock_multi_lock *multi_of(const char *name) {
    char x[300], y[300];
    snprintf(x, sizeof x, "%s:x", name);
    snprintf(y, sizeof y, "%s:y", name);
    size_t len = strlen(label);
    int even = len > 0 && strchr("02468", label[len - 1]) != NULL;
    rlock_lock *members[2] = {lock_of(even ? x : y, RLOCK_LOCK), lock_of(even ? y : x, RLOCK_LOCK)};
    rlock_multi_lock *m = NULL;
    if (members[0] && members[1] && rlock_multi_lock_new(members, 2, &m) != RLOCK_OK) m = NULL;
    /* The multi-lock keeps its own references to its members. */
    rlock_lock_free(members[0]);
    rlock_lock_free(members[1]);
    return m;
}

/* The RedLock `name` over this worker's server and the two of red_urls (NULL on failure). */
static rlock_red_lock *red_of(const char *name) {
    const rlock_client *clients[3] = {client, red_clients[0], red_clients[1]};
    rlock_red_lock *r = NULL;
    return rlock_red_lock_new(clients, 3, name, false, &r) == RLOCK_OK ? r : NULL;
}

/* Acquires spec for the main thread: wait_ms < 0 waits as long as it takes (RLOCK_FOREVER);
 * lease_ms <= 0 lets the watchdog renew (a plain semaphore's permits have no lease). */
/* The token of the last acquire of a fenced lock (0: none). */
static uint64_t last_token;

static rlock_result acquire_spec(const char *spec, long long wait_ms, long long lease_ms) {
    const char *name;
    int kind = kind_of(spec, &name);
    int64_t wait = wait_ms < 0 ? RLOCK_FOREVER : wait_ms, lease = lease_ms <= 0 ? RLOCK_FOREVER : lease_ms;
    rlock_result rc;
    if (kind < KIND_SEM) {
        rlock_lock *l = NULL;
        rc = rlock_lock_new(client, name, kind, &l);
        last_token = 0;
        if (rc == RLOCK_OK)
            rc = rlock_lock_acquire(l, RLOCK_THREAD, wait, lease, kind == RLOCK_FENCED_LOCK ? &last_token : NULL);
        rlock_lock_free(l);
        return rc;
    }
    struct taken *t = taken_of(spec);
    if (kind == KIND_SEM) {
        rlock_semaphore *sem = NULL;
        rc = rlock_semaphore_new(client, name, &sem);
        if (rc == RLOCK_OK) rc = rlock_semaphore_acquire(sem, 1, wait);
        rlock_semaphore_free(sem);
    } else if (kind == KIND_PES) {
        if (t->n == MAX_IDS) {
            fprintf(stderr, "worker: more than %d permits of %s held\n", MAX_IDS, name);
            exit(3);
        }
        rlock_permit_expirable_semaphore *sem = NULL;
        rc = rlock_permit_expirable_semaphore_new(client, name, &sem);
        if (rc == RLOCK_OK) rc = rlock_permit_expirable_semaphore_acquire(sem, wait, lease, &t->ids[t->n]);
        rlock_permit_expirable_semaphore_free(sem);
    } else if (kind == KIND_RED) {
        rlock_red_lock *r = red_of(name);
        rc = r ? rlock_red_lock_acquire(r, RLOCK_THREAD, wait, lease, NULL) : RLOCK_INVALID_ARGUMENT;
        rlock_red_lock_free(r);
    } else {
        rlock_multi_lock *m = multi_of(name);
        rc = m ? rlock_multi_lock_acquire(m, RLOCK_THREAD, wait, lease) : RLOCK_INVALID_ARGUMENT;
        rlock_multi_lock_free(m);
    }
    if (rc == RLOCK_OK) t->n++;
    return rc;
}

/* Releases one hold of spec by the main thread (sem, pes: one permit this worker took);
 * *unlocked: the main thread (sem, pes: this worker) holds none any more. */
static rlock_result release_spec(const char *spec, bool *unlocked) {
    const char *name;
    int kind = kind_of(spec, &name);
    rlock_result rc;
    if (kind < KIND_SEM) {
        rlock_lock *l = NULL;
        rc = rlock_lock_new(client, name, kind, &l);
        if (rc == RLOCK_OK) rc = rlock_lock_release(l, RLOCK_THREAD, unlocked);
        rlock_lock_free(l);
        return rc;
    }
    struct taken *t = taken_of(spec);
    if (t->n == 0) {
        own_error = "this worker holds none of it";
        return RLOCK_NOT_HELD;
    }
    t->n--;
    *unlocked = t->n == 0;
    if (kind == KIND_SEM) {
        rlock_semaphore *sem = NULL;
        rc = rlock_semaphore_new(client, name, &sem);
        if (rc == RLOCK_OK) rc = rlock_semaphore_release(sem, 1, NULL);
        rlock_semaphore_free(sem);
    } else if (kind == KIND_PES) {
        rlock_permit_expirable_semaphore *sem = NULL;
        rc = rlock_permit_expirable_semaphore_new(client, name, &sem);
        if (rc == RLOCK_OK) rc = rlock_permit_expirable_semaphore_release(sem, t->ids[t->n]);
        rlock_permit_expirable_semaphore_free(sem);
        rlock_string_free(t->ids[t->n]);
        t->ids[t->n] = NULL;
    } else if (kind == KIND_RED) {
        rlock_red_lock *r = red_of(name);
        rc = r ? rlock_red_lock_release(r, RLOCK_THREAD, NULL) : RLOCK_INVALID_ARGUMENT;
        rlock_red_lock_free(r);
    } else {
        rlock_multi_lock *m = multi_of(name);
        rc = m ? rlock_multi_lock_release(m, RLOCK_THREAD) : RLOCK_INVALID_ARGUMENT;
        rlock_multi_lock_free(m);
    }
    return rc;
}

static uint64_t rng_state;
static uint64_t rnd(uint64_t n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state % (n ? n : 1);
}

/* sections critical sections on names locks <prefix>:<k>: SET marker NX (must succeed), a
 * non-atomic GET-then-SET of the counter, SET last GET (hand-offs between surfaces), DEL marker. */
static void mx(const char *prefix, int names, int sections) {
    redisContext *data = data_connect(url);
    if (!data) {
        emit("{\"event\":\"error\",\"op\":\"mx\",\"code\":\"DATA\",\"message\":\"hiredis connect failed\"}");
        return;
    }
    long *per = calloc((size_t)names, sizeof *per);
    long violations = 0, crossings = 0;
    char name[256], key[300];
    for (int i = 0; i < sections; i++) {
        int k = (int)rnd((uint64_t)names);
        snprintf(name, sizeof name, "%s:%d", prefix, k);
        rlock_result rc = acquire_spec(name, -1, 0);
        if (rc != RLOCK_OK) {
            reply_error("mx acquire", rc);
            goto out;
        }
        snprintf(key, sizeof key, "%s:marker", name);
        redisReply *r = redisCommand(data, "SET %s %s NX", key, label);
        int set = r && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (!set) violations++;
        snprintf(key, sizeof key, "%s:counter", name);
        r = redisCommand(data, "GET %s", key);
        long n = (r && r->type == REDIS_REPLY_STRING ? atol(r->str) : 0) + 1;
        freeReplyObject(r);
        freeReplyObject(redisCommand(data, "SET %s %ld", key, n));
        snprintf(key, sizeof key, "%s:last", name);
        r = redisCommand(data, "SET %s %s GET", key, label);
        if (r && r->type == REDIS_REPLY_STRING && strncmp(r->str, "c-", 2) != 0) crossings++;
        freeReplyObject(r);
        if (set) {
            snprintf(key, sizeof key, "%s:marker", name);
            freeReplyObject(redisCommand(data, "DEL %s", key));
        }
        bool unlocked = false;
        rc = release_spec(name, &unlocked);
        if (rc != RLOCK_OK) {
            reply_error("mx release", rc);
            goto out;
        }
        per[k]++;
    }
    {
        char list[4096] = "";
        size_t len = 0;
        for (int k = 0; k < names && len < sizeof list - 32; k++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%ld", k ? "," : "", per[k]);
        emit("{\"event\":\"mx_done\",\"sections\":%d,\"violations\":%ld,\"crossings\":%ld,\"per_name\":[%s]}",
             sections, violations, crossings, list);
    }
out:
    free(per);
    redisFree(data);
}

/* ---- the bad-input table: each row prints its outcome, then waits for "next" on stdin ---- */

static const char *guard, *wrongtype, *wrong_pw_url, *dead_url;

static int wait_next(void) {
    char line[64];
    return fgets(line, sizeof line, stdin) != NULL;
}

static int row(const char *input, rlock_result expected, rlock_result got) {
    emit("{\"event\":\"row\",\"surface\":\"c\",\"input\":\"%s\",\"expected\":\"%s\",\"got\":\"%s\"}", input,
         rlock_result_str(expected), rlock_result_str(got));
    return wait_next();
}

struct waiter {
    rlock_client *c;
    rlock_lock *l;
    rlock_result rc;
};

static void *wait_on_guard(void *arg) {
    struct waiter *w = arg;
    w->rc = rlock_lock_acquire(w->l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL);
    return NULL;
}

/* Waits until someone is subscribed to the guard's channel (a waiter is parked there). */
static int guard_waiter_subscribed(redisContext *data) {
    for (int i = 0; i < 1000; i++) {
        redisReply *r = redisCommand(data, "PUBSUB NUMSUB redisson_lock__channel:{%s}", guard);
        long n = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[1]->integer : 0;
        freeReplyObject(r);
        if (n > 0) return 1;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void bad(void) {
    rlock_client *c = (rlock_client *)0x1;
    bool b = true;
    uint32_t n = 77;
    const char *bad_utf8 = "lock-\xc3\x28";
    rlock_options *o = rlock_options_new();
#define ROW(input, expected, call) \
    if (!row(input, expected, (call))) return
    ROW("rlock_client_new(url, out=NULL)", RLOCK_INVALID_ARGUMENT, rlock_client_new(url, NULL, NULL));
    ROW("rlock_client_new(\\\"nonsense\\\")", RLOCK_INVALID_ARGUMENT, rlock_client_new("nonsense", NULL, &c));
    ROW("rlock_client_new(\\\"http://127.0.0.1:6379/\\\")", RLOCK_INVALID_ARGUMENT,
        rlock_client_new("http://127.0.0.1:6379/", NULL, &c));
    ROW("rlock_client_new(url with invalid UTF-8)", RLOCK_INVALID_ARGUMENT, rlock_client_new("redis://\xff\xfe/", NULL, &c));
    ROW("rlock_client_new(\\\"redis://127.0.0.1:notaport/\\\")", RLOCK_INVALID_ARGUMENT,
        rlock_client_new("redis://127.0.0.1:notaport/", NULL, &c));
    ROW("rlock_client_new(wrong password)", RLOCK_REDIS, rlock_client_new(wrong_pw_url, NULL, &c));
    rlock_options_set_retry_attempts(o, 0);
    rlock_options_set_connect_timeout_ms(o, 2000);
    ROW("rlock_client_new(port nobody listens on)", RLOCK_CONNECTION, rlock_client_new(dead_url, o, &c));
    ROW("rlock_options_set_watchdog_timeout_ms(-5)", RLOCK_INVALID_ARGUMENT,
        rlock_options_set_watchdog_timeout_ms(o, -5));
    ROW("rlock_options_set_renewal_batch_size(0)", RLOCK_INVALID_ARGUMENT,
        rlock_options_set_renewal_batch_size(o, 0));
    rlock_options_free(o);
    o = NULL;
    if (c != (rlock_client *)0x1) {
        emit("{\"event\":\"fatal\",\"message\":\"a failed rlock_client_new wrote its out-parameter\"}");
        return;
    }
    rlock_lock *l = NULL, *g = lock_of(guard, RLOCK_LOCK), *wt = lock_of(wrongtype, RLOCK_LOCK);
    if (!g || !wt) {
        emit("{\"event\":\"fatal\",\"message\":\"rlock_lock_new failed on the guard or the wrong-type key\"}");
        return;
    }
    ROW("rlock_lock_new(client=NULL)", RLOCK_INVALID_ARGUMENT, rlock_lock_new(NULL, guard, RLOCK_LOCK, &l));
    ROW("rlock_lock_new(name=NULL)", RLOCK_INVALID_ARGUMENT, rlock_lock_new(client, NULL, RLOCK_LOCK, &l));
    ROW("rlock_lock_new(name=\\\"\\\")", RLOCK_INVALID_ARGUMENT, rlock_lock_new(client, "", RLOCK_LOCK, &l));
    ROW("rlock_lock_new(name with invalid UTF-8)", RLOCK_INVALID_ARGUMENT, rlock_lock_new(client, bad_utf8, RLOCK_LOCK, &l));
    ROW("rlock_lock_acquire(guard, lease_ms=INT64_MAX)", RLOCK_INVALID_ARGUMENT,
        rlock_lock_acquire(g, RLOCK_THREAD, RLOCK_FOREVER, INT64_MAX, NULL));
    ROW("rlock_lock_acquire(guard, wait_ms=-2)", RLOCK_INVALID_ARGUMENT, rlock_lock_acquire(g, RLOCK_THREAD, -2, RLOCK_FOREVER, NULL));
    ROW("rlock_lock_acquire(guard, wait_ms=INT64_MAX)", RLOCK_INVALID_ARGUMENT,
        rlock_lock_acquire(g, RLOCK_THREAD, INT64_MAX, RLOCK_FOREVER, NULL));
    ROW("rlock_lock_acquire(guard held by another, wait_ms=50)", RLOCK_NOT_ACQUIRED,
        rlock_lock_acquire(g, RLOCK_THREAD, 50, RLOCK_FOREVER, NULL));
    ROW("rlock_lock_release(guard held by another)", RLOCK_NOT_HELD, rlock_lock_release(g, RLOCK_THREAD, NULL));
    ROW("rlock_lock_release(guard held by another, owner 1)", RLOCK_NOT_HELD, rlock_lock_release(g, 1, NULL));
    ROW("rlock_lock_is_locked(guard, out=NULL)", RLOCK_INVALID_ARGUMENT, rlock_lock_is_locked(g, NULL));
    ROW("rlock_lock_hold_count(lock=NULL)", RLOCK_INVALID_ARGUMENT, rlock_lock_hold_count(NULL, RLOCK_THREAD, &n));
    ROW("rlock_lock_acquire(key of the wrong type)", RLOCK_REDIS, rlock_lock_acquire(wt, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL));
    ROW("rlock_lock_force_unlock(key of the wrong type)", RLOCK_REDIS, rlock_lock_force_unlock(wt, &b));
    ROW("rlock_result_str(12345)", RLOCK_OK,
        strcmp(rlock_result_str(12345), "RLOCK_UNKNOWN") == 0 ? RLOCK_OK : RLOCK_PANIC);
    rlock_lock_free(g);
    rlock_lock_free(wt);
    if (b != true || n != 77 || l != NULL) {
        emit("{\"event\":\"fatal\",\"message\":\"a failed call wrote its out-parameter\"}");
        return;
    }

    /* A client freed while another thread waits on the guard: the waiter gets RLOCK_CLOSED. */
    struct waiter w = {NULL, NULL, RLOCK_OK};
    redisContext *data = data_connect(url);
    rlock_result rc = rlock_client_new(url, NULL, &w.c);
    if (rc == RLOCK_OK) rc = rlock_lock_new(w.c, guard, RLOCK_LOCK, &w.l);
    pthread_t t;
    if (rc == RLOCK_OK && data && pthread_create(&t, NULL, wait_on_guard, &w) == 0) {
        if (guard_waiter_subscribed(data)) {
            rlock_client_free(w.c);
            pthread_join(t, NULL);
            rc = w.rc;
        } else {
            rc = RLOCK_PANIC; /* never parked: reported as a failed row */
            rlock_client_free(w.c);
            pthread_join(t, NULL);
        }
    }
    rlock_lock_free(w.l);
    if (data) redisFree(data);
    ROW("rlock_client_free while a thread waits in rlock_lock_acquire(guard)", RLOCK_CLOSED, rc);
#undef ROW
    emit("{\"event\":\"bad_done\"}");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: worker <redis-url> [option=value ...]\n");
        return 2;
    }
    url = argv[1];
    rlock_options *options = rlock_options_new();
    for (int i = 2; i < argc; i++) {
        char key[64];
        long long v = 0;
        const char *eq = strchr(argv[i], '=');
        if (!eq || eq - argv[i] >= (long)sizeof key) {
            fprintf(stderr, "bad option %s\n", argv[i]);
            return 2;
        }
        snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
        v = atoll(eq + 1);
        rlock_result set = RLOCK_OK;
        if (strcmp(key, "watchdog_ms") == 0) set = rlock_options_set_watchdog_timeout_ms(options, v);
        else if (strcmp(key, "command_timeout_ms") == 0) set = rlock_options_set_command_timeout_ms(options, v);
        else if (strcmp(key, "retry_attempts") == 0) set = rlock_options_set_retry_attempts(options, (uint32_t)v);
        else if (strcmp(key, "retry_delay_ms") == 0) set = rlock_options_set_retry_delay_ms(options, v);
        else if (strcmp(key, "fair_wait_ms") == 0) set = rlock_options_set_fair_lock_wait_timeout_ms(options, v);
        else if (strcmp(key, "subscription_timeout_ms") == 0)
            set = rlock_options_set_subscription_timeout_ms(options, v);
        else if (strcmp(key, "replica_sync") == 0) set = rlock_options_set_replica_sync(options, (int32_t)v);
        else if (strcmp(key, "label") == 0) snprintf(label, sizeof label, "%s", eq + 1);
        else if (strcmp(key, "red_urls") == 0) snprintf(red_urls, sizeof red_urls, "%s", eq + 1);
        else {
            fprintf(stderr, "unknown option %s\n", key);
            return 2;
        }
        if (set != RLOCK_OK) {
            fprintf(stderr, "bad option %s: %s\n", argv[i], last_error());
            return 2;
        }
    }
    rng_state = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ 0x9E3779B97F4A7C15ull;
    rlock_result rc = rlock_client_new(url, options, &client);
    char *save = NULL;
    int nred = 0;
    for (char *u = strtok_r(red_urls, ",", &save); u && nred < 2 && rc == RLOCK_OK; u = strtok_r(NULL, ",", &save))
        rc = rlock_client_new(u, options, &red_clients[nred++]);
    rlock_options_free(options);
    if (rc != RLOCK_OK) {
        emit("{\"event\":\"fatal\",\"message\":\"connect: %s %s\"}", code(rc), last_error());
        return 1;
    }
    rlock_client_on_lost(client, on_lost, NULL);
    emit("{\"event\":\"ready\",\"surface\":\"c\",\"pid\":%d}", (int)getpid());

    char line[1024];
    while (fgets(line, sizeof line, stdin)) {
        char *words[8] = {0};
        int nw = 0;
        for (char *tok = strtok(line, " \t\r\n"); tok && nw < 8; tok = strtok(NULL, " \t\r\n")) words[nw++] = tok;
        if (nw == 0) continue;
        const char *cmd = words[0], *name = nw > 1 ? words[1] : "", *bare;
        int kind = kind_of(name, &bare);
        if (strcmp(cmd, "exit") == 0) break;
        if (strcmp(cmd, "acquire") == 0 && nw >= 2) {
            rc = acquire_spec(name, nw > 2 ? atoll(words[2]) : -1, nw > 3 ? atoll(words[3]) : 0);
            if (rc == RLOCK_OK && last_token != 0) taken_of(name)->token = last_token;
            if (rc == RLOCK_OK && last_token != 0)
                emit("{\"event\":\"acquired\",\"name\":\"%s\",\"token\":%llu}", name, (unsigned long long)last_token);
            else if (rc == RLOCK_OK) emit("{\"event\":\"acquired\",\"name\":\"%s\",\"token\":null}", name);
            else if (rc == RLOCK_NOT_ACQUIRED) emit("{\"event\":\"not_acquired\",\"name\":\"%s\"}", name);
            else reply_error("acquire", rc);
        } else if (strcmp(cmd, "release") == 0 && nw == 2) {
            bool unlocked = false;
            rc = release_spec(name, &unlocked);
            if (rc != RLOCK_OK) reply_error("release", rc);
            else emit("{\"event\":\"released\",\"free\":%s}", unlocked ? "true" : "false");
        } else if ((strcmp(cmd, "locked") == 0 || strcmp(cmd, "held") == 0) && nw == 2) {
            bool v = false;
            rlock_lock *l = NULL;
            rc = rlock_lock_new(client, bare, kind, &l);
            if (rc == RLOCK_OK)
                rc = cmd[0] == 'l' ? rlock_lock_is_locked(l, &v) : rlock_lock_is_held(l, RLOCK_THREAD, &v);
            rlock_lock_free(l);
            if (rc == RLOCK_OK) emit("{\"event\":\"%s\",\"value\":%s}", cmd, v ? "true" : "false");
            else reply_error(cmd, rc);
        } else if (strcmp(cmd, "write") == 0 && nw == 3) {
            uint64_t token = taken_of(name)->token;
            int accepted = token ? store_write(atoi(words[2]), bare, token) : -1;
            if (!token)
                emit("{\"event\":\"error\",\"op\":\"write\",\"code\":\"INVALID_ARGUMENT\",\"message\":"
                     "\"no fenced acquire of %s to write with\"}", name);
            else if (accepted < 0)
                emit("{\"event\":\"error\",\"op\":\"write\",\"code\":\"STORE\",\"message\":\"the store did not answer\"}");
            else
                emit("{\"event\":\"written\",\"name\":\"%s\",\"token\":%llu,\"accepted\":%s}", name,
                     (unsigned long long)token, accepted ? "true" : "false");
        } else if (strcmp(cmd, "stats") == 0) {
            emit("{\"event\":\"stats\",\"tracked\":null,\"channels\":null}");
        } else if (strcmp(cmd, "mx") == 0 && nw == 4) {
            mx(words[1], atoi(words[2]), atoi(words[3]));
        } else if (strcmp(cmd, "bad") == 0 && nw == 5) {
            guard = strdup(words[1]);
            wrongtype = strdup(words[2]);
            wrong_pw_url = strdup(words[3]);
            dead_url = strdup(words[4]);
            bad();
        } else {
            emit("{\"event\":\"error\",\"op\":\"parse\",\"code\":\"UNKNOWN_COMMAND\",\"message\":\"%s\"}", cmd);
        }
    }
    rlock_client_free(client);
    rlock_client_free(red_clients[0]);
    rlock_client_free(red_clients[1]);
    emit("{\"event\":\"bye\"}");
    return 0;
}
