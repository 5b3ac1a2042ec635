/*
 * fft.c - complex DFTs of any length in double precision (fft_kernels.h).
 *
 * Lengths whose prime factors are all small (<= MAX_RADIX): a recursive
 * mixed-radix decimation in time (radix 4, 2, 3, 5 butterflies written
 * out, other small primes through a generic O(p^2) one), out of place into
 * a scratch buffer, with twiddles read from one table of exp(-2 pi i j/n)
 * computed directly by cos/sin (no recurrence), so the error stays
 * O(log n) ulps. Any other length n: Bluestein's chirp-z transform, a
 * circular convolution of a smooth length m >= 2n - 1 done with the
 * mixed-radix code, the chirp's angles reduced modulo 2n in integers
 * before the sine and cosine (pi k^2 / n is large).
 * Written here rather than linking a library: FFTW is GPL, and Debian's
 * kissfft ships only a float build, while complex128 needs double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fft_kernels.h"

#define MAX_RADIX 13
#define MAX_FACTORS 64

typedef struct mr_plan {
    int64_t n;
    int nf;
    int factors[MAX_FACTORS];
    double *tw;         /* n twiddles exp(-2 pi i j / n), interleaved */
} mr_plan;

struct fw_fft_plan {
    int64_t n;          /* transform length */
    mr_plan core;       /* length n, or Bluestein's m */
    double *chirp;      /* Bluestein: n values exp(-pi i k^2 / n) */
    double *filt;       /* Bluestein: the DFT of the conjugate chirp, m values */
};

/* Factor n into radices (4s first, then 2, 3, 5, 7, ...); false when a
 * prime factor exceeds MAX_RADIX. */
static bool factorize(int64_t n, int *f, int *nf)
{
    *nf = 0;
    while (n % 4 == 0 && *nf < MAX_FACTORS) {
        f[(*nf)++] = 4;
        n /= 4;
    }
    for (int p = 2; p <= MAX_RADIX && n > 1; p++)
        while (n % p == 0 && *nf < MAX_FACTORS) {
            f[(*nf)++] = p;
            n /= p;
        }
    return n == 1;
}

static int mr_init(mr_plan *p, int64_t n)
{
    p->n = n;
    if (!factorize(n, p->factors, &p->nf))
        return -1;
    if ((p->tw = malloc(sizeof(double) * 2 * (size_t)n)) == NULL)
        return -1;
    for (int64_t j = 0; j < n; j++) {
        double a = -2.0 * M_PI * (double)j / (double)n;
        p->tw[2 * j] = cos(a);
        p->tw[2 * j + 1] = sin(a);
    }
    return 0;
}

/* out[0..n) = DFT of in[0], in[is], ..., in[(n-1) is] (forward sign),
 * factors from fi on; `step` = p->n / n selects this level's twiddles. */
static void mr_rec(const mr_plan *p, const double *in, int64_t is, double *out, int64_t n,
                   int fi, int64_t step)
{
    if (n == 1) {
        out[0] = in[0];
        out[1] = in[1];
        return;
    }
    const int f = p->factors[fi];
    const int64_t m = n / f;
    for (int r = 0; r < f; r++)
        mr_rec(p, in + 2 * r * is, is * f, out + 2 * r * m, m, fi + 1, step * f);
    const double *tw = p->tw;
    const int64_t N = p->n;
    /* out[r m + k] holds sub-DFT r at k; combine into out[q m + k] */
    if (f == 2) {
        for (int64_t k = 0; k < m; k++) {
            double *a = out + 2 * k, *b = out + 2 * (m + k);
            const double wr = tw[2 * k * step], wi = tw[2 * k * step + 1];
            const double br = b[0] * wr - b[1] * wi, bi = b[0] * wi + b[1] * wr;
            b[0] = a[0] - br;
            b[1] = a[1] - bi;
            a[0] += br;
            a[1] += bi;
        }
        return;
    }
    if (f == 4) {
        for (int64_t k = 0; k < m; k++) {
            double y[4][2];
            for (int r = 0; r < 4; r++) {
                const double *s = out + 2 * (r * m + k);
                const int64_t j = r * k * step;    /* < N: r k < n */
                const double wr = tw[2 * j], wi = tw[2 * j + 1];
                y[r][0] = s[0] * wr - s[1] * wi;
                y[r][1] = s[0] * wi + s[1] * wr;
            }
            /* 4-point DFT: W4 = -i */
            const double t0r = y[0][0] + y[2][0], t0i = y[0][1] + y[2][1];
            const double t1r = y[0][0] - y[2][0], t1i = y[0][1] - y[2][1];
            const double t2r = y[1][0] + y[3][0], t2i = y[1][1] + y[3][1];
            const double t3r = y[1][0] - y[3][0], t3i = y[1][1] - y[3][1];
            double *o0 = out + 2 * k, *o1 = out + 2 * (m + k);
            double *o2 = out + 2 * (2 * m + k), *o3 = out + 2 * (3 * m + k);
            o0[0] = t0r + t2r;
            o0[1] = t0i + t2i;
            o2[0] = t0r - t2r;
            o2[1] = t0i - t2i;
            o1[0] = t1r + t3i;      /* t1 - i t3 */
            o1[1] = t1i - t3r;
            o3[0] = t1r - t3i;      /* t1 + i t3 */
            o3[1] = t1i + t3r;
        }
        return;
    }
    if (f == 3 || f == 5) {
        /* closed forms: out_q = a_q -/+ i b_q from sums and differences */
        const double c1 = cos(2 * M_PI / f), s1 = sin(2 * M_PI / f);
        const double c2 = cos(4 * M_PI / 5), s2 = sin(4 * M_PI / 5);
        for (int64_t k = 0; k < m; k++) {
            double y[5][2];
            for (int r = 0; r < f; r++) {
                const double *s = out + 2 * (r * m + k);
                const int64_t j = r * k * step;
                const double wr = tw[2 * j], wi = tw[2 * j + 1];
                y[r][0] = s[0] * wr - s[1] * wi;
                y[r][1] = s[0] * wi + s[1] * wr;
            }
            double *o[5];
            for (int q = 0; q < f; q++)
                o[q] = out + 2 * (q * m + k);
            if (f == 3) {
                const double tr = y[1][0] + y[2][0], ti = y[1][1] + y[2][1];
                const double ar = y[0][0] - 0.5 * tr, ai = y[0][1] - 0.5 * ti;
                const double br = s1 * (y[1][0] - y[2][0]), bi = s1 * (y[1][1] - y[2][1]);
                o[0][0] = y[0][0] + tr;
                o[0][1] = y[0][1] + ti;
                o[1][0] = ar + bi;           /* a - i b */
                o[1][1] = ai - br;
                o[2][0] = ar - bi;           /* a + i b */
                o[2][1] = ai + br;
                continue;
            }
            const double t1r = y[1][0] + y[4][0], t1i = y[1][1] + y[4][1];
            const double t2r = y[2][0] + y[3][0], t2i = y[2][1] + y[3][1];
            const double t3r = y[1][0] - y[4][0], t3i = y[1][1] - y[4][1];
            const double t4r = y[2][0] - y[3][0], t4i = y[2][1] - y[3][1];
            const double a1r = y[0][0] + c1 * t1r + c2 * t2r, a1i = y[0][1] + c1 * t1i + c2 * t2i;
            const double a2r = y[0][0] + c2 * t1r + c1 * t2r, a2i = y[0][1] + c2 * t1i + c1 * t2i;
            const double b1r = s1 * t3r + s2 * t4r, b1i = s1 * t3i + s2 * t4i;
            const double b2r = s2 * t3r - s1 * t4r, b2i = s2 * t3i - s1 * t4i;
            o[0][0] = y[0][0] + t1r + t2r;
            o[0][1] = y[0][1] + t1i + t2i;
            o[1][0] = a1r + b1i;
            o[1][1] = a1i - b1r;
            o[4][0] = a1r - b1i;
            o[4][1] = a1i + b1r;
            o[2][0] = a2r + b2i;
            o[2][1] = a2i - b2r;
            o[3][0] = a2r - b2i;
            o[3][1] = a2i + b2r;
        }
        return;
    }
    /* generic radix f (odd prime <= MAX_RADIX): O(f^2) per output group */
    const int64_t fstep = N / f;            /* W_f^1 in the table */
    double wf[MAX_RADIX][2];                 /* W_f^j */
    for (int j = 0; j < f; j++) {
        wf[j][0] = tw[2 * j * fstep];
        wf[j][1] = tw[2 * j * fstep + 1];
    }
    for (int64_t k = 0; k < m; k++) {
        double y[MAX_RADIX][2];
        for (int r = 0; r < f; r++) {
            const double *s = out + 2 * (r * m + k);
            const int64_t j = r * k * step;
            const double wr = tw[2 * j], wi = tw[2 * j + 1];
            y[r][0] = s[0] * wr - s[1] * wi;
            y[r][1] = s[0] * wi + s[1] * wr;
        }
        for (int q = 0; q < f; q++) {
            double sr = y[0][0], si = y[0][1];
            int j = 0;                       /* r q mod f, stepped */
            for (int r = 1; r < f; r++) {
                j += q;
                if (j >= f)
                    j -= f;
                const double wr = wf[j][0], wi = wf[j][1];
                sr += y[r][0] * wr - y[r][1] * wi;
                si += y[r][0] * wi + y[r][1] * wr;
            }
            out[2 * (q * m + k)] = sr;
            out[2 * (q * m + k) + 1] = si;
        }
    }
}

/* In place on x[0..n) with tmp of n complex values. */
static void mr_exec(const mr_plan *p, double *x, double *tmp)
{
    mr_rec(p, x, 1, tmp, p->n, 0, 1);
    memcpy(x, tmp, sizeof(double) * 2 * (size_t)p->n);
}

void fw__fft_plan_free(fw_fft_plan *p)
{
    if (p == NULL)
        return;
    free(p->core.tw);
    free(p->chirp);
    free(p->filt);
    free(p);
}

/* The smallest length >= n whose factors are 2, 3 and 5 (Bluestein's m). */
static int64_t smooth_at_least(int64_t n)
{
    int64_t best = 1;
    while (best < n)
        best <<= 1;
    for (int64_t p5 = 1; p5 <= best; p5 *= 5)
        for (int64_t p3 = p5; p3 <= best; p3 *= 3) {
            int64_t v = p3;
            while (v < n)
                v <<= 1;
            if (v < best)
                best = v;
        }
    return best;
}

int fw__fft_plan_new(fw_fft_plan **out, int64_t n)
{
    fw_fft_plan *p;
    int fac[MAX_FACTORS], nf;

    *out = NULL;
    if (n < 1 || n > ((int64_t)1 << 40))
        return -1;
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return -1;
    p->n = n;
    if (factorize(n, fac, &nf)) {
        if (mr_init(&p->core, n) < 0)
            goto fail;
        *out = p;
        return 0;
    }
    const int64_t m = smooth_at_least(2 * n - 1);
    if (mr_init(&p->core, m) < 0)
        goto fail;
    const unsigned __int128 twon = (unsigned __int128)(2 * n);
    p->chirp = malloc(sizeof(double) * 2 * (size_t)n);
    p->filt = calloc(2 * (size_t)m, sizeof(double));
    double *tmp = malloc(sizeof(double) * 2 * (size_t)m);
    if (p->chirp == NULL || p->filt == NULL || tmp == NULL) {
        free(tmp);
        goto fail;
    }
    for (int64_t k = 0; k < n; k++) {
        /* exp(-pi i k^2 / n), k^2 reduced mod 2n exactly */
        int64_t r = (int64_t)(((unsigned __int128)k * (unsigned __int128)k) % twon);
        double a = -M_PI * (double)r / (double)n;
        p->chirp[2 * k] = cos(a);
        p->chirp[2 * k + 1] = sin(a);
    }
    /* b_j = conj(chirp_|j|) for j in (-n, n), wrapped to length m */
    for (int64_t k = 0; k < n; k++) {
        p->filt[2 * k] = p->chirp[2 * k];
        p->filt[2 * k + 1] = -p->chirp[2 * k + 1];
        if (k > 0) {
            p->filt[2 * (m - k)] = p->chirp[2 * k];
            p->filt[2 * (m - k) + 1] = -p->chirp[2 * k + 1];
        }
    }
    mr_exec(&p->core, p->filt, tmp);
    free(tmp);
    *out = p;
    return 0;
fail:
    fw__fft_plan_free(p);
    return -1;
}

int64_t fw__fft_scratch_len(const fw_fft_plan *p)
{
    /* mixed radix: n complex; Bluestein: two buffers of m complex */
    return p->chirp == NULL ? 2 * p->n : 4 * p->core.n;
}

void fw__fft_exec(const fw_fft_plan *p, double *x, bool inverse, double *scratch)
{
    const int64_t n = p->n, m = p->core.n;

    /* the inverse is the forward of the conjugate, conjugated */
    if (inverse)
        for (int64_t k = 0; k < n; k++)
            x[2 * k + 1] = -x[2 * k + 1];
    if (p->chirp == NULL) {
        mr_exec(&p->core, x, scratch);
    } else {
        double *a = scratch, *tmp = scratch + 2 * m;
        for (int64_t k = 0; k < n; k++) {
            const double cr = p->chirp[2 * k], ci = p->chirp[2 * k + 1];
            a[2 * k] = x[2 * k] * cr - x[2 * k + 1] * ci;
            a[2 * k + 1] = x[2 * k] * ci + x[2 * k + 1] * cr;
        }
        memset(a + 2 * n, 0, sizeof(double) * 2 * (size_t)(m - n));
        mr_exec(&p->core, a, tmp);
        /* pointwise product with the filter, then an inverse DFT (conjugates) */
        for (int64_t k = 0; k < m; k++) {
            const double fr = p->filt[2 * k], fi = p->filt[2 * k + 1];
            const double ar = a[2 * k], ai = a[2 * k + 1];
            a[2 * k] = ar * fr - ai * fi;
            a[2 * k + 1] = -(ar * fi + ai * fr);
        }
        mr_exec(&p->core, a, tmp);
        const double inv_m = 1.0 / (double)m;
        for (int64_t k = 0; k < n; k++) {
            const double cr = p->chirp[2 * k], ci = p->chirp[2 * k + 1];
            const double ar = a[2 * k] * inv_m, ai = -a[2 * k + 1] * inv_m;
            x[2 * k] = ar * cr - ai * ci;
            x[2 * k + 1] = ar * ci + ai * cr;
        }
    }
    if (inverse)
        for (int64_t k = 0; k < n; k++)
            x[2 * k + 1] = -x[2 * k + 1];
}
