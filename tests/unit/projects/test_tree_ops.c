/* Unit tests for projects/tree_ops.c: move/rename of files and folders, new
 * folders, recursive folder removal and the folder listing, on real
 * repositories; and a race in which a "kernel" thread keeps swapping a
 * directory of the tree for a symbolic link to a directory outside it while
 * the tree is changed: nothing outside may ever be touched. */
#include "proj_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ROOTDIR/<id>/<rel> as a host path. */
static const char *host(const char *id, const char *rel)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s/%s", rootdir, id, rel);
    return buf[k];
}

static bool is_dir_in(const char *id, const char *rel)
{
    struct stat sb;
    return lstat(host(id, rel), &sb) == 0 && S_ISDIR(sb.st_mode);
}

static void write_host(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Entries of a host directory, '.' and '..' excluded. */
static int count_entries(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static bool listed(const proj_file_list *l, const char *path)
{
    for (size_t i = 0; l && i < l->count; i++)
        if (strcmp(l->items[i].path, path) == 0)
            return true;
    return false;
}

START_TEST(move_renames_a_file_keeping_its_bytes)
{
    proj *p = make(alice, "mv", PROJ_PRIVATE);
    proj_file *f = NULL;
    bool dir = true;

    put(p->id, "a.txt", "hello");
    ck_assert_msg(proj_file_move(&f, &dir, root, alice, p->id, "a.txt", "b.txt") == 0, "%s",
                  ed_error_last());
    ck_assert_str_eq(f->path, "b.txt");
    ck_assert_int_eq(f->size, 5);
    ck_assert(!dir);
    ck_assert(!exists_in(p->id, "a.txt"));
    file_is(p->id, "b.txt", NULL, "hello");
    proj_file_free(f);
    proj_free(p);
}
END_TEST

START_TEST(move_makes_missing_parents_of_the_target)
{
    proj *p = make(alice, "mv", PROJ_PRIVATE);

    put(p->id, "a.txt", "x");
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "a.txt", "new/deep/a.txt"), 0);
    file_is(p->id, "new/deep/a.txt", NULL, "x");
    proj_free(p);
}
END_TEST

START_TEST(move_never_replaces_the_target)
{
    proj *p = make(alice, "mv", PROJ_PRIVATE);

    put(p->id, "a.txt", "a");
    put(p->id, "b.txt", "b");
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "a.txt", "b.txt"), ED_EEXISTS);
    file_is(p->id, "a.txt", NULL, "a");
    file_is(p->id, "b.txt", NULL, "b");
    /* a folder in the way too, and the parent made for nothing is not left */
    put(p->id, "d/c.txt", "c");
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "a.txt", "d"), ED_EEXISTS);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "b.txt", "a.txt/x"),
                     ED_ECONFLICT);
    file_is(p->id, "a.txt", NULL, "a");
    proj_free(p);
}
END_TEST

START_TEST(move_of_a_missing_path_is_not_found)
{
    proj *p = make(alice, "mv", PROJ_PRIVATE);

    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "nope", "x"), ED_ENOTFOUND);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "no/pe", "x"), ED_ENOTFOUND);
    ck_assert(!exists_in(p->id, "x"));
    proj_free(p);
}
END_TEST

START_TEST(move_checks_both_paths)
{
    proj *p = make(alice, "mv", PROJ_PRIVATE);

    put(p->id, "a.txt", "a");
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "a.txt", "../a.txt"), ED_EINVAL);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "a.txt", ".git/a"), ED_EINVAL);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "/etc/passwd", "x"), ED_EINVAL);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, ".git", "g"), ED_EINVAL);
    file_is(p->id, "a.txt", NULL, "a");
    proj_free(p);
}
END_TEST

START_TEST(move_of_a_folder_takes_everything_in_it)
{
    proj *p = make(alice, "mv", PROJ_PRIVATE);
    proj_file *f = NULL;
    bool dir = false;

    put(p->id, "data/a.csv", "1,2");
    put(p->id, "data/sub/b.csv", "3,4");
    ck_assert_int_eq(proj_file_move(&f, &dir, root, alice, p->id, "data", "moved/data2"), 0);
    ck_assert(dir);
    ck_assert_int_eq(f->size, 0);
    file_is(p->id, "moved/data2/a.csv", NULL, "1,2");
    file_is(p->id, "moved/data2/sub/b.csv", NULL, "3,4");
    ck_assert(!exists_in(p->id, "data"));
    proj_file_free(f);
    proj_free(p);
}
END_TEST

START_TEST(move_of_a_folder_into_itself_is_refused)
{
    proj *p = make(alice, "mv", PROJ_PRIVATE);

    put(p->id, "data/a.csv", "1");
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "data", "data/inner"), ED_EINVAL);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "data", "data/x/y"), ED_EINVAL);
    /* "data2" only starts with the same letters */
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "data", "data2"), 0);
    file_is(p->id, "data2/a.csv", NULL, "1");
    ck_assert(!exists_in(p->id, "data/x"));
    proj_free(p);
}
END_TEST

START_TEST(move_to_ipynb_must_be_a_notebook)
{
    proj *p = make(alice, "mv", PROJ_PRIVATE);
    const char *nb = "{\"cells\":[],\"metadata\":{},\"nbformat\":4,\"nbformat_minor\":5}";

    put(p->id, "notes.txt", "not a notebook");
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "notes.txt", "notes.ipynb"),
                     ED_EUNPROC);
    file_is(p->id, "notes.txt", NULL, "not a notebook");
    put(p->id, "nb.json", nb);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "nb.json", "nb.ipynb"), 0);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "nb.ipynb", "b.ipynb"), 0);
    file_is(p->id, "b.ipynb", NULL, nb);
    proj_free(p);
}
END_TEST

START_TEST(move_never_goes_through_a_link)
{
    proj *p = make(alice, "mv", PROJ_PRIVATE);
    char outside[512];

    snprintf(outside, sizeof(outside), "%s/outside", tmp);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    put(p->id, "a.txt", "a");
    ck_assert_int_eq(symlink(outside, host(p->id, "ln")), 0);
    /* into and out of a linked directory: refused */
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "a.txt", "ln/a.txt"), ED_EINVAL);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "ln/x", "x"), ED_EINVAL);
    /* the link itself is not a file or folder of the project */
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "ln", "ln2"), ED_EINVAL);
    ck_assert_int_eq(count_entries(outside), 0);
    file_is(p->id, "a.txt", NULL, "a");
    proj_free(p);
}
END_TEST

START_TEST(only_the_owner_changes_the_tree)
{
    proj *pub = make(alice, "pub", PROJ_PUBLIC), *priv = make(alice, "priv", PROJ_PRIVATE);

    put(pub->id, "a.txt", "a");
    put(priv->id, "a.txt", "a");
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, bob, pub->id, "a.txt", "b.txt"), ED_EPERM);
    ck_assert_int_eq(proj_dir_create(NULL, root, bob, pub->id, "d"), ED_EPERM);
    ck_assert_int_eq(proj_dir_delete(root, bob, pub->id, "d"), ED_EPERM);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, bob, priv->id, "a.txt", "b.txt"), ED_ENOTFOUND);
    ck_assert_int_eq(proj_dir_create(NULL, root, bob, priv->id, "d"), ED_ENOTFOUND);
    file_is(pub->id, "a.txt", NULL, "a");
    ck_assert(!exists_in(pub->id, "d"));
    proj_free(pub);
    proj_free(priv);
}
END_TEST

START_TEST(new_folder_is_listed_while_empty)
{
    proj *p = make(alice, "dirs", PROJ_PRIVATE);
    proj_file_list *files = NULL, *dirs = NULL;
    proj_file *f = NULL;

    ck_assert_msg(proj_dir_create(&f, root, alice, p->id, "data/raw") == 0, "%s", ed_error_last());
    ck_assert_str_eq(f->path, "data/raw");
    ck_assert(is_dir_in(p->id, "data/raw"));
    ck_assert_int_eq(proj_tree_list(&files, &dirs, root, alice, p->id), 0);
    ck_assert_uint_eq(files->count, 0);
    ck_assert(listed(dirs, "data"));
    ck_assert(listed(dirs, "data/raw"));
    ck_assert(!listed(dirs, ".git"));
    for (size_t i = 0; i < dirs->count; i++)   /* nothing of .git */
        ck_assert_msg(strncmp(dirs->items[i].path, ".git", 4) != 0, "%s", dirs->items[i].path);
    proj_file_list_free(files);
    proj_file_list_free(dirs);
    proj_file_free(f);
    /* the old listing still lists files only */
    ck_assert_int_eq(proj_files_list(&files, root, alice, p->id), 0);
    ck_assert_uint_eq(files->count, 0);
    proj_file_list_free(files);
    proj_free(p);
}
END_TEST

START_TEST(new_folder_refuses_what_exists)
{
    proj *p = make(alice, "dirs", PROJ_PRIVATE);

    put(p->id, "a.txt", "a");
    ck_assert_int_eq(proj_dir_create(NULL, root, alice, p->id, "d"), 0);
    ck_assert_int_eq(proj_dir_create(NULL, root, alice, p->id, "d"), ED_EEXISTS);
    ck_assert_int_eq(proj_dir_create(NULL, root, alice, p->id, "a.txt"), ED_EEXISTS);
    ck_assert_int_eq(proj_dir_create(NULL, root, alice, p->id, "a.txt/sub"), ED_ECONFLICT);
    ck_assert_int_eq(proj_dir_create(NULL, root, alice, p->id, "x/../y"), ED_EINVAL);
    file_is(p->id, "a.txt", NULL, "a");
    proj_free(p);
}
END_TEST

START_TEST(folder_delete_is_recursive_and_keeps_links_targets)
{
    proj *p = make(alice, "rm", PROJ_PRIVATE);
    char outside[512], victim[600];

    snprintf(outside, sizeof(outside), "%s/outside", tmp);
    snprintf(victim, sizeof(victim), "%s/victim", outside);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    write_host(victim, "precious");
    put(p->id, "d/a.txt", "a");
    put(p->id, "d/sub/b.txt", "b");
    put(p->id, "keep.txt", "k");
    /* a kernel planted links to the outside inside the folder */
    ck_assert_int_eq(symlink(outside, host(p->id, "d/sub/dirlink")), 0);
    ck_assert_int_eq(symlink(victim, host(p->id, "d/filelink")), 0);
    ck_assert_msg(proj_dir_delete(root, alice, p->id, "d") == 0, "%s", ed_error_last());
    ck_assert(!exists_in(p->id, "d"));
    file_is(p->id, "keep.txt", NULL, "k");
    ck_assert_int_eq(count_entries(outside), 1);
    {
        FILE *f = fopen(victim, "r");
        char buf[32] = "";
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        fclose(f);
        ck_assert_str_eq(buf, "precious");
    }
    proj_free(p);
}
END_TEST

START_TEST(folder_delete_refuses_files_links_and_missing)
{
    proj *p = make(alice, "rm", PROJ_PRIVATE);
    char outside[512];

    snprintf(outside, sizeof(outside), "%s/outside", tmp);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    put(p->id, "a.txt", "a");
    ck_assert_int_eq(symlink(outside, host(p->id, "ln")), 0);
    ck_assert_int_eq(proj_dir_delete(root, alice, p->id, "a.txt"), ED_ENOTFOUND);
    ck_assert_int_eq(proj_dir_delete(root, alice, p->id, "nope"), ED_ENOTFOUND);
    ck_assert_int_eq(proj_dir_delete(root, alice, p->id, "ln"), ED_EINVAL);
    ck_assert_int_eq(proj_dir_delete(root, alice, p->id, "ln/sub"), ED_EINVAL);
    ck_assert_int_eq(proj_dir_delete(root, alice, p->id, ".git"), ED_EINVAL);
    ck_assert_int_eq(proj_dir_delete(root, alice, p->id, ""), ED_EINVAL);
    ck_assert(is_dir_in(p->id, ".git"));
    ck_assert(exists_in(p->id, "ln"));
    file_is(p->id, "a.txt", NULL, "a");
    proj_free(p);
}
END_TEST

START_TEST(move_keeps_the_project_size)
{
    proj *p = make(alice, "size", PROJ_PRIVATE), *after = NULL;
    int64_t before;

    put(p->id, "a.bin", "0123456789");
    ck_assert_int_eq(proj_get(&after, root, alice, p->id), 0);
    before = after->size_bytes;
    proj_free(after);
    ck_assert_int_eq(proj_file_move(NULL, NULL, root, alice, p->id, "a.bin", "d/a.bin"), 0);
    ck_assert_int_eq(proj_get(&after, root, alice, p->id), 0);
    ck_assert_int_eq(after->size_bytes, before);
    proj_free(after);
    ck_assert_int_eq(proj_dir_delete(root, alice, p->id, "d"), 0);
    ck_assert_int_eq(proj_get(&after, root, alice, p->id), 0);
    ck_assert_int_eq(after->size_bytes, before - 10);
    proj_free(after);
    proj_free(p);
}
END_TEST

/* ---- the race ------------------------------------------------------------------ */

typedef struct swapper {
    const char *id;
    char        outside[512];
    atomic_bool stop;
    long        swaps;
} swapper;

/* The "kernel": d is the real directory, then a link to the outside, then
 * the directory again, as fast as it can. A move or a new folder below d
 * that lands while d is away makes a fresh d; the kernel moves that one
 * aside (gone-N) to put its own back, so the race runs to the end. */
static void *swap_loop(void *arg)
{
    swapper *s = arg;
    char d[1024], real[1024], gone[1100];
    long n = 0;

    snprintf(d, sizeof(d), "%s", host(s->id, "d"));
    snprintf(real, sizeof(real), "%s", host(s->id, "d.real"));
    while (!atomic_load(&s->stop)) {
        if (rename(d, real) != 0)
            continue;
        if (symlink(s->outside, d) == 0) {
            sched_yield();
            unlink(d);
        }
        while (rename(real, d) != 0) {
            snprintf(gone, sizeof(gone), "%s/gone-%ld", host(s->id, ""), n++);
            rename(d, gone);
        }
        s->swaps++;
        sched_yield();
    }
    return NULL;
}

/* How many files of the project's tree are named `name` (at any depth). */
static int files_named(const char *id, const char *name)
{
    proj_file_list *l = NULL;
    int n = 0;

    ck_assert_int_eq(proj_files_list(&l, root, alice, id), 0);
    for (size_t i = 0; i < l->count; i++) {
        const char *slash = strrchr(l->items[i].path, '/');
        if (strcmp(slash ? slash + 1 : l->items[i].path, name) == 0)
            n++;
    }
    proj_file_list_free(l);
    return n;
}

START_TEST(racing_link_swaps_never_reach_outside_the_tree)
{
    proj *p = make(alice, "race", PROJ_PRIVATE);
    swapper s = {.id = p->id};
    pthread_t th;
    char victim[600], sub[600];
    int moved = 0, refused = 0;

    snprintf(s.outside, sizeof(s.outside), "%s/outside", tmp);
    ck_assert_int_eq(mkdir(s.outside, 0755), 0);
    snprintf(victim, sizeof(victim), "%s/f", s.outside);
    snprintf(sub, sizeof(sub), "%s/sub", s.outside);
    /* the outside holds the same names the loop works on */
    write_host(victim, "outside");
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    put(p->id, "d/f", "inside");
    put(p->id, "x", "x");
    atomic_init(&s.stop, false);
    ck_assert_int_eq(pthread_create(&th, NULL, swap_loop, &s), 0);
    for (int i = 0; i < 3000; i++) {
        int rc = proj_file_move(NULL, NULL, root, alice, p->id, "d/f", "d/g");
        if (rc == 0)
            moved++;
        else if (rc == ED_EINVAL || rc == ED_ENOTFOUND)
            refused++;   /* d was a link, or away, at that moment */
        proj_file_move(NULL, NULL, root, alice, p->id, "d/g", "d/f");
        proj_file_move(NULL, NULL, root, alice, p->id, "x", "d/x");
        proj_file_move(NULL, NULL, root, alice, p->id, "d/x", "x");
        proj_dir_create(NULL, root, alice, p->id, "d/sub");
        proj_dir_delete(root, alice, p->id, "d/sub");
        proj_dir_delete(root, alice, p->id, "d/f");    /* a file: refused */
    }
    atomic_store(&s.stop, true);
    pthread_join(th, NULL);
    /* outside: exactly f ("outside") and the empty sub, nothing else */
    ck_assert_int_eq(count_entries(s.outside), 2);
    ck_assert_int_eq(count_entries(sub), 0);
    {
        FILE *f = fopen(victim, "r");
        char buf[32] = "";
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        fclose(f);
        ck_assert_str_eq(buf, "outside");
    }
    /* inside: nothing lost */
    ck_assert(is_dir_in(p->id, "d"));
    ck_assert_int_eq(files_named(p->id, "f") + files_named(p->id, "g"), 1);
    ck_assert_int_eq(files_named(p->id, "x"), 1);
    ck_assert_msg(s.swaps > 0 && moved > 0 && refused > 0,
                  "swaps %ld, moves %d, refused %d: the race did not run", s.swaps, moved, refused);
    proj_free(p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("projects_tree_ops");
    TCase *tc = tcase_create("tree");

    tcase_add_checked_fixture(tc, proj_fixture_setup, proj_fixture_close);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, move_renames_a_file_keeping_its_bytes);
    tcase_add_test(tc, move_makes_missing_parents_of_the_target);
    tcase_add_test(tc, move_never_replaces_the_target);
    tcase_add_test(tc, move_of_a_missing_path_is_not_found);
    tcase_add_test(tc, move_checks_both_paths);
    tcase_add_test(tc, move_of_a_folder_takes_everything_in_it);
    tcase_add_test(tc, move_of_a_folder_into_itself_is_refused);
    tcase_add_test(tc, move_to_ipynb_must_be_a_notebook);
    tcase_add_test(tc, move_never_goes_through_a_link);
    tcase_add_test(tc, only_the_owner_changes_the_tree);
    tcase_add_test(tc, new_folder_is_listed_while_empty);
    tcase_add_test(tc, new_folder_refuses_what_exists);
    tcase_add_test(tc, folder_delete_is_recursive_and_keeps_links_targets);
    tcase_add_test(tc, folder_delete_refuses_files_links_and_missing);
    tcase_add_test(tc, move_keeps_the_project_size);
    tcase_add_test(tc, racing_link_swaps_never_reach_outside_the_tree);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return unit_run(suite());
}
