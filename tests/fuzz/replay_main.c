/*
 * replay_main.c - run a fuzz target over committed inputs without libFuzzer.
 *
 *     fuzz_json CORPUS_DIR_OR_FILE...
 *
 * Every regular file named (directories are read one level deep, in name
 * order) is read into a buffer of exactly its size, so AddressSanitizer (in
 * the asan preset) sees any read past the end, and passed to
 * LLVMFuzzerTestOneInput. A crash fails the test; so does an empty corpus,
 * because a replay of nothing checks nothing.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long len;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    /* malloc(0) may return NULL: allocate at least one byte, pass len. */
    if ((buf = malloc(len > 0 ? (size_t)len : 1)) == NULL ||
        fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "replay: %s: read failed\n", path);
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    fprintf(stderr, "replay: %s (%ld bytes)\n", path, len);
    LLVMFuzzerTestOneInput(buf, (size_t)len);
    free(buf);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run every regular file in `dir`; *count gets how many ran. */
static int run_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    if (d == NULL) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*names));
            if (nn == NULL)
                abort();
            names = nn;
        }
        if ((names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2)) == NULL)
            abort();
        sprintf(names[n++], "%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_names);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(names[i]) < 0)
                rc = -1;
            else
                (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int count = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        if (S_ISDIR(st.st_mode) ? run_dir(argv[i], &count) < 0
                                : (run_file(argv[i]) < 0 || (count++, 0)))
            return 1;
    }
    if (count == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    fprintf(stderr, "replay: %d inputs ran without a crash\n", count);
    return 0;
}
