/*
 * ed_arena.h - a memory pool whose allocations end together (nginx's palloc).
 *
 * One arena per HTTP request: the parsed URL, headers and JSON live in it and
 * are freed at once by ed_arena_free(). Cleanup hooks release non-memory
 * resources (a json_t, a file descriptor) at the same moment, in reverse order
 * of registration.
 *
 * Built with ED_ARENA_MALLOC (the asan preset), every allocation is a separate
 * malloc so AddressSanitizer sees overflows between them.
 *
 *     ed_arena *a = ed_arena_new(4096);
 *     char *s = ed_arena_strdup(a, "hello");
 *     ed_arena_on_free(a, (ed_cleanup_fn)json_decref, doc);
 *     ed_arena_free(a);     // frees s and decrefs doc
 */
#ifndef ED_ARENA_H
#define ED_ARENA_H

#include <stddef.h>

typedef struct ed_arena ed_arena;
typedef void (*ed_cleanup_fn)(void *payload);

/* A new arena whose first block holds `block_size` bytes (0: a default).
 * NULL when out of memory. Free with ed_arena_free(). */
ed_arena *ed_arena_new(size_t block_size);
/* Free every allocation and run the cleanup hooks (last registered first).
 * NULL-safe. */
void ed_arena_free(ed_arena *a);

/* `n` bytes aligned for any type, or NULL when out of memory. Never freed
 * individually. */
void *ed_arena_alloc(ed_arena *a, size_t n);
void *ed_arena_calloc(ed_arena *a, size_t count, size_t size);
char *ed_arena_strdup(ed_arena *a, const char *s);
char *ed_arena_strndup(ed_arena *a, const char *s, size_t n);
char *ed_arena_printf(ed_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Run `fn(payload)` when the arena is freed. 0 or ED_ENOMEM (in which case
 * fn is NOT called later; the caller still owns payload). */
int ed_arena_on_free(ed_arena *a, ed_cleanup_fn fn, void *payload);

#endif
