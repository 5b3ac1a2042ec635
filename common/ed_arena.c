#include "ed_arena.h"
#include "ed_error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 16

typedef struct block {
    struct block *next;
    size_t        used, size;
    _Alignas(ALIGN) unsigned char data[];
} block;

typedef struct cleanup {
    struct cleanup *next;
    ed_cleanup_fn   fn;
    void           *payload;
} cleanup;

struct ed_arena {
    block   *head;
    cleanup *cleanups;
    size_t   block_size;
};

static block *block_new(size_t size)
{
    block *b = malloc(sizeof(*b) + size);

    if (b == NULL)
        return NULL;
    b->next = NULL;
    b->used = 0;
    b->size = size;
    return b;
}

ed_arena *ed_arena_new(size_t block_size)
{
    ed_arena *a = calloc(1, sizeof(*a));

    if (a == NULL)
        return NULL;
    a->block_size = block_size ? block_size : 8192;
    return a;
}

void ed_arena_free(ed_arena *a)
{
    if (a == NULL)
        return;
    while (a->cleanups) {
        cleanup *c = a->cleanups;
        a->cleanups = c->next;
        c->fn(c->payload);
        free(c);
    }
    while (a->head) {
        block *b = a->head;
        a->head = b->next;
        free(b);
    }
    free(a);
}

void *ed_arena_alloc(ed_arena *a, size_t n)
{
    block *b;

    if (n == 0)
        n = 1;
#ifdef ED_ARENA_MALLOC
    /* One block per allocation: ASan can see each one's bounds. */
    if ((b = block_new(n)) == NULL)
        return NULL;
    b->used = n;
    b->next = a->head;
    a->head = b;
    return b->data;
#else
    b = a->head;
    if (b) {
        size_t off = (b->used + ALIGN - 1) & ~(size_t)(ALIGN - 1);
        if (off + n <= b->size) {
            b->used = off + n;
            return b->data + off;
        }
    }
    if (n > a->block_size / 2) {
        /* Large allocations get their own block behind the current head, so
         * the head's free space is not wasted. */
        block *big = block_new(n);
        if (big == NULL)
            return NULL;
        big->used = n;
        if (b) {
            big->next = b->next;
            b->next = big;
        } else {
            a->head = big;
        }
        return big->data;
    }
    if ((b = block_new(a->block_size)) == NULL)
        return NULL;
    b->next = a->head;
    a->head = b;
    b->used = n;
    return b->data;
#endif
}

void *ed_arena_calloc(ed_arena *a, size_t count, size_t size)
{
    void *p;

    if (size && count > SIZE_MAX / size)
        return NULL;
    if ((p = ed_arena_alloc(a, count * size)) != NULL)
        memset(p, 0, count * size);
    return p;
}

char *ed_arena_strndup(ed_arena *a, const char *s, size_t n)
{
    char *p = ed_arena_alloc(a, n + 1);

    if (p == NULL)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *ed_arena_strdup(ed_arena *a, const char *s)
{
    return ed_arena_strndup(a, s, strlen(s));
}

char *ed_arena_printf(ed_arena *a, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *p;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || (p = ed_arena_alloc(a, (size_t)n + 1)) == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

int ed_arena_on_free(ed_arena *a, ed_cleanup_fn fn, void *payload)
{
    cleanup *c = malloc(sizeof(*c));

    if (c == NULL)
        return ed_error_set(ED_ENOMEM, "arena cleanup hook");
    c->fn = fn;
    c->payload = payload;
    c->next = a->cleanups;
    a->cleanups = c;
    return 0;
}
