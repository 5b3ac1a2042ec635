/* Unit tests for the kernels module's invariants (kh_int.h): a kh__mutex
 * knows which thread holds it, every *_locked function aborts when its
 * caller does not hold the hub's lock, and a kernel's state only moves along
 * the state machine (lifecycle.c). Kernels running for real are tested over
 * HTTP in tests/integration/test_kernels.c, test_kernel_abuse.c,
 * test_jupyter.c and test_workspace*.c. */
#include "kh_int.h"

#include "ed_error.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* A hub with no scheduler, store or threads: enough for the lock and
 * state functions, which touch only its mutex, condition and list. */
static kh_hub *bare_hub(void)
{
    kh_hub *h = calloc(1, sizeof(*h));

    ck_assert_ptr_nonnull(h);
    kh__mutex_init(&h->mu);
    pthread_cond_init(&h->cv, NULL);
    return h;
}

static kh__k *bare_kernel(kh_hub *h, const char *state)
{
    kh__k *k = calloc(1, sizeof(*k));

    ck_assert_ptr_nonnull(k);
    k->hub = h;
    k->fd = -1;
    snprintf(k->id, sizeof(k->id), "%s", "00000000-0000-4000-8000-000000000000");
    snprintf(k->state, sizeof(k->state), "%s", state);
    return k;
}

static void *try_held(void *arg)
{
    return kh__held(arg) ? (void *)1 : NULL;
}

START_TEST(asserts_are_on)
{
#ifdef NDEBUG
    ck_abort_msg("NDEBUG is defined: asserts are off in the test build (configure with EDDY_ASSERTS=ON)");
#endif
}
END_TEST

START_TEST(mutex_knows_its_holder)
{
    kh__mutex mu;
    pthread_t t;
    void *other;

    kh__mutex_init(&mu);
    ck_assert(!kh__held(&mu));
    kh__lock(&mu);
    ck_assert(kh__held(&mu));
    ck_assert_int_eq(pthread_create(&t, NULL, try_held, &mu), 0);
    ck_assert_int_eq(pthread_join(t, &other), 0);
    ck_assert_ptr_null(other);   /* another thread does not hold it */
    kh__unlock(&mu);
    ck_assert(!kh__held(&mu));
    kh__mutex_destroy(&mu);
}
END_TEST

START_TEST(wait_releases_the_holder)
{
    kh_hub *h = bare_hub();
    struct timespec ts;

    kh__lock(&h->mu);
    clock_gettime(CLOCK_REALTIME, &ts);   /* already due: returns at once */
    ck_assert_int_eq(kh__wait_until(&h->cv, &h->mu, &ts), ETIMEDOUT);
    ck_assert(kh__held(&h->mu));          /* held again after the wait */
    kh__unlock(&h->mu);
    pthread_cond_destroy(&h->cv);
    kh__mutex_destroy(&h->mu);
    free(h);
}
END_TEST

START_TEST(locked_function_aborts_without_the_lock)
{
    kh_hub *h = bare_hub();

    kh__find_locked(h, "00000000-0000-4000-8000-000000000000");   /* h->mu not held: assert */
}
END_TEST

START_TEST(locked_function_runs_with_the_lock)
{
    kh_hub *h = bare_hub();
    kh__k *k = bare_kernel(h, "idle");

    h->list = k;
    kh__lock(&h->mu);
    ck_assert_ptr_eq(kh__find_locked(h, k->id), k);
    ck_assert_ptr_null(kh__find_locked(h, "00000000-0000-4000-8000-000000000001"));
    kh__unlock(&h->mu);
    free(k);
    free(h);
}
END_TEST

START_TEST(state_machine_allows_its_transitions)
{
    static const char *const path[] = {"starting", "idle", "busy", "idle", "starting", "queued", "starting",
                                       "busy", "starting", "idle"};
    kh_hub *h = bare_hub();
    kh__k *k = bare_kernel(h, "queued");

    kh__lock(&h->mu);
    for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
        kh__set_state_locked(k, path[i]);
        ck_assert_str_eq(k->state, path[i]);
    }
    ck_assert(kh__set_dead_locked(h, k, "shutdown"));
    ck_assert_str_eq(k->state, "dead");
    ck_assert_str_eq(k->stop_reason, "shutdown");
    ck_assert(!kh__set_dead_locked(h, k, "died"));   /* dead is final; the first reason stays */
    ck_assert_str_eq(k->stop_reason, "shutdown");
    kh__unlock(&h->mu);
    free(k);
    free(h);
}
END_TEST

START_TEST(state_machine_refuses_leaving_dead)
{
    kh_hub *h = bare_hub();
    kh__k *k = bare_kernel(h, "dead");

    kh__lock(&h->mu);
    kh__set_state_locked(k, "idle");   /* assert */
}
END_TEST

START_TEST(state_machine_refuses_queued_to_idle)
{
    kh_hub *h = bare_hub();
    kh__k *k = bare_kernel(h, "queued");

    kh__lock(&h->mu);
    kh__set_state_locked(k, "idle");   /* a queued kernel has no process to be idle: assert */
}
END_TEST

START_TEST(state_change_aborts_without_the_lock)
{
    kh_hub *h = bare_hub();
    kh__k *k = bare_kernel(h, "queued");

    kh__set_state_locked(k, "starting");   /* assert */
}
END_TEST

START_TEST(no_scheduler_no_hub)
{
    kh_config cfg;
    kh_hub *h = (kh_hub *)1;
    kh_kernel k;

    memset(&cfg, 0, sizeof(cfg));
    ck_assert_int_eq(kh_hub_start(&h, &cfg), 0);
    ck_assert_ptr_null(h);
    ck_assert_int_eq(kh_kernel_get(&k, NULL, 1, "00000000-0000-4000-8000-000000000000"), ED_ENOTFOUND);
    ck_assert_int_eq(kh_kernel_start(&k, NULL, 1, "free", "p", "cpu"), ED_EUNPROC);
    ck_assert_int_eq(kh_kernel_shutdown(NULL, 1, "00000000-0000-4000-8000-000000000000", NULL), ED_ENOTFOUND);
    kh_hub_stop(NULL);
}
END_TEST

static Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("invariants");

    tcase_add_test(tc, asserts_are_on);
    tcase_add_test(tc, mutex_knows_its_holder);
    tcase_add_test(tc, wait_releases_the_holder);
    tcase_add_test_raise_signal(tc, locked_function_aborts_without_the_lock, SIGABRT);
    tcase_add_test(tc, locked_function_runs_with_the_lock);
    tcase_add_test(tc, state_machine_allows_its_transitions);
    tcase_add_test_raise_signal(tc, state_machine_refuses_leaving_dead, SIGABRT);
    tcase_add_test_raise_signal(tc, state_machine_refuses_queued_to_idle, SIGABRT);
    tcase_add_test_raise_signal(tc, state_change_aborts_without_the_lock, SIGABRT);
    tcase_add_test(tc, no_scheduler_no_hub);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(kernels_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
