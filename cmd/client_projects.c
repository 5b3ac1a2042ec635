/*
 * client_projects.c - eddy projects | push | pull | files | versions
 *
 * PROJECT is a project id or the name of one of the caller's projects.
 * `push` uploads every regular file under DIR (skipping .git and the
 * patterns in DIR/.eddyignore) and refuses symbolic links before uploading
 * anything. `pull` checks every path the server names before writing any
 * file, and writes only inside DIR (cli_write_under).
 */
#include "cli.h"
#include "cmd.h"

#include "ed_error.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_PUSH_FILES 20000
#define MAX_DEPTH 32

static const cli_col project_cols[] = {
    {"ID", "id", CLI_FMT_TEXT},           {"NAME", "name", CLI_FMT_TEXT},
    {"OWNER", "owner", CLI_FMT_TEXT},     {"VISIBILITY", "visibility", CLI_FMT_TEXT},
    {"SIZE", "size_bytes", CLI_FMT_BYTES}, {"UPDATED", "updated_at", CLI_FMT_TEXT},
};

static const cli_col project_fields[] = {
    {"ID:", "id", CLI_FMT_TEXT},
    {"Name:", "name", CLI_FMT_TEXT},
    {"Description:", "description", CLI_FMT_TEXT},
    {"Owner:", "owner", CLI_FMT_TEXT},
    {"Visibility:", "visibility", CLI_FMT_TEXT},
    {"Forked from:", "forked_from", CLI_FMT_TEXT},
    {"Size:", "size_bytes", CLI_FMT_BYTES},
    {"Created:", "created_at", CLI_FMT_TEXT},
    {"Updated:", "updated_at", CLI_FMT_TEXT},
};

static const cli_col file_cols[] = {
    {"PATH", "path", CLI_FMT_TEXT}, {"SIZE", "size", CLI_FMT_BYTES},
    {"MODIFIED", "modified_at", CLI_FMT_TEXT},
};

static const cli_col version_cols[] = {
    {"ID", "id", CLI_FMT_TEXT},           {"MESSAGE", "message", CLI_FMT_TEXT},
    {"AUTHOR", "author", CLI_FMT_TEXT},   {"CREATED", "created_at", CLI_FMT_TEXT},
    {"FILES", "nfiles", CLI_FMT_TEXT},    {"LARGE", "nlarge", CLI_FMT_TEXT},
};

/* a version's large_files: kept out of git, listed with size and sha256 */
static const cli_col large_cols[] = {
    {"LARGE FILE (NOT VERSIONED)", "path", CLI_FMT_TEXT}, {"SIZE", "size", CLI_FMT_BYTES},
    {"WHY", "reason", CLI_FMT_TEXT}, {"SHA256", "sha256", CLI_FMT_TEXT},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- eddy projects ---------------------------------------------------------- */

static int projects_usage(void)
{
    fprintf(stderr, "usage: eddy projects list\n"
                    "       eddy projects create NAME [--public] [--description TEXT]\n"
                    "       eddy projects show PROJECT | delete PROJECT | fork PROJECT\n"
                    "(PROJECT: an id or the name of one of your projects; --json prints the raw JSON)\n");
    return CLI_EXIT_USAGE;
}

static int print_project(const cli_resp *r, const cli_globals *g, const char *verb)
{
    if (g->json)
        cli_print_raw(r);
    else if (verb)
        printf("%s project %s (%s)\n", verb, json_string_value(json_object_get(r->json, "name")) ?: "?",
               json_string_value(json_object_get(r->json, "id")) ?: "?");
    else
        cli_print_fields(r->json, project_fields, N(project_fields));
    return 0;
}

int cmd_client_projects(int argc, char **argv, const cli_globals *g)
{
    const char *sub = argc > 1 ? argv[1] : "list";
    char id[64], path[160];
    cli *c = NULL;
    cli_resp r = {0};
    int err;

    if (strcmp(sub, "list") == 0) {
        json_t *all = json_array(), *page;
        char *cursor = NULL;
        if (argc > 2) {
            json_decref(all);
            return projects_usage();
        }
        if ((err = cli_open(&c, g->url, true)) < 0) {
            json_decref(all);
            goto out;
        }
        for (;;) {
            char *esc = cursor ? cli_escape(cursor, false) : NULL;
            snprintf(path, sizeof(path), "/api/v1/projects?limit=500%s%.100s", esc ? "&cursor=" : "",
                     esc ? esc : "");
            free(esc);
            free(cursor);
            cursor = NULL;
            cli_resp_free(&r);
            if ((err = cli_call(&r, c, "GET", path, NULL, 0, NULL, 0)) < 0)
                break;
            if (g->json) {   /* one page, as the server sent it */
                cli_print_raw(&r);
                break;
            }
            json_array_extend(all, json_object_get(r.json, "items"));
            page = json_object_get(r.json, "next_cursor");
            if (!json_is_string(page) || (cursor = strdup(json_string_value(page))) == NULL)
                break;
        }
        free(cursor);
        if (err == 0 && !g->json)
            cli_print_table(all, project_cols, N(project_cols));
        json_decref(all);
    } else if (strcmp(sub, "create") == 0) {
        const char *name = NULL, *desc = NULL;
        bool pub = false;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--public") == 0)
                pub = true;
            else if (strcmp(argv[i], "--private") == 0)
                pub = false;
            else if (strcmp(argv[i], "--description") == 0 && i + 1 < argc)
                desc = argv[++i];
            else if (argv[i][0] != '-' && name == NULL)
                name = argv[i];
            else
                return projects_usage();
        }
        if (name == NULL || name[0] == '\0')
            return projects_usage();
        json_t *body = json_pack("{s:s, s:s, s:s}", "name", name, "visibility",
                                 pub ? "public" : "private", "description", desc ? desc : "");
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        if (text == NULL) {
            err = ed_error_set(ED_ENOMEM, "project");
            goto out;
        }
        if ((err = cli_open(&c, g->url, true)) == 0)
            err = cli_call(&r, c, "POST", "/api/v1/projects", text, strlen(text), "application/json", 0);
        free(text);
        if (err == 0)
            print_project(&r, g, "Created");
    } else if (strcmp(sub, "show") == 0 || strcmp(sub, "delete") == 0 || strcmp(sub, "fork") == 0) {
        if (argc != 3)
            return projects_usage();
        if ((err = cli_open(&c, g->url, true)) < 0 ||
            (err = cli_project_resolve(id, sizeof(id), c, argv[2])) < 0)
            goto out;
        if (strcmp(sub, "show") == 0) {
            snprintf(path, sizeof(path), "/api/v1/projects/%s", id);
            if ((err = cli_call(&r, c, "GET", path, NULL, 0, NULL, 0)) == 0)
                print_project(&r, g, NULL);
        } else if (strcmp(sub, "delete") == 0) {
            snprintf(path, sizeof(path), "/api/v1/projects/%s", id);
            if ((err = cli_call(&r, c, "DELETE", path, NULL, 0, NULL, 0)) == 0)
                printf("Deleted project %s.\n", id);
        } else {
            snprintf(path, sizeof(path), "/api/v1/projects/%s/fork", id);
            if ((err = cli_call(&r, c, "POST", path, NULL, 0, NULL, CLI_IDEMPOTENT)) == 0)
                print_project(&r, g, "Forked into");
        }
    } else {
        return projects_usage();
    }
out:
    cli_resp_free(&r);
    return cli_done(c, err);
}

/* ---- eddy push ---------------------------------------------------------------- */

typedef struct ignore_list {
    char  **pat;
    size_t  n;
} ignore_list;

static void ignore_free(ignore_list *ig)
{
    for (size_t i = 0; i < ig->n; i++)
        free(ig->pat[i]);
    free(ig->pat);
    memset(ig, 0, sizeof(*ig));
}

/* DIR/.eddyignore: one glob a line, '#' comments; "name/" matches
 * directories only; a pattern with a '/' matches the path from DIR, one
 * without matches the last component anywhere. */
static int ignore_load(ignore_list *ig, const char *dir)
{
    char path[4200], line[1024];
    FILE *f;

    memset(ig, 0, sizeof(*ig));
    snprintf(path, sizeof(path), "%s/.eddyignore", dir);
    if ((f = fopen(path, "r")) == NULL)
        return errno == ENOENT ? 0 : ed_error_set(CLI_EUSAGE, "cannot read %s: %s", path, strerror(errno));
    while (fgets(line, sizeof(line), f)) {
        size_t n = strcspn(line, "\r\n");
        char *s = line, **grown;
        line[n] = '\0';
        while (*s == ' ' || *s == '\t')
            s++;
        n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
            s[--n] = '\0';
        if (*s == '\0' || *s == '#')
            continue;
        if (*s == '/')
            s++;
        if ((grown = realloc(ig->pat, (ig->n + 1) * sizeof(*grown))) == NULL ||
            (grown[ig->n] = strdup(s)) == NULL) {
            if (grown)
                ig->pat = grown;
            fclose(f);
            return ed_error_set(ED_ENOMEM, "ignore list");
        }
        ig->pat = grown;
        ig->n++;
    }
    fclose(f);
    return 0;
}

static bool ignored(const ignore_list *ig, const char *rel, const char *name, bool is_dir)
{
    for (size_t i = 0; i < ig->n; i++) {
        char pat[1024];
        size_t n = strlen(ig->pat[i]);
        snprintf(pat, sizeof(pat), "%s", ig->pat[i]);
        if (n > 0 && pat[n - 1] == '/') {
            if (!is_dir)
                continue;
            pat[n - 1] = '\0';
        }
        if (strchr(pat, '/') ? fnmatch(pat, rel, FNM_PATHNAME) == 0 : fnmatch(pat, name, 0) == 0)
            return true;
    }
    return false;
}

typedef struct file_set {
    char  **rel;
    size_t  n;
} file_set;

static void file_set_free(file_set *fs)
{
    for (size_t i = 0; i < fs->n; i++)
        free(fs->rel[i]);
    free(fs->rel);
    memset(fs, 0, sizeof(*fs));
}

static int collect(file_set *fs, const ignore_list *ig, const char *root, const char *rel, int depth)
{
    char path[8192], sub[4200];
    struct dirent **ents = NULL;
    int n, err = 0;

    if (depth > MAX_DEPTH)
        return ed_error_set(CLI_EUSAGE, "%s/%s is nested more than %d directories deep", root, rel, MAX_DEPTH);
    snprintf(path, sizeof(path), "%s%s%s", root, rel[0] ? "/" : "", rel);
    if ((n = scandir(path, &ents, NULL, alphasort)) < 0)
        return ed_error_set(CLI_EUSAGE, "cannot read directory %s: %s", path, strerror(errno));
    for (int i = 0; i < n && err == 0; i++) {
        const char *name = ents[i]->d_name;
        struct stat sb;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, ".git") == 0)
            continue;
        if (snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", name) >= 4096) {
            err = ed_error_set(CLI_EUSAGE, "path %.80s... is too long", sub);
            break;
        }
        snprintf(path, sizeof(path), "%s/%s", root, sub);
        if (lstat(path, &sb) < 0) {
            err = ed_error_set(CLI_EUSAGE, "cannot stat %s: %s", path, strerror(errno));
            break;
        }
        if (ignored(ig, sub, name, S_ISDIR(sb.st_mode)))
            continue;
        if (S_ISLNK(sb.st_mode)) {
            err = ed_error_set(CLI_EUSAGE, "refusing the symbolic link %s: push uploads regular files only "
                                           "(list it in .eddyignore to skip it)", path);
        } else if (S_ISDIR(sb.st_mode)) {
            err = collect(fs, ig, root, sub, depth + 1);
        } else if (!S_ISREG(sb.st_mode)) {
            err = ed_error_set(CLI_EUSAGE, "refusing %s: not a regular file", path);
        } else if (fs->n >= MAX_PUSH_FILES) {
            err = ed_error_set(CLI_EUSAGE, "%s has more than %d files", root, MAX_PUSH_FILES);
        } else {
            char **grown = realloc(fs->rel, (fs->n + 1) * sizeof(*grown));
            if (grown == NULL || (grown[fs->n] = strdup(sub)) == NULL) {
                if (grown)
                    fs->rel = grown;
                err = ed_error_set(ED_ENOMEM, "file list");
            } else {
                fs->rel = grown;
                fs->n++;
            }
        }
    }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    return err;
}

static int create_version(cli *c, const char *id, const char *message, json_t **out)
{
    char path[160];
    json_t *body = json_pack("{s:s}", "message", message);
    int err;

    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "version");
    snprintf(path, sizeof(path), "/api/v1/projects/%s/versions", id);
    err = cli_call_json(out, c, "POST", path, body, 0);
    json_decref(body);
    return err;
}

int cmd_client_push(int argc, char **argv, const cli_globals *g)
{
    const char *project = NULL, *dir = NULL, *message = NULL;
    char id[64], local[8192], path[4600];
    ignore_list ig = {0};
    file_set fs = {0};
    struct stat sb;
    cli *c = NULL;
    json_t *version = NULL;
    size_t done = 0, bytes = 0;
    int err;

    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "--message") == 0) && i + 1 < argc)
            message = argv[++i];
        else if (argv[i][0] != '-' && project == NULL)
            project = argv[i];
        else if (argv[i][0] != '-' && dir == NULL)
            dir = argv[i];
        else
            dir = NULL, project = NULL, i = argc;
    }
    if (project == NULL || dir == NULL) {
        fprintf(stderr, "usage: eddy push PROJECT DIR [-m MESSAGE]\n"
                        "(uploads every file under DIR but .git and .eddyignore patterns; with -m, "
                        "then creates a version)\n");
        return CLI_EXIT_USAGE;
    }
    if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
        return cli_report(ed_error_set(CLI_EUSAGE, "%s is not a directory", dir));
    /* everything local is checked before the first request */
    if ((err = ignore_load(&ig, dir)) < 0 || (err = collect(&fs, &ig, dir, "", 0)) < 0)
        goto out;
    if (fs.n == 0) {
        err = ed_error_set(CLI_EUSAGE, "%s has no files to push", dir);
        goto out;
    }
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = cli_project_resolve(id, sizeof(id), c, project)) < 0)
        goto out;
    for (size_t i = 0; i < fs.n; i++) {
        char *buf = NULL, *esc;
        size_t len = 0;
        cli_resp r;
        snprintf(local, sizeof(local), "%s/%s", dir, fs.rel[i]);
        if ((err = cli_read_file(&buf, &len, local)) < 0)
            break;
        if ((esc = cli_escape(fs.rel[i], true)) == NULL) {
            free(buf);
            err = ed_error_set(ED_ENOMEM, "path");
            break;
        }
        snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s", id, esc);
        free(esc);
        err = cli_call(&r, c, "PUT", path, buf, len, "application/octet-stream", 0);
        free(buf);
        cli_resp_free(&r);
        if (err < 0) {
            fprintf(stderr, "eddy: %s: %s\n", fs.rel[i], ed_error_last());
            break;
        }
        done++;
        bytes += len;
    }
    if (err < 0) {
        fprintf(stderr, "eddy: pushed %zu of %zu files before the error\n", done, fs.n);
        goto out;
    }
    if (message && (err = create_version(c, id, message, &version)) < 0)
        goto out;
    if (g->json && version) {
        char *s = json_dumps(version, JSON_COMPACT);
        printf("%s\n", s ? s : "null");
        free(s);
    } else {
        printf("Pushed %zu files (%zu bytes) to project %s.\n", done, bytes, id);
        if (version)
            printf("Created version %s.\n", json_string_value(json_object_get(version, "id")) ?: "?");
    }
out:
    json_decref(version);
    ignore_free(&ig);
    file_set_free(&fs);
    return cli_done(c, err);
}

/* ---- eddy pull ------------------------------------------------------------------ */

/* The version whose id is `ref` or starts with it (at least 7 hex digits). */
static int find_version(json_t **out, cli *c, const char *id, const char *ref)
{
    char path[400];
    char *cursor = NULL;
    json_t *found = NULL;
    int err = 0, matches = 0;

    *out = NULL;
    if (strlen(ref) < 7 || strlen(ref) > 40 || strspn(ref, "0123456789abcdef") != strlen(ref))
        return ed_error_set(CLI_EUSAGE, "version '%s' must be a commit id (at least 7 hex digits)", ref);
    for (int pages = 0; pages < 1000; pages++) {
        json_t *j = NULL, *v, *next;
        char *esc = cursor ? cli_escape(cursor, false) : NULL;
        size_t i;
        snprintf(path, sizeof(path), "/api/v1/projects/%s/versions?limit=500%s%.200s", id,
                 esc ? "&cursor=" : "", esc ? esc : "");
        free(esc);
        free(cursor);
        cursor = NULL;
        if ((err = cli_call_json(&j, c, "GET", path, NULL, 0)) < 0)
            break;
        json_array_foreach(json_object_get(j, "items"), i, v) {
            const char *vid = json_string_value(json_object_get(v, "id"));
            if (vid && strncmp(vid, ref, strlen(ref)) == 0) {
                matches++;
                json_decref(found);
                found = json_incref(v);
            }
        }
        next = json_object_get(j, "next_cursor");
        if (json_is_string(next))
            cursor = strdup(json_string_value(next));
        json_decref(j);
        if (cursor == NULL)
            break;
    }
    free(cursor);
    if (err == 0 && matches == 0)
        err = ed_error_set(ED_ENOTFOUND, "not_found: project %s has no version %s", id, ref);
    else if (err == 0 && matches > 1)
        err = ed_error_set(CLI_EUSAGE, "version '%s' is ambiguous: give more digits", ref);
    if (err < 0) {
        json_decref(found);
        return err;
    }
    *out = found;
    return 0;
}

int cmd_client_pull(int argc, char **argv, const cli_globals *g)
{
    const char *project = NULL, *dir = NULL, *version = NULL;
    char id[64], path[4700], vid[48] = "";
    cli *c = NULL;
    json_t *list = NULL, *v = NULL, *names = NULL, *e;
    size_t i, bytes = 0;
    struct stat sb;
    int err;

    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--version") == 0 && k + 1 < argc)
            version = argv[++k];
        else if (argv[k][0] != '-' && project == NULL)
            project = argv[k];
        else if (argv[k][0] != '-' && dir == NULL)
            dir = argv[k];
        else
            project = dir = NULL, k = argc;
    }
    if (project == NULL || dir == NULL) {
        fprintf(stderr, "usage: eddy pull PROJECT DIR [--version V]\n");
        return CLI_EXIT_USAGE;
    }
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return cli_report(ed_error_set(CLI_EUSAGE, "%s exists and is not a directory", dir));
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = cli_project_resolve(id, sizeof(id), c, project)) < 0)
        goto out;
    if ((names = json_array()) == NULL) {
        err = ed_error_set(ED_ENOMEM, "file list");
        goto out;
    }
    if (version) {
        if ((err = find_version(&v, c, id, version)) < 0)
            goto out;
        snprintf(vid, sizeof(vid), "%s", json_string_value(json_object_get(v, "id")));
        json_array_extend(names, json_object_get(v, "files"));
    } else {
        snprintf(path, sizeof(path), "/api/v1/projects/%s/files", id);
        if ((err = cli_call_json(&list, c, "GET", path, NULL, 0)) < 0)
            goto out;
        json_array_foreach(json_object_get(list, "items"), i, e)
            json_array_append(names, json_object_get(e, "path"));
    }
    /* every path is checked before anything is written */
    json_array_foreach(names, i, e) {
        const char *rel = json_string_value(e);
        if (rel == NULL || !cli_path_is_safe(rel) || strcmp(rel, ".git") == 0 || strncmp(rel, ".git/", 5) == 0) {
            err = ed_error_set(ED_EPERM, "the server named an unsafe path '%.200s': nothing was written",
                               rel ? rel : "(not a string)");
            goto out;
        }
    }
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        err = ed_error_set(CLI_EUSAGE, "cannot create %s: %s", dir, strerror(errno));
        goto out;
    }
    json_array_foreach(names, i, e) {
        const char *rel = json_string_value(e);
        char *esc = cli_escape(rel, true);
        cli_resp r;
        if (esc == NULL) {
            err = ed_error_set(ED_ENOMEM, "path");
            goto out;
        }
        snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s%s%s", id, esc, vid[0] ? "?version=" : "", vid);
        free(esc);
        if ((err = cli_call(&r, c, "GET", path, NULL, 0, NULL, 0)) == 0)
            err = cli_write_under(dir, rel, r.body.data ? r.body.data : "", r.body.len);
        bytes += r.body.len;
        cli_resp_free(&r);
        if (err < 0) {
            fprintf(stderr, "eddy: %s: %s\n", rel, ed_error_last());
            goto out;
        }
    }
    printf("Pulled %zu files (%zu bytes) of project %s%s%s into %s.\n", json_array_size(names), bytes, id,
           vid[0] ? " at version " : "", vid, dir);
out:
    json_decref(names);
    json_decref(list);
    json_decref(v);
    return cli_done(c, err);
}

/* ---- eddy files ------------------------------------------------------------------ */

static int files_usage(void)
{
    fprintf(stderr, "usage: eddy files PROJECT [ls]\n"
                    "       eddy files PROJECT cat PATH [--version V]\n"
                    "       eddy files PROJECT put PATH FILE [--if-match ETAG]\n"
                    "       eddy files PROJECT rm PATH\n");
    return CLI_EXIT_USAGE;
}

int cmd_client_files(int argc, char **argv, const cli_globals *g)
{
    const char *sub = argc > 2 ? argv[2] : "ls", *version = NULL, *if_match = NULL;
    char id[64], path[4700];
    char *esc = NULL, *buf = NULL;
    size_t len = 0;
    cli *c = NULL;
    cli_resp r = {0};
    json_t *v = NULL;
    int err, want;

    if (argc < 2)
        return files_usage();
    want = strcmp(sub, "ls") == 0 ? 3 : strcmp(sub, "cat") == 0 || strcmp(sub, "rm") == 0 ? 4
         : strcmp(sub, "put") == 0 ? 5 : -1;
    if (strcmp(sub, "cat") == 0 && argc == 6 && strcmp(argv[4], "--version") == 0)
        version = argv[5];
    else if (strcmp(sub, "put") == 0 && argc == 7 && strcmp(argv[5], "--if-match") == 0 &&
             argv[6][0] != '\0' && strlen(argv[6]) < 200 && !strpbrk(argv[6], "\r\n"))
        if_match = argv[6];   /* the ETag a read gave ("etag" in --json output) */
    else if (want < 0 || (argc != want && !(want == 3 && argc == 2)))
        return files_usage();
    if (want > 3 && (argv[3][0] == '\0' || (esc = cli_escape(argv[3], true)) == NULL))
        return files_usage();
    if (strcmp(sub, "put") == 0 && (err = cli_read_file(&buf, &len, argv[4])) < 0) {
        free(esc);
        return cli_report(err);
    }
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = cli_project_resolve(id, sizeof(id), c, argv[1])) < 0)
        goto out;
    if (strcmp(sub, "ls") == 0) {
        snprintf(path, sizeof(path), "/api/v1/projects/%s/files", id);
        if ((err = cli_call(&r, c, "GET", path, NULL, 0, NULL, 0)) < 0)
            goto out;
        if (g->json)
            cli_print_raw(&r);
        else
            cli_print_table(json_object_get(r.json, "items"), file_cols, N(file_cols));
    } else if (strcmp(sub, "cat") == 0) {
        char vid[48] = "";
        if (version) {
            if ((err = find_version(&v, c, id, version)) < 0)
                goto out;
            snprintf(vid, sizeof(vid), "%s", json_string_value(json_object_get(v, "id")));
        }
        snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s%s%s", id, esc, vid[0] ? "?version=" : "", vid);
        if ((err = cli_call(&r, c, "GET", path, NULL, 0, NULL, 0)) < 0)
            goto out;
        if (r.body.len && fwrite(r.body.data, 1, r.body.len, stdout) != r.body.len)
            err = ed_error_set(ED_EIO, "cannot write to stdout");
    } else if (strcmp(sub, "put") == 0) {
        char hdr[256];
        const char *hdrs[] = {hdr, NULL};
        snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s", id, esc);
        if (if_match) {
            /* HTTP quotes entity tags; accept the bare hex as --json prints it */
            snprintf(hdr, sizeof(hdr), if_match[0] == '"' || strcmp(if_match, "*") == 0
                                           ? "If-Match: %s" : "If-Match: \"%s\"", if_match);
            if ((err = cli_set_headers(c, hdrs)) < 0)
                goto out;
        }
        err = cli_call(&r, c, "PUT", path, buf, len, "application/octet-stream", 0);
        if (if_match)
            cli_set_headers(c, NULL);
        if (err < 0) {
            if (r.status == 412)
                fprintf(stderr, "eddy: %s changed on the server since that ETag; read it again "
                                "(eddy files %s cat %s) and retry\n", argv[3], argv[1], argv[3]);
            goto out;
        }
        if (g->json)
            cli_print_raw(&r);
        else
            printf("%s %s (%zu bytes), etag %s.\n", r.status == 201 ? "Created" : "Updated",
                   argv[3], len, json_string_value(json_object_get(r.json, "etag")) ?: "-");
    } else {
        snprintf(path, sizeof(path), "/api/v1/projects/%s/files/%s", id, esc);
        if ((err = cli_call(&r, c, "DELETE", path, NULL, 0, NULL, 0)) == 0)
            printf("Deleted %s.\n", argv[3]);
    }
out:
    json_decref(v);
    free(esc);
    free(buf);
    cli_resp_free(&r);
    return cli_done(c, err);
}

/* ---- eddy versions ------------------------------------------------------------------ */

static int versions_usage(void)
{
    fprintf(stderr, "usage: eddy versions PROJECT [list]\n"
                    "       eddy versions PROJECT create MESSAGE\n"
                    "       eddy versions PROJECT show VERSION\n"
                    "       eddy versions PROJECT restore VERSION [--mode keep_untracked|exact]\n"
                    "  restore writes the version's files over the working tree after saving\n"
                    "  unsaved work as an autosave version. keep_untracked (default) keeps\n"
                    "  files the version lacks; exact removes them, except large and\n"
                    "  .eddyignore'd files, which no version holds.\n");
    return CLI_EXIT_USAGE;
}

/* The large files of version `v`, if any, as a table after a blank line. */
static void print_large(const json_t *v)
{
    const json_t *l = json_object_get(v, "large_files");

    if (json_array_size(l) == 0)
        return;
    printf("\n");
    cli_print_table(l, large_cols, N(large_cols));
}

static bool version_ref_ok(const char *s)
{
    return strlen(s) >= 7 && strlen(s) <= 40 && strspn(s, "0123456789abcdef") == strlen(s);
}

int cmd_client_versions(int argc, char **argv, const cli_globals *g)
{
    const char *sub = argc > 2 ? argv[2] : "list", *mode = NULL;
    char id[64], path[400];
    cli *c = NULL;
    cli_resp r = {0};
    json_t *v = NULL;
    size_t i;
    int err;

    if (argc >= 4 && strcmp(sub, "restore") == 0 && argc == 6 && strcmp(argv[4], "--mode") == 0)
        mode = argv[5];
    if (argc < 2 || (strcmp(sub, "list") == 0 && argc > 3) ||
        ((strcmp(sub, "create") == 0 || strcmp(sub, "show") == 0) && argc != 4) ||
        (strcmp(sub, "restore") == 0 && argc != 4 && mode == NULL) ||
        (strcmp(sub, "list") && strcmp(sub, "create") && strcmp(sub, "restore") && strcmp(sub, "show")))
        return versions_usage();
    if (mode && strcmp(mode, "keep_untracked") != 0 && strcmp(mode, "exact") != 0)
        return cli_report(ed_error_set(CLI_EUSAGE, "--mode must be keep_untracked or exact, not '%s'",
                                       mode));
    if (strcmp(sub, "create") == 0 && argv[3][0] == '\0')
        return cli_report(ed_error_set(CLI_EUSAGE, "the version message must not be empty"));
    if ((strcmp(sub, "restore") == 0 || strcmp(sub, "show") == 0) && !version_ref_ok(argv[3]))
        return cli_report(ed_error_set(CLI_EUSAGE, "version '%s' must be a commit id (at least 7 hex digits)",
                                       argv[3]));
    if ((err = cli_open(&c, g->url, true)) < 0 || (err = cli_project_resolve(id, sizeof(id), c, argv[1])) < 0)
        goto out;
    if (strcmp(sub, "list") == 0) {
        json_t *e;
        snprintf(path, sizeof(path), "/api/v1/projects/%s/versions?limit=500", id);
        if ((err = cli_call(&r, c, "GET", path, NULL, 0, NULL, 0)) < 0)
            goto out;
        if (g->json) {
            cli_print_raw(&r);
            goto out;
        }
        json_array_foreach(json_object_get(r.json, "items"), i, e) {
            json_object_set_new(e, "nfiles", json_integer((json_int_t)json_array_size(json_object_get(e, "files"))));
            json_object_set_new(e, "nlarge",
                                json_integer((json_int_t)json_array_size(json_object_get(e, "large_files"))));
        }
        cli_print_table(json_object_get(r.json, "items"), version_cols, N(version_cols));
    } else if (strcmp(sub, "create") == 0) {
        if ((err = create_version(c, id, argv[3], &v)) < 0)
            goto out;
        if (g->json) {
            char *s = json_dumps(v, JSON_COMPACT);
            printf("%s\n", s ? s : "null");
            free(s);
        } else {
            size_t nl = json_array_size(json_object_get(v, "large_files"));
            printf("Created version %s (%zu files", json_string_value(json_object_get(v, "id")) ?: "?",
                   json_array_size(json_object_get(v, "files")));
            if (nl)
                printf("; %zu large or ignored file%s not versioned", nl, nl == 1 ? "" : "s");
            printf(").\n");
            print_large(v);
        }
    } else if (strcmp(sub, "show") == 0) {
        json_t *f;
        if ((err = find_version(&v, c, id, argv[3])) < 0)
            goto out;
        if (g->json) {
            char *s = json_dumps(v, JSON_COMPACT);
            printf("%s\n", s ? s : "null");
            free(s);
            goto out;
        }
        printf("Version %s by %s, %s\n%s\n\nFILES\n", json_string_value(json_object_get(v, "id")) ?: "?",
               json_string_value(json_object_get(v, "author")) ?: "?",
               json_string_value(json_object_get(v, "created_at")) ?: "?",
               json_string_value(json_object_get(v, "message")) ?: "");
        json_array_foreach(json_object_get(v, "files"), i, f)
            printf("%s\n", json_string_value(f) ?: "?");
        print_large(v);
    } else {
        json_t *body;
        char *text = NULL;
        if ((err = find_version(&v, c, id, argv[3])) < 0)
            goto out;
        snprintf(path, sizeof(path), "/api/v1/projects/%s/versions/%s/restore", id,
                 json_string_value(json_object_get(v, "id")));
        body = json_pack("{s:s}", "mode", mode ? mode : "keep_untracked");
        text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        if (text == NULL) {
            err = ed_error_set(ED_ENOMEM, "request body");
            goto out;
        }
        err = cli_call(&r, c, "POST", path, text, strlen(text), "application/json", 0);
        free(text);
        if (err < 0)
            goto out;
        if (g->json) {
            cli_print_raw(&r);
        } else {
            const char *auto_id = json_string_value(json_object_get(json_object_get(r.json, "autosave"), "id"));
            printf("Restored version %s (%s).\n", json_string_value(json_object_get(v, "id")),
                   json_string_value(json_object_get(r.json, "mode")) ?: (mode ? mode : "keep_untracked"));
            if (auto_id)
                printf("Unsaved changes were kept as version %s.\n", auto_id);
            if (json_array_size(json_object_get(json_object_get(r.json, "restored"), "large_files")))
                printf("Large files are not in versions and were left as they are.\n");
        }
    }
out:
    json_decref(v);
    cli_resp_free(&r);
    return cli_done(c, err);
}
