/*
 * sbx_cgroup.c - per-job cgroups: v2 first, the v1 memory, pids, cpu,
 * cpuacct and devices controllers otherwise.
 *
 * v2: jobs go under $EDDY_SBX_CGROUP (a delegated directory) or
 * <v2 mount>/eddy-sandbox, with memory, pids and cpu enabled in its
 * subtree_control. v1: jobs go under <controller mount><our own cgroup>/
 * eddy-sandbox/, so whatever limits our own process lives under still apply.
 */
#include "sbx_int.h"
#include "ed_error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* out = a + b (+ c), truncated to cap; memcpy keeps -Wformat-truncation quiet. */
static void join3(char *out, size_t cap, const char *a, const char *b, const char *c)
{
    size_t at = 0;
    const char *parts[] = {a, b, c};
    for (size_t i = 0; i < 3; i++)
        for (const char *s = parts[i]; s && *s && at + 1 < cap; s++)
            out[at++] = *s;
    out[at] = '\0';
}

static int write_file(const char *dir, const char *file, const char *val)
{
    char path[640];
    int fd, saved;
    size_t len = strlen(val);

    join3(path, sizeof(path), dir, "/", file);
    if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
        return -errno;
    if (write(fd, val, len) != (ssize_t)len) {
        saved = errno ? errno : EIO;
        close(fd);
        return -saved;
    }
    close(fd);
    return 0;
}

static int read_file(const char *dir, const char *file, char *buf, size_t cap)
{
    char path[640];
    int fd;
    ssize_t n;

    buf[0] = '\0';
    join3(path, sizeof(path), dir, "/", file);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -EIO;
    buf[n] = '\0';
    return 0;
}

static int exists(const char *dir, const char *file)
{
    char path[640];
    join3(path, sizeof(path), dir, "/", file);
    return access(path, F_OK) == 0;
}

/* "key value" line in a flat-keyed file; -1 when absent. */
static int64_t keyed(const char *dir, const char *file, const char *key)
{
    char buf[4096], *p;
    size_t kl = strlen(key);

    if (read_file(dir, file, buf, sizeof(buf)) < 0)
        return -1;
    for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
            return strtoll(p + kl + 1, NULL, 10);
    return -1;
}

/* The v2 mount point, or "" (from /proc/self/mountinfo). */
static void v2_mount_scan(char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[1024];

    out[0] = '\0';
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        char mnt[512], fstype[64];
        char *sep = strstr(line, " - ");
        if (!sep || sscanf(sep + 3, "%63s", fstype) != 1 || strcmp(fstype, "cgroup2") != 0)
            continue;
        if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1) {
            join3(out, cap, mnt, NULL, NULL);
            break;
        }
    }
    fclose(f);
}

/* The v1 mount point of `ctrl` and our own path in it, joined, or "". */
static void v1_dir_scan(const char *ctrl, char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[1024], mnt[512] = "", own[512] = "";
    size_t cl = strlen(ctrl);

    out[0] = '\0';
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        char fstype[64], super[256];
        char *sep = strstr(line, " - ");
        if (!sep || sscanf(sep + 3, "%63s %*s %255s", fstype, super) != 2 ||
            strcmp(fstype, "cgroup") != 0)
            continue;
        /* super options: rw,memory or rw,cpu,cpuacct */
        for (char *tok = strtok(super, ","); tok; tok = strtok(NULL, ","))
            if (strcmp(tok, ctrl) == 0 && sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1)
                break;
        if (mnt[0])
            break;
    }
    fclose(f);
    if (!mnt[0])
        return;
    if ((f = fopen("/proc/self/cgroup", "re")) == NULL)
        return;
    while (fgets(line, sizeof(line), f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        for (char *tok = strtok(c1 + 1, ","); tok; tok = strtok(NULL, ","))
            if (strlen(tok) == cl && strcmp(tok, ctrl) == 0) {
                join3(own, sizeof(own), c2 + 1, NULL, NULL);
                own[strcspn(own, "\n")] = '\0';
            }
    }
    fclose(f);
    if (strcmp(own, "/") == 0)
        own[0] = '\0';
    join3(out, cap, mnt, own, NULL);
}

/* EDDY_SBX_CGROUP=none: the operator says no hierarchy may be used. */
static int cgroups_off(void)
{
    const char *env = getenv("EDDY_SBX_CGROUP");
    return env && strcmp(env, "none") == 0;
}

static void v2_parent(const char *mnt, char *out, size_t cap)
{
    const char *env = getenv("EDDY_SBX_CGROUP");
    if (env && env[0] == '/')
        join3(out, cap, env, NULL, NULL);
    else
        join3(out, cap, mnt, "/eddy-sandbox", NULL);
}

/* Where the hierarchies are and where our process sits in them, read once
 * per process: /proc/self/mountinfo is long and launches are frequent. */
static pthread_mutex_t where_lock = PTHREAD_MUTEX_INITIALIZER;
static int where_done;
static char where_v2[512];
static const char *const where_ctrls[] = {"memory", "pids", "cpu", "cpuacct", "devices"};
static char where_v1[5][512];

/* Job cgroups whose launcher died without sbx_job_free() (a crash, a kill)
 * stay behind; their names carry the launcher's pid. Remove the empty ones
 * whose launcher is gone. */
static void sweep(const char *top)
{
    DIR *d = opendir(top);
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        char dir[1024], procs[16];
        unsigned uid, n;
        int pid;
        if (sscanf(e->d_name, "job-%u-%d-%u", &uid, &pid, &n) != 3 || pid <= 0 || pid == getpid())
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        join3(dir, sizeof(dir), top, "/", e->d_name);
        if (read_file(dir, "cgroup.procs", procs, sizeof(procs)) == 0 && procs[0] == '\0')
            rmdir(dir);
    }
    closedir(d);
}

static void where_load(void)
{
    char top[600];

    pthread_mutex_lock(&where_lock);
    if (!where_done) {
        v2_mount_scan(where_v2, sizeof(where_v2));
        for (size_t i = 0; i < 5; i++)
            v1_dir_scan(where_ctrls[i], where_v1[i], sizeof(where_v1[i]));
        where_done = 1;
        for (size_t i = 0; i < 5; i++)
            if (where_v1[i][0]) {
                join3(top, sizeof(top), where_v1[i], "/eddy-sandbox", NULL);
                sweep(top);
            }
        if (where_v2[0]) {
            v2_parent(where_v2, top, sizeof(top));
            sweep(top);
        }
    }
    pthread_mutex_unlock(&where_lock);
}

static void v2_mount(char *out, size_t cap)
{
    where_load();
    join3(out, cap, where_v2, NULL, NULL);
}

static void v1_dir(const char *ctrl, char *out, size_t cap)
{
    where_load();
    out[0] = '\0';
    for (size_t i = 0; i < 5; i++)
        if (strcmp(ctrl, where_ctrls[i]) == 0)
            join3(out, cap, where_v1[i], NULL, NULL);
}

static int mkdir_ok(const char *path)
{
    return mkdir(path, 0755) == 0 || errno == EEXIST;
}

static int has_words(const char *buf, const char *const *words)
{
    for (; *words; words++) {
        const char *p = buf;
        size_t wl = strlen(*words);
        int found = 0;
        while ((p = strstr(p, *words)) != NULL) {
            if ((p == buf || p[-1] == ' ') && (p[wl] == ' ' || p[wl] == '\n' || p[wl] == '\0')) {
                found = 1;
                break;
            }
            p += wl;
        }
        if (!found)
            return 0;
    }
    return 1;
}

static const char *const v2_ctrls[] = {"memory", "pids", "cpu", NULL};

/* Make `dir` (a v2 cgroup) hand memory, pids and cpu to its children. */
static int v2_prepare(const char *mnt, const char *parent)
{
    char buf[512], up[512];

    if (read_file(mnt, "cgroup.controllers", buf, sizeof(buf)) < 0 || !has_words(buf, v2_ctrls))
        return -1;
    join3(up, sizeof(up), parent, NULL, NULL);
    char *slash = strrchr(up, '/');
    if (slash && slash != up)
        *slash = '\0';
    if (read_file(up, "cgroup.subtree_control", buf, sizeof(buf)) == 0 && !has_words(buf, v2_ctrls))
        write_file(up, "cgroup.subtree_control", "+memory +pids +cpu");
    if (!mkdir_ok(parent))
        return -1;
    if (read_file(parent, "cgroup.subtree_control", buf, sizeof(buf)) < 0)
        return -1;
    if (!has_words(buf, v2_ctrls) && write_file(parent, "cgroup.subtree_control", "+memory +pids +cpu") < 0)
        return -1;
    return 0;
}

void sbx__cgroup_probe(sbx_caps *caps)
{
    char mnt[512], parent[512], d[512];

    caps->cgroup_v2 = caps->cgroup_v1 = caps->cgroup_v1_devices = 0;
    caps->v2_root[0] = '\0';
    if (cgroups_off())
        return;
    v2_mount(mnt, sizeof(mnt));
    if (mnt[0]) {
        v2_parent(mnt, parent, sizeof(parent));
        if (v2_prepare(mnt, parent) == 0 && access(parent, W_OK) == 0) {
            caps->cgroup_v2 = 1;
            join3(caps->v2_root, sizeof(caps->v2_root), parent, NULL, NULL);
        }
    }
    int ok = 1;
    static const char *const need[] = {"memory", "pids", "cpu"};
    for (size_t i = 0; i < 3; i++) {
        v1_dir(need[i], d, sizeof(d));
        if (!d[0] || access(d, W_OK) != 0)
            ok = 0;
    }
    caps->cgroup_v1 = ok;
    v1_dir("devices", d, sizeof(d));
    caps->cgroup_v1_devices = d[0] && access(d, W_OK) == 0;
}

static int make_v1(char *out, size_t cap, const char *ctrl, const char *name, int required)
{
    char base[512], top[600];

    out[0] = '\0';
    v1_dir(ctrl, base, sizeof(base));
    if (!base[0])
        return required ? -1 : 0;
    join3(top, sizeof(top), base, "/eddy-sandbox", NULL);
    if (!mkdir_ok(top))
        return required ? -1 : 0;
    join3(out, cap, top, "/", name);
    if (mkdir(out, 0755) < 0) {
        /* cpu and cpuacct are often one hierarchy: the same directory. */
        if (errno == EEXIST && strcmp(ctrl, "cpuacct") == 0)
            return 0;
        out[0] = '\0';
        return required ? -1 : 0;
    }
    return 0;
}

/* The character devices every sandbox may open: null, zero, full, random,
 * urandom, tty, ptmx (its own devpts instance: sbx_child.c), and the ptys
 * (majors PTY_MAJ_LO..PTY_MAJ_HI, any minor; a job sees only its own in
 * /dev/pts). GPU nodes are added per job. */
static const unsigned base_devs[][2] = {{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 2}};
#define PTY_MAJ_LO 136   /* UNIX98_PTY_SLAVE_MAJOR */
#define PTY_MAJ_HI 143   /* + UNIX98_PTY_MAJOR_COUNT - 1 */
#define N_BASE_DEVS (sizeof(base_devs) / sizeof(base_devs[0]))

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    struct bpf_insn i;
    memset(&i, 0, sizeof(i));
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}

int sbx__cgroup_v2_devices(const char *dir, const dev_t *extra, size_t n_extra)
{
    /* A BPF_PROG_TYPE_CGROUP_DEVICE program: ctx is
     * {u32 access_type (access << 16 | type), u32 major, u32 minor};
     * return 1 to allow. It allows the listed character devices, nothing else. */
    struct bpf_insn prog[4 + (N_BASE_DEVS + SBX_MAX_GPUS + 2) * 5 + 5 + 2];
    size_t n = 0, total = N_BASE_DEVS + n_extra;
    union bpf_attr attr;
    char log[1024] = "";
    int pfd, cfd, err = 0;

    if (n_extra > SBX_MAX_GPUS + 2)
        return ed_error_set(ED_EINVAL, "sandbox: too many devices");
    prog[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0);
    prog[n++] = insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
    prog[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, 4, 0);
    prog[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 8, 0);
    for (size_t i = 0; i < total; i++) {
        unsigned maj = i < N_BASE_DEVS ? base_devs[i][0] : major(extra[i - N_BASE_DEVS]);
        unsigned min = i < N_BASE_DEVS ? base_devs[i][1] : minor(extra[i - N_BASE_DEVS]);
        prog[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 4, BPF_DEVCG_DEV_CHAR);
        prog[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, 3, (int32_t)maj);
        prog[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 2, (int32_t)min);
        prog[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
        prog[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    }
    /* a pty slave: any minor of the pty majors */
    prog[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 4, BPF_DEVCG_DEV_CHAR);
    prog[n++] = insn(BPF_JMP | BPF_JLT | BPF_K, BPF_REG_3, 0, 3, PTY_MAJ_LO);
    prog[n++] = insn(BPF_JMP | BPF_JGT | BPF_K, BPF_REG_3, 0, 2, PTY_MAJ_HI);
    prog[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
    prog[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    prog[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
    prog[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

    memset(&attr, 0, sizeof(attr));
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = (uint64_t)(uintptr_t)prog;
    attr.insn_cnt = (uint32_t)n;
    attr.license = (uint64_t)(uintptr_t)"GPL";
    if ((pfd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr))) < 0) {
        /* Again with the verifier's log, for the message. */
        attr.log_buf = (uint64_t)(uintptr_t)log;
        attr.log_size = sizeof(log);
        attr.log_level = 1;
        int e = errno;
        syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
        log[sizeof(log) - 1] = '\0';
        errno = e;
        return ed_error_set(ED_EIO, "sandbox step 'cgroup devices': load device filter: %s %s",
                            strerror(errno), log);
    }
    if ((cfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        err = ed_error_set(ED_EIO, "sandbox step 'cgroup devices': %s: %s", dir, strerror(errno));
        goto done;
    }
    memset(&attr, 0, sizeof(attr));
    attr.target_fd = (uint32_t)cfd;
    attr.attach_bpf_fd = (uint32_t)pfd;
    attr.attach_type = BPF_CGROUP_DEVICE;
    attr.attach_flags = BPF_F_ALLOW_MULTI;
    /* The cgroup holds the program once attached; our descriptors can go. */
    if (syscall(SYS_bpf, BPF_PROG_ATTACH, &attr, sizeof(attr)) < 0)
        err = ed_error_set(ED_EIO, "sandbox step 'cgroup devices': attach device filter: %s",
                           strerror(errno));
    close(cfd);
done:
    close(pfd);
    return err;
}

static int limit_err(const char *what, int rc)
{
    return ed_error_set(ED_EIO, "sandbox step 'cgroup %s': %s", what, strerror(-rc));
}

/* write_file() of one limit; ED_EIO naming the file when it fails. */
static int write_limit(const char *dir, const char *file, const char *val)
{
    int rc = write_file(dir, file, val);
    return rc < 0 ? limit_err(file, rc) : 0;
}

int sbx__cgroup_create(sbx_cgroup *cg, const char *name, const sbx_spec *spec,
                       const dev_t *gpu_devs, size_t n_gpu_devs)
{
    char mnt[512], parent[512], val[64];
    int rc, err;

    memset(cg, 0, sizeof(*cg));
    if (cgroups_off())
        goto degraded;
    v2_mount(mnt, sizeof(mnt));
    if (mnt[0]) {
        v2_parent(mnt, parent, sizeof(parent));
        if (v2_prepare(mnt, parent) == 0) {
            join3(cg->v2, sizeof(cg->v2), parent, "/", name);
            if (mkdir(cg->v2, 0755) < 0) {
                cg->v2[0] = '\0';
                return ed_error_set(ED_EIO, "sandbox step 'cgroup create': %s: %s",
                                    cg->v2, strerror(errno));
            }
            cg->version = 2;
            if ((err = sbx__cgroup_v2_devices(cg->v2, gpu_devs, n_gpu_devs)) < 0)
                goto fail;
            if (spec->mem_bytes > 0) {
                snprintf(val, sizeof(val), "%lld", (long long)spec->mem_bytes);
                if ((err = write_limit(cg->v2, "memory.max", val)) < 0)
                    goto fail;
                if (exists(cg->v2, "memory.swap.max") &&
                    (err = write_limit(cg->v2, "memory.swap.max", "0")) < 0)
                    goto fail;
            }
            if (spec->pids > 0) {
                snprintf(val, sizeof(val), "%d", spec->pids);
                if ((err = write_limit(cg->v2, "pids.max", val)) < 0)
                    goto fail;
            }
            if (spec->cpu_millis > 0) {
                snprintf(val, sizeof(val), "%lld 100000", (long long)spec->cpu_millis * 100);
                if ((err = write_limit(cg->v2, "cpu.max", val)) < 0)
                    goto fail;
            }
            return 0;
        }
    }

    /* v1 */
    if (make_v1(cg->mem, sizeof(cg->mem), "memory", name, 1) < 0 ||
        make_v1(cg->pids, sizeof(cg->pids), "pids", name, 1) < 0 ||
        make_v1(cg->cpu, sizeof(cg->cpu), "cpu", name, 1) < 0) {
        sbx__cgroup_destroy(cg);
degraded:
        memset(cg, 0, sizeof(*cg));
        if (spec->allow_degraded)
            return 0;   /* version 0: rlimits only */
        return ed_error_set(ED_EPERM, "sandbox step 'cgroup create': no writable cgroup v2 "
                            "hierarchy with memory, pids and cpu, nor v1 controllers "
                            "(degraded mode without cgroup limits is not allowed)");
    }
    make_v1(cg->acct, sizeof(cg->acct), "cpuacct", name, 0);
    make_v1(cg->dev, sizeof(cg->dev), "devices", name, 0);
    cg->version = 1;
    if (spec->mem_bytes > 0) {
        snprintf(val, sizeof(val), "%lld", (long long)spec->mem_bytes);
        if ((err = write_limit(cg->mem, "memory.limit_in_bytes", val)) < 0)
            goto fail;
        /* memsw exists only with swap accounting; without it there is no swap to limit. */
        if (exists(cg->mem, "memory.memsw.limit_in_bytes") &&
            (err = write_limit(cg->mem, "memory.memsw.limit_in_bytes", val)) < 0)
            goto fail;
        write_file(cg->mem, "memory.swappiness", "0");
    }
    if (spec->pids > 0) {
        snprintf(val, sizeof(val), "%d", spec->pids);
        if ((err = write_limit(cg->pids, "pids.max", val)) < 0)
            goto fail;
    }
    if (spec->cpu_millis > 0) {
        snprintf(val, sizeof(val), "%lld", (long long)spec->cpu_millis * 100);
        if ((rc = write_file(cg->cpu, "cpu.cfs_period_us", "100000")) < 0 ||
            (rc = write_file(cg->cpu, "cpu.cfs_quota_us", val)) < 0) {
            err = limit_err("cpu.cfs_quota_us", rc);
            goto fail;
        }
    }
    if (cg->dev[0]) {
        if ((err = write_limit(cg->dev, "devices.deny", "a")) < 0)
            goto fail;
        for (size_t i = 0; i < N_BASE_DEVS; i++) {
            snprintf(val, sizeof(val), "c %u:%u rwm", base_devs[i][0], base_devs[i][1]);
            if ((err = write_limit(cg->dev, "devices.allow", val)) < 0)
                goto fail;
        }
        for (unsigned maj = PTY_MAJ_LO; maj <= PTY_MAJ_HI; maj++) {
            snprintf(val, sizeof(val), "c %u:* rwm", maj);
            if ((err = write_limit(cg->dev, "devices.allow", val)) < 0)
                goto fail;
        }
        for (size_t i = 0; i < n_gpu_devs; i++) {
            snprintf(val, sizeof(val), "c %u:%u rwm", major(gpu_devs[i]), minor(gpu_devs[i]));
            if ((err = write_limit(cg->dev, "devices.allow", val)) < 0)
                goto fail;
        }
    } else if (n_gpu_devs) {
        err = ed_error_set(ED_EPERM, "sandbox step 'cgroup devices': no devices controller "
                           "to confine GPU nodes");
        goto fail;
    }
    return 0;
fail:
    sbx__cgroup_destroy(cg);
    return err;
}

int sbx__cgroup_attach(const sbx_cgroup *cg, pid_t pid)
{
    char val[32];
    const char *dirs[] = {cg->v2, cg->mem, cg->pids, cg->cpu, cg->acct, cg->dev};
    int rc;

    snprintf(val, sizeof(val), "%d", (int)pid);
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        if (!dirs[i][0])
            continue;
        if (i == 4 && strcmp(cg->acct, cg->cpu) == 0)
            continue;
        if ((rc = write_file(dirs[i], "cgroup.procs", val)) < 0)
            return ed_error_set(ED_EIO, "sandbox step 'cgroup attach': %s: %s", dirs[i],
                                strerror(-rc));
    }
    return 0;
}

/* Kill what cgroup.procs lists; 1 if it listed anything. */
static int kill_listed(const char *dir)
{
    char buf[8192];
    int any = 0;

    if (!dir[0] || read_file(dir, "cgroup.procs", buf, sizeof(buf)) < 0)
        return 0;
    for (char *p = buf; *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 0) {
            kill((pid_t)pid, SIGKILL);
            any = 1;
        }
        p = end;
        while (*p == '\n')
            p++;
    }
    return any;
}

void sbx__cgroup_kill(const sbx_cgroup *cg)
{
    struct timespec ts = {0, 5 * 1000 * 1000};

    if (cg->version == 2 && exists(cg->v2, "cgroup.kill"))
        write_file(cg->v2, "cgroup.kill", "1");
    for (int i = 0; i < 400; i++) {
        int any = 0;
        if (cg->version == 2)
            any = kill_listed(cg->v2);
        else if (cg->version == 1)
            any = kill_listed(cg->pids) | kill_listed(cg->mem);
        if (!any)
            return;
        nanosleep(&ts, NULL);
    }
}

void sbx__cgroup_usage(const sbx_cgroup *cg, int64_t *cpu_ms, int64_t *peak,
                       int *oom_kills, int *pids_hit)
{
    char buf[128];
    int64_t v;

    *cpu_ms = -1;
    *peak = -1;
    *oom_kills = 0;
    *pids_hit = 0;
    if (cg->version == 2) {
        if ((v = keyed(cg->v2, "cpu.stat", "usage_usec")) >= 0)
            *cpu_ms = v / 1000;
        if (read_file(cg->v2, "memory.peak", buf, sizeof(buf)) == 0 && buf[0])
            *peak = strtoll(buf, NULL, 10);
        if ((v = keyed(cg->v2, "memory.events", "oom_kill")) > 0)
            *oom_kills = (int)v;
        if ((v = keyed(cg->v2, "pids.events", "max")) > 0)
            *pids_hit = 1;
    } else if (cg->version == 1) {
        const char *acct = cg->acct[0] ? cg->acct : cg->cpu;
        if (read_file(acct, "cpuacct.usage", buf, sizeof(buf)) == 0 && buf[0])
            *cpu_ms = strtoll(buf, NULL, 10) / 1000000;
        if (read_file(cg->mem, "memory.max_usage_in_bytes", buf, sizeof(buf)) == 0 && buf[0])
            *peak = strtoll(buf, NULL, 10);
        if ((v = keyed(cg->mem, "memory.oom_control", "oom_kill")) > 0)
            *oom_kills = (int)v;
        if ((v = keyed(cg->pids, "pids.events", "max")) > 0)
            *pids_hit = 1;
    }
}

static void remove_dir(char *dir)
{
    struct timespec ts = {0, 10 * 1000 * 1000};

    if (!dir[0])
        return;
    for (int i = 0; i < 200 && rmdir(dir) < 0 && errno == EBUSY; i++)
        nanosleep(&ts, NULL);
    dir[0] = '\0';
}

void sbx__cgroup_destroy(sbx_cgroup *cg)
{
    if (strcmp(cg->acct, cg->cpu) == 0)
        cg->acct[0] = '\0';
    remove_dir(cg->v2);
    remove_dir(cg->mem);
    remove_dir(cg->pids);
    remove_dir(cg->cpu);
    remove_dir(cg->acct);
    remove_dir(cg->dev);
    cg->version = 0;
}

/* ---- live usage (sbx_cgroup_live): the serving process reads a running
 * job's cgroup files itself (they are world-readable) ---- */

/* A non-negative decimal that fills `text` but for trailing white space;
 * -1 when it is not one. */
static int64_t parse_count(const char *text)
{
    char *end;
    long long v;

    if (!text || *text < '0' || *text > '9')
        return -1;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno || v < 0)
        return -1;
    while (*end == ' ' || *end == '\n' || *end == '\t')
        end++;
    return *end ? -1 : v;
}

/* The value of the line "key N" of a flat-keyed file's text; -1 when absent
 * or not a count. */
static int64_t parse_keyed(const char *text, const char *key)
{
    size_t kl = strlen(key);

    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, kl) != 0 || p[kl] != ' ')
            continue;
        char num[32];
        size_t n = strcspn(p + kl + 1, "\n");
        if (n == 0 || n >= sizeof(num))
            return -1;
        memcpy(num, p + kl + 1, n);
        num[n] = '\0';
        return parse_count(num);
    }
    return -1;
}

/* v1 writes "no limit" as the largest page-aligned count (2^63 - 4096 on
 * x86_64); v2 as "max". Anything from 2^62 on is no limit. */
#define LIVE_NO_LIMIT (1LL << 62)

int sbx_cgroup_parse(sbx_live *out, const char *file, const char *text)
{
    int64_t v;

    if (!out || !file || !text)
        return ed_error_set(ED_EINVAL, "cgroup parse: missing argument");
    if (strcmp(file, "cpu.stat") == 0) {
        if ((v = parse_keyed(text, "usage_usec")) < 0)
            return ed_error_set(ED_EINVAL, "cpu.stat without usage_usec");
        out->cpu_usec = v;
    } else if (strcmp(file, "cpuacct.usage") == 0) {
        if ((v = parse_count(text)) < 0)
            return ed_error_set(ED_EINVAL, "cpuacct.usage is not a count");
        out->cpu_usec = v / 1000;
    } else if (strcmp(file, "memory.current") == 0 || strcmp(file, "memory.usage_in_bytes") == 0) {
        if ((v = parse_count(text)) < 0)
            return ed_error_set(ED_EINVAL, "%s is not a count", file);
        out->mem_bytes = v;
    } else if (strcmp(file, "memory.peak") == 0 || strcmp(file, "memory.max_usage_in_bytes") == 0) {
        if ((v = parse_count(text)) < 0)
            return ed_error_set(ED_EINVAL, "%s is not a count", file);
        out->mem_peak_bytes = v;
    } else if (strcmp(file, "memory.max") == 0 || strcmp(file, "memory.limit_in_bytes") == 0) {
        if (strncmp(text, "max", 3) == 0 && (text[3] == '\0' || text[3] == '\n')) {
            out->mem_limit_bytes = -1;
            return 0;
        }
        if ((v = parse_count(text)) < 0)
            return ed_error_set(ED_EINVAL, "%s is neither a count nor max", file);
        out->mem_limit_bytes = v >= LIVE_NO_LIMIT ? -1 : v;
    } else if (strcmp(file, "cpu.max") == 0) {
        /* "QUOTA PERIOD" in microseconds, or "max PERIOD" */
        char quota[32];
        const char *sp = strchr(text, ' ');
        size_t ql = sp ? (size_t)(sp - text) : 0;
        int64_t period = sp ? parse_count(sp + 1) : -1;
        if (ql == 0 || ql >= sizeof(quota) || period <= 0)
            return ed_error_set(ED_EINVAL, "cpu.max is not 'QUOTA PERIOD'");
        memcpy(quota, text, ql);
        quota[ql] = '\0';
        if (strcmp(quota, "max") == 0) {
            out->cpu_limit_millis = -1;
            return 0;
        }
        if ((v = parse_count(quota)) <= 0)
            return ed_error_set(ED_EINVAL, "cpu.max quota is neither a count nor max");
        v = v * 1000 / period;
        out->cpu_limit_millis = v > INT_MAX ? INT_MAX : (int)v;
    } else {
        return ed_error_set(ED_EINVAL, "cgroup parse: unknown file %.64s", file);
    }
    return 0;
}

/* Read `file` of `dir` and parse it into `out`; a file that is missing or
 * says something else leaves its field alone. */
static void live_file(sbx_live *out, const char *dir, const char *file)
{
    char buf[4096];

    if (read_file(dir, file, buf, sizeof(buf)) == 0)
        sbx_cgroup_parse(out, file, buf);
}

/* A v1 sibling of the job cgroup named `name` under controller `ctrl`:
 * <mount><our path>/eddy-sandbox/<name>, as make_v1 made it. */
static void v1_sibling(char *out, size_t cap, const char *ctrl, const char *name)
{
    char base[512], top[600];

    v1_dir(ctrl, base, sizeof(base));
    out[0] = '\0';
    if (!base[0])
        return;
    join3(top, sizeof(top), base, "/eddy-sandbox", NULL);
    join3(out, cap, top, "/", name);
}

int sbx_cgroup_live(sbx_live *out, const char *dir)
{
    char buf[64];

    out->cpu_usec = out->mem_bytes = out->mem_limit_bytes = out->mem_peak_bytes = -1;
    out->cpu_limit_millis = -1;
    if (dir == NULL || dir[0] == '\0')
        return ed_error_set(ED_ENOTFOUND, "the job has no cgroup (degraded sandbox)");
    if (dir[0] != '/')
        return ed_error_set(ED_EINVAL, "cgroup %.100s is not an absolute path", dir);
    if (exists(dir, "memory.current")) {
        /* v2: one directory */
        live_file(out, dir, "cpu.stat");
        live_file(out, dir, "memory.current");
        live_file(out, dir, "memory.max");
        live_file(out, dir, "memory.peak");
        live_file(out, dir, "cpu.max");
        return 0;
    }
    if (!exists(dir, "memory.usage_in_bytes"))
        return ed_error_set(ED_ENOTFOUND, "no cgroup at %.200s (the job ended)", dir);
    /* v1: `dir` is the memory controller's; CPU time is cpuacct's and the
     * quota cpu's, in directories of the same name (make_v1) */
    live_file(out, dir, "memory.usage_in_bytes");
    live_file(out, dir, "memory.limit_in_bytes");
    live_file(out, dir, "memory.max_usage_in_bytes");
    const char *name = strrchr(dir, '/') + 1;
    if (name[0] && strcmp(name, "..") != 0 && strcmp(name, ".") != 0) {
        char sib[700], q[64], text[160];
        v1_sibling(sib, sizeof(sib), "cpuacct", name);
        if (sib[0])
            live_file(out, sib, "cpuacct.usage");
        v1_sibling(sib, sizeof(sib), "cpu", name);
        if (sib[0] && read_file(sib, "cpu.cfs_quota_us", q, sizeof(q)) == 0 &&
            read_file(sib, "cpu.cfs_period_us", buf, sizeof(buf)) == 0) {
            q[strcspn(q, "\n")] = '\0';
            buf[strcspn(buf, "\n")] = '\0';
            snprintf(text, sizeof(text), "%s %s", strcmp(q, "-1") == 0 ? "max" : q, buf);
            sbx_cgroup_parse(out, "cpu.max", text);
        }
    }
    return 0;
}
