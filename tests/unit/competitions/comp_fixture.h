/*
 * comp_fixture.h - a temporary data directory and store with users, a
 * competitions handle on a clock the test moves, and helpers to make a
 * competition, put a truth and submit CSV text. Include it once per suite.
 */
#ifndef COMP_FIXTURE_H
#define COMP_FIXTURE_H

#include "comp.h"
#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define T0 INT64_C(1800000000000)          /* 2027-01-15T08:00:00Z */
#define HOUR INT64_C(3600000)
#define DAY (24 * HOUR)

static char fixture_dir[64];
static ed_store *st;
static comp *cp;
static int64_t fake_now;
static int64_t admin, host, alice, bob, carol, dave;

__attribute__((unused)) static int64_t fixture_clock(void *payload)
{
    (void)payload;
    return __atomic_load_n(&fake_now, __ATOMIC_SEQ_CST);
}

__attribute__((unused)) static int64_t add_user(const char *name, const char *role)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO users(username, email, password_hash, role, tier, created_at, updated_at) "
             "VALUES ('%s', '%s@x.org', 'x', '%s', 'free', 0, 0)", name, name, role);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    return sqlite3_last_insert_rowid(ed_store_db(st));
}

static comp_hooks fixture_hooks;

__attribute__((unused)) static void fixture_open(void)
{
    ck_assert_int_eq(comp_open(&cp, st, fixture_dir, &fixture_hooks, NULL), 0);
}

__attribute__((unused)) static void comp_setup(void)
{
    char path[128];
    snprintf(fixture_dir, sizeof(fixture_dir), "/tmp/eddy-comp-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(fixture_dir));
    snprintf(path, sizeof(path), "%s/eddy.db", fixture_dir);
    ck_assert_int_eq(ed_crypto_init(), 0);
    ck_assert_int_eq(ed_store_open(&st, path), 0);
    fake_now = T0;
    fixture_hooks.now_ms = fixture_clock;
    fixture_open();
    admin = add_user("root", "admin");
    host = add_user("hana", "user");
    alice = add_user("alice", "user");
    bob = add_user("bob", "user");
    carol = add_user("carol", "user");
    dave = add_user("dave", "user");
    ck_assert_int_eq(comp_host_add(cp, admin, host), 0);
}

__attribute__((unused)) static void comp_teardown(void)
{
    char cmd[128];
    comp_free(cp);
    cp = NULL;
    ed_store_close(st);
    st = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", fixture_dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* A spec: accuracy on id,label; starts in an hour, ends 30 days later. */
__attribute__((unused)) static comp_spec base_spec(void)
{
    static const char *const targets[] = {"label"};
    comp_spec s = COMP_SPEC_INIT;
    s.title = "Digits";
    s.overview = "# Digits\nClassify.";
    s.rules = "Be nice.";
    s.start_at = T0 + HOUR;
    s.merge_deadline = s.start_at + 10 * DAY;
    s.selection_deadline = s.start_at + 20 * DAY;
    s.end_at = s.start_at + 30 * DAY;
    s.id_column = "id";
    s.target_columns = targets;
    s.ntargets = 1;
    s.metric = "accuracy";
    s.public_fraction = 0.5;
    s.daily_cap = 5;
    s.max_team_size = 3;
    return s;
}

/* A file descriptor holding `text`, at offset 0. */
__attribute__((unused)) static int text_fd(const char *text)
{
    int fd = memfd_create("csv", MFD_CLOEXEC);
    size_t n = strlen(text);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

/* The truth: ids 0..rows-1, label (i % 2) as "a"/"b". */
static char *truth_text(int rows)
{
    size_t cap = 32 + (size_t)rows * 16, n;
    char *t = malloc(cap);
    n = (size_t)snprintf(t, cap, "id,label\n");
    for (int i = 0; i < rows; i++)
        n += (size_t)snprintf(t + n, cap - n, "%d,%s\n", i, i % 2 ? "b" : "a");
    return t;
}

/* A submission: correct for row i when i < right, wrong after. */
static char *sub_text(int rows, int right)
{
    size_t cap = 32 + (size_t)rows * 16, n;
    char *t = malloc(cap);
    n = (size_t)snprintf(t, cap, "id,label\n");
    for (int i = 0; i < rows; i++) {
        int b = i % 2;
        if (i >= right)
            b = !b;
        n += (size_t)snprintf(t + n, cap - n, "%d,%s\n", i, b ? "b" : "a");
    }
    return t;
}

__attribute__((unused)) static void put_truth(const char *id, int rows)
{
    char *t = truth_text(rows);
    int fd = text_fd(t);
    int err = comp_truth_put_fd(cp, host, id, fd);
    if (err != 0)
        ck_abort_msg("truth: %s", ed_error_last());
    close(fd);
    free(t);
}

/* Create from `s`, put a 100-row truth, move the clock to the start. */
__attribute__((unused)) static void make_comp(char id[COMP_ID_LEN], const comp_spec *s)
{
    comp_competition *k = NULL;
    int err = comp_competition_create(&k, cp, host, s);
    if (err != 0)
        ck_abort_msg("create: %s", ed_error_last());
    snprintf(id, COMP_ID_LEN, "%s", k->id);
    comp_competition_free(k);
    put_truth(id, 100);
    fake_now = s->start_at;
}

__attribute__((unused)) static int submit_text(comp_submission **out, int64_t user, const char *id, const char *text)
{
    int fd = text_fd(text);
    int err = comp_submission_create_csv(out, cp, user, id, fd);
    close(fd);
    return err;
}

__attribute__((unused)) static void work_all(void)
{
    int n;
    while ((n = comp_work_once(cp)) == 1)
        ;
    ck_assert_int_eq(n, 0);
}

#endif
