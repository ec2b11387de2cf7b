/* Least privilege and secrets on the C surface (issue 45, items 3 and 4); core/tests/acl.rs,
 * the Python and the Node tests do the same for theirs.
 * - A user with exactly docs/operations/security.md's rule, read from the page, runs the locks,
 *   a semaphore, a latch, describe and list; without EVALSHA or EXISTS an acquire returns
 *   RLOCK_REDIS with the server's words and the name, and leaves nothing in Redis.
 * - A password in the URL, through a wrong password, an unreachable server and malformed URLs,
 *   a refused command and a command timeout, is in no last error, log record, describe or list
 *   answer, Prometheus text or holder record. */
#include "check.h"

#define PAGE "docs/operations/security.md"
#define SECRET "Sekr3t-p@ss:word/9"
#define ESCAPED "Sekr3t-p%40ss%3Aword%2F9"
#define WRONG "Wr0ng-guess-7"

/* `redis-cli <args>` on the test server; its exit status (0: it ran). */
static int redis_cli(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "redis-cli -u '%s' %s >/dev/null", getenv("REDIS_URL"), args);
    return system(cmd);
}

/* Whether the test server knows `command` (Redis 6.2 has no sharded pub/sub): redis-cli prints
 * its name first for a known one, an empty line for an unknown one. */
static int server_has(const char *command) {
    char cmd[512], line[128] = "";
    snprintf(cmd, sizeof cmd, "redis-cli -u '%s' COMMAND INFO '%s'", getenv("REDIS_URL"), command);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    int known = fgets(line, sizeof line, p) && line[0] != '\n' && line[0] != '\0';
    pclose(p);
    return known;
}

/* The server's EVALSHA calls so far (INFO commandstats). */
static long evalsha_calls(void) {
    char cmd[512], line[512];
    snprintf(cmd, sizeof cmd, "redis-cli -u '%s' INFO commandstats", getenv("REDIS_URL"));
    FILE *p = popen(cmd, "r");
    long calls = 0;
    while (p && fgets(line, sizeof line, p))
        if (strncmp(line, "cmdstat_evalsha:calls=", 22) == 0) calls = strtol(line + 22, NULL, 10);
    if (p) pclose(p);
    return calls;
}

/* Appends the tokens of the page's ```acl no-run NAME block to `out`, but for `without`. */
static int add_block(char *out, size_t cap, const char *name, const char *without) {
    FILE *f = fopen(PAGE, "r");
    if (!f) return 0;
    static char doc[65536];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = '\0';
    char start[64];
    snprintf(start, sizeof start, "```acl no-run %s\n", name);
    char *at = strstr(doc, start);
    if (!at) return 0;
    at += strlen(start);
    char *end = strstr(at, "```");
    if (!end) return 0;
    *end = '\0';
    for (char *tok = strtok(at, " \n"); tok; tok = strtok(NULL, " \n")) {
        if (tok[0] == '+') {
            char base[64];
            snprintf(base, sizeof base, "%.*s", (int)strcspn(tok + 1, "|"), tok + 1);
            if ((without && strcmp(tok + 1, without) == 0) || !server_has(base)) continue;
        }
        /* Quoted: the key patterns hold `*` and `{`. */
        size_t used = strlen(out);
        snprintf(out + used, cap - used, " '%s'", tok);
    }
    return 1;
}

/* User `app` (password app-pass) with exactly the page's `family` rule (and `describe` when
 * asked), its `keys` patterns, less `without`. */
static int make_user(int describe, const char *without) {
    static char args[8192];
    snprintf(args, sizeof args, "ACL SETUSER app reset resetchannels on '>app-pass' -@all");
    if (!add_block(args, sizeof args, "family", without) || !add_block(args, sizeof args, "keys", NULL))
        return 0;
    if (describe && !add_block(args, sizeof args, "describe", NULL)) return 0;
    return redis_cli(args) == 0;
}

/* The test server's URL for user:password (host and port from REDIS_URL). */
static void url_as(char *out, size_t cap, const char *user, const char *password) {
    const char *url = getenv("REDIS_URL");
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    const char *at = strchr(host, '@');
    if (at) host = at + 1;
    snprintf(out, cap, "redis://%s:%s@%s", user, password, host);
}

void test_least_privilege(void) {
    CHECK(make_user(1, NULL));
    char url[512];
    url_as(url, sizeof url, "app", "app-pass");
    rlock_client *c = client_3s_watchdog(url);
    if (!c) return;
    static const int kinds[] = {RLOCK_LOCK, RLOCK_FAIR_LOCK, RLOCK_FENCED_LOCK, RLOCK_READ_LOCK, RLOCK_WRITE_LOCK};
    static const char *names[] = {"app:lock", "app:fair", "app:fenced", "app:rw", "app:rw"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        rlock_lock *l = lock_on(c, names[i], kinds[i]);
        uint64_t token = 0;
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER,
                                    kinds[i] == RLOCK_FENCED_LOCK ? &token : NULL),
                 RLOCK_OK);
        if (i == 0) {
            /* A renewal by the watchdog, as this user (the event; the bound ends a broken run). */
            long before = evalsha_calls();
            for (int t = 0; t < 1000 && evalsha_calls() < before + 1; t++) sleep_ms(10);
            CHECK(evalsha_calls() >= before + 1);
            bool held = false;
            CHECK_RC(rlock_lock_is_held(l, RLOCK_THREAD, &held), RLOCK_OK);
            CHECK(held);
        }
        CHECK_RC(rlock_lock_release(l, RLOCK_THREAD, NULL), RLOCK_OK);
        rlock_lock_free(l);
    }
    rlock_semaphore *sem = NULL;
    CHECK_RC(rlock_semaphore_new(c, "app:sem", &sem), RLOCK_OK);
    CHECK_RC(rlock_semaphore_try_set_permits(sem, 1, RLOCK_FOREVER, NULL), RLOCK_OK);
    CHECK_RC(rlock_semaphore_acquire(sem, 1, RLOCK_FOREVER), RLOCK_OK);
    CHECK_RC(rlock_semaphore_release(sem, 1, NULL), RLOCK_OK);
    rlock_semaphore_free(sem);
    rlock_count_down_latch *latch = NULL;
    CHECK_RC(rlock_count_down_latch_new(c, "app:latch", &latch), RLOCK_OK);
    CHECK_RC(rlock_count_down_latch_try_set_count(latch, 1, NULL), RLOCK_OK);
    CHECK_RC(rlock_count_down_latch_count_down(latch), RLOCK_OK);
    bool opened = false;
    CHECK_RC(rlock_count_down_latch_wait(latch, 0, &opened), RLOCK_OK);
    CHECK(opened);
    rlock_count_down_latch_free(latch);

    rlock_lock *held = lock_on(c, "app:held", RLOCK_LOCK);
    CHECK_RC(rlock_lock_acquire(held, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
    char *json = NULL;
    CHECK_RC(rlock_client_describe(c, "app:held", &json), RLOCK_OK);
    CHECK(json && strstr(json, "\"kind\":\"lock\""));
    rlock_string_free(json);
    json = NULL;
    CHECK_RC(rlock_client_list(c, "app:*", 0, &json), RLOCK_OK);
    CHECK(json && strstr(json, "app:held"));
    rlock_string_free(json);
    CHECK_RC(rlock_lock_release(held, RLOCK_THREAD, NULL), RLOCK_OK);
    rlock_lock_free(held);
    rlock_client_free(c);

    /* A user missing one command: RLOCK_REDIS with the server's words and the name. */
    static const char *missing[] = {"evalsha", "exists"};
    for (size_t i = 0; i < 2; i++) {
        CHECK(make_user(0, missing[i]));
        c = NULL;
        CHECK_RC(rlock_client_new(url, NULL, &c), RLOCK_OK);
        if (!c) continue;
        rlock_lock *l = lock_on(c, "app:denied", RLOCK_LOCK);
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_REDIS);
        char *msg = rlock_last_error();
        CHECK(msg && strstr(msg, "app:denied"));
        CHECK(msg && (strcasestr(msg, missing[i]) || strstr(msg, "@user_script")));
        rlock_string_free(msg);
        CHECK(redis_int("EXISTS app:denied") == 0);
        rlock_lock_free(l);
        rlock_client_free(c);
    }
    CHECK(redis_cli("ACL DELUSER app") == 0);
}

/* ---- secrets ---- */
static pthread_mutex_t records_mu = PTHREAD_MUTEX_INITIALIZER;
static int records, leaked_records;

static int carries_secret(const char *text) {
    return text && (strstr(text, SECRET) || strstr(text, ESCAPED) || strstr(text, WRONG));
}

static void on_record(void *userdata, rlock_log_level level, const char *target, const char *message) {
    (void)userdata, (void)level, (void)target;
    pthread_mutex_lock(&records_mu);
    records++;
    if (carries_secret(message)) {
        leaked_records++;
        fprintf(stderr, "FAIL: a log record carries a password: %s\n", message);
    }
    pthread_mutex_unlock(&records_mu);
}

/* The last error is clean (and says something). */
static int last_error_clean(const char *what) {
    char *msg = rlock_last_error();
    int clean = msg && *msg && !carries_secret(msg);
    if (!clean) fprintf(stderr, "FAIL: %s: the last error carries a password: %s\n", what, msg ? msg : "(none)");
    rlock_string_free(msg);
    return clean;
}

void test_secrets(void) {
    CHECK(redis_cli("ACL SETUSER keeper reset on '>" SECRET "' +@all '~*' '&*'") == 0);
    CHECK_RC(rlock_set_log_callback(on_record, NULL), RLOCK_OK);
    const char *url = getenv("REDIS_URL");
    const char *host = strstr(url, "://") ? strstr(url, "://") + 3 : url;
    char bad[6][512];
    snprintf(bad[0], sizeof bad[0], "redis://keeper:%s@%s", WRONG, host);
    snprintf(bad[1], sizeof bad[1], "redis://keeper:%s@127.0.0.1:1/", ESCAPED);
    snprintf(bad[2], sizeof bad[2], "redis://keeper:%s@127.0.0.1:notaport/", ESCAPED);
    snprintf(bad[3], sizeof bad[3], "bogus://keeper:%s@%s", ESCAPED, host);
    snprintf(bad[4], sizeof bad[4], "redis+cluster://keeper:%s@127.0.0.1:x/", ESCAPED);
    snprintf(bad[5], sizeof bad[5], "redis+sentinel://keeper:%s@%s", ESCAPED, host);
    rlock_options *o = rlock_options_new();
    CHECK_RC(rlock_options_set_connect_timeout_ms(o, 1000), RLOCK_OK);
    for (int i = 0; i < 6; i++) {
        rlock_client *c = NULL;
        CHECK(rlock_client_new(bad[i], o, &c) != RLOCK_OK);
        CHECK(last_error_clean(bad[i]));
        rlock_client_free(c);
    }
    char good[512];
    url_as(good, sizeof good, "keeper", ESCAPED);
    /* A server that may evict keys: core warns at connect (a log record, every time). */
    CHECK(redis_cli("CONFIG SET maxmemory-policy allkeys-lru") == 0);
    CHECK_RC(rlock_options_set_command_timeout_ms(o, 300), RLOCK_OK);
    CHECK_RC(rlock_options_set_retry_attempts(o, 0), RLOCK_OK);
    CHECK_RC(rlock_options_set_app_name(o, "secrets"), RLOCK_OK);
    rlock_client *c = NULL;
    CHECK_RC(rlock_client_new(good, o, &c), RLOCK_OK);
    rlock_options_free(o);
    if (c) {
        rlock_lock *l = lock_on(c, "s:refused", RLOCK_LOCK);
        CHECK(redis_cli("ACL SETUSER keeper -evalsha") == 0);
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_REDIS);
        CHECK(last_error_clean("a refused command"));
        CHECK(redis_cli("ACL SETUSER keeper +evalsha") == 0);
        CHECK(redis_cli("CLIENT PAUSE 1000 ALL") == 0);
        bool locked = false;
        CHECK_RC(rlock_lock_is_locked(l, &locked), RLOCK_TIMEOUT);
        CHECK(last_error_clean("a command timeout"));
        /* An acquire whose reply does not come: its give-back cannot reach Redis either, and
         * core warns (a log record). */
        CHECK_RC(rlock_lock_acquire(l, RLOCK_THREAD, 0, RLOCK_FOREVER, NULL), RLOCK_TIMEOUT);
        CHECK(last_error_clean("an acquire that timed out"));
        CHECK(redis_cli("CLIENT UNPAUSE") == 0);
        rlock_lock_free(l);

        rlock_lock *held = lock_on(c, "s:held", RLOCK_LOCK);
        CHECK_RC(rlock_lock_acquire(held, RLOCK_THREAD, RLOCK_FOREVER, RLOCK_FOREVER, NULL), RLOCK_OK);
        char *text = NULL;
        CHECK_RC(rlock_client_describe(c, "s:held", &text), RLOCK_OK);
        CHECK(text && !carries_secret(text));
        rlock_string_free(text);
        text = NULL;
        CHECK_RC(rlock_client_list(c, "s:*", 0, &text), RLOCK_OK);
        CHECK(text && !carries_secret(text));
        rlock_string_free(text);
        text = NULL;
        CHECK_RC(rlock_client_prometheus_text(c, &text), RLOCK_OK);
        CHECK(text && !carries_secret(text));
        rlock_string_free(text);
        /* The holder record rlock wrote for this client. */
        char cmd[512], line[1024];
        snprintf(cmd, sizeof cmd, "redis-cli -u '%s' --scan --pattern 'rlock:client:*' | "
                 "xargs -r -n1 redis-cli -u '%s' GET", url, url);
        FILE *p = popen(cmd, "r");
        int record_lines = 0;
        while (p && fgets(line, sizeof line, p)) {
            record_lines++;
            CHECK(!carries_secret(line));
        }
        if (p) pclose(p);
        CHECK(record_lines > 0);
        CHECK_RC(rlock_lock_release(held, RLOCK_THREAD, NULL), RLOCK_OK);
        rlock_lock_free(held);
        rlock_client_free(c);
    }
    CHECK(redis_cli("CONFIG SET maxmemory-policy noeviction") == 0);
    /* Records come from librlock's threads: wait for the eviction warning (an event; the bound
     * only ends a broken run). */
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&records_mu);
        int n = records;
        pthread_mutex_unlock(&records_mu);
        if (n > 0) break;
        sleep_ms(10);
    }
    CHECK_RC(rlock_set_log_callback(NULL, NULL), RLOCK_OK);
    pthread_mutex_lock(&records_mu);
    CHECK(records > 0);
    CHECK(leaked_records == 0);
    pthread_mutex_unlock(&records_mu);
    CHECK(redis_cli("ACL DELUSER keeper") == 0);
}
