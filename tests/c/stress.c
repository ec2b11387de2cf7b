/* The C ABI's multi-threaded stress (issue 45): threads sharing one client and its handles,
 * making and freeing handles of their own, forking, and a client freed while calls are in
 * progress. A program of its own (tests/c/run.sh builds it beside the C tests) so that a
 * sanitizer sees every thread: `make sanitize-c` runs it against a ThreadSanitizer and an
 * AddressSanitizer build of librlock, and `make test-c` against the release library.
 *
 * What must hold, whatever the interleaving:
 * - mutual exclusion: at most one thread inside each lock (reentrant, fair, per-call handles on
 *   the same name), at most PERMITS inside the semaphore; every acquire counted, exactly;
 * - re-entry by the same thread, with its hold count;
 * - a child forked while the parent's threads are in calls gets RLOCK_FORKED from inherited
 *   handles at once and may free them;
 * - a client freed while its calls wait: those calls and every later one on its handles return
 *   RLOCK_CLOSED, nothing else, and nothing is left held in Redis.
 * The counters are C11 atomics: the Redis lock orders the threads through the server, which a
 * sanitizer cannot see, so a plain counter "guarded" by it would be a reported race.
 *
 * RLOCK_STRESS_PLANT_RACE=1 adds two threads that write one plain variable with nothing ordering
 * the writes: ThreadSanitizer must report it (tests/c/run.sh checks that it does, so a build
 * without the sanitizer cannot pass for a clean one).
 *
 * A run that hangs is a failure: SIGALRM ends it (and a forked child) with exit 124. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rlock.h"

#define THREADS 16
#define PERMITS 3
/* The first client's threads may use connections of their own only while at most this many
 * threads are inside blocking calls (then the shared, pipelined connection): with 16 threads
 * mostly in calls, its commands mostly take the shared one. The freed client keeps the default
 * (32), so there every thread uses a connection of its own from its second call on. */
#define THREAD_CONNECTIONS 4
/* Seconds a run (a forked child) may take before SIGALRM ends it as failed. */
#define RUN_LIMIT_S 600
#define CHILD_LIMIT_S 60

static int rounds = 24;
/* Key names of this run (the pid in each), so that a run cut short leaves nothing a later run
 * trips on. */
static char name_lock[64], name_fair[64], name_sem[64], name_latch[64], name_child[64], name_victim[64];
static atomic_int failures;
static atomic_int progress;

#define EXPECT(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            char *msg_ = rlock_last_error();                                           \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__,    \
                    #cond, msg_ ? msg_ : "?");                                         \
            rlock_string_free(msg_);                                                   \
            atomic_fetch_add(&failures, 1);                                            \
        }                                                                              \
    } while (0)
#define EXPECT_RC(call, want) EXPECT((call) == (want))

/* ---- threads sharing one client and its handles ---- */

struct shared {
    rlock_client *client;
    rlock_lock *lock;      /* reentrant, owner: the calling thread */
    rlock_lock *fair;      /* fair, explicit owners */
    rlock_semaphore *sem;
    rlock_count_down_latch *latch;
    atomic_int inside_lock, inside_fair, inside_sem, most_in_sem;
    atomic_int lock_acquires, fair_acquires, sem_acquires;
};

struct worker { struct shared *s; int id; };

static void on_lost(void *userdata, const rlock_lost_event *event) {
    (void)userdata;
    (void)event;
    /* No hold may be lost in this run: the watchdog renews every one of them. */
    fprintf(stderr, "FAIL: a hold was lost\n");
    atomic_fetch_add(&failures, 1);
}

/* Takes `lock` for the calling thread twice (re-entry), checks it is alone inside, gives both
 * holds back. */
static void reentrant_round(struct shared *s, const rlock_lock *lock) {
    rlock_result rc = rlock_lock_acquire(lock, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL);
    EXPECT(rc == RLOCK_OK);
    if (rc != RLOCK_OK) return;
    EXPECT(atomic_fetch_add(&s->inside_lock, 1) == 0);
    EXPECT_RC(rlock_lock_acquire(lock, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_OK);
    uint32_t count = 0;
    EXPECT_RC(rlock_lock_hold_count(lock, RLOCK_THREAD, &count), RLOCK_OK);
    EXPECT(count == 2);
    bool unlocked = true;
    EXPECT_RC(rlock_lock_release(lock, RLOCK_THREAD, &unlocked), RLOCK_OK);
    EXPECT(!unlocked);
    atomic_fetch_add(&s->lock_acquires, 1);
    EXPECT(atomic_fetch_sub(&s->inside_lock, 1) == 1);
    EXPECT_RC(rlock_lock_release(lock, RLOCK_THREAD, &unlocked), RLOCK_OK);
    EXPECT(unlocked);
}

static void *shared_worker(void *arg) {
    struct worker *w = arg;
    struct shared *s = w->s;
    uint64_t owner = 1000 + (uint64_t)w->id; /* explicit owner for the fair lock */
    for (int r = 0; r < rounds; r++) {
        if (r % 4 == w->id % 4) {
            /* A handle made and freed for this one call, on the shared lock's name. */
            rlock_lock *mine = NULL;
            EXPECT_RC(rlock_lock_new(s->client, name_lock, RLOCK_LOCK, &mine), RLOCK_OK);
            if (mine) reentrant_round(s, mine);
            rlock_lock_free(mine);
        } else {
            reentrant_round(s, s->lock);
        }

        rlock_result rc = rlock_lock_acquire(s->fair, owner, RLOCK_FOREVER, RLOCK_FOREVER, NULL);
        EXPECT(rc == RLOCK_OK);
        if (rc == RLOCK_OK) {
            EXPECT(atomic_fetch_add(&s->inside_fair, 1) == 0);
            atomic_fetch_add(&s->fair_acquires, 1);
            EXPECT(atomic_fetch_sub(&s->inside_fair, 1) == 1);
            EXPECT_RC(rlock_lock_release(s->fair, owner, NULL), RLOCK_OK);
        }

        rc = rlock_semaphore_acquire(s->sem, 1, RLOCK_FOREVER);
        EXPECT(rc == RLOCK_OK);
        if (rc != RLOCK_OK) continue;
        int in = atomic_fetch_add(&s->inside_sem, 1) + 1;
        EXPECT(in <= PERMITS);
        struct timespec stay = {0, 1000000}; /* 1 ms: long enough for others to come in */
        nanosleep(&stay, NULL);
        int most = atomic_load(&s->most_in_sem);
        while (in > most && !atomic_compare_exchange_weak(&s->most_in_sem, &most, in)) {}
        atomic_fetch_add(&s->sem_acquires, 1);
        atomic_fetch_sub(&s->inside_sem, 1);
        EXPECT_RC(rlock_semaphore_release(s->sem, 1, NULL), RLOCK_OK);

        if (r % 8 == w->id % 8) {
            /* Readers of the client's shared state, beside the calls above. */
            rlock_stats stats = {0};
            EXPECT_RC(rlock_client_stats(s->client, &stats), RLOCK_OK);
            char *text = NULL;
            EXPECT_RC(rlock_client_describe(s->client, name_lock, &text), RLOCK_OK);
            rlock_string_free(text);
            text = NULL;
            EXPECT_RC(rlock_client_prometheus_text(s->client, &text), RLOCK_OK);
            rlock_string_free(text);
            uint64_t listener = 0;
            EXPECT_RC(rlock_lock_on_lost(s->lock, RLOCK_THREAD, on_lost, NULL, &listener), RLOCK_OK);
            EXPECT_RC(rlock_lock_remove_lost_listener(s->lock, listener, NULL), RLOCK_OK);
        }
        atomic_fetch_add(&progress, 1);
    }
    EXPECT_RC(rlock_count_down_latch_count_down(s->latch), RLOCK_OK);
    return NULL;
}

/* ---- the planted race (RLOCK_STRESS_PLANT_RACE=1) ---- */

static long planted;
static atomic_bool first_wrote;

/* Racer 0 writes `planted`, then says so through a relaxed atomic, which orders nothing: racer
 * 1's write, made after it in time, is unordered with it by every rule a sanitizer knows. */
static void *planted_racer(void *arg) {
    if (arg == NULL) {
        planted++;
        atomic_store_explicit(&first_wrote, true, memory_order_relaxed);
    } else {
        while (!atomic_load_explicit(&first_wrote, memory_order_relaxed)) sched_yield();
        planted++;
    }
    return NULL;
}

static void plant_a_race(void) {
    pthread_t racers[2];
    EXPECT(pthread_create(&racers[0], NULL, planted_racer, NULL) == 0);
    EXPECT(pthread_create(&racers[1], NULL, planted_racer, &racers) == 0);
    pthread_join(racers[0], NULL);
    pthread_join(racers[1], NULL);
    printf("planted: two unordered writes, %ld\n", planted);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "stress: timed out (SIGALRM)\n";
    ssize_t n = write(2, msg, sizeof msg - 1);
    (void)n;
    _exit(124);
}

/* The child of a fork made while the parent's threads are in calls: 0 when all went well,
 * else the number of the failed step. */
static int child_main(struct shared *s) {
    bool b = false;
    if (rlock_lock_is_locked(s->lock, &b) != RLOCK_FORKED) return 2;
    if (rlock_lock_acquire(s->fair, 7, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_FORKED) return 3;
    if (rlock_semaphore_acquire(s->sem, 1, RLOCK_FOREVER) != RLOCK_FORKED) return 4;
    rlock_lock_free(s->lock);
    rlock_lock_free(s->fair);
    rlock_semaphore_free(s->sem);
    rlock_count_down_latch_free(s->latch);
    rlock_client_free(s->client);
#if !defined(__SANITIZE_THREAD__)
    /* A client of the child's own works. Not under ThreadSanitizer, which does not follow a
     * process that starts threads after a multi-threaded fork. */
    rlock_client *mine = NULL;
    if (rlock_client_new(NULL, NULL, &mine) != RLOCK_OK) return 5;
    rlock_lock *l = NULL;
    if (rlock_lock_new(mine, name_child, RLOCK_LOCK, &l) != RLOCK_OK) return 6;
    if (rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL) != RLOCK_OK) return 7;
    if (rlock_lock_release(l, RLOCK_THREAD, &b) != RLOCK_OK || !b) return 8;
    rlock_lock_free(l);
    rlock_client_free(mine);
#endif
    return 0;
}

static void wait_progress(int at_least) {
    while (atomic_load(&progress) < at_least) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void threads_sharing_a_client(void) {
    struct shared s = {0};
    rlock_options *options = rlock_options_new();
    EXPECT_RC(rlock_options_set_thread_connections(options, THREAD_CONNECTIONS), RLOCK_OK);
    EXPECT_RC(rlock_client_new(NULL, options, &s.client), RLOCK_OK);
    rlock_options_free(options);
    if (!s.client) return;
    EXPECT_RC(rlock_client_on_lost(s.client, on_lost, NULL), RLOCK_OK);
    EXPECT_RC(rlock_lock_new(s.client, name_lock, RLOCK_LOCK, &s.lock), RLOCK_OK);
    EXPECT_RC(rlock_lock_new(s.client, name_fair, RLOCK_FAIR_LOCK, &s.fair), RLOCK_OK);
    EXPECT_RC(rlock_semaphore_new(s.client, name_sem, &s.sem), RLOCK_OK);
    EXPECT_RC(rlock_count_down_latch_new(s.client, name_latch, &s.latch), RLOCK_OK);
    if (!s.lock || !s.fair || !s.sem || !s.latch) return;
    bool set = false;
    EXPECT_RC(rlock_semaphore_try_set_permits(s.sem, PERMITS, RLOCK_FOREVER, &set), RLOCK_OK);
    EXPECT(set);
    EXPECT_RC(rlock_count_down_latch_try_set_count(s.latch, THREADS, &set), RLOCK_OK);
    EXPECT(set);

    atomic_store(&progress, 0);
    pthread_t threads[THREADS];
    struct worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){&s, i};
        EXPECT(pthread_create(&threads[i], NULL, shared_worker, &workers[i]) == 0);
    }

    /* A fork while the threads are in their calls. */
    wait_progress(THREADS * rounds / 3);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(CHILD_LIMIT_S);
        _exit(child_main(&s));
    }
    EXPECT(pid > 0);
    if (pid > 0) {
        int status = -1;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fprintf(stderr, "fork child: status %d\n", status);
        EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }

    /* Opened by the last thread's count-down, through another handle on the same latch. */
    rlock_count_down_latch *opened = NULL;
    EXPECT_RC(rlock_count_down_latch_new(s.client, name_latch, &opened), RLOCK_OK);
    bool open = false;
    EXPECT_RC(rlock_count_down_latch_wait(opened, RLOCK_FOREVER, &open), RLOCK_OK);
    EXPECT(open);
    rlock_count_down_latch_free(opened);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);

    EXPECT(atomic_load(&s.lock_acquires) == THREADS * rounds);
    EXPECT(atomic_load(&s.fair_acquires) == THREADS * rounds);
    EXPECT(atomic_load(&s.sem_acquires) == THREADS * rounds);
    bool locked = true;
    EXPECT_RC(rlock_lock_is_locked(s.lock, &locked), RLOCK_OK);
    EXPECT(!locked);
    EXPECT_RC(rlock_lock_is_locked(s.fair, &locked), RLOCK_OK);
    EXPECT(!locked);
    int64_t available = -1;
    EXPECT_RC(rlock_semaphore_available_permits(s.sem, &available), RLOCK_OK);
    EXPECT(available == PERMITS);
    /* Per round: two lock acquires (one a re-entry), a fair-lock and a semaphore acquire; three
     * final releases. Nothing waited out, nothing lost. */
    rlock_stats stats = {0};
    EXPECT_RC(rlock_client_stats(s.client, &stats), RLOCK_OK);
    EXPECT(stats.acquires == (uint64_t)(4 * THREADS * rounds));
    EXPECT(stats.releases == (uint64_t)(3 * THREADS * rounds));
    EXPECT(stats.acquire_timeouts == 0 && stats.lost_holds == 0);
    printf("threads sharing a client: %d threads x %d rounds, %d lock, %d fair-lock and %d "
           "semaphore acquires, at most %d of %d permits out at once\n",
           THREADS, rounds, atomic_load(&s.lock_acquires), atomic_load(&s.fair_acquires),
           atomic_load(&s.sem_acquires), atomic_load(&s.most_in_sem), PERMITS);

    bool existed = false;
    EXPECT_RC(rlock_count_down_latch_delete(s.latch, &existed), RLOCK_OK);
    int64_t drained = 0;
    EXPECT_RC(rlock_semaphore_drain_permits(s.sem, &drained), RLOCK_OK);
    rlock_lock_free(s.lock);
    rlock_lock_free(s.fair);
    rlock_semaphore_free(s.sem);
    rlock_count_down_latch_free(s.latch);
    rlock_client_free(s.client);
}

/* ---- a client freed while its threads are in calls ---- */

struct victim_worker {
    rlock_lock *lock; /* this thread's handle on the client main frees, freed after the join */
    int ok, not_acquired, closed, other;
};

static atomic_bool victim_freed;
/* The freed client's watchdog timeout: a hold it leaves behind expires within it. */
#define VICTIM_WATCHDOG_MS 3000

static void *victim_loop(void *arg) {
    struct victim_worker *w = arg;
    for (;;) {
        bool freed_before = atomic_load(&victim_freed);
        rlock_result rc = rlock_lock_acquire(w->lock, RLOCK_THREAD, 20, RLOCK_FOREVER, NULL);
        if (rc == RLOCK_OK) {
            w->ok++;
            rc = rlock_lock_release(w->lock, RLOCK_THREAD, NULL);
            if (rc == RLOCK_OK) atomic_fetch_add(&progress, 1);
        } else if (rc == RLOCK_NOT_ACQUIRED) {
            w->not_acquired++;
            atomic_fetch_add(&progress, 1);
        }
        if (freed_before) EXPECT(rc == RLOCK_CLOSED); /* a call started after the free */
        if (rc == RLOCK_CLOSED) {
            w->closed++;
            /* Once closed, closed for good. */
            bool b = false;
            EXPECT_RC(rlock_lock_is_locked(w->lock, &b), RLOCK_CLOSED);
            return NULL;
        }
        if (rc != RLOCK_OK && rc != RLOCK_NOT_ACQUIRED) {
            w->other++;
            fprintf(stderr, "victim call: %s\n", rlock_result_str(rc));
            return NULL;
        }
    }
}

static void a_client_freed_during_calls(void) {
    rlock_client *victim = NULL;
    rlock_options *options = rlock_options_new();
    EXPECT_RC(rlock_options_set_watchdog_timeout_ms(options, VICTIM_WATCHDOG_MS), RLOCK_OK);
    EXPECT_RC(rlock_client_new(NULL, options, &victim), RLOCK_OK);
    rlock_options_free(options);
    if (!victim) return;
    struct victim_worker workers[THREADS] = {0};
    pthread_t threads[THREADS];
    atomic_store(&progress, 0);
    atomic_store(&victim_freed, false);
    for (int i = 0; i < THREADS; i++) {
        EXPECT_RC(rlock_lock_new(victim, name_victim, RLOCK_LOCK, &workers[i].lock), RLOCK_OK);
        if (!workers[i].lock) return;
    }
    for (int i = 0; i < THREADS; i++)
        EXPECT(pthread_create(&threads[i], NULL, victim_loop, &workers[i]) == 0);
    wait_progress(THREADS * 4);
    rlock_client_free(victim); /* while the threads are in acquires and releases */
    atomic_store(&victim_freed, true);
    int ok = 0, not_acquired = 0, closed = 0, other = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        EXPECT_RC(rlock_lock_acquire(workers[i].lock, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_CLOSED);
        ok += workers[i].ok;
        not_acquired += workers[i].not_acquired;
        closed += workers[i].closed;
        other += workers[i].other;
        rlock_lock_free(workers[i].lock);
    }
    EXPECT(ok > 0 && closed == THREADS && other == 0);
    printf("a client freed during calls: %d acquires, %d ran out of wait, %d closed, %d other\n",
           ok, not_acquired, closed, other);

    /* Renewals stopped with the free: a hold whose release was cut off expires within one
     * watchdog timeout, and nothing renews it past that (the check allows two, for a loaded
     * machine). */
    rlock_client *checker = NULL;
    EXPECT_RC(rlock_client_new(NULL, NULL, &checker), RLOCK_OK);
    if (!checker) return;
    rlock_lock *l = NULL;
    EXPECT_RC(rlock_lock_new(checker, name_victim, RLOCK_LOCK, &l), RLOCK_OK);
    bool locked = true;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    double waited_ms = 0;
    while (l && rlock_lock_is_locked(l, &locked) == RLOCK_OK && locked && waited_ms < 2 * VICTIM_WATCHDOG_MS) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        waited_ms = (double)(now.tv_sec - start.tv_sec) * 1e3 + (double)(now.tv_nsec - start.tv_nsec) / 1e6;
    }
    EXPECT(!locked);
    rlock_lock_free(l);
    rlock_client_free(checker);
}

int main(void) {
    char *names[] = {name_lock, name_fair, name_sem, name_latch, name_child, name_victim};
    const char *kinds[] = {"lock", "fair", "sem", "latch", "child", "victim"};
    for (int i = 0; i < 6; i++) snprintf(names[i], 64, "stress-%d-%s", (int)getpid(), kinds[i]);
    const char *r = getenv("RLOCK_STRESS_ROUNDS");
    if (r && atoi(r) > 0) rounds = atoi(r);
    signal(SIGALRM, on_alarm);
    alarm(RUN_LIMIT_S);
    const char *plant = getenv("RLOCK_STRESS_PLANT_RACE");
    if (plant && strcmp(plant, "1") == 0) plant_a_race();
    threads_sharing_a_client();
    a_client_freed_during_calls();
    int failed = atomic_load(&failures);
    printf("stress: %s\n", failed ? "FAILED" : "passed");
    return failed ? 1 : 0;
}
