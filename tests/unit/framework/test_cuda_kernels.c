/* The CUDA backend's kernels against the CPU backend's, table entry by
 * table entry (framework/cuda/: copy.cu, elementwise.cu, unary.cu,
 * reduce.cu, index.cu, sort.cu, optim.cu, philox.cu): the same inputs on
 * contiguous, strided and broadcast layouts go through both tables and the
 * outputs are compared. Copies, casts, fills, integer math, data movement,
 * arg max/min, sort and the Philox bits (uniform, bernoulli, randint,
 * randperm) must be bit-identical; float32 math within 1e-5 relative,
 * float64 within 1e-12, float16/bfloat16 (which only the GPU computes)
 * within 1e-2 / 2e-2 of the CPU's float32 result rounded.
 * Without a usable device it exits 77 ("no CUDA device: <reason>"), which
 * CTest reports as skipped. No Check fork mode: CUDA does not survive fork(). */
#include "gradcheck.h"

#include "fw_backend.h"
#include "fw_backend_index.h"
#include "fw_backend_optim.h"
#include "fw_backend_random.h"
#include "fw_int.h"

#include "fw/device.h"
#include "fw/random.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const fw_backend *cpu, *gpu;

/* ---- buffers: a host copy (the CPU's) and a device copy (the GPU's) ------------------ */

typedef struct buf {
    void *h, *d;
    size_t n;
} buf;

static buf bfrom(const void *src, size_t n)
{
    buf b = {calloc(1, n ? n : 1), gpu->alloc(n ? n : 1), n};
    ck_assert(b.h != NULL && b.d != NULL);
    if (src != NULL)
        memcpy(b.h, src, n);
    ck_assert_msg(gpu->copy(b.d, FW_CUDA, b.h, FW_CPU, n) == 0, "upload: %s", fw_error_last());
    return b;
}

static buf bnew(size_t n) { return bfrom(NULL, n); }

/* The device copy, downloaded (caller frees). */
static void *bget(const buf *b)
{
    void *h = malloc(b->n ? b->n : 1);
    ck_assert(h != NULL);
    ck_assert_msg(gpu->copy(h, FW_CPU, b->d, FW_CUDA, b->n) == 0, "download: %s", fw_error_last());
    return h;
}

static void bfree(buf *b)
{
    free(b->h);
    gpu->free(b->d, b->n ? b->n : 1);
    b->h = b->d = NULL;
}

/* ---- data ------------------------------------------------------------------------------ */

static uint64_t rnd_state = 88172645463325252ULL;

static uint64_t rbits(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* uniform in [lo, hi) */
static double urand(double lo, double hi)
{
    return lo + (hi - lo) * ((double)(rbits() >> 11) / 9007199254740992.0);
}

static bool is_float(fw_dtype dt)
{
    return dt == FW_FLOAT32 || dt == FW_FLOAT64 || dt == FW_FLOAT16 || dt == FW_BFLOAT16;
}

static size_t esz(fw_dtype dt) { return fw_dtype_size(dt); }

/* n elements of dt in [lo, hi) (ints: rounded; bool: 0/1; complex: both
 * parts); `specials` mixes in NaN, infinities, -0.0 and range edges. */
static void *gen(fw_dtype dt, int64_t n, double lo, double hi, bool specials)
{
    static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0, 1e10, -1e10, 300.7, -300.7,
                                65519.0, 65520.0, 1e-8, 2.5, -2.5, 3e9, -3e9, 255.5};
    size_t es = esz(dt);
    char *p = calloc((size_t)(n ? n : 1), es);
    ck_assert(p != NULL);
    for (int64_t i = 0; i < n; i++) {
        double v = urand(lo, hi);
        if (specials && rbits() % 5 == 0)
            v = sp[rbits() % (sizeof(sp) / sizeof(sp[0]))];
        if (dt == FW_BOOL) {
            p[i] = rbits() & 1;
        } else if (dt == FW_INT64 && specials && rbits() % 7 == 0) {
            ((int64_t *)p)[i] = (int64_t)rbits();     /* beyond float precision */
        } else if (fw_dtype_is_complex(dt)) {
            fw__store_double(p + (size_t)i * es, dt, v);
            if (dt == FW_COMPLEX64)
                ((float *)p)[2 * i + 1] = (float)urand(lo, hi);
            else
                ((double *)p)[2 * i + 1] = urand(lo, hi);
        } else if (!is_float(dt)) {
            fw__store_double(p + (size_t)i * es, dt, v != v || isinf(v) ? 7 : floor(v));
        } else {
            fw__store_double(p + (size_t)i * es, dt, v);
        }
    }
    return p;
}

/* Element i as a double (complex: part i of the 2n floats). */
static double ld(const void *p, fw_dtype dt, int64_t i)
{
    switch (dt) {
    case FW_FLOAT32: case FW_COMPLEX64: return ((const float *)p)[i];
    case FW_FLOAT64: case FW_COMPLEX128: return ((const double *)p)[i];
    case FW_FLOAT16: return fw_half_to_float(((const uint16_t *)p)[i]);
    case FW_BFLOAT16: return fw_bf16_to_float(((const uint16_t *)p)[i]);
    case FW_INT32: return ((const int32_t *)p)[i];
    case FW_INT64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* cpu vs gpu over n elements: NaN matches NaN, else |a-b| <= atol +
 * rtol*max(|a|,|b|); rtol = atol = 0 asks for the same bytes. */
static void expect_close(const void *c, const void *g, fw_dtype dt, int64_t n, double rtol,
                         double atol, const char *what)
{
    if (rtol == 0 && atol == 0) {
        const char *a = c, *b = g;
        for (size_t k = 0; k < (size_t)n * esz(dt); k++)
            ck_assert_msg(a[k] == b[k], "%s (%s): byte %zu differs (element %zu): cpu %g gpu %g",
                          what, fw_dtype_name(dt), k, k / esz(dt),
                          ld(c, dt, (int64_t)(k / esz(dt))), ld(g, dt, (int64_t)(k / esz(dt))));
        return;
    }
    if (fw_dtype_is_complex(dt))
        n *= 2;
    for (int64_t i = 0; i < n; i++) {
        double a = ld(c, dt, i), b = ld(g, dt, i);
        if ((a != a && b != b) || a == b)
            continue;
        double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
        ck_assert_msg(fabs(a - b) <= atol + rtol * m, "%s (%s): element %lld: cpu %.17g gpu %.17g",
                      what, fw_dtype_name(dt), (long long)i, a, b);
    }
}

static double rtol_of(fw_dtype dt)
{
    return dt == FW_FLOAT32 ? 1e-5 : dt == FW_FLOAT64 ? 1e-12 : dt == FW_FLOAT16 ? 1e-2
         : dt == FW_BFLOAT16 ? 2e-2 : 0;
}

static fw_kview kv(void *data, fw_dtype dt, int nd, const int64_t *shape, const int64_t *st)
{
    fw_kview v;
    memset(&v, 0, sizeof(v));
    v.data = data;
    v.dtype = dt;
    v.ndim = nd;
    for (int i = 0; i < nd; i++) {
        v.shape[i] = shape[i];
        v.strides[i] = st[i];
    }
    return v;
}

static void contig(int64_t *st, const int64_t *shape, int nd)
{
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = s;
        s *= shape[i];
    }
}

static int64_t numel(const int64_t *shape, int nd)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= shape[i];
    return n;
}

/* ---- copy / cast / fill --------------------------------------------------------------- */

/* Source layouts over the common shape (3, 5, 7): contiguous, transposed
 * (a (7, 5, 3) buffer read backwards in dims), broadcast (stride 0 on dim 1). */
static const int64_t cshape[3] = {3, 5, 7};
static const int64_t src_st[3][3] = {{35, 7, 1}, {1, 3, 15}, {7, 0, 1}};
static const int64_t src_len[3] = {105, 105, 21};
static const char *const src_name[3] = {"contiguous", "transposed", "broadcast"};

START_TEST(copy_casts_between_every_dtype_pair_bit_exact)
{
    for (int sdt = 0; sdt < FW_NDTYPES; sdt++)
        for (int ddt = 0; ddt < FW_NDTYPES; ddt++)
            for (int lay = 0; lay < 3; lay++)
                for (int dstrided = 0; dstrided < 2; dstrided++) {
                    char what[96];
                    void *src = gen((fw_dtype)sdt, src_len[lay], -400, 400, true);
                    buf s = bfrom(src, (size_t)src_len[lay] * esz((fw_dtype)sdt));
                    /* dst: contiguous, or every other element of a 2x buffer */
                    int64_t dst_st[3] = {70, 14, 2}, dn = 210;
                    if (!dstrided) {
                        contig(dst_st, cshape, 3);
                        dn = 105;
                    }
                    buf d = bnew((size_t)dn * esz((fw_dtype)ddt));
                    fw_kview sv = kv(s.h, (fw_dtype)sdt, 3, cshape, src_st[lay]);
                    fw_kview dv = kv(d.h, (fw_dtype)ddt, 3, cshape, dst_st);
                    ck_assert_int_eq(cpu->copy_strided(&dv, &sv), 0);
                    sv.data = s.d;
                    dv.data = d.d;
                    ck_assert_msg(gpu->copy_strided(&dv, &sv) == 0, "%s", fw_error_last());
                    void *g = bget(&d);
                    snprintf(what, sizeof(what), "copy %s -> %s, %s source%s",
                             fw_dtype_name((fw_dtype)sdt), fw_dtype_name((fw_dtype)ddt),
                             src_name[lay], dstrided ? ", strided dst" : "");
                    expect_close(d.h, g, (fw_dtype)ddt, dn, 0, 0, what);
                    free(g);
                    free(src);
                    bfree(&s);
                    bfree(&d);
                }
}
END_TEST

START_TEST(fill_writes_the_cpu_bytes_for_every_dtype)
{
    static const double vals[] = {0, 1.5, -3.7, 1e10, -1e10, NAN, 300, -0.0, 3e9, 65520};
    for (int dt = 0; dt < FW_NDTYPES; dt++)
        for (size_t k = 0; k < sizeof(vals) / sizeof(vals[0]); k++)
            for (int strided = 0; strided < 2; strided++) {
                int64_t shape[2] = {9, 13}, st[2] = {26, 2}, n = 234;
                if (!strided) {
                    contig(st, shape, 2);
                    n = 117;
                }
                buf d = bnew((size_t)n * esz((fw_dtype)dt));
                fw_kview v = kv(d.h, (fw_dtype)dt, 2, shape, st);
                ck_assert_int_eq(cpu->fill(&v, vals[k]), 0);
                v.data = d.d;
                ck_assert_msg(gpu->fill(&v, vals[k]) == 0, "%s", fw_error_last());
                void *g = bget(&d);
                char what[64];
                snprintf(what, sizeof(what), "fill %g%s", vals[k], strided ? " strided" : "");
                expect_close(d.h, g, (fw_dtype)dt, n, 0, 0, what);
                free(g);
                bfree(&d);
            }
}
END_TEST

/* ---- binary ---------------------------------------------------------------------------- */

/* out (6, 50) = a op b over four layouts of a and b. */
static void binary_case(fw_binop op, fw_dtype dt, int lay)
{
    int64_t shape[2] = {6, 50}, ost[2] = {50, 1};
    int64_t ast[2] = {50, 1}, bst[2] = {50, 1}, an = 300, bn = 300;
    switch (lay) {
    case 1: ast[1] = 0; ast[0] = 1; an = 6; bst[0] = 0; bst[1] = 1; bn = 50; break; /* (6,1)x(1,50) */
    case 2: ast[0] = 1; ast[1] = 6; break;                                          /* a transposed */
    case 3: bst[0] = bst[1] = 0; bn = 1; break;                                     /* b a scalar */
    default: break;
    }
    bool intdiv = !is_float(dt) && (op == FW_BIN_FLOORDIV || op == FW_BIN_MOD);
    bool pow_op = op == FW_BIN_POW || op == FW_BIN_POW_GRAD_A || op == FW_BIN_POW_GRAD_B;
    void *ah = gen(dt, an, pow_op ? 0.1 : -20, pow_op ? 3 : 20, false);
    void *bh = gen(dt, bn, pow_op ? -2 : -20, pow_op ? 2.5 : 20, false);
    if (intdiv)                       /* the op checks divisors: none is 0 here */
        for (int64_t i = 0; i < bn; i++)
            if (ld(bh, dt, i) == 0)
                fw__store_double((char *)bh + (size_t)i * esz(dt), dt, 3);
    bool cmp = op >= FW_BIN_EQ && op <= FW_BIN_XOR;
    fw_dtype odt = cmp ? FW_BOOL : dt;
    buf a = bfrom(ah, (size_t)an * esz(dt)), b = bfrom(bh, (size_t)bn * esz(dt));
    buf o = bnew(300 * esz(odt));
    fw_kview ov = kv(o.h, odt, 2, shape, ost), av = kv(a.h, dt, 2, shape, ast),
             bv = kv(b.h, dt, 2, shape, bst);
    int rc = cpu->binary(op, &ov, &av, &bv);
    ov.data = o.d;
    av.data = a.d;
    bv.data = b.d;
    int rg = gpu->binary(op, &ov, &av, &bv);
    char what[64];
    snprintf(what, sizeof(what), "binary op %d layout %d", (int)op, lay);
    ck_assert_msg((rc < 0) == (rg < 0), "%s: cpu rc %d gpu rc %d", what, rc, rg);
    if (rc == 0) {
        void *g = bget(&o);
        expect_close(o.h, g, odt, 300, rtol_of(odt), odt == FW_FLOAT32 ? 1e-6 : 0, what);
        free(g);
    }
    free(ah);
    free(bh);
    bfree(&a);
    bfree(&b);
    bfree(&o);
}

START_TEST(binary_ops_match_cpu_on_contiguous_broadcast_and_strided_inputs)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_INT32, FW_INT64, FW_UINT8, FW_BOOL};
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
        for (int op = 0; op < FW_BIN_COUNT; op++)
            for (int lay = 0; lay < 4; lay++)
                binary_case((fw_binop)op, dts[d], lay);
}
END_TEST

/* float16/bfloat16: the GPU computes in float and rounds; the CPU reference
 * is its float32 kernel on the same (exactly widened) values, rounded. */
START_TEST(binary_half_and_bfloat16_within_tolerance)
{
    static const fw_binop ops[] = {FW_BIN_ADD, FW_BIN_SUB, FW_BIN_MUL, FW_BIN_DIV, FW_BIN_MAX,
                                   FW_BIN_MIN, FW_BIN_POW, FW_BIN_FLOORDIV, FW_BIN_MOD};
    int64_t shape[1] = {1000}, st[1] = {1};
    for (int h = 0; h < 2; h++) {
        fw_dtype dt = h ? FW_BFLOAT16 : FW_FLOAT16;
        for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
            bool pw = ops[k] == FW_BIN_POW;
            void *ah = gen(dt, 1000, pw ? 0.1 : -8, pw ? 3 : 8, false);
            void *bh = gen(dt, 1000, pw ? -2 : 0.5, pw ? 2 : 8, false);
            float *af = malloc(4000), *bf = malloc(4000), *of = malloc(4000);
            uint16_t *want = malloc(2000);
            for (int i = 0; i < 1000; i++) {
                af[i] = (float)ld(ah, dt, i);
                bf[i] = (float)ld(bh, dt, i);
            }
            fw_kview ov = kv(of, FW_FLOAT32, 1, shape, st), av = kv(af, FW_FLOAT32, 1, shape, st),
                     bv = kv(bf, FW_FLOAT32, 1, shape, st);
            ck_assert_int_eq(cpu->binary(ops[k], &ov, &av, &bv), 0);
            for (int i = 0; i < 1000; i++)
                want[i] = h ? fw_float_to_bf16(of[i]) : fw_float_to_half(of[i]);
            buf a = bfrom(ah, 2000), b = bfrom(bh, 2000), o = bnew(2000);
            ov = kv(o.d, dt, 1, shape, st);
            av = kv(a.d, dt, 1, shape, st);
            bv = kv(b.d, dt, 1, shape, st);
            ck_assert_msg(gpu->binary(ops[k], &ov, &av, &bv) == 0, "%s", fw_error_last());
            void *g = bget(&o);
            expect_close(want, g, dt, 1000, rtol_of(dt), 1e-3, "binary 16-bit");
            free(g);
            free(ah);
            free(bh);
            free(af);
            free(bf);
            free(of);
            free(want);
            bfree(&a);
            bfree(&b);
            bfree(&o);
        }
    }
}
END_TEST

/* ---- unary ------------------------------------------------------------------------------ */

/* A domain where op is defined and well conditioned, and its alpha. */
static void unary_domain(fw_unop op, double *lo, double *hi, double *alpha)
{
    *lo = -4;
    *hi = 4;
    *alpha = 0;
    switch (op) {
    case FW_UN_LOG: case FW_UN_SQRT: case FW_UN_RSQRT: case FW_UN_LOG2: case FW_UN_LOG10:
    case FW_UN_RECIPROCAL:
        *lo = 0.1;
        break;
    case FW_UN_LOG1P: *lo = -0.9; break;
    case FW_UN_LEAKY_RELU: *alpha = 0.1; break;
    case FW_UN_POW: *lo = 0.1; *alpha = 1.7; break;
    case FW_UN_RPOW: *alpha = 2.5; break;
    default: break;
    }
}

START_TEST(unary_ops_and_their_grads_match_cpu)
{
    const int64_t n = 1001;
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = d ? FW_FLOAT64 : FW_FLOAT32;
        size_t bytes = (size_t)n * esz(dt);
        for (int op = 0; op < FW_UN_COUNT; op++) {
            if (op == FW_UN_NOT)
                continue;
            for (int sq = 0; sq < (op == FW_UN_POW ? 2 : 1); sq++) {
                double lo, hi, alpha;
                char what[64];
                unary_domain((fw_unop)op, &lo, &hi, &alpha);
                if (sq)
                    alpha = 2.0;    /* x ** 2 takes its own path */
                void *xh = gen(dt, n, lo, hi, false), *gyh = gen(dt, n, -1, 1, false);
                buf x = bfrom(xh, bytes), gy = bfrom(gyh, bytes), y = bnew(bytes),
                    gx = bnew(bytes);
                ck_assert_int_eq(cpu->unary((fw_unop)op, y.h, x.h, n, dt, alpha), 0);
                ck_assert_msg(gpu->unary((fw_unop)op, y.d, x.d, n, dt, alpha) == 0, "%s",
                              fw_error_last());
                void *g = bget(&y);
                snprintf(what, sizeof(what), "unary %d alpha %g", op, alpha);
                expect_close(y.h, g, dt, n, rtol_of(dt), d ? 1e-14 : 1e-6, what);
                free(g);
                /* the backward of both from the CPU's y */
                buf yc = bfrom(y.h, bytes);
                ck_assert_int_eq(cpu->unary_grad((fw_unop)op, gx.h, gy.h, x.h, y.h, n, dt, alpha),
                                 0);
                ck_assert_msg(gpu->unary_grad((fw_unop)op, gx.d, gy.d, x.d, yc.d, n, dt, alpha) ==
                              0, "%s", fw_error_last());
                g = bget(&gx);
                snprintf(what, sizeof(what), "unary grad %d alpha %g", op, alpha);
                expect_close(gx.h, g, dt, n, rtol_of(dt), d ? 1e-14 : 1e-6, what);
                free(g);
                free(xh);
                free(gyh);
                bfree(&x);
                bfree(&gy);
                bfree(&y);
                bfree(&gx);
                bfree(&yc);
            }
        }
    }
}
END_TEST

START_TEST(unary_integer_and_logical_not_bit_exact)
{
    static const fw_unop iops[] = {FW_UN_ABS, FW_UN_NEG, FW_UN_SQUARE, FW_UN_SIGN};
    const int64_t n = 777;
    for (int dt = 0; dt < FW_NDTYPES; dt++) {
        if (fw_dtype_is_complex((fw_dtype)dt))
            continue;
        void *xh = gen((fw_dtype)dt, n, -50000, 50000, true);
        buf x = bfrom(xh, (size_t)n * esz((fw_dtype)dt)), o = bnew((size_t)n * 8);
        ck_assert_int_eq(cpu->unary(FW_UN_NOT, o.h, x.h, n, (fw_dtype)dt, 0), 0);
        ck_assert_msg(gpu->unary(FW_UN_NOT, o.d, x.d, n, (fw_dtype)dt, 0) == 0, "%s",
                      fw_error_last());
        void *g = bget(&o);
        expect_close(o.h, g, FW_BOOL, n, 0, 0, "logical not");
        free(g);
        if (dt == FW_INT32 || dt == FW_INT64)
            for (size_t k = 0; k < sizeof(iops) / sizeof(iops[0]); k++) {
                ck_assert_int_eq(cpu->unary(iops[k], o.h, x.h, n, (fw_dtype)dt, 0), 0);
                ck_assert_msg(gpu->unary(iops[k], o.d, x.d, n, (fw_dtype)dt, 0) == 0, "%s",
                              fw_error_last());
                g = bget(&o);
                expect_close(o.h, g, (fw_dtype)dt, n, 0, 0, "integer unary");
                free(g);
            }
        free(xh);
        bfree(&x);
        bfree(&o);
    }
}
END_TEST

START_TEST(unary_half_and_bfloat16_within_tolerance)
{
    static const fw_unop ops[] = {FW_UN_EXP, FW_UN_TANH, FW_UN_SIGMOID, FW_UN_RELU, FW_UN_GELU,
                                  FW_UN_GELU_TANH, FW_UN_SILU, FW_UN_SQUARE, FW_UN_ROUND};
    const int64_t n = 1000;
    for (int h = 0; h < 2; h++) {
        fw_dtype dt = h ? FW_BFLOAT16 : FW_FLOAT16;
        for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
            void *xh = gen(dt, n, -3, 3, false), *gyh = gen(dt, n, -1, 1, false);
            float *xf = malloc(4000), *gyf = malloc(4000), *yf = malloc(4000), *gxf = malloc(4000);
            uint16_t *want = malloc(2000), *wantg = malloc(2000);
            for (int i = 0; i < n; i++) {
                xf[i] = (float)ld(xh, dt, i);
                gyf[i] = (float)ld(gyh, dt, i);
            }
            ck_assert_int_eq(cpu->unary(ops[k], yf, xf, n, FW_FLOAT32, 0), 0);
            ck_assert_int_eq(cpu->unary_grad(ops[k], gxf, gyf, xf, yf, n, FW_FLOAT32, 0), 0);
            for (int i = 0; i < n; i++) {
                want[i] = h ? fw_float_to_bf16(yf[i]) : fw_float_to_half(yf[i]);
                wantg[i] = h ? fw_float_to_bf16(gxf[i]) : fw_float_to_half(gxf[i]);
            }
            buf x = bfrom(xh, 2000), gy = bfrom(gyh, 2000), y = bnew(2000), gx = bnew(2000);
            ck_assert_msg(gpu->unary(ops[k], y.d, x.d, n, dt, 0) == 0, "%s", fw_error_last());
            void *g = bget(&y);
            expect_close(want, g, dt, n, rtol_of(dt), 1e-2, "unary 16-bit");
            free(g);
            /* the grad from the GPU's own y (rounded), as a 16-bit backward would */
            ck_assert_msg(gpu->unary_grad(ops[k], gx.d, gy.d, x.d, y.d, n, dt, 0) == 0, "%s",
                          fw_error_last());
            g = bget(&gx);
            expect_close(wantg, g, dt, n, 2 * rtol_of(dt), 2e-2, "unary grad 16-bit");
            free(g);
            free(xh);
            free(gyh);
            free(xf);
            free(gyf);
            free(yf);
            free(gxf);
            free(want);
            free(wantg);
            bfree(&x);
            bfree(&gy);
            bfree(&y);
            bfree(&gx);
        }
    }
}
END_TEST

/* ---- reductions ------------------------------------------------------------------------- */

static fw_dtype red_out_dtype(fw_redop op, fw_dtype dt)
{
    if ((op == FW_RED_SUM || op == FW_RED_PROD) && !is_float(dt))
        return FW_INT64;
    return dt;
}

/* x (shape, strides st over a buffer of xn elements) reduced over mask. */
static void reduce_case(fw_redop op, fw_dtype dt, int nd, const int64_t *shape,
                        const int64_t *st, int64_t xn, unsigned mask, bool keep, bool nans)
{
    int64_t oshape[FW_MAX_DIMS], ost[FW_MAX_DIMS];
    int ond = 0;
    for (int i = 0; i < nd; i++) {
        if (mask & (1u << i)) {
            if (keep)
                oshape[ond++] = 1;
        } else {
            oshape[ond++] = shape[i];
        }
    }
    contig(ost, oshape, ond);
    int64_t on = numel(oshape, ond);
    fw_dtype odt = red_out_dtype(op, dt);
    double lo = op == FW_RED_PROD ? 0.9 : 0, hi = op == FW_RED_PROD ? 1.1 : 1;
    if (!is_float(dt)) {
        lo = op == FW_RED_PROD ? 1 : -100;
        hi = op == FW_RED_PROD ? 2.5 : 200;
    }
    if (op == FW_RED_MAX || op == FW_RED_MIN)
        lo = -hi;
    void *xh = gen(dt, xn, lo, hi, false);
    if (nans)
        for (int64_t i = 0; i < xn; i += 97)
            fw__store_double((char *)xh + (size_t)i * esz(dt), dt, NAN);
    buf x = bfrom(xh, (size_t)xn * esz(dt)), o = bnew((size_t)(on ? on : 1) * esz(odt));
    fw_kview ov = kv(o.h, odt, ond, oshape, ost), xv = kv(x.h, dt, nd, shape, st);
    ck_assert_int_eq(cpu->reduce(op, &ov, &xv, mask), 0);
    ov.data = o.d;
    xv.data = x.d;
    ck_assert_msg(gpu->reduce(op, &ov, &xv, mask) == 0, "%s", fw_error_last());
    void *g = bget(&o);
    char what[96];
    snprintf(what, sizeof(what), "reduce op %d mask %#x keep %d ndim %d (%lld x ...)", (int)op,
             mask, keep, nd, (long long)shape[0]);
    expect_close(o.h, g, odt, on, rtol_of(odt), 0, what);
    free(g);
    free(xh);
    bfree(&x);
    bfree(&o);
}

START_TEST(reductions_match_cpu_over_every_axis_mask)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_INT32, FW_INT64, FW_UINT8, FW_BOOL};
    int64_t shape[3] = {4, 5, 33}, st[3], tst[3] = {1, 4, 20};
    contig(st, shape, 3);
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
        for (int op = 0; op < FW_RED_COUNT; op++)
            for (unsigned mask = 0; mask < 8; mask++)
                for (int keep = 0; keep < 2; keep++) {
                    reduce_case((fw_redop)op, dts[d], 3, shape, st, 660, mask, keep, false);
                    /* x transposed: dims (4, 5, 33) read from a (33, 5, 4) buffer */
                    reduce_case((fw_redop)op, dts[d], 3, shape, tst, 660, mask, keep, false);
                }
}
END_TEST

START_TEST(reductions_large_rows_columns_nan_and_empty)
{
    int64_t rows[2] = {3, 70000}, rst[2] = {70000, 1};
    int64_t cols[2] = {70000, 3}, cst[2] = {3, 1};
    int64_t flat[1] = {1 << 20}, fst[1] = {1};
    int64_t small[2] = {8, 257}, sst[2] = {257, 1};
    int64_t empty[2] = {0, 5}, est[2] = {5, 1};
    for (int op = 0; op < FW_RED_COUNT; op++) {
        fw_dtype dt = op == FW_RED_PROD ? FW_FLOAT64 : FW_FLOAT32;
        reduce_case((fw_redop)op, dt, 2, rows, rst, 210000, 2, false, false);
        reduce_case((fw_redop)op, dt, 2, cols, cst, 210000, 1, false, false);
        reduce_case((fw_redop)op, FW_INT64, 2, rows, rst, 210000, 2, true, false);
        reduce_case((fw_redop)op, FW_INT32, 2, cols, cst, 210000, 3, false, false);
        if (op != FW_RED_PROD)
            reduce_case((fw_redop)op, FW_FLOAT32, 1, flat, fst, 1 << 20, 1, false, false);
        reduce_case((fw_redop)op, FW_FLOAT32, 2, small, sst, 8 * 257, 2, false, true);
        reduce_case((fw_redop)op, FW_FLOAT64, 2, small, sst, 8 * 257, 1, true, true);
        reduce_case((fw_redop)op, FW_FLOAT32, 2, empty, est, 1, 1, false, false);
        reduce_case((fw_redop)op, FW_INT64, 2, empty, est, 1, 1, true, false);
        reduce_case((fw_redop)op, FW_UINT8, 2, empty, est, 1, 1, false, false);
    }
}
END_TEST

START_TEST(arg_max_and_min_give_the_first_index)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_INT32, FW_INT64, FW_UINT8};
    static const int64_t cases[][3] = {{3, 1000, 1}, {2, 7, 40}, {1, 3000, 5}, {4, 1, 3},
                                       {5, 200, 2}, {1, 100000, 1}};
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
            for (int nans = 0; nans < (is_float(dts[d]) ? 2 : 1); nans++) {
                int64_t outer = cases[c][0], n = cases[c][1], inner = cases[c][2];
                int64_t xn = outer * n * inner, on = outer * inner;
                /* few distinct values: ties everywhere */
                void *xh = gen(dts[d], xn, 0, 6, false);
                for (int64_t i = 0; nans && i < xn; i += 131)
                    fw__store_double((char *)xh + (size_t)i * esz(dts[d]), dts[d], NAN);
                buf x = bfrom(xh, (size_t)xn * esz(dts[d])), o = bnew((size_t)on * 8);
                for (int mx = 0; mx < 2; mx++) {
                    ck_assert_int_eq(cpu->arg_reduce(mx, o.h, x.h, dts[d], outer, n, inner), 0);
                    ck_assert_msg(gpu->arg_reduce(mx, o.d, x.d, dts[d], outer, n, inner) == 0,
                                  "%s", fw_error_last());
                    void *g = bget(&o);
                    expect_close(o.h, g, FW_INT64, on, 0, 0, mx ? "argmax" : "argmin");
                    free(g);
                }
                free(xh);
                bfree(&x);
                bfree(&o);
            }
}
END_TEST

/* ---- the index family -------------------------------------------------------------------- */

static int64_t *rand_idx(int64_t n, int64_t bound)
{
    int64_t *p = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++)
        p[i] = (int64_t)(rbits() % (uint64_t)bound);
    return p;
}

/* out bytes on the CPU (h) and GPU (d) compared after both ran. */
static void expect_same(const buf *o, fw_dtype dt, int64_t n, double rtol, const char *what)
{
    void *g = bget(o);
    expect_close(o->h, g, dt, n, rtol, rtol ? 1e-6 : 0, what);
    free(g);
}

/* Sums the GPU adds up in another order (atomics): float32 results near 0
 * after cancellation carry the rounding of their larger terms. */
static void expect_sums(const buf *o, fw_dtype dt, int64_t n, const char *what)
{
    void *g = bget(o);
    expect_close(o->h, g, dt, n, rtol_of(dt), dt == FW_FLOAT32 ? 2e-5 : dt == FW_FLOAT64 ? 1e-12 : 0,
                 what);
    free(g);
}

START_TEST(index_data_movement_matches_cpu_for_every_element_size)
{
    static const fw_dtype dts[] = {FW_UINT8, FW_FLOAT16, FW_FLOAT32, FW_INT64, FW_COMPLEX128};
    const struct fw_index_kernels *kc = cpu->index, *kg = gpu->index;
    ck_assert(kc != NULL && kg != NULL);
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
        fw_dtype dt = dts[d];
        size_t es = esz(dt);
        const int64_t outer = 3, inner = 7, alen = 11, nidx = 9;
        char fill[16];
        memset(fill, 0x5a, sizeof(fill));

        /* concat / split */
        int64_t len[3] = {2, 5, 1};
        void *ins_h[3], *ins_d[3];
        buf ins[3];
        for (int k = 0; k < 3; k++) {
            void *p = gen(dt, outer * len[k] * inner, -9, 9, false);
            ins[k] = bfrom(p, (size_t)(outer * len[k] * inner) * es);
            ins_h[k] = ins[k].h;
            ins_d[k] = ins[k].d;
            free(p);
        }
        buf cat = bnew((size_t)(outer * 8 * inner) * es);
        ck_assert_int_eq(kc->concat(es, cat.h, (const void *const *)ins_h, len, 3, outer, inner), 0);
        ck_assert_int_eq(kg->concat(es, cat.d, (const void *const *)ins_d, len, 3, outer, inner), 0);
        expect_same(&cat, dt, outer * 8 * inner, 0, "concat");
        buf outs[3];
        void *outs_h[3], *outs_d[3];
        for (int k = 0; k < 3; k++) {
            outs[k] = bnew((size_t)(outer * len[k] * inner) * es);
            outs_h[k] = outs[k].h;
            outs_d[k] = outs[k].d;
        }
        ck_assert_int_eq(kc->split(es, outs_h, cat.h, len, 3, outer, inner), 0);
        ck_assert_int_eq(kg->split(es, outs_d, cat.d, len, 3, outer, inner), 0);
        for (int k = 0; k < 3; k++) {
            expect_same(&outs[k], dt, outer * len[k] * inner, 0, "split");
            bfree(&outs[k]);
            bfree(&ins[k]);
        }
        bfree(&cat);

        /* gather / index_copy (repeated rows: the last wins) / take_along / scatter_along */
        void *xh = gen(dt, outer * alen * inner, -9, 9, false);
        buf x = bfrom(xh, (size_t)(outer * alen * inner) * es);
        int64_t *ih = rand_idx(nidx, alen);
        buf idx = bfrom(ih, (size_t)nidx * 8);
        buf g = bnew((size_t)(outer * nidx * inner) * es);
        ck_assert_int_eq(kc->gather(es, g.h, x.h, idx.h, nidx, outer, alen, inner), 0);
        ck_assert_int_eq(kg->gather(es, g.d, x.d, idx.d, nidx, outer, alen, inner), 0);
        expect_same(&g, dt, outer * nidx * inner, 0, "gather");
        for (int withsrc = 0; withsrc < 2; withsrc++) {
            buf o = bfrom(xh, (size_t)(outer * alen * inner) * es);
            ck_assert_int_eq(kc->index_copy(es, o.h, withsrc ? g.h : NULL, idx.h, nidx, outer, alen,
                                            inner, fill), 0);
            ck_assert_int_eq(kg->index_copy(es, o.d, withsrc ? g.d : NULL, idx.d, nidx, outer, alen,
                                            inner, fill), 0);
            expect_same(&o, dt, outer * alen * inner, 0, "index_copy");
            bfree(&o);
        }
        int64_t *tih = rand_idx(outer * nidx * inner, alen);
        buf tidx = bfrom(tih, (size_t)(outer * nidx * inner) * 8);
        ck_assert_int_eq(kc->take_along(es, g.h, x.h, tidx.h, outer, alen, nidx, inner), 0);
        ck_assert_int_eq(kg->take_along(es, g.d, x.d, tidx.d, outer, alen, nidx, inner), 0);
        expect_same(&g, dt, outer * nidx * inner, 0, "take_along");
        for (int withsrc = 0; withsrc < 2; withsrc++) {
            buf o = bfrom(xh, (size_t)(outer * alen * inner) * es);
            ck_assert_int_eq(kc->scatter_along(es, o.h, withsrc ? g.h : NULL, tidx.h, outer, alen,
                                               nidx, inner, fill), 0);
            ck_assert_int_eq(kg->scatter_along(es, o.d, withsrc ? g.d : NULL, tidx.d, outer, alen,
                                               nidx, inner, fill), 0);
            expect_same(&o, dt, outer * alen * inner, 0, "scatter_along");
            bfree(&o);
        }

        /* map_copy: (3, 11, 7) -> (5, 4, 9) with -1 fills */
        int64_t ishape[3] = {outer, alen, inner}, oshape[3] = {5, 4, 9};
        int64_t mh[18];
        for (int j = 0; j < 18; j++) {
            int dim = j < 5 ? 0 : j < 9 ? 1 : 2;
            mh[j] = rbits() % 6 == 0 ? -1 : (int64_t)(rbits() % (uint64_t)ishape[dim]);
        }
        buf maps = bfrom(mh, sizeof(mh)), mo = bnew(180 * es);
        ck_assert_int_eq(kc->map_copy(es, mo.h, x.h, 3, oshape, ishape, maps.h, fill), 0);
        ck_assert_int_eq(kg->map_copy(es, mo.d, x.d, 3, oshape, ishape, maps.d, fill), 0);
        expect_same(&mo, dt, 180, 0, "map_copy");

        /* where / strided_copy / strided_write / masked_fill over (3, 11, 7) with
         * broadcast and transposed operands */
        int64_t shape[3] = {outer, alen, inner}, cst[3] = {0, 7, 1}, xst[3], yst[3] = {1, 21, 3};
        contig(xst, shape, 3);
        void *ch = gen(FW_BOOL, 77, 0, 1, false), *yh = gen(dt, 231, -9, 9, false);
        buf cond = bfrom(ch, 77), y = bfrom(yh, 231 * es), w = bnew(231 * es);
        ck_assert_int_eq(kc->where(es, w.h, cond.h, cst, x.h, xst, y.h, yst, 3, shape), 0);
        ck_assert_int_eq(kg->where(es, w.d, cond.d, cst, x.d, xst, y.d, yst, 3, shape), 0);
        expect_same(&w, dt, 231, 0, "where");
        ck_assert_int_eq(kc->strided_copy(es, w.h, y.h, yst, 3, shape), 0);
        ck_assert_int_eq(kg->strided_copy(es, w.d, y.d, yst, 3, shape), 0);
        expect_same(&w, dt, 231, 0, "strided_copy");
        ck_assert_int_eq(kc->strided_write(es, w.h, yst, x.h, cst, 3, shape), 0);
        ck_assert_int_eq(kg->strided_write(es, w.d, yst, x.d, cst, 3, shape), 0);
        expect_same(&w, dt, 231, 0, "strided_write");
        ck_assert_int_eq(kc->masked_fill(es, w.h, yst, cond.h, cst, 3, shape, fill), 0);
        ck_assert_int_eq(kg->masked_fill(es, w.d, yst, cond.d, cst, 3, shape, fill), 0);
        expect_same(&w, dt, 231, 0, "masked_fill");

        /* masked_select and its adjoint */
        void *mh2 = gen(FW_BOOL, 231, 0, 1, false);
        buf mask = bfrom(mh2, 231), sel = bnew(231 * es), sc = bnew(231 * es);
        int64_t nc = -1, ng = -1;
        ck_assert_int_eq(kc->masked_select(es, sel.h, x.h, mask.h, 231, &nc), 0);
        ck_assert_int_eq(kg->masked_select(es, sel.d, x.d, mask.d, 231, &ng), 0);
        ck_assert_int_eq(nc, ng);
        expect_same(&sel, dt, nc, 0, "masked_select");
        ck_assert_int_eq(kc->masked_scatter(es, sc.h, sel.h, mask.h, 231), 0);
        ck_assert_int_eq(kg->masked_scatter(es, sc.d, sel.d, mask.d, 231), 0);
        expect_same(&sc, dt, 231, 0, "masked_scatter");

        free(xh);
        free(ih);
        free(tih);
        free(ch);
        free(yh);
        free(mh2);
        bfree(&x);
        bfree(&idx);
        bfree(&g);
        bfree(&tidx);
        bfree(&maps);
        bfree(&mo);
        bfree(&cond);
        bfree(&y);
        bfree(&w);
        bfree(&mask);
        bfree(&sel);
        bfree(&sc);
    }
}
END_TEST

/* index_add / scatter_add: (outer, inner) lanes few (atomics) and many (a
 * thread per lane, the CPU's order). */
START_TEST(index_accumulation_matches_cpu)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_INT32, FW_INT64, FW_UINT8};
    static const int64_t lanes[][2] = {{2, 3}, {4, 4096}};
    const struct fw_index_kernels *kc = cpu->index, *kg = gpu->index;
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
        for (int l = 0; l < 2; l++) {
            fw_dtype dt = dts[d];
            size_t es = esz(dt);
            int64_t outer = lanes[l][0], inner = lanes[l][1], alen = 6, nidx = 40;
            void *oh = gen(dt, outer * alen * inner, -5, 5, false);
            void *sh = gen(dt, outer * nidx * inner, -5, 5, false);
            int64_t *ih = rand_idx(nidx, alen), *th = rand_idx(outer * nidx * inner, alen);
            buf src = bfrom(sh, (size_t)(outer * nidx * inner) * es), idx = bfrom(ih, (size_t)nidx * 8),
                tidx = bfrom(th, (size_t)(outer * nidx * inner) * 8);
            buf o = bfrom(oh, (size_t)(outer * alen * inner) * es);
            ck_assert_int_eq(kc->index_add(dt, o.h, src.h, idx.h, nidx, outer, alen, inner), 0);
            ck_assert_int_eq(kg->index_add(dt, o.d, src.d, idx.d, nidx, outer, alen, inner), 0);
            expect_sums(&o, dt, outer * alen * inner, "index_add");
            bfree(&o);
            o = bfrom(oh, (size_t)(outer * alen * inner) * es);
            ck_assert_int_eq(kc->scatter_add_along(dt, o.h, src.h, tidx.h, outer, alen, nidx, inner),
                             0);
            ck_assert_int_eq(kg->scatter_add_along(dt, o.d, src.d, tidx.d, outer, alen, nidx, inner),
                             0);
            expect_sums(&o, dt, outer * alen * inner, "scatter_add_along");
            bfree(&o);
            free(oh);
            free(sh);
            free(ih);
            free(th);
            bfree(&src);
            bfree(&idx);
            bfree(&tidx);
        }
}
END_TEST

START_TEST(index_numeric_kernels_match_cpu)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_INT32, FW_INT64, FW_UINT8};
    const struct fw_index_kernels *kc = cpu->index, *kg = gpu->index;
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
        fw_dtype dt = dts[d];
        size_t es = esz(dt);
        const int64_t n = 3 * 50 * 7;
        void *xh = gen(dt, n, -20, 20, false), *gh = gen(dt, n, -1, 1, false);
        buf x = bfrom(xh, (size_t)n * es), g = bfrom(gh, (size_t)n * es), o = bnew((size_t)n * es);
        /* bounds in range of every dtype: (uint8_t)-3.5 is undefined in C */
        double blo = dt == FW_UINT8 ? 3.5 : -3.5;
        for (int b = 0; b < 4; b++) {
            int has_lo = b & 1, has_hi = b >> 1;
            ck_assert_int_eq(kc->clip(dt, o.h, x.h, n, has_lo, blo, has_hi, 7.25), 0);
            ck_assert_int_eq(kg->clip(dt, o.d, x.d, n, has_lo, blo, has_hi, 7.25), 0);
            expect_same(&o, dt, n, 0, "clip");
            if (is_float(dt)) {
                ck_assert_int_eq(kc->clip_grad(dt, o.h, g.h, x.h, n, has_lo, -3.5, has_hi, 7.25), 0);
                ck_assert_int_eq(kg->clip_grad(dt, o.d, g.d, x.d, n, has_lo, -3.5, has_hi, 7.25), 0);
                expect_same(&o, dt, n, 0, "clip_grad");
            }
        }
        for (int rev = 0; rev < 2; rev++) {
            ck_assert_int_eq(kc->cumsum(dt, o.h, x.h, 3, 50, 7, rev), 0);
            ck_assert_int_eq(kg->cumsum(dt, o.d, x.d, 3, 50, 7, rev), 0);
            expect_same(&o, dt, n, 0, "cumsum");   /* the CPU's order: the same bits */
        }
        /* few long lanes: chunks scanned in parallel (floats add in another order) */
        static const int64_t longs[][3] = {{2, 20000, 1}, {1, 10000, 3}};
        for (int c = 0; c < 2; c++)
            for (int rev = 0; rev < 2; rev++) {
                int64_t ln = longs[c][0] * longs[c][1] * longs[c][2];
                void *lh = gen(dt, ln, -1, 1, false);
                buf lx = bfrom(lh, (size_t)ln * es), lo = bnew((size_t)ln * es);
                ck_assert_int_eq(kc->cumsum(dt, lo.h, lx.h, longs[c][0], longs[c][1], longs[c][2],
                                            rev), 0);
                ck_assert_int_eq(kg->cumsum(dt, lo.d, lx.d, longs[c][0], longs[c][1], longs[c][2],
                                            rev), 0);
                void *got = bget(&lo);
                expect_close(lo.h, got, dt, ln, rtol_of(dt),
                             dt == FW_FLOAT32 ? 2e-2 : dt == FW_FLOAT64 ? 1e-9 : 0, "long cumsum");
                free(got);
                free(lh);
                bfree(&lx);
                bfree(&lo);
            }
        /* strided_add: onto a transposed view, and onto a broadcast (stride 0) one */
        int64_t shape[3] = {3, 50, 7}, tst[3] = {1, 21, 3}, bst[3] = {7, 0, 1};
        for (int k = 0; k < 2; k++) {
            buf dst = bfrom(xh, (size_t)n * es);
            ck_assert_int_eq(kc->strided_add(dt, dst.h, k ? bst : tst, g.h, 3, shape), 0);
            ck_assert_int_eq(kg->strided_add(dt, dst.d, k ? bst : tst, g.d, 3, shape), 0);
            expect_sums(&dst, dt, n, "strided_add");
            bfree(&dst);
        }
        /* map_add (float only): (3, 11, 7) += (5, 4, 9) through maps with repeats */
        if (is_float(dt)) {
            int64_t ishape[3] = {3, 11, 7}, oshape[3] = {5, 4, 9}, mh[18];
            for (int j = 0; j < 18; j++) {
                int dim = j < 5 ? 0 : j < 9 ? 1 : 2;
                mh[j] = rbits() % 6 == 0 ? -1 : (int64_t)(rbits() % (uint64_t)ishape[dim]);
            }
            buf maps = bfrom(mh, sizeof(mh)), in = bfrom(xh, 231 * es);
            ck_assert_int_eq(kc->map_add(dt, in.h, g.h, 3, oshape, ishape, maps.h), 0);
            ck_assert_int_eq(kg->map_add(dt, in.d, g.d, 3, oshape, ishape, maps.d), 0);
            expect_sums(&in, dt, 231, "map_add");
            bfree(&maps);
            bfree(&in);
        }
        free(xh);
        free(gh);
        bfree(&x);
        bfree(&g);
        bfree(&o);
    }
    /* one_hot (float32, the CPU's one dtype) */
    int64_t *ih = rand_idx(300, 17);
    buf idx = bfrom(ih, 300 * 8), oh = bnew(300 * 17 * 4);
    ck_assert_int_eq(kc->one_hot(FW_FLOAT32, oh.h, idx.h, 300, 17), 0);
    ck_assert_int_eq(kg->one_hot(FW_FLOAT32, oh.d, idx.d, 300, 17), 0);
    expect_same(&oh, FW_FLOAT32, 300 * 17, 0, "one_hot");
    free(ih);
    bfree(&idx);
    bfree(&oh);
}
END_TEST

START_TEST(sort_is_stable_with_nan_largest_and_top_k)
{
    static const fw_dtype dts[] = {FW_FLOAT32, FW_FLOAT64, FW_INT32, FW_INT64, FW_UINT8, FW_BOOL};
    static const int64_t cases[][4] = {{3, 50, 7, 50}, {2, 1000, 1, 10}, {1, 5, 300, 3},
                                       {4, 1, 2, 1}, {1, 20000, 1, 20000}};
    const struct fw_index_kernels *kc = cpu->index, *kg = gpu->index;
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
            for (int desc = 0; desc < 2; desc++) {
                fw_dtype dt = dts[d];
                size_t es = esz(dt);
                int64_t outer = cases[c][0], len = cases[c][1], inner = cases[c][2], k = cases[c][3];
                int64_t n = outer * len * inner, on = outer * k * inner;
                void *xh = gen(dt, n, -4, 4, false);     /* few values: many ties */
                if (is_float(dt))
                    for (int64_t i = 0; i < n; i += 11)
                        fw__store_double((char *)xh + (size_t)i * es, dt,
                                         i % 3 == 0 ? NAN : i % 3 == 1 ? -0.0 : -NAN);
                buf x = bfrom(xh, (size_t)n * es), v = bnew((size_t)on * es), ix = bnew((size_t)on * 8);
                ck_assert_int_eq(kc->sort(dt, v.h, ix.h, x.h, outer, len, inner, k, desc), 0);
                ck_assert_msg(kg->sort(dt, v.d, ix.d, x.d, outer, len, inner, k, desc) == 0, "%s",
                              fw_error_last());
                expect_same(&ix, FW_INT64, on, 0, desc ? "sort desc indices" : "sort indices");
                expect_same(&v, dt, on, 0, desc ? "sort desc values" : "sort values");
                /* argsort: no values */
                ck_assert_int_eq(kg->sort(dt, NULL, ix.d, x.d, outer, len, inner, k, desc), 0);
                expect_same(&ix, FW_INT64, on, 0, "argsort");
                free(xh);
                bfree(&x);
                bfree(&v);
                bfree(&ix);
            }
}
END_TEST

/* ---- optimizers ------------------------------------------------------------------------------ */

START_TEST(optimizer_steps_match_cpu)
{
    const struct fw_optim_kernels *kc = cpu->optim, *kg = gpu->optim;
    ck_assert(kc != NULL && kg != NULL);
    const size_t n = 100003;
    for (int d = 0; d < 2; d++) {
        fw_dtype dt = d ? FW_FLOAT64 : FW_FLOAT32;
        size_t bytes = n * esz(dt);
        /* the update kernels round each operation as the CPU: expect its
         * bits, checked with a tolerance that would still tell a wrong formula */
        double tol = d ? 1e-14 : 1e-6;
        void *ph = gen(dt, (int64_t)n, -1, 1, false), *gh = gen(dt, (int64_t)n, -1, 1, false);
        void *mh = gen(dt, (int64_t)n, -0.1, 0.1, false), *vh = gen(dt, (int64_t)n, 0, 0.01, false);
        for (int variant = 0; variant < 6; variant++) {
            buf p = bfrom(ph, bytes), g = bfrom(gh, bytes), m = bfrom(mh, bytes), v = bfrom(vh, bytes);
            const char *what = "";
            for (int step = 1; step <= 3; step++) {
                double b1pow = pow(0.9, step), b2pow = pow(0.999, step);
                switch (variant) {
                case 0:
                case 1:
                    what = "sgd";
                    ck_assert_int_eq(kc->sgd(dt, p.h, g.h, n, 0.01, variant ? 1e-3 : 0), 0);
                    ck_assert_int_eq(kg->sgd(dt, p.d, g.d, n, 0.01, variant ? 1e-3 : 0), 0);
                    break;
                case 2:
                case 3:
                    what = "momentum";
                    ck_assert_int_eq(kc->momentum(dt, p.h, g.h, m.h, n, 0.01, 0.9, 1e-4, variant == 3),
                                     0);
                    ck_assert_int_eq(kg->momentum(dt, p.d, g.d, m.d, n, 0.01, 0.9, 1e-4, variant == 3),
                                     0);
                    break;
                default:
                    what = variant == 4 ? "adam" : "adamw";
                    ck_assert_int_eq(kc->adam(dt, p.h, g.h, m.h, v.h, n, 1e-3, 0.9, 0.999, 1e-8, b1pow,
                                              b2pow, variant == 4 ? 1e-2 : 0, variant == 5 ? 1e-2 : 0),
                                     0);
                    ck_assert_int_eq(kg->adam(dt, p.d, g.d, m.d, v.d, n, 1e-3, 0.9, 0.999, 1e-8, b1pow,
                                              b2pow, variant == 4 ? 1e-2 : 0, variant == 5 ? 1e-2 : 0),
                                     0);
                    break;
                }
            }
            expect_same(&p, dt, (int64_t)n, tol, what);
            expect_same(&m, dt, (int64_t)n, tol, what);
            expect_same(&v, dt, (int64_t)n, tol, what);
            bfree(&p);
            bfree(&g);
            bfree(&m);
            bfree(&v);
        }
        buf x = bfrom(ph, bytes);
        double sc = -1, sg = -2;
        ck_assert_int_eq(kc->sumsq(dt, x.h, n, &sc), 0);
        ck_assert_int_eq(kg->sumsq(dt, x.d, n, &sg), 0);
        ck_assert_msg(fabs(sc - sg) <= 1e-12 * sc, "sumsq: cpu %.17g gpu %.17g", sc, sg);
        ck_assert_int_eq(kc->scale(dt, x.h, n, 0.37), 0);
        ck_assert_int_eq(kg->scale(dt, x.d, n, 0.37), 0);
        expect_same(&x, dt, (int64_t)n, 0, "scale");
        bfree(&x);
        free(ph);
        free(gh);
        free(mh);
        free(vh);
    }
}
END_TEST

/* ---- Philox -------------------------------------------------------------------------------- */

/* Element i of a uniform fill at (seed, base), from fw_philox4x32_10 and
 * core/fw_backend_random.h's layout alone: the reference both tables meet. */
static double ref_u53(uint64_t seed, uint64_t base, uint64_t i)
{
    uint64_t b = base + i / 2;
    uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0, 0}, key[2] = {(uint32_t)seed,
                                                                           (uint32_t)(seed >> 32)};
    uint32_t w[4];
    fw_philox4x32_10(w, ctr, key);
    uint32_t hi = (i & 1) ? w[2] : w[0], lo = (i & 1) ? w[3] : w[1];
    return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1.0p-53;
}

START_TEST(philox_fills_give_the_cpu_numbers)
{
    static const uint64_t seeds[] = {0, 42, 0x123456789abcdefULL};
    static const uint64_t bases[] = {0, 7, (1ULL << 32) - 1, 1ULL << 40};
    static const size_t ns[] = {1, 2, 1001, 65536};
    const struct fw_random_kernels *kc = cpu->random, *kg = gpu->random;
    ck_assert(kc != NULL && kg != NULL);
    for (size_t s = 0; s < 3; s++)
        for (size_t b = 0; b < 4; b++)
            for (size_t k = 0; k < 4; k++) {
                uint64_t seed = seeds[s], base = bases[b];
                size_t n = ns[k];
                buf f = bnew(n * 4), dd = bnew(n * 8), u8 = bnew(n), i32 = bnew(n * 4),
                    i64 = bnew(n * 8);
                /* uniform: the CPU table, the reference and the GPU agree bit for bit */
                ck_assert_int_eq(kc->uniform(FW_FLOAT64, dd.h, n, seed, base, 0, 1), 0);
                for (size_t i = 0; i < n; i += 97)
                    ck_assert(((double *)dd.h)[i] == ref_u53(seed, base, i));
                ck_assert_int_eq(kg->uniform(FW_FLOAT64, dd.d, n, seed, base, 0, 1), 0);
                expect_same(&dd, FW_FLOAT64, (int64_t)n, 0, "uniform f64 [0,1)");
                ck_assert_int_eq(kc->uniform(FW_FLOAT64, dd.h, n, seed, base, -2, 3), 0);
                ck_assert_int_eq(kg->uniform(FW_FLOAT64, dd.d, n, seed, base, -2, 3), 0);
                expect_same(&dd, FW_FLOAT64, (int64_t)n, 0, "uniform f64");
                ck_assert_int_eq(kc->uniform(FW_FLOAT32, f.h, n, seed, base, -2, 3), 0);
                ck_assert_int_eq(kg->uniform(FW_FLOAT32, f.d, n, seed, base, -2, 3), 0);
                expect_same(&f, FW_FLOAT32, (int64_t)n, 0, "uniform f32");
                ck_assert_int_eq(kc->bernoulli(u8.h, n, seed, base, 0.3), 0);
                ck_assert_int_eq(kg->bernoulli(u8.d, n, seed, base, 0.3), 0);
                expect_same(&u8, FW_UINT8, (int64_t)n, 0, "bernoulli");
                ck_assert_int_eq(kc->randint(FW_INT64, i64.h, n, seed, base, -5, UINT64_MAX / 3), 0);
                ck_assert_int_eq(kg->randint(FW_INT64, i64.d, n, seed, base, -5, UINT64_MAX / 3), 0);
                expect_same(&i64, FW_INT64, (int64_t)n, 0, "randint int64");
                ck_assert_int_eq(kc->randint(FW_INT32, i32.h, n, seed, base, 10, 1000), 0);
                ck_assert_int_eq(kg->randint(FW_INT32, i32.d, n, seed, base, 10, 1000), 0);
                expect_same(&i32, FW_INT32, (int64_t)n, 0, "randint int32");
                ck_assert_int_eq(kc->randperm(i64.h, n, seed, base), 0);
                ck_assert_int_eq(kg->randperm(i64.d, n, seed, base), 0);
                expect_same(&i64, FW_INT64, (int64_t)n, 0, "randperm");
                /* normal: CUDA's double log/sin/cos may differ from glibc's by an
                 * ulp of a double */
                ck_assert_int_eq(kc->normal(FW_FLOAT64, dd.h, n, seed, base, 0.5, 2), 0);
                ck_assert_int_eq(kg->normal(FW_FLOAT64, dd.d, n, seed, base, 0.5, 2), 0);
                expect_same(&dd, FW_FLOAT64, (int64_t)n, 1e-12, "normal f64");
                ck_assert_int_eq(kc->normal(FW_FLOAT32, f.h, n, seed, base, 0.5, 2), 0);
                ck_assert_int_eq(kg->normal(FW_FLOAT32, f.d, n, seed, base, 0.5, 2), 0);
                expect_same(&f, FW_FLOAT32, (int64_t)n, 1e-6, "normal f32");
                ck_assert_int_eq(kc->truncated_normal(FW_FLOAT32, f.h, n, seed, base, 0, 1, -2, 2), 0);
                ck_assert_int_eq(kg->truncated_normal(FW_FLOAT32, f.d, n, seed, base, 0, 1, -2, 2), 0);
                expect_same(&f, FW_FLOAT32, (int64_t)n, 1e-6, "truncated normal f32");
                ck_assert_int_eq(kc->truncated_normal(FW_FLOAT64, dd.h, n, seed, base, 1, 0.5, 0.5, 3),
                                 0);
                ck_assert_int_eq(kg->truncated_normal(FW_FLOAT64, dd.d, n, seed, base, 1, 0.5, 0.5, 3),
                                 0);
                expect_same(&dd, FW_FLOAT64, (int64_t)n, 1e-12, "truncated normal f64");
                bfree(&f);
                bfree(&dd);
                bfree(&u8);
                bfree(&i32);
                bfree(&i64);
            }
}
END_TEST

/* Kernels report a dtype they lack as FW_EDTYPE, not a crash. */
START_TEST(unsupported_dtypes_are_errors)
{
    int64_t shape[1] = {4}, st[1] = {1};
    buf a = bnew(64);
    fw_kview v = kv(a.d, FW_COMPLEX64, 1, shape, st);
    ck_assert_int_eq(gpu->binary(FW_BIN_ADD, &v, &v, &v), FW_EDTYPE);
    ck_assert_int_eq(gpu->unary(FW_UN_EXP, a.d, a.d, 4, FW_INT32, 0), FW_EDTYPE);
    ck_assert_int_eq(gpu->unary_grad(FW_UN_EXP, a.d, a.d, a.d, a.d, 4, FW_INT64, 0), FW_EDTYPE);
    ck_assert_int_eq(gpu->index->clip(FW_COMPLEX64, a.d, a.d, 4, 1, 0, 1, 1), FW_EDTYPE);
    ck_assert_int_eq(gpu->optim->sgd(FW_INT32, a.d, a.d, 4, 0.1, 0), FW_EDTYPE);
    ck_assert_int_eq(gpu->random->uniform(FW_INT32, a.d, 4, 1, 0, 0, 1), FW_EDTYPE);
    bfree(&a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fw_cuda_kernels");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, copy_casts_between_every_dtype_pair_bit_exact);
    tcase_add_test(tc, fill_writes_the_cpu_bytes_for_every_dtype);
    tcase_add_test(tc, binary_ops_match_cpu_on_contiguous_broadcast_and_strided_inputs);
    tcase_add_test(tc, binary_half_and_bfloat16_within_tolerance);
    tcase_add_test(tc, unary_ops_and_their_grads_match_cpu);
    tcase_add_test(tc, unary_integer_and_logical_not_bit_exact);
    tcase_add_test(tc, unary_half_and_bfloat16_within_tolerance);
    tcase_add_test(tc, reductions_match_cpu_over_every_axis_mask);
    tcase_add_test(tc, reductions_large_rows_columns_nan_and_empty);
    tcase_add_test(tc, arg_max_and_min_give_the_first_index);
    tcase_add_test(tc, index_data_movement_matches_cpu_for_every_element_size);
    tcase_add_test(tc, index_accumulation_matches_cpu);
    tcase_add_test(tc, index_numeric_kernels_match_cpu);
    tcase_add_test(tc, sort_is_stable_with_nan_largest_and_top_k);
    tcase_add_test(tc, optimizer_steps_match_cpu);
    tcase_add_test(tc, philox_fills_give_the_cpu_numbers);
    tcase_add_test(tc, unsupported_dtypes_are_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (fw_device_count(FW_CUDA) == 0) {
        printf("no CUDA device: %s\n", fw_device_unavailable_reason(FW_CUDA));
        return 77;
    }
    cpu = fw_backend_get(FW_CPU);
    gpu = fw_backend_get(FW_CUDA);
    if (gpu == NULL) {
        printf("no CUDA device: %s\n", fw_device_unavailable_reason(FW_CUDA));
        return 77;
    }
    SRunner *sr = srunner_create(suite());
    srunner_set_fork_status(sr, CK_NOFORK);      /* CUDA does not survive fork() */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
