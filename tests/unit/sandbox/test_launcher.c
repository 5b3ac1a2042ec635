/*
 * test_launcher - the privileged launcher (sbx.h "privileged launcher"):
 * malformed requests are refused and the launcher carries on, binds outside
 * its roots and uids it did not hand out (0 above all) are refused, a job
 * runs through it and its trees come back to the server when it ends, and
 * closing the socket kills every job and ends the launcher.
 *
 * Each test forks a real launcher (root), then the test process itself drops
 * to an unprivileged "server" uid and talks to it, as `eddy serve` does.
 * Needs root and user namespaces (as CI has); exits 77 elsewhere.
 */
#include "ed_error.h"
#include "sbx.h"
#include "sbx_wire.h"

#include "../support/unit_util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SERVER_UID 4321
#define SLOT_BASE  202100
#define SLOT_COUNT 4

static char root[64];            /* /tmp/eddy-launcher-XXXXXX, 0711 */
static char data[96], ro[96], slots[96];
static pid_t lpid;
static int csock = -1;           /* the server's end, when not handed to sbx */

static int make_root(void)
{
    snprintf(root, sizeof(root), "/tmp/eddy-launcher-XXXXXX");
    if (mkdtemp(root) == NULL)
        return -1;
    chmod(root, 0711);
    snprintf(data, sizeof(data), "%s/data", root);
    snprintf(ro, sizeof(ro), "%s/ro", root);
    snprintf(slots, sizeof(slots), "%s/slots", root);
    return 0;
}

static int rm_one(const char *p, const struct stat *sb, int f, struct FTW *ftw)
{
    (void)sb;
    (void)f;
    (void)ftw;
    return remove(p);
}

static void remove_root(void)
{
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Fork the launcher (root), then become the server uid (0: stay root). */
static void start_as(uid_t server)
{
    int sv[2];
    pid_t me = getpid();

    nftw(data, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    ck_assert_int_eq(mkdir(data, 0700), 0);
    ck_assert_int_eq(chown(data, server, server), 0);
    mkdir(ro, 0755);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    lpid = fork();
    ck_assert_int_ge(lpid, 0);
    if (lpid == 0) {
        sbx_launcher_config c;
        memset(&c, 0, sizeof(c));
        c.data_dir = data;
        c.ro_roots[0] = ro;
        c.n_ro_roots = 1;
        c.server_uid = server;
        c.server_gid = server;
        c.server_pid = me;
        c.slot_dir = slots;
        c.slot_base = SLOT_BASE;
        c.slot_count = SLOT_COUNT;
        close(sv[0]);
        _exit(sbx_launcher_serve(sv[1], &c) < 0 ? 3 : 0);
    }
    close(sv[1]);
    csock = sv[0];
    int one = 1;    /* our credentials go with every message from the start */
    ck_assert_int_eq(setsockopt(csock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
    if (server == 0)
        return;
    ck_assert_int_eq(setgroups(0, NULL), 0);
    ck_assert_int_eq(setresgid(SERVER_UID, SERVER_UID, SERVER_UID), 0);
    ck_assert_int_eq(setresuid(SERVER_UID, SERVER_UID, SERVER_UID), 0);
}

static void start(void)
{
    start_as(SERVER_UID);
}

static void use_launcher(void)
{
    ck_assert_int_eq(sbx_launcher_use(csock, lpid), 0);
    csock = -1;
}

/* start_as(`server`), the launcher in use, and a slot claimed through it. */
static sbx_slot *started(uid_t server)
{
    sbx_slot *slot = NULL;

    start_as(server);
    use_launcher();
    ck_assert_int_eq(sbx_slot_claim(&slot, "/ignored", 1, 1), 0);
    return slot;
}

/* Close our end; the launcher's exit status. */
static int stop(void)
{
    int st = 0;
    if (csock >= 0)
        close(csock);
    csock = -1;
    sbx_launcher_use(-1, 0);
    ck_assert_int_eq(waitpid(lpid, &st, 0), lpid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Free the job and the slot, then close our end: the launcher ends cleanly. */
static void finish(sbx_job *j, sbx_slot *slot)
{
    sbx_job_free(j);
    sbx_slot_free(slot);
    ck_assert_int_eq(stop(), 0);
}

/* Send raw bytes; the reply's status (bytes 16..19). */
static int raw(const void *msg, size_t len, const int *fds, size_t n_fds)
{
    unsigned char buf[SBX_WIRE_MAX];
    int got[SBX_WIRE_FDS];
    size_t rlen, n_got;
    pid_t pid;
    uid_t uid;
    int32_t status;

    ck_assert_int_eq(sbx__wire_send(csock, msg, len, fds, n_fds), 0);
    ck_assert_int_eq(sbx__wire_recv(csock, buf, sizeof(buf), &rlen, got, &n_got, &pid, &uid), 1);
    for (size_t i = 0; i < n_got; i++)
        close(got[i]);
    ck_assert_uint_ge(rlen, 20);
    memcpy(&status, buf + 16, 4);
    return status;
}

static int raw_buf(sbx_wire_buf *b, const int *fds, size_t n_fds)
{
    ck_assert_int_eq(sbx__wire_finish(b), 0);
    int st = raw(b->data, b->len, fds, n_fds);
    sbx__wire_buf_free(b);
    return st;
}

/* DIR/<name> holds exactly `want` (shorter than 64 bytes). */
static void file_is(const char *dir, const char *name, const char *want)
{
    char path[256], buf[64] = {0};
    int fd;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
    ck_assert_int_eq(read(fd, buf, sizeof(buf) - 1), (ssize_t)strlen(want));
    close(fd);
    ck_assert_str_eq(buf, want);
}

static void spec(sbx_spec *s, char **argv, unsigned uid)
{
    sbx_spec_init(s);
    s->argv = argv;
    s->host_uid = s->host_gid = uid;
    s->stdio[0] = s->stdio[1] = s->stdio[2] = -1;
    s->wall_ms = 30000;
    s->mem_bytes = 128 << 20;
    s->pids = 64;
    s->allow_degraded = 1;
}

START_TEST(malformed_requests_are_refused_and_the_launcher_carries_on)
{
    sbx_wire_buf b;
    int fd;

    start();
    ck_assert_int_eq(raw("hello", 5, NULL, 0), ED_EINVAL);
    /* wrong version */
    sbx__wire_begin(&b, SBX_OP_SLOT_CLAIM, 1);
    b.data[4] = 9;
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EINVAL);
    /* a length that does not match */
    sbx__wire_begin(&b, SBX_OP_WAIT, 2);
    sbx__wire_u32(&b, 1);
    ck_assert_int_eq(sbx__wire_finish(&b), 0);
    b.data[12] = 7;
    ck_assert_int_eq(raw(b.data, b.len, NULL, 0), ED_EINVAL);
    sbx__wire_buf_free(&b);
    /* an unknown request; bytes left over */
    sbx__wire_begin(&b, 99, 3);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EINVAL);
    sbx__wire_begin(&b, SBX_OP_WAIT, 4);
    sbx__wire_u32(&b, 1);
    sbx__wire_u32(&b, 1);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EINVAL);
    /* a descriptor with a request that takes none (it is closed, not kept) */
    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    sbx__wire_begin(&b, SBX_OP_SLOT_CLAIM, 5);
    ck_assert_int_eq(raw_buf(&b, &fd, 1), ED_EINVAL);
    close(fd);
    /* a string with a NUL inside, a count past the bound */
    sbx__wire_begin(&b, SBX_OP_TREE_GIVE, 6);
    sbx__wire_u32(&b, 3);
    sbx__wire_u32(&b, 0x00610061);
    b.len--;
    sbx__wire_u32(&b, 5);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EINVAL);
    sbx__wire_begin(&b, SBX_OP_LAUNCH, 7);
    sbx__wire_u32(&b, 100000);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EINVAL);
    /* unknown handles */
    sbx__wire_begin(&b, SBX_OP_KILL, 8);
    sbx__wire_u32(&b, 12345);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_ENOTFOUND);
    /* another process of ours, not the server: refused */
    pid_t kid = fork();
    if (kid == 0) {
        sbx__wire_begin(&b, SBX_OP_SLOT_CLAIM, 9);
        sbx__wire_finish(&b);
        _exit(raw(b.data, b.len, NULL, 0) == ED_EPERM ? 0 : 1);
    }
    int st = -1;
    waitpid(kid, &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a request from another pid was served");
    /* still serving */
    sbx__wire_begin(&b, SBX_OP_SLOT_CLAIM, 10);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), 0);
    ck_assert_int_eq(stop(), 0);
}
END_TEST

START_TEST(uid_zero_and_uids_not_handed_out_are_refused)
{
    char *argv[] = {"/bin/true", NULL};
    char work[160];
    sbx_wire_buf b;
    sbx_spec s;
    int fds[8];
    size_t n;

    start();
    snprintf(work, sizeof(work), "%s/w", data);
    ck_assert_int_eq(mkdir(work, 0700), 0);
    sbx__wire_begin(&b, SBX_OP_SLOT_CLAIM, 1);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), 0);     /* slot SLOT_BASE is ours */
    unsigned bad[] = {0, SLOT_BASE + 1, 65534, SERVER_UID};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        spec(&s, argv, bad[i]);
        ck_assert_int_eq(sbx__wire_encode_launch(&b, 2, &s, fds, &n), 0);
        ck_assert_int_eq(raw_buf(&b, fds, n), ED_EPERM);
    }
    /* gid different from the slot uid */
    spec(&s, argv, SLOT_BASE);
    s.host_gid = 0;
    ck_assert_int_eq(sbx__wire_encode_launch(&b, 3, &s, fds, &n), 0);
    ck_assert_int_eq(raw_buf(&b, fds, n), ED_EPERM);
    /* trees: not to root, not to a uid not handed out, not outside data */
    unsigned tb[] = {0, SLOT_BASE + 1};
    for (size_t i = 0; i < 2; i++) {
        sbx__wire_begin(&b, SBX_OP_TREE_GIVE, 4);
        sbx__wire_str(&b, work);
        sbx__wire_u32(&b, tb[i]);
        ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EPERM);
    }
    const char *paths[] = {"/etc", data, "/tmp", "relative/path"};
    for (size_t i = 0; i < 4; i++) {
        sbx__wire_begin(&b, SBX_OP_TREE_GIVE, 5);
        sbx__wire_str(&b, paths[i]);
        sbx__wire_u32(&b, SLOT_BASE);
        ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EPERM);
    }
    struct stat sb;
    ck_assert_int_eq(stat("/etc", &sb), 0);
    ck_assert_int_eq(sb.st_uid, 0);
    ck_assert_int_eq(stop(), 0);
}
END_TEST

START_TEST(binds_outside_the_roots_are_refused)
{
    char *argv[] = {"/bin/true", NULL};
    char work[160], link[160], dots[200], inro[160];
    sbx_slot *slot = NULL;
    sbx_job *j = NULL;
    sbx_spec s;
    sbx_bind b;

    slot = started(SERVER_UID);
    snprintf(work, sizeof(work), "%s/w", data);
    snprintf(link, sizeof(link), "%s/l", data);
    snprintf(dots, sizeof(dots), "%s/w/../../ro", data);
    snprintf(inro, sizeof(inro), "%s", ro);
    ck_assert_int_eq(mkdir(work, 0700), 0);
    ck_assert_int_eq(symlink("/etc", link), 0);
    ck_assert_uint_eq(sbx_slot_uid(slot), SLOT_BASE);
    struct { const char *src; int rw; int code; } cases[] = {
        {"/etc", 0, ED_EPERM},          /* no root */
        {"/etc", 1, ED_EPERM},
        {inro, 1, ED_EPERM},            /* a read-only root, read-write */
        {dots, 0, ED_EPERM},            /* ".." */
        {link, 1, ED_EINVAL},           /* a symbolic link */
        {"/tmp", 1, ED_EPERM},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        spec(&s, argv, SLOT_BASE);
        b = (sbx_bind){cases[i].src, "/mnt/x", 0};
        if (cases[i].rw) {
            s.rw = &b;
            s.n_rw = 1;
        } else {
            s.ro = &b;
            s.n_ro = 1;
        }
        ck_assert_int_eq(sbx_launch(&j, &s), cases[i].code);
        ck_assert_ptr_null(j);
    }
    /* beneath the roots: runs */
    spec(&s, argv, SLOT_BASE);
    sbx_bind ok[2] = {{inro, "/opt/ro", 0}, {work, "/home/aistudio/work", 0}};
    s.ro = &ok[0];
    s.n_ro = 1;
    s.rw = &ok[1];
    s.n_rw = 1;
    ck_assert_int_eq(sbx_tree_give(work, SLOT_BASE, SLOT_BASE), 0);
    int err = sbx_launch(&j, &s);
    ck_assert_msg(err == 0, "%s", ed_error_last());
    sbx_usage u;
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    ck_assert_int_eq(u.exited, 1);
    ck_assert_int_eq(u.exit_code, 0);
    finish(j, slot);
}
END_TEST

START_TEST(job_runs_and_its_trees_come_back_to_the_server)
{
    char *argv[] = {"/bin/sh", "-c", "echo hi > /home/aistudio/work/out.txt && mkdir /home/aistudio/work/d "
                    "&& chmod 700 /home/aistudio/work/d && touch /home/aistudio/work/d/f", NULL};
    char work[160], path[200];
    sbx_slot *slot = NULL;
    sbx_job *j = NULL;
    sbx_spec s;
    struct stat sb;
    sbx_usage u;

    slot = started(SERVER_UID);
    snprintf(work, sizeof(work), "%s/w", data);
    ck_assert_int_eq(mkdir(work, 0700), 0);
    ck_assert_int_eq(sbx_tree_give(work, sbx_slot_uid(slot), sbx_slot_uid(slot)), 0);
    ck_assert_int_eq(lstat(work, &sb), 0);
    ck_assert_uint_eq(sb.st_uid, sbx_slot_uid(slot));
    spec(&s, argv, sbx_slot_uid(slot));
    sbx_bind b = {work, "/home/aistudio/work", 0};
    s.rw = &b;
    s.n_rw = 1;
    ck_assert_msg(sbx_launch(&j, &s) == 0, "%s", ed_error_last());
    ck_assert_int_gt(sbx_job_pid(j), 0);
    ck_assert_int_ge(sbx_job_pidfd(j), 0);
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    ck_assert_int_eq(u.exited, 1);
    ck_assert_int_eq(u.exit_code, 0);
    /* Back with the server as soon as the end is reported. */
    ck_assert_int_eq(lstat(work, &sb), 0);
    ck_assert_uint_eq(sb.st_uid, SERVER_UID);
    snprintf(path, sizeof(path), "%s/d/f", work);
    ck_assert_int_eq(lstat(path, &sb), 0);
    ck_assert_uint_eq(sb.st_uid, SERVER_UID);
    file_is(work, "out.txt", "hi\n");
    finish(j, slot);
}
END_TEST

/* A project's working tree (SBX_BIND_IDMAP | SBX_BIND_HIDE_GIT) through
 * the launcher: the job sees the server's files as its own, writes them,
 * and what it creates stays the server's on disk (never the slot's); no
 * tree_give. Idmap is refused on a read-only bind and on anything but a
 * project's tree (DATA/projects/<id>). The launcher answers IDMAP_PROBE for its data
 * directory. */
START_TEST(idmapped_tree_stays_the_servers)
{
    char *argv[] = {"/bin/sh", "-c",
                    "set -e; cd /home/aistudio/work; test \"$(stat -c %u f.txt)\" = 1000; "
                    "echo more >> f.txt; echo new > new.txt; mkdir d; touch d/x; "
                    "test -z \"$(ls -A .git)\"; ! touch .git/y 2>/dev/null", NULL};
    char work[160], path[200], why[256];
    sbx_slot *slot = NULL;
    sbx_job *j = NULL;
    sbx_spec s;
    struct stat sb;
    sbx_usage u;
    int fd;

    start();
    use_launcher();
    ck_assert_msg(sbx_idmap_probe("/ignored", why, sizeof(why)) == 1, "%s", why);
    snprintf(work, sizeof(work), "%s/projects", data);
    ck_assert_int_eq(mkdir(work, 0700), 0);
    snprintf(work, sizeof(work), "%s/projects/p1", data);
    ck_assert_int_eq(mkdir(work, 0700), 0);
    snprintf(path, sizeof(path), "%s/.git", work);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/f.txt", work);
    ck_assert_int_ge(fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644), 0);
    ck_assert_int_eq(write(fd, "one\n", 4), 4);
    close(fd);
    ck_assert_int_eq(sbx_slot_claim(&slot, "/ignored", 1, 1), 0);
    /* refused: idmap read-only, idmap outside the data directory */
    sbx_bind bad = {work, "/home/aistudio/work", SBX_BIND_IDMAP};
    spec(&s, argv, sbx_slot_uid(slot));
    s.ro = &bad;
    s.n_ro = 1;
    ck_assert_int_eq(sbx_launch(&j, &s), ED_EINVAL);
    char other[160];
    snprintf(other, sizeof(other), "%s/projects", data);    /* beneath the data directory, not a project */
    const char *const refused[] = {ro, data, other};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        bad.src = refused[i];
        spec(&s, argv, sbx_slot_uid(slot));
        s.rw = &bad;
        s.n_rw = 1;
        ck_assert_msg(sbx_launch(&j, &s) == ED_EPERM, "%s: %s", refused[i], ed_error_last());
        ck_assert_ptr_null(j);
    }
    sbx_bind b = {work, "/home/aistudio/work", SBX_BIND_IDMAP | SBX_BIND_HIDE_GIT};
    spec(&s, argv, sbx_slot_uid(slot));
    s.rw = &b;
    s.n_rw = 1;
    ck_assert_msg(sbx_launch(&j, &s) == 0, "%s", ed_error_last());
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    ck_assert_msg(u.exited && u.exit_code == 0, "exit %d sig %d", u.exit_code, u.term_signal);
    static const char *const mine[] = {"f.txt", "new.txt", "d", "d/x", ""};
    for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", work, mine[i]);
        ck_assert_int_eq(lstat(path, &sb), 0);
        ck_assert_msg(sb.st_uid == SERVER_UID && sb.st_gid == SERVER_UID, "%s is %u:%u", path,
                      (unsigned)sb.st_uid, (unsigned)sb.st_gid);
    }
    file_is(work, "f.txt", "one\nmore\n");
    finish(j, slot);
}
END_TEST

START_TEST(signals_and_kill_go_through_the_launcher)
{
    char *argv[] = {"/bin/sleep", "1000", NULL};
    sbx_slot *slot = NULL;
    sbx_job *j = NULL;
    sbx_spec s;
    sbx_usage u;

    slot = started(SERVER_UID);
    spec(&s, argv, sbx_slot_uid(slot));
    ck_assert_msg(sbx_launch(&j, &s) == 0, "%s", ed_error_last());
    ck_assert_int_eq(sbx_job_wait(j, 100, &u), ED_EBUSY);
    /* we hold its pidfd, but may not signal it ourselves */
    ck_assert_int_eq(kill(sbx_job_pid(j), SIGKILL), -1);
    ck_assert_int_eq(sbx_job_signal(j, SIGTERM), 0);
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    ck_assert_int_eq(u.term_signal, SIGTERM);
    sbx_job_free(j);
    spec(&s, argv, sbx_slot_uid(slot));
    ck_assert_int_eq(sbx_launch(&j, &s), 0);
    ck_assert_int_eq(sbx_job_kill(j), 0);
    ck_assert_int_eq(sbx_job_wait(j, -1, &u), 0);
    ck_assert_int_eq(u.limit, SBX_LIMIT_KILLED);
    finish(j, slot);
}
END_TEST

START_TEST(closing_the_socket_kills_every_job_and_ends_the_launcher)
{
    char *argv[] = {"/bin/sleep", "1000", NULL};
    sbx_slot *slot = NULL;
    sbx_job *j[2] = {NULL, NULL};
    pid_t pid[2];
    sbx_spec s;

    slot = started(SERVER_UID);
    for (int i = 0; i < 2; i++) {
        spec(&s, argv, sbx_slot_uid(slot));
        ck_assert_msg(sbx_launch(&j[i], &s) == 0, "%s", ed_error_last());
        pid[i] = sbx_job_pid(j[i]);
    }
    /* the server goes away without freeing anything */
    ck_assert_int_eq(stop(), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(kill(pid[i], 0), -1);
        ck_assert_int_eq(errno, ESRCH);
    }
    ck_assert_int_eq(sbx_launcher_active(), 0);
}
END_TEST

START_TEST(a_dead_launcher_fails_every_call_loudly)
{
    sbx_slot *slot = NULL;
    int st = 0;

    slot = started(0);      /* stay root here, so the launcher can be killed */
    sbx_slot_free(slot);
    slot = NULL;
    ck_assert_int_eq(kill(lpid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(lpid, &st, 0), lpid);
    ck_assert_int_eq(sbx_slot_claim(&slot, "/ignored", 1, 1), ED_EIO);
    ck_assert_msg(strstr(ed_error_last(), "launcher is gone") != NULL, "%s", ed_error_last());
    ck_assert_int_eq(sbx_tree_give(data, 4242, 4242), ED_EIO);
    sbx_launcher_use(-1, 0);
}
END_TEST


/* ---- disk quotas through the launcher ---- */

static int disk_req(unsigned op, const char *const *paths, size_t n, uint32_t projid, int64_t bytes)
{
    sbx_wire_buf b;
    sbx__wire_begin(&b, op, 40);
    sbx__wire_u32(&b, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        sbx__wire_str(&b, paths[i]);
    sbx__wire_u32(&b, projid);
    if (op == SBX_OP_DISK_INIT)
        sbx__wire_i64(&b, bytes);
    return raw_buf(&b, NULL, 0);
}

static int path_req(unsigned op, const char *path)
{
    sbx_wire_buf b;
    sbx__wire_begin(&b, op, 41);
    sbx__wire_str(&b, path);
    return raw_buf(&b, NULL, 0);
}

static int mounted_at(const char *dir)
{
    /* all of it: with other tests' trees mounted the table passes 64 KiB
     * (each project workspace in use is a mount), and one read() of a
     * seq_file returns only a part */
    static char buf[4 << 20];
    int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    ssize_t n;
    while (fd >= 0 && len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
        len += (size_t)n;
    if (fd >= 0)
        close(fd);
    buf[len] = '\0';
    return strstr(buf, dir) != NULL;
}

#define JOB(id) (SBX_DISK_PROJID_JOBS + (id))

/* Probe the disk quota mechanism through the launcher: loop images here. */
static void probe_images(sbx_disk *d)
{
    ck_assert_int_eq(sbx_disk_probe(d, data, -1, SBX_DISK_SETUP | SBX_DISK_NO_PRJQUOTA | SBX_DISK_NO_VOLUME), 0);
    ck_assert_msg(d->mech == SBX_DISK_IMAGES, "%s", d->detail);
}

/* Tree `projid` is made: `dir` is a mount of its own (*parent: the stat of
 * `parent_dir`, which holds it) and ours, the server's, to write. */
static void tree_is_made(struct stat *parent, const sbx_disk *d, const char *dir, const char *parent_dir,
                         uint32_t projid)
{
    struct stat sb;

    ck_assert_int_eq(stat(dir, &sb), 0);
    ck_assert_int_eq(stat(parent_dir, parent), 0);
    ck_assert_uint_ne(sb.st_dev, parent->st_dev);           /* a mount */
    ck_assert_uint_eq(sb.st_uid, SERVER_UID);              /* and ours to write */
    ck_assert_int_eq(sbx_disk_tree_exists(d, projid), 1);
}

/* Write a new `file` 1 MiB at a time, each synced, 16 MiB at most: the MiB
 * written; *err the errno that stopped it (0: none did). */
static int fill(const char *file, int *err)
{
    static char chunk[1 << 20];
    int fd, wrote = 0;

    *err = 0;
    fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    for (int i = 0; i < 16; i++) {
        if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk) || fsync(fd) < 0) {
            *err = errno;
            break;
        }
        wrote++;
    }
    close(fd);
    return wrote;
}

START_TEST(disk_requests_with_bad_ids_links_or_sizes_are_refused)
{
    char p[12][200], outside[160], file[240];
    const char *one[1], *two[2];
    sbx_wire_buf b;
    struct stat sb;

    start();
    snprintf(outside, sizeof(outside), "/tmp/eddy-launcher-outside-XXXXXX");   /* not beneath the data directory */
    ck_assert_ptr_nonnull(mkdtemp(outside));
    /* sizes and flags out of range */
    sbx__wire_begin(&b, SBX_OP_DISK_PROBE, 1);
    sbx__wire_i64(&b, 1);                  /* a 1-byte volume */
    sbx__wire_u32(&b, 0);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EINVAL);
    sbx__wire_begin(&b, SBX_OP_DISK_PROBE, 2);
    sbx__wire_i64(&b, -1);
    sbx__wire_u32(&b, 0x100);              /* an unknown flag */
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EINVAL);
    sbx__wire_begin(&b, SBX_OP_DISK_PROBE, 3);
    sbx__wire_i64(&b, INT64_C(1) << 60);
    sbx__wire_u32(&b, 0);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EINVAL);

    snprintf(p[0], 200, "%s/jobs", data);
    ck_assert_int_eq(mkdir(p[0], 0700), 0);
    snprintf(p[0], 200, "%s/jobs/7", data);
    ck_assert_int_eq(mkdir(p[0], 0700), 0);
    snprintf(p[0], 200, "%s/jobs/7/work", data);
    snprintf(p[1], 200, "%s/jobs/7/output", data);
    ck_assert_int_eq(mkdir(p[0], 0700), 0);
    ck_assert_int_eq(mkdir(p[1], 0700), 0);
    two[0] = p[0];
    two[1] = p[1];
    /* not probed yet: no mechanism, refused (fail closed) */
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, two, 2, JOB(7), 32 << 20), ED_EUNPROC);
    /* limits outside 1 MiB..1 PiB */
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, two, 2, JOB(7), 0), ED_EINVAL);
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, two, 2, JOB(7), 1000), ED_EINVAL);
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, two, 2, JOB(7), INT64_C(1) << 51), ED_EINVAL);
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, two, 2, JOB(7), -5), ED_EINVAL);
    /* ids and names the launcher does not accept */
    snprintf(p[2], 200, "%s/jobs/../jobs/7/work", data);
    snprintf(p[3], 200, "%s/jobs/abc/work", data);
    snprintf(p[4], 200, "%s/jobs/07/work", data);
    snprintf(p[5], 200, "%s/jobs/7/etc", data);
    snprintf(p[6], 200, "%s/jobs/1234567890123456789/work", data);
    snprintf(p[7], 200, "/etc/jobs/7/work");
    snprintf(p[8], 200, "%s/jobs/7/work/", data);
    snprintf(p[9], 200, "%s/launcher/images", data);
    for (int i = 2; i <= 9; i++) {
        one[0] = p[i];
        ck_assert_msg(disk_req(SBX_OP_DISK_INIT, one, 1, JOB(7), 32 << 20) == ED_EPERM, "%s", p[i]);
        ck_assert_msg(path_req(SBX_OP_DISK_CLEAR, p[i]) == ED_EPERM, "%s", p[i]);
        ck_assert_msg(path_req(SBX_OP_DISK_FREEZE, p[i]) == ED_EPERM, "%s", p[i]);
    }
    /* another job's project id */
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, two, 2, JOB(8), 32 << 20), ED_EPERM);
    ck_assert_int_eq(disk_req(SBX_OP_DISK_REMOVE, two, 2, JOB(8), 0), ED_EPERM);
    ck_assert_int_eq(disk_req(SBX_OP_DISK_REMOVE, NULL, 0, 5, 0), ED_EPERM);
    sbx__wire_begin(&b, SBX_OP_DISK_EXISTS, 4);
    sbx__wire_u32(&b, 0);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EPERM);
    sbx__wire_begin(&b, SBX_OP_DISK_USAGE, 5);
    sbx__wire_str(&b, "/etc");
    sbx__wire_u32(&b, JOB(7));
    ck_assert_int_eq(raw_buf(&b, NULL, 0), ED_EPERM);

    /* links: jobs/9 a link to a directory outside, jobs/10/work a link */
    snprintf(p[10], 200, "%s/work", outside);
    mkdir(p[10], 0700);
    snprintf(file, sizeof(file), "%s/keep.txt", p[10]);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(p[11], 200, "%s/jobs/9", data);
    ck_assert_int_eq(symlink(outside, p[11]), 0);
    snprintf(p[11], 200, "%s/jobs/9/work", data);
    one[0] = p[11];
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, one, 1, JOB(9), 32 << 20), ED_EPERM);
    ck_assert_int_eq(path_req(SBX_OP_DISK_CLEAR, p[11]), ED_EPERM);
    ck_assert_int_eq(path_req(SBX_OP_DISK_FREEZE, p[11]), ED_EPERM);
    snprintf(p[11], 200, "%s/jobs/10", data);
    ck_assert_int_eq(mkdir(p[11], 0700), 0);
    snprintf(p[11], 200, "%s/jobs/10/work", data);
    ck_assert_int_eq(symlink(p[10], p[11]), 0);
    one[0] = p[11];
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, one, 1, JOB(10), 32 << 20), ED_EPERM);
    ck_assert_int_eq(path_req(SBX_OP_DISK_FREEZE, p[11]), ED_EIO);      /* not followed */
    ck_assert_int_eq(path_req(SBX_OP_DISK_CLEAR, p[11]), 0);            /* the link goes, not what it names */
    ck_assert_int_eq(lstat(p[11], &sb), -1);
    ck_assert_int_eq(lstat(file, &sb), 0);
    ck_assert_int_eq(mounted_at(outside), 0);
    unlink(file);
    rmdir(p[10]);
    rmdir(outside);
    /* the store is root's, 0700, out of the server's reach */
    snprintf(p[9], 200, "%s/launcher", data);
    ck_assert_int_eq(lstat(p[9], &sb), 0);
    ck_assert_uint_eq(sb.st_uid, 0);
    ck_assert_uint_eq(sb.st_mode & 0777, 0700);
    snprintf(p[9], 200, "%s/launcher/x", data);
    ck_assert_int_eq(mkdir(p[9], 0700), -1);
    ck_assert_int_eq(errno, EACCES);
    /* still serving */
    sbx__wire_begin(&b, SBX_OP_SLOT_CLAIM, 10);
    ck_assert_int_eq(raw_buf(&b, NULL, 0), 0);
    ck_assert_int_eq(stop(), 0);
}
END_TEST

/* Run where loop images work (main checks): a job's tree made, used,
 * measured, frozen, cleared and removed, all through the launcher, as the
 * unprivileged server. */
START_TEST(job_trees_are_made_and_dropped_through_the_launcher)
{
    char jobs[160], work[200], output[200], path[240];
    const char *dirs[2] = {work, output};
    sbx_disk d;
    struct stat sb, parent;
    int64_t used = 0, inodes = 0;
    int fd, wrote, e;

    start();
    use_launcher();
    probe_images(&d);
    ck_assert_msg(strstr(d.detail, "/proc/self") == NULL && strstr(d.detail, "/launcher/images"), "%s", d.detail);
    snprintf(jobs, sizeof(jobs), "%s/jobs", data);
    ck_assert_int_eq(mkdir(jobs, 0700), 0);
    snprintf(jobs, sizeof(jobs), "%s/jobs/7", data);
    ck_assert_int_eq(mkdir(jobs, 0700), 0);
    snprintf(work, sizeof(work), "%s/work", jobs);
    snprintf(output, sizeof(output), "%s/output", jobs);
    ck_assert_msg(sbx_disk_tree_init(&d, dirs, 2, JOB(7), 8 << 20) == 0, "%s", ed_error_last());
    ck_assert_int_eq(sbx_disk_tree_init(&d, dirs, 2, JOB(7), 8 << 20), 0);   /* again: attached already */
    tree_is_made(&parent, &d, work, jobs, JOB(7));
    /* a write past the limit fails */
    snprintf(path, sizeof(path), "%s/big", work);
    wrote = fill(path, &e);
    ck_assert_msg(e == EDQUOT || e == ENOSPC, "wrote %d MiB past an 8 MiB limit (%s)", wrote, strerror(e));
    ck_assert_int_le(wrote, 8);
    ck_assert_int_eq(sbx_disk_tree_usage(&d, output, JOB(7), &used, &inodes), 0);
    ck_assert_int_ge(used, (int64_t)wrote << 20);
    ck_assert_int_eq(unlink(path), 0);
    snprintf(path, sizeof(path), "%s/result.txt", output);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_eq(write(fd, "kept", 4), 4);
    close(fd);
    /* frozen: a plain directory with the same content, no mount */
    ck_assert_msg(sbx_disk_path_freeze(output) == 0, "%s", ed_error_last());
    ck_assert_int_eq(stat(output, &sb), 0);
    ck_assert_uint_eq(sb.st_dev, parent.st_dev);
    ck_assert_uint_eq(sb.st_uid, SERVER_UID);
    file_is(output, "result.txt", "kept");
    ck_assert_int_eq(sbx_disk_path_freeze(output), 0);    /* again: nothing to do */
    ck_assert_int_eq(sbx_disk_path_clear(work), 0);
    ck_assert_int_eq(lstat(work, &sb), -1);
    ck_assert_int_eq(sbx_disk_tree_remove(&d, NULL, 0, JOB(7)), 0);
    ck_assert_int_eq(sbx_disk_tree_exists(&d, JOB(7)), 0);
    ck_assert_int_eq(mounted_at(jobs), 0);
    /* a second tree, left attached, goes with detach */
    snprintf(jobs, sizeof(jobs), "%s/jobs/8", data);
    ck_assert_int_eq(mkdir(jobs, 0700), 0);
    snprintf(work, sizeof(work), "%s/work", jobs);
    snprintf(output, sizeof(output), "%s/output", jobs);
    ck_assert_int_eq(sbx_disk_tree_init(&d, dirs, 2, JOB(8), 4 << 20), 0);
    ck_assert_int_eq(mounted_at(jobs), 1);
    ck_assert_int_eq(sbx_disk_detach(data), 0);
    ck_assert_int_eq(mounted_at(jobs), 0);
    ck_assert_int_eq(sbx_disk_tree_remove(&d, dirs, 2, JOB(8)), 0);
    ck_assert_int_eq(sbx_disk_tree_exists(&d, JOB(8)), 0);
    ck_assert_int_eq(stop(), 0);
}
END_TEST

#define WS(id) (SBX_DISK_PROJID_PROJECTS + (id))

/* A project's workspace tree (projects/workspace.c) through the launcher:
 * only DATA/projects/<id> with a workspace project id, one directory, never
 * frozen; made, filled to its limit, measured, its limit lowered, removed. */
START_TEST(workspace_trees_are_checked_made_and_dropped_through_the_launcher)
{
    char projects[160], ws[200], p[8][200];
    const char *one[1] = {ws}, *two[2];
    int64_t used = 0, inodes = 0;
    struct stat sb, parent;
    int wrote, e;
    sbx_disk d;

    start();
    snprintf(projects, sizeof(projects), "%s/projects", data);
    ck_assert_int_eq(mkdir(projects, 0700), 0);
    snprintf(ws, sizeof(ws), "%s/pAbCdEfGh1234", projects);
    ck_assert_int_eq(mkdir(ws, 0700), 0);
    /* names and ids the launcher does not accept */
    snprintf(p[0], 200, "%s/xAbCdEfGh1234", projects);
    snprintf(p[1], 200, "%s/pShort", projects);
    snprintf(p[2], 200, "%s/pAbCdEfGh1234/sub", projects);
    snprintf(p[3], 200, "%s/pAbCdEfGh12-4", projects);
    snprintf(p[4], 200, "%s/../projects/pAbCdEfGh1234", projects);
    snprintf(p[5], 200, "%s/projects", data);
    for (int i = 0; i <= 5; i++) {
        const char *bad[1] = {p[i]};
        ck_assert_msg(disk_req(SBX_OP_DISK_INIT, bad, 1, WS(3), 8 << 20) == ED_EPERM, "%s", p[i]);
    }
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, one, 1, JOB(7), 8 << 20), ED_EPERM);      /* a job's id */
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, one, 1, 5, 8 << 20), ED_EPERM);           /* the host's */
    ck_assert_int_eq(disk_req(SBX_OP_DISK_REMOVE, one, 1, 5, 0), ED_EPERM);
    snprintf(p[6], 200, "%s/pAbCdEfGh5678", projects);
    ck_assert_int_eq(mkdir(p[6], 0700), 0);
    two[0] = ws;
    two[1] = p[6];
    ck_assert_int_eq(disk_req(SBX_OP_DISK_INIT, two, 2, WS(3), 8 << 20), ED_EINVAL);     /* one directory */
    ck_assert_int_eq(path_req(SBX_OP_DISK_FREEZE, ws), ED_EPERM);                        /* never frozen */
    use_launcher();
    probe_images(&d);
    /* made and used as the unprivileged server */
    ck_assert_msg(sbx_disk_tree_init(&d, one, 1, WS(3), 8 << 20) == 0, "%s", ed_error_last());
    tree_is_made(&parent, &d, ws, projects, WS(3));
    snprintf(p[7], 200, "%.190s/big", ws);
    wrote = fill(p[7], &e);
    ck_assert_msg(e == EDQUOT || e == ENOSPC, "wrote %d MiB past an 8 MiB limit (%s)", wrote, strerror(e));
    ck_assert_int_le(wrote, 8);
    ck_assert_int_eq(sbx_disk_tree_usage(&d, ws, WS(3), &used, &inodes), 0);
    ck_assert_int_ge(used, (int64_t)wrote << 20);
    /* a lower limit on the attached tree (a tier change) */
    ck_assert_int_eq(unlink(p[7]), 0);
    ck_assert_int_eq(sbx_disk_tree_init(&d, one, 1, WS(3), 4 << 20), 0);
    wrote = fill(p[7], &e);
    ck_assert_msg(e == EDQUOT || e == ENOSPC, "wrote %d MiB past a 4 MiB limit (%s)", wrote, strerror(e));
    ck_assert_msg(wrote <= 4 && wrote >= 3, "wrote %d MiB under a 4 MiB limit", wrote);
    /* removed: directory, mount and image */
    ck_assert_int_eq(sbx_disk_tree_remove(&d, one, 1, WS(3)), 0);
    ck_assert_int_eq(lstat(ws, &sb), -1);
    ck_assert_int_eq(sbx_disk_tree_exists(&d, WS(3)), 0);
    ck_assert_int_eq(mounted_at(projects), 0);
    rmdir(p[6]);
    ck_assert_int_eq(stop(), 0);
}
END_TEST

int main(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "skipped: the launcher tests need root\n");
        return 77;
    }
    sbx_caps c;
    if (sbx_check(&c) < 0 || !c.launch) {
        fprintf(stderr, "skipped: this host cannot run sandboxes: %s\n", c.detail);
        return 77;
    }
    if (!c.cgroup_v1 && !c.cgroup_v2)
        setenv("EDDY_SBX_CGROUP", "none", 1);
    if (make_root() < 0) {
        perror("mkdtemp");
        return 1;
    }
    Suite *s = suite_create("launcher");
    TCase *t = tcase_create("launcher");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, malformed_requests_are_refused_and_the_launcher_carries_on);
    tcase_add_test(t, uid_zero_and_uids_not_handed_out_are_refused);
    tcase_add_test(t, binds_outside_the_roots_are_refused);
    tcase_add_test(t, job_runs_and_its_trees_come_back_to_the_server);
    tcase_add_test(t, idmapped_tree_stays_the_servers);
    tcase_add_test(t, signals_and_kill_go_through_the_launcher);
    tcase_add_test(t, closing_the_socket_kills_every_job_and_ends_the_launcher);
    tcase_add_test(t, a_dead_launcher_fails_every_call_loudly);
    tcase_add_test(t, disk_requests_with_bad_ids_links_or_sizes_are_refused);
    {
        /* loop images need loop devices and mkfs.ext4 (e2fsprogs) */
        sbx_disk d;
        if (sbx_disk_probe(&d, root, -1, SBX_DISK_NO_PRJQUOTA | SBX_DISK_NO_VOLUME) == 0 &&
            d.mech == SBX_DISK_IMAGES)
        {
            tcase_add_test(t, job_trees_are_made_and_dropped_through_the_launcher);
            tcase_add_test(t, workspace_trees_are_checked_made_and_dropped_through_the_launcher);
        } else
            fprintf(stderr, "not run: job_trees_are_made_and_dropped_through_the_launcher (no loop images "
                            "here: %s)\n", d.detail);
    }
    suite_add_tcase(s, t);
    int failed = unit_run(s);
    remove_root();
    return failed;
}
