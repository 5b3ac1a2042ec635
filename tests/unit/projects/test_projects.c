/* Unit tests for projects/: a real store in a temporary directory, real git
 * repositories (libgit2), real files. */
#include "proj_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Test notebooks use ' for " to stay readable. */
static char *q(const char *s)
{
    char *out = strdup(s);
    for (char *p = out; *p; p++)
        if (*p == '\'')
            *p = '"';
    return out;
}

/* How many files proj_files_list() gives `user` in project `id`. */
static size_t files_listed(int64_t user, const char *id)
{
    proj_file_list *l = NULL;
    size_t n;

    ck_assert_int_eq(proj_files_list(&l, root, user, id), 0);
    n = l->count;
    proj_file_list_free(l);
    return n;
}

static int count_root_entries(void)
{
    int n = 0;
    DIR *d = opendir(rootdir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

#define MINIMAL_NB                                                                              \
    "{'cells':[{'cell_type':'markdown','id':'intro','metadata':{},'source':['# MNIST\\n','Train a "  \
    "net.']},{'cell_type':'code','execution_count':null,'id':'c1','metadata':{},'outputs':[],"      \
    "'source':'import paddle'}],'metadata':{'kernelspec':{'display_name':'Python 3','language':"    \
    "'python','name':'python3'},'language_info':{'name':'python'}},'nbformat':4,'nbformat_minor':5}"

#define ALL_OUTPUTS_NB                                                                          \
    "{'nbformat':4,'nbformat_minor':4,'metadata':{},'cells':[{'cell_type':'code','metadata':"      \
    "{'tags':[]},'execution_count':3,'source':['x = 1\\n','x'],'outputs':["                       \
    "{'output_type':'stream','name':'stdout','text':['hello\\n']},"                                 \
    "{'output_type':'display_data','data':{'image/png':'iVBORw0KGgo=','text/plain':['<Figure>']}," \
    "'metadata':{'image/png':{'width':64}}},"                                                       \
    "{'output_type':'execute_result','data':{'text/plain':'1'},'metadata':{},'execution_count':3}," \
    "{'output_type':'error','ename':'ValueError','evalue':'bad','traceback':['Traceback','line 1']}" \
    "]},{'cell_type':'raw','metadata':{},'source':''}]}"

/* ---- projects ------------------------------------------------------------------ */

START_TEST(create_get_list_respect_visibility)
{
    proj *priv = make(alice, "secret", PROJ_PRIVATE), *pub = make(alice, "shared", PROJ_PUBLIC);
    proj *mine = make(bob, "bobs", PROJ_PRIVATE), *p = NULL;
    proj_page *pg = NULL;

    ck_assert_uint_eq(strlen(priv->id), PROJ_ID_LEN);
    ck_assert_int_eq(priv->id[0], 'p');
    ck_assert_str_ne(priv->id, pub->id);
    ck_assert_str_eq(priv->owner, "alice");
    ck_assert_str_eq(priv->description, "test project");
    ck_assert_str_eq(priv->forked_from, "");
    ck_assert(exists_in(priv->id, ".git/HEAD"));

    /* another user's private project does not exist for bob */
    ck_assert_int_eq(proj_get(&p, root, bob, priv->id), ED_ENOTFOUND);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(proj_get(&p, root, bob, pub->id), 0);
    ck_assert_str_eq(p->name, "shared");
    ck_assert_int_eq(p->visibility, PROJ_PUBLIC);
    proj_free(p);
    ck_assert_int_eq(proj_get(&p, root, alice, "pnotarealid00"), ED_ENOTFOUND);
    ck_assert_int_eq(proj_get(&p, root, alice, "../../etc"), ED_ENOTFOUND);

    /* bob sees his own and alice's public one, newest first */
    ck_assert_int_eq(proj_list(&pg, root, bob, 50, NULL), 0);
    ck_assert_uint_eq(pg->count, 2);
    ck_assert_str_eq(pg->items[0]->id, mine->id);
    ck_assert_str_eq(pg->items[1]->id, pub->id);
    ck_assert_ptr_null(pg->next_cursor);
    proj_page_free(pg);

    /* alice pages through her two, one at a time */
    ck_assert_int_eq(proj_list(&pg, root, alice, 1, NULL), 0);
    ck_assert_uint_eq(pg->count, 1);
    ck_assert_str_eq(pg->items[0]->id, pub->id);
    ck_assert_ptr_nonnull(pg->next_cursor);
    {
        proj_page *pg2 = NULL;
        ck_assert_int_eq(proj_list(&pg2, root, alice, 1, pg->next_cursor), 0);
        ck_assert_uint_eq(pg2->count, 1);
        ck_assert_str_eq(pg2->items[0]->id, priv->id);
        ck_assert_ptr_null(pg2->next_cursor);
        proj_page_free(pg2);
    }
    proj_page_free(pg);
    ck_assert_int_eq(proj_list(&pg, root, alice, 0, NULL), ED_EINVAL);
    ck_assert_int_eq(proj_list(&pg, root, alice, 501, NULL), ED_EINVAL);
    ck_assert_int_eq(proj_list(&pg, root, alice, 10, "garbage"), ED_EINVAL);
    proj_free(priv);
    proj_free(pub);
    proj_free(mine);
}
END_TEST

START_TEST(create_refuses_bad_input_and_leaves_nothing)
{
    proj *p = NULL;
    char longname[PROJ_NAME_MAX + 2];

    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    ck_assert_int_eq(proj_create(&p, root, alice, "", NULL, PROJ_PRIVATE), ED_EINVAL);
    ck_assert_int_eq(proj_create(&p, root, alice, NULL, NULL, PROJ_PRIVATE), ED_EINVAL);
    ck_assert_int_eq(proj_create(&p, root, alice, longname, NULL, PROJ_PRIVATE), ED_EINVAL);
    ck_assert_int_eq(proj_create(&p, root, alice, "bad\nname", NULL, PROJ_PRIVATE), ED_EINVAL);
    ck_assert_int_eq(proj_create(&p, root, alice, "ok", NULL, (proj_visibility)7), ED_EINVAL);
    ck_assert_int_eq(proj_create(&p, root, 9999, "ok", NULL, PROJ_PRIVATE), ED_ENOTFOUND);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(count_root_entries(), 0);
}
END_TEST

START_TEST(update_is_for_the_owner_only)
{
    proj *pub = make(alice, "shared", PROJ_PUBLIC), *priv = make(alice, "mine", PROJ_PRIVATE);
    proj *p = NULL;
    proj_changes ch = {.name = "renamed", .description = "new words", .visibility = PROJ_PRIVATE};
    proj_changes bad = {.name = "", .visibility = -1};

    ck_assert_int_eq(proj_update(NULL, root, bob, pub->id, &ch), ED_EPERM);
    ck_assert_int_eq(proj_update(NULL, root, bob, priv->id, &ch), ED_ENOTFOUND);
    ck_assert_int_eq(proj_update(NULL, root, alice, pub->id, &bad), ED_EINVAL);
    ck_assert_int_eq(proj_update(&p, root, alice, pub->id, &ch), 0);
    ck_assert_str_eq(p->name, "renamed");
    ck_assert_str_eq(p->description, "new words");
    ck_assert_int_eq(p->visibility, PROJ_PRIVATE);
    proj_free(p);
    /* now private: bob no longer sees it */
    ck_assert_int_eq(proj_get(&p, root, bob, pub->id), ED_ENOTFOUND);
    proj_free(pub);
    proj_free(priv);
}
END_TEST

START_TEST(delete_removes_directory_and_row)
{
    proj *pub = make(alice, "shared", PROJ_PUBLIC), *p = NULL;
    char id[PROJ_ID_LEN + 1];

    snprintf(id, sizeof(id), "%s", pub->id);
    proj_free(pub);
    put(id, "a/b.txt", "data");
    ck_assert_int_eq(proj_delete(root, bob, id), ED_EPERM);
    ck_assert(exists_in(id, "a/b.txt"));
    ck_assert_int_eq(proj_delete(root, alice, id), 0);
    ck_assert(!exists_in(id, ""));
    ck_assert_int_eq(count_root_entries(), 0);   /* no trash left behind */
    ck_assert_int_eq(proj_get(&p, root, alice, id), ED_ENOTFOUND);
    ck_assert_int_eq(proj_delete(root, alice, id), ED_ENOTFOUND);
}
END_TEST

/* ---- files ------------------------------------------------------------------- */

START_TEST(files_write_read_list_delete_nested)
{
    proj *p = make(alice, "files", PROJ_PRIVATE);
    proj_file *f = NULL;
    proj_file_list *l = NULL;
    bool created = false;

    ck_assert_int_eq(proj_file_write(&f, &created, root, alice, p->id, "src/lib/util.py", "x=1\n", 4), 0);
    ck_assert(created);
    ck_assert_str_eq(f->path, "src/lib/util.py");
    ck_assert_int_eq(f->size, 4);
    ck_assert_int_gt(f->modified_at, 0);
    proj_file_free(f);
    ck_assert_int_eq(proj_file_write(NULL, &created, root, alice, p->id, "src/lib/util.py", "x=22\n", 5), 0);
    ck_assert(!created);
    put(p->id, "README.md", "# hi\n");
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, p->id, "empty", NULL, 0), 0);

    file_is(p->id, "src/lib/util.py", NULL, "x=22\n");

    ck_assert_int_eq(proj_files_list(&l, root, alice, p->id), 0);
    ck_assert_uint_eq(l->count, 3);
    ck_assert_str_eq(l->items[0].path, "README.md");
    ck_assert_str_eq(l->items[1].path, "empty");
    ck_assert_int_eq(l->items[1].size, 0);
    ck_assert_str_eq(l->items[2].path, "src/lib/util.py");
    ck_assert_int_eq(l->items[2].size, 5);
    proj_file_list_free(l);

    /* a file where a directory is needed, and the other way round */
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, p->id, "README.md/x", "1", 1), ED_ECONFLICT);
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, p->id, "src", "1", 1), ED_ECONFLICT);

    ck_assert_int_eq(proj_file_delete(root, alice, p->id, "src/lib/util.py"), 0);
    ck_assert(!exists_in(p->id, "src"));   /* emptied parents are pruned */
    {
        char *buf = NULL;
        size_t len;
        ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "src/lib/util.py", NULL), ED_ENOTFOUND);
        ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "nope.txt", NULL), ED_ENOTFOUND);
    }
    ck_assert_int_eq(proj_file_delete(root, alice, p->id, "src/lib/util.py"), ED_ENOTFOUND);
    proj_free(p);
}
END_TEST

START_TEST(files_follow_project_visibility)
{
    proj *priv = make(alice, "mine", PROJ_PRIVATE), *pub = make(alice, "ours", PROJ_PUBLIC);
    char *buf = NULL;
    size_t len;
    proj_file_list *l = NULL;

    put(priv->id, "a.txt", "secret");
    put(pub->id, "a.txt", "open");
    ck_assert_int_eq(proj_file_read(&buf, &len, root, bob, priv->id, "a.txt", NULL), ED_ENOTFOUND);
    ck_assert_int_eq(proj_files_list(&l, root, bob, priv->id), ED_ENOTFOUND);
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, bob, priv->id, "b.txt", "x", 1), ED_ENOTFOUND);
    ck_assert_int_eq(proj_file_delete(root, bob, priv->id, "a.txt"), ED_ENOTFOUND);
    ck_assert_int_eq(proj_file_read(&buf, &len, root, bob, pub->id, "a.txt", NULL), 0);
    ck_assert_str_eq(buf, "open");
    free(buf);
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, bob, pub->id, "b.txt", "x", 1), ED_EPERM);
    ck_assert_int_eq(proj_file_delete(root, bob, pub->id, "a.txt"), ED_EPERM);
    ck_assert(!exists_in(pub->id, "b.txt"));
    ck_assert(exists_in(pub->id, "a.txt"));
    proj_free(priv);
    proj_free(pub);
}
END_TEST

START_TEST(path_safety_refuses_every_bad_form)
{
    proj *p = make(alice, "safe", PROJ_PRIVATE);
    char longpath[PROJ_PATH_MAX + 2], longseg[300];
    const char *bad[] = {"/etc/passwd", "", "a//b", "a/", "./a", "a/./b", "..", "../x",
                         "a/../../x", "a/..", ".git/config", ".git", "sub/.GIT/hooks/x",
                         "a\\b", "..\\x", "tab\there", longpath, longseg, NULL};
    char *buf = NULL;
    size_t len;

    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[sizeof(longpath) - 1] = '\0';
    for (size_t i = 1; i < sizeof(longpath) - 1; i += 2)
        longpath[i] = '/';     /* a/a/a/... of 1025 bytes */
    memset(longseg, 'b', sizeof(longseg) - 1);
    longseg[sizeof(longseg) - 1] = '\0';
    for (int i = 0; bad[i]; i++) {
        ck_assert_msg(proj_file_write(NULL, NULL, root, alice, p->id, bad[i], "x", 1) == ED_EINVAL,
                      "write '%s' was not refused", bad[i]);
        ck_assert_msg(proj_file_read(&buf, &len, root, alice, p->id, bad[i], NULL) == ED_EINVAL,
                      "read '%s' was not refused", bad[i]);
        ck_assert_msg(proj_file_delete(root, alice, p->id, bad[i]) == ED_EINVAL,
                      "delete '%s' was not refused", bad[i]);
    }
    ck_assert_int_eq(proj_path_validate("a\0b", 3), ED_EINVAL);
    ck_assert_str_eq(ed_error_last(), "path contains a NUL byte");
    ck_assert_int_eq(proj_path_validate("/x", 2), ED_EINVAL);
    ck_assert_str_eq(ed_error_last(), "path must be relative, not absolute");
    ck_assert_int_eq(proj_path_validate("ok/fine.txt", 11), 0);
    ck_assert_int_eq(proj_path_validate("bad\xff.txt", 8), ED_EINVAL);
    ck_assert_int_eq(proj_path_validate("caf\xc3\xa9/\xe6\x95\xb0.py", 12), 0);
    ck_assert_int_eq(proj_path_validate("x\xc3", 2), ED_EINVAL);         /* truncated */
    ck_assert_int_eq(proj_path_validate("\xc0\xaf", 2), ED_EINVAL);     /* overlong '/' */
    ck_assert_int_eq(proj_path_validate(".gitignore", 10), 0);   /* only .git itself is special */
    ck_assert_int_eq(proj_path_validate("..hidden/x", 10), 0);
    /* nothing escaped into the root or the repository */
    ck_assert_int_eq(count_root_entries(), 1);
    ck_assert(!exists_in(p->id, ".git/config.lock"));
    ck_assert_uint_eq(files_listed(alice, p->id), 0);
    proj_free(p);
}
END_TEST

START_TEST(symlinks_in_the_tree_are_never_followed)
{
    proj *p = make(alice, "links", PROJ_PRIVATE);
    char link[600], outside[400], target[600];
    char *buf = NULL;
    size_t len;
    struct stat sb;

    /* planted links: a directory link to /etc, one to a directory of ours
     * outside the tree (to prove nothing is written through), a file link */
    snprintf(outside, sizeof(outside), "%s/outside", tmp);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    snprintf(link, sizeof(link), "%s/%s/etc", rootdir, p->id);
    ck_assert_int_eq(symlink("/etc", link), 0);
    snprintf(link, sizeof(link), "%s/%s/out", rootdir, p->id);
    ck_assert_int_eq(symlink(outside, link), 0);
    snprintf(target, sizeof(target), "%s/victim.txt", outside);
    {
        FILE *fp = fopen(target, "w");
        fputs("untouched", fp);
        fclose(fp);
    }
    snprintf(link, sizeof(link), "%s/%s/victim.txt", rootdir, p->id);
    ck_assert_int_eq(symlink(target, link), 0);
    snprintf(link, sizeof(link), "%s/%s/deep", rootdir, p->id);
    ck_assert_int_eq(mkdir(link, 0755), 0);
    snprintf(link, sizeof(link), "%s/%s/deep/up", rootdir, p->id);
    ck_assert_int_eq(symlink("../../..", link), 0);

    ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "etc/hostname", NULL), ED_EINVAL);
    ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "etc/passwd", NULL), ED_EINVAL);
    ck_assert_ptr_null(buf);
    ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "victim.txt", NULL), ED_EINVAL);
    ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "deep/up/eddy.db", NULL), ED_EINVAL);

    ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, p->id, "out/pwned", "x", 1), ED_EINVAL);
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, p->id, "out/new/dir/f", "x", 1), ED_EINVAL);
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, p->id, "victim.txt", "owned", 5), ED_EINVAL);
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, p->id, "etc/eddy", "x", 1), ED_EINVAL);
    ck_assert_int_eq(proj_file_delete(root, alice, p->id, "victim.txt"), ED_EINVAL);
    ck_assert_int_eq(proj_file_delete(root, alice, p->id, "out/victim.txt"), ED_EINVAL);

    ck_assert_int_ne(stat("/etc/eddy", &sb), 0);
    snprintf(link, sizeof(link), "%s/pwned", outside);
    ck_assert_int_ne(stat(link, &sb), 0);
    snprintf(link, sizeof(link), "%s/new", outside);
    ck_assert_int_ne(stat(link, &sb), 0);
    {
        FILE *fp = fopen(target, "r");
        char got[32] = "";
        ck_assert_ptr_nonnull(fgets(got, sizeof(got), fp));
        fclose(fp);
        ck_assert_str_eq(got, "untouched");
    }
    /* links are not listed as files */
    ck_assert_uint_eq(files_listed(alice, p->id), 0);
    proj_free(p);
}
END_TEST

/* ---- notebooks ----------------------------------------------------------------- */

START_TEST(notebook_valid_ones_are_written)
{
    proj *p = make(alice, "nb", PROJ_PRIVATE);
    char *minimal = q(MINIMAL_NB), *all = q(ALL_OUTPUTS_NB);

    ck_assert_msg(proj_nb_validate(minimal, strlen(minimal)) == 0, "%s", ed_error_last());
    ck_assert_msg(proj_nb_validate(all, strlen(all)) == 0, "%s", ed_error_last());
    put(p->id, "train.ipynb", minimal);
    put(p->id, "nb/all.ipynb", all);
    file_is(p->id, "nb/all.ipynb", NULL, all);
    /* not a notebook name: not validated */
    put(p->id, "notes.json", "not json at all");
    free(minimal);
    free(all);
    proj_free(p);
}
END_TEST

#define NB(cells) "{'nbformat':4,'nbformat_minor':5,'metadata':{},'cells':[" cells "]}"
#define CODE(outputs)                                                                          \
    "{'cell_type':'code','id':'c','metadata':{},'source':'x','execution_count':1,'outputs':["    \
    outputs "]}"

START_TEST(notebook_each_refusal_names_the_field_and_writes_nothing)
{
    static const struct {
        const char *nb, *msg;
    } cases[] = {
        {"not json", "malformed JSON"},
        {"", "empty"},
        {"[]", "a notebook is a JSON object"},
        {"{'nbformat':3,'nbformat_minor':0,'metadata':{},'cells':[]}", "'nbformat' must be 4"},
        {"{'nbformat':4,'nbformat_minor':'5','metadata':{},'cells':[]}", "'nbformat_minor'"},
        {"{'nbformat':4,'nbformat_minor':5,'cells':[]}", "notebook needs 'metadata'"},
        {"{'nbformat':4,'nbformat_minor':5,'metadata':{},'cells':{}}", "needs 'cells'"},
        {NB("'cell'"), "cells[0]: cell must be an object"},
        {NB("{'cell_type':'python','id':'a','metadata':{},'source':''}"), "cells[0]: cell_type must be"},
        {NB("{'id':'a','metadata':{},'source':''}"), "cells[0]: cell needs 'cell_type'"},
        {NB("{'cell_type':'markdown','metadata':{},'source':''}"), "cells[0]: cell needs 'id'"},
        {NB("{'cell_type':'markdown','id':'a b','metadata':{},'source':''}"), "cells[0]: cell needs 'id'"},
        {NB("{'cell_type':'markdown','id':'a','metadata':{}}"), "cells[0]: cell needs 'source'"},
        {NB("{'cell_type':'markdown','id':'a','metadata':{},'source':['ok',1]}"), "cells[0]: cell needs 'source'"},
        {NB("{'cell_type':'raw','id':'a','source':''}"), "cells[0]: cell needs 'metadata'"},
        {NB("{'cell_type':'code','id':'a','metadata':{},'source':'','execution_count':null}"), "cells[0]: code cell needs 'outputs'"},
        {NB("{'cell_type':'code','id':'a','metadata':{},'source':'','outputs':[]}"), "cells[0]: code cell needs 'execution_count'"},
        {NB("{'cell_type':'code','id':'a','metadata':{},'source':'','outputs':[],'execution_count':'1'}"), "cells[0]: code cell needs 'execution_count'"},
        {NB(CODE("{'output_type':'stream','text':'x'}")), "cells[0].outputs[0]: stream output needs 'name'"},
        {NB(CODE("{'output_type':'stream','name':'stdout'}")), "cells[0].outputs[0]: stream output needs 'text'"},
        {NB(CODE("{'output_type':'display_data','metadata':{}}")), "cells[0].outputs[0]: display_data needs 'data'"},
        {NB(CODE("{'output_type':'display_data','data':{}}")), "cells[0].outputs[0]: display_data needs 'metadata'"},
        {NB(CODE("{'output_type':'execute_result','data':{},'metadata':{}}")), "execute_result output needs 'execution_count'"},
        {NB(CODE("{'output_type':'error','evalue':'v','traceback':[]}")), "error output needs 'ename'"},
        {NB(CODE("{'output_type':'error','ename':'E','traceback':[]}")), "error output needs 'evalue'"},
        {NB(CODE("{'output_type':'error','ename':'E','evalue':'v','traceback':'t'}")), "error output needs 'traceback'"},
        {NB(CODE("{'output_type':'stream','name':'stdout','text':'ok'},{'output_type':'pdf'}")), "cells[0].outputs[1]: output_type must be"},
        {NB(CODE("") "," CODE("{'name':'x'}")), "cells[1].outputs[0]: output needs 'output_type'"},
    };
    proj *p = make(alice, "nb", PROJ_PRIVATE);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *nb = q(cases[i].nb);
        ck_assert_msg(proj_nb_validate(nb, strlen(nb)) == ED_EUNPROC, "case %zu accepted", i);
        ck_assert_msg(strstr(ed_error_last(), cases[i].msg) != NULL, "case %zu: '%s' lacks '%s'",
                      i, ed_error_last(), cases[i].msg);
        ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, p->id, "bad.ipynb", nb, strlen(nb)),
                         ED_EUNPROC);
        ck_assert(!exists_in(p->id, "bad.ipynb"));
        free(nb);
    }
    /* a refused overwrite keeps the old notebook */
    {
        char *good = q(MINIMAL_NB);
        put(p->id, "keep.ipynb", good);
        ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, p->id, "keep.ipynb", "{}", 2), ED_EUNPROC);
        file_is(p->id, "keep.ipynb", NULL, good);
        free(good);
    }
    proj_free(p);
}
END_TEST

/* ---- versions ------------------------------------------------------------------- */

START_TEST(versions_create_list_read_and_restore_with_autosave)
{
    proj *p = make(alice, "ver", PROJ_PRIVATE);
    proj_version *v1 = NULL, *v2 = NULL, *restored = NULL, *autosave = NULL;
    proj_version_page *l = NULL;

    ck_assert_msg(proj_version_list(&l, root, alice, p->id, 50, NULL) == 0, "%s", ed_error_last());
    ck_assert_uint_eq(l->count, 0);     /* a new project has no versions */
    proj_version_page_free(l);

    put(p->id, "a.txt", "one");
    put(p->id, "dir/gone.txt", "bye");
    ck_assert_msg(proj_version_create(&v1, root, alice, p->id, "first") == 0, "%s", ed_error_last());
    ck_assert_uint_eq(strlen(v1->id), 40);
    ck_assert_str_eq(v1->message, "first");
    ck_assert_str_eq(v1->author, "alice");
    ck_assert_int_gt(v1->created_at, 0);
    ck_assert_uint_eq(v1->nfiles, 2);
    ck_assert_str_eq(v1->files[0], "a.txt");
    ck_assert_str_eq(v1->files[1], "dir/gone.txt");

    /* a .gitignore in the tree does not hide files from a version */
    {
        proj_version *vi = NULL;
        put(p->id, ".gitignore", "*.log\n");
        put(p->id, "run.log", "loss 0.1");
        ck_assert_int_eq(proj_version_create(&vi, root, alice, p->id, "ignored files too"), 0);
        ck_assert(has_file(vi, "run.log") && has_file(vi, ".gitignore"));
        proj_version_free(vi);
        ck_assert_int_eq(proj_file_delete(root, alice, p->id, "run.log"), 0);
        ck_assert_int_eq(proj_file_delete(root, alice, p->id, ".gitignore"), 0);
    }

    /* modification, addition, deletion */
    put(p->id, "a.txt", "two");
    put(p->id, "b.txt", "new");
    ck_assert_int_eq(proj_file_delete(root, alice, p->id, "dir/gone.txt"), 0);
    ck_assert_int_eq(proj_version_create(&v2, root, alice, p->id, "second"), 0);
    ck_assert_uint_eq(v2->nfiles, 2);
    ck_assert(has_file(v2, "a.txt") && has_file(v2, "b.txt") && !has_file(v2, "dir/gone.txt"));

    ck_assert_int_eq(proj_version_list(&l, root, alice, p->id, 50, NULL), 0);
    ck_assert_uint_eq(l->count, 3);
    ck_assert_str_eq(l->items[0]->id, v2->id);   /* newest first */
    ck_assert_str_eq(l->items[2]->id, v1->id);
    proj_version_page_free(l);
    ck_assert_int_eq(proj_version_list(&l, root, alice, p->id, 2, NULL), 0);
    ck_assert_uint_eq(l->count, 2);
    ck_assert_str_eq(l->items[0]->id, v2->id);
    ck_assert_ptr_nonnull(l->next_cursor);
    {
        proj_version_page *l2 = NULL;
        ck_assert_int_eq(proj_version_list(&l2, root, alice, p->id, 2, l->next_cursor), 0);
        ck_assert_uint_eq(l2->count, 1);
        ck_assert_str_eq(l2->items[0]->id, v1->id);
        ck_assert_ptr_null(l2->next_cursor);
        proj_version_page_free(l2);
    }
    proj_version_page_free(l);

    /* reading at a version, by full id and by prefix */
    file_is(p->id, "a.txt", v1->id, "one");
    {
        char prefix[8];
        snprintf(prefix, sizeof(prefix), "%.7s", v1->id);
        file_is(p->id, "dir/gone.txt", prefix, "bye");
    }
    {
        char *buf = NULL;
        size_t len;
        ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "b.txt", v1->id), ED_ENOTFOUND);
        ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "a.txt", "zzzz"), ED_EINVAL);
        ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "a.txt",
                                        "0123456789012345678901234567890123456789"), ED_ENOTFOUND);
    }

    /* unsaved work, then restore v1: the work is autosaved first */
    put(p->id, "a.txt", "three (unsaved)");
    ck_assert_msg(proj_version_restore(&restored, &autosave, root, alice, p->id, v1->id, PROJ_RESTORE_EXACT) == 0, "%s",
                  ed_error_last());
    ck_assert_str_eq(restored->id, v1->id);
    ck_assert_ptr_nonnull(autosave);
    {
        char want[64];
        snprintf(want, sizeof(want), "Autosave before restoring %.7s", v1->id);
        ck_assert_str_eq(autosave->message, want);
    }
    file_is(p->id, "a.txt", NULL, "one");
    file_is(p->id, "dir/gone.txt", NULL, "bye");
    ck_assert(!exists_in(p->id, "b.txt"));
    file_is(p->id, "a.txt", autosave->id, "three (unsaved)");     /* nothing was lost */
    ck_assert_int_eq(proj_version_list(&l, root, alice, p->id, 50, NULL), 0);
    ck_assert_uint_eq(l->count, 4);
    ck_assert_str_eq(l->items[0]->id, autosave->id);
    proj_version_page_free(l);
    proj_version_free(restored);
    proj_version_free(autosave);

    /* the tree now equals v1: restoring v2 needs no autosave */
    restored = autosave = NULL;
    ck_assert_int_eq(proj_version_restore(&restored, &autosave, root, alice, p->id, v1->id, PROJ_RESTORE_EXACT), 0);
    ck_assert_ptr_nonnull(autosave);   /* v1 differs from HEAD (the autosave) */
    proj_version_free(restored);
    proj_version_free(autosave);
    restored = autosave = NULL;
    ck_assert_int_eq(proj_version_restore(&restored, &autosave, root, alice, p->id, v2->id, PROJ_RESTORE_EXACT), 0);
    ck_assert_ptr_null(autosave);      /* HEAD equals the tree: nothing to save */
    file_is(p->id, "b.txt", NULL, "new");
    proj_version_free(restored);

    proj_version_free(v1);
    proj_version_free(v2);
    proj_free(p);
}
END_TEST

START_TEST(versions_refuse_bad_input_and_non_owners)
{
    proj *pub = make(alice, "ver", PROJ_PUBLIC), *priv = make(alice, "hidden", PROJ_PRIVATE);
    proj_version *v = NULL;
    proj_version_page *l = NULL;
    char big[PROJ_MESSAGE_MAX + 2];

    memset(big, 'm', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    put(pub->id, "a.txt", "x");
    ck_assert_int_eq(proj_version_create(&v, root, alice, pub->id, ""), ED_EINVAL);
    ck_assert_int_eq(proj_version_create(&v, root, alice, pub->id, NULL), ED_EINVAL);
    ck_assert_int_eq(proj_version_create(&v, root, alice, pub->id, big), ED_EINVAL);
    ck_assert_int_eq(proj_version_create(&v, root, bob, pub->id, "mine now"), ED_EPERM);
    ck_assert_int_eq(proj_version_create(&v, root, bob, priv->id, "mine now"), ED_ENOTFOUND);
    ck_assert_int_eq(proj_version_create(&v, root, alice, pub->id, "ok"), 0);
    ck_assert_int_eq(proj_version_restore(NULL, NULL, root, bob, pub->id, v->id, PROJ_RESTORE_EXACT), ED_EPERM);
    ck_assert_int_eq(proj_version_restore(NULL, NULL, root, alice, pub->id, "xyz", PROJ_RESTORE_EXACT), ED_EINVAL);
    ck_assert_int_eq(proj_version_restore(NULL, NULL, root, alice, pub->id, "abcdef12", PROJ_RESTORE_EXACT), ED_ENOTFOUND);
    ck_assert_int_eq(proj_version_list(&l, root, bob, priv->id, 10, NULL), ED_ENOTFOUND);
    ck_assert_int_eq(proj_version_list(&l, root, bob, pub->id, 10, "nope"), ED_EINVAL);
    ck_assert_int_eq(proj_version_list(&l, root, bob, pub->id, 10, NULL), 0);   /* public: readable */
    ck_assert_uint_eq(l->count, 1);
    proj_version_page_free(l);
    proj_version_free(v);
    proj_free(pub);
    proj_free(priv);
}
END_TEST

/* ---- fork -------------------------------------------------------------------- */

static void head_of(char out[41], const char *id)
{
    char path[600];
    git_repository *repo = NULL;
    git_oid oid;

    snprintf(path, sizeof(path), "%s/%s", rootdir, id);
    ck_assert_int_eq(git_repository_open(&repo, path), 0);
    ck_assert_int_eq(git_reference_name_to_id(&oid, repo, "HEAD"), 0);
    git_oid_tostr(out, 41, &oid);
    git_repository_free(repo);
}

START_TEST(fork_shares_history)
{
    proj *pub = make(alice, "original", PROJ_PUBLIC), *priv = make(alice, "hidden", PROJ_PRIVATE);
    proj *fork = NULL, *own = NULL;
    proj_version *v1 = NULL, *v2 = NULL;
    proj_version_page *l = NULL;
    char h1[41], h2[41], *buf = NULL;
    size_t len;

    git_libgit2_init();
    put(pub->id, "a.txt", "one");
    ck_assert_int_eq(proj_version_create(&v1, root, alice, pub->id, "first"), 0);
    put(pub->id, "a.txt", "two");
    ck_assert_int_eq(proj_version_create(&v2, root, alice, pub->id, "second"), 0);
    put(pub->id, "unsaved.txt", "not in any version");

    ck_assert_msg(proj_fork(&fork, root, bob, pub->id) == 0, "%s", ed_error_last());
    ck_assert_str_ne(fork->id, pub->id);
    ck_assert_int_eq(fork->owner_id, bob);
    ck_assert_str_eq(fork->owner, "bob");
    ck_assert_int_eq(fork->visibility, PROJ_PRIVATE);
    ck_assert_str_eq(fork->forked_from, pub->id);
    ck_assert_str_eq(fork->name, "original");

    /* the same commits, checked with libgit2 directly */
    head_of(h1, pub->id);
    head_of(h2, fork->id);
    ck_assert_str_eq(h1, h2);
    ck_assert_str_eq(h2, v2->id);
    ck_assert_int_eq(proj_version_list(&l, root, bob, fork->id, 50, NULL), 0);
    ck_assert_uint_eq(l->count, 2);
    ck_assert_str_eq(l->items[0]->id, v2->id);
    ck_assert_str_eq(l->items[1]->id, v1->id);
    proj_version_page_free(l);

    /* the fork's tree is the newest version; it is bob's and private */
    ck_assert_int_eq(proj_file_read(&buf, &len, root, bob, fork->id, "a.txt", NULL), 0);
    ck_assert_str_eq(buf, "two");
    free(buf);
    ck_assert_int_eq(proj_file_read(&buf, &len, root, bob, fork->id, "unsaved.txt", NULL), ED_ENOTFOUND);
    ck_assert_int_eq(proj_file_read(&buf, &len, root, bob, fork->id, "a.txt", v1->id), 0);
    ck_assert_str_eq(buf, "one");
    free(buf);
    ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, fork->id, "a.txt", NULL), ED_ENOTFOUND);
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, bob, fork->id, "a.txt", "bob's", 5), 0);
    file_is(pub->id, "a.txt", NULL, "two");     /* the source is untouched */

    /* private projects: only their owner can fork */
    ck_assert_int_eq(proj_fork(&own, root, bob, priv->id), ED_ENOTFOUND);
    ck_assert_ptr_null(own);
    ck_assert_int_eq(proj_fork(&own, root, alice, priv->id), 0);   /* empty history is fine */
    ck_assert_str_eq(own->forked_from, priv->id);
    proj_free(own);

    proj_version_free(v1);
    proj_version_free(v2);
    proj_free(fork);
    proj_free(pub);
    proj_free(priv);
    git_libgit2_shutdown();
}
END_TEST

/* ---- storage limit -------------------------------------------------------------- */

START_TEST(storage_limit_refuses_writes_and_forks_over_it)
{
    proj_root *small = NULL;
    proj *p = NULL, *q2 = NULL, *fork = NULL;
    char dir[400], *buf = malloc(6000);
    int64_t used = 0;

    memset(buf, 'z', 6000);
    snprintf(dir, sizeof(dir), "%s/small", tmp);
    ck_assert_int_eq(proj_root_open(&small, st, dir, 10000), 0);
    ck_assert_int_eq(proj_create(&p, small, alice, "one", NULL, PROJ_PUBLIC), 0);
    ck_assert_int_eq(proj_create(&q2, small, alice, "two", NULL, PROJ_PRIVATE), 0);
    ck_assert_int_eq(proj_usage(&used, small, alice), 0);
    ck_assert_int_eq(used, 0);      /* an empty project takes nothing */

    ck_assert_int_eq(proj_file_write(NULL, NULL, small, alice, p->id, "big.bin", buf, 6000), 0);
    ck_assert_int_eq(proj_usage(&used, small, alice), 0);
    ck_assert_int_eq(used, 6000);
    /* the limit is across projects: a second project cannot take the rest */
    ck_assert_int_eq(proj_file_write(NULL, NULL, small, alice, q2->id, "more.bin", buf, 4001), ED_EQUOTA);
    ck_assert(strstr(ed_error_last(), "storage limit") != NULL);
    {
        char path[600];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/%s/more.bin", dir, q2->id);
        ck_assert_int_ne(stat(path, &sb), 0);
    }
    ck_assert_int_eq(proj_file_write(NULL, NULL, small, alice, q2->id, "fits.bin", buf, 4000), 0);
    /* replacing a file counts only the difference */
    ck_assert_int_eq(proj_file_write(NULL, NULL, small, alice, p->id, "big.bin", buf, 5000), 0);
    ck_assert_int_eq(proj_file_write(NULL, NULL, small, alice, p->id, "big.bin", buf, 6001), ED_EQUOTA);
    ck_assert_int_eq(proj_usage(&used, small, alice), 0);
    ck_assert_int_eq(used, 9000);
    {
        proj *row = NULL;
        ck_assert_int_eq(proj_get(&row, small, alice, p->id), 0);
        ck_assert_int_eq(row->size_bytes, 5000);    /* size is tracked in the row */
        proj_free(row);
    }
    /* bob has his own allowance, but a fork of 5000 fits it once */
    ck_assert_int_eq(proj_fork(&fork, small, bob, p->id), 0);
    proj_free(fork);
    ck_assert_int_eq(proj_file_write(NULL, NULL, small, alice, p->id, "x", "1", 1), 0);
    {
        proj_version *v = NULL;
        ck_assert_int_eq(proj_version_create(&v, small, alice, p->id, "snap"), 0);   /* never refused */
        proj_version_free(v);
    }
    ck_assert_int_eq(proj_fork(&fork, small, alice, p->id), ED_EQUOTA);
    ck_assert_ptr_null(fork);

    proj_free(p);
    proj_free(q2);
    proj_root_free(small);
    free(buf);
}
END_TEST

/* Each thread writes and versions its own file in one project; the stripe lock
 * must keep git's index consistent (no lost file in the last version). */
typedef struct {
    const char *id;
    int n;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    char path[32];
    snprintf(path, sizeof(path), "w%d.txt", a->n);
    for (int i = 0; i < 5; i++) {
        proj_version *v = NULL;
        if (proj_file_write(NULL, NULL, root, alice, a->id, path, path, strlen(path)) < 0 ||
            proj_version_create(&v, root, alice, a->id, path) < 0)
            return (void *)1;
        proj_version_free(v);
    }
    return NULL;
}

START_TEST(concurrent_writes_and_versions_stay_consistent)
{
    proj *p = make(alice, "busy", PROJ_PRIVATE);
    pthread_t t[4];
    worker_arg args[4];
    proj_version *v = NULL;
    void *ret;

    for (int i = 0; i < 4; i++) {
        args[i] = (worker_arg){p->id, i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_join(t[i], &ret), 0);
        ck_assert_ptr_null(ret);
    }
    ck_assert_int_eq(proj_version_create(&v, root, alice, p->id, "all"), 0);
    ck_assert_uint_eq(v->nfiles, 4);
    proj_version_free(v);
    proj_free(p);
}
END_TEST

START_TEST(root_open_sweeps_interrupted_creates_and_deletes)
{
    proj_root *again = NULL;
    proj *p = make(alice, "kept", PROJ_PRIVATE);
    char path[600];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/.tmp-pHalfCreated1", rootdir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/.tmp-pHalfCreated1/.git", rootdir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/.trash-pHalfDeleted1-abcdefgh", rootdir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    ck_assert_int_eq(proj_root_open(&again, st, rootdir, 0), 0);
    ck_assert_int_ne(stat(path, &sb), 0);
    snprintf(path, sizeof(path), "%s/.tmp-pHalfCreated1", rootdir);
    ck_assert_int_ne(stat(path, &sb), 0);
    ck_assert(exists_in(p->id, ".git/HEAD"));   /* real projects stay */
    ck_assert_int_eq(count_root_entries(), 1);
    proj_root_free(again);
    proj_free(p);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {create_get_list_respect_visibility, create_refuses_bad_input_and_leaves_nothing,
                            update_is_for_the_owner_only, delete_removes_directory_and_row,
                            files_write_read_list_delete_nested, files_follow_project_visibility,
                            path_safety_refuses_every_bad_form, symlinks_in_the_tree_are_never_followed,
                            notebook_valid_ones_are_written,
                            notebook_each_refusal_names_the_field_and_writes_nothing,
                            versions_create_list_read_and_restore_with_autosave,
                            versions_refuse_bad_input_and_non_owners, fork_shares_history,
                            storage_limit_refuses_writes_and_forks_over_it,
                            concurrent_writes_and_versions_stay_consistent,
                            root_open_sweeps_interrupted_creates_and_deletes, NULL};

    return unit_tests_run("projects", 0, proj_fixture_setup, proj_fixture_close, tests);
}
