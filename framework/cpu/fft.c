/*
 * fft.c - complex DFTs of any length in double precision (fft_kernels.h).
 *
 * Powers of two: iterative radix-2 (bit-reversed input order, twiddles
 * from one cos/sin table computed directly, not by recurrence, so the
 * error stays O(log n) ulps). Any other length n: Bluestein's chirp-z
 * transform, a circular convolution of length m (the power of two >=
 * 2n - 1) done with the radix-2 code, with the chirp's angles reduced
 * modulo 2n in integers before the sine and cosine (pi k^2 / n is large).
 * Written here rather than linking a library: FFTW is GPL, and Debian's
 * kissfft ships only a float build, while complex128 needs double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fft_kernels.h"

struct fw_fft_plan {
    int64_t n;          /* transform length */
    int64_t m;          /* radix-2 length: n itself, or Bluestein's */
    double *tw;         /* m/2 twiddles exp(-2 pi i k / m), interleaved */
    double *chirp;      /* Bluestein: n values exp(-pi i k^2 / n) */
    double *filt;       /* Bluestein: the DFT of the conjugate chirp, m values */
};

static bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* In-place radix-2 DFT of m complex values (forward sign). */
static void radix2(const fw_fft_plan *p, double *x)
{
    const int64_t m = p->m;

    for (int64_t i = 1, j = 0; i < m; i++) {
        int64_t bit = m >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            double tr = x[2 * i], ti = x[2 * i + 1];
            x[2 * i] = x[2 * j];
            x[2 * i + 1] = x[2 * j + 1];
            x[2 * j] = tr;
            x[2 * j + 1] = ti;
        }
    }
    for (int64_t len = 2; len <= m; len <<= 1) {
        const int64_t half = len >> 1, step = m / len;
        for (int64_t s = 0; s < m; s += len) {
            double *a = x + 2 * s, *b = x + 2 * (s + half);
            for (int64_t k = 0; k < half; k++) {
                const double wr = p->tw[2 * k * step], wi = p->tw[2 * k * step + 1];
                const double br = b[2 * k] * wr - b[2 * k + 1] * wi;
                const double bi = b[2 * k] * wi + b[2 * k + 1] * wr;
                b[2 * k] = a[2 * k] - br;
                b[2 * k + 1] = a[2 * k + 1] - bi;
                a[2 * k] += br;
                a[2 * k + 1] += bi;
            }
        }
    }
}

void fw__fft_plan_free(fw_fft_plan *p)
{
    if (p == NULL)
        return;
    free(p->tw);
    free(p->chirp);
    free(p->filt);
    free(p);
}

int fw__fft_plan_new(fw_fft_plan **out, int64_t n)
{
    fw_fft_plan *p;

    *out = NULL;
    if (n < 1 || n > ((int64_t)1 << 40))
        return -1;
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return -1;
    p->n = n;
    p->m = n;
    if (!is_pow2(n)) {
        p->m = 1;
        while (p->m < 2 * n - 1)
            p->m <<= 1;
    }
    if ((p->tw = malloc(sizeof(double) * (size_t)(p->m > 1 ? p->m : 2))) == NULL)
        goto fail;
    for (int64_t k = 0; k < p->m / 2; k++) {
        double a = -2.0 * M_PI * (double)k / (double)p->m;
        p->tw[2 * k] = cos(a);
        p->tw[2 * k + 1] = sin(a);
    }
    if (p->m != n) {
        const unsigned __int128 twon = (unsigned __int128)(2 * n);
        p->chirp = malloc(sizeof(double) * 2 * (size_t)n);
        p->filt = calloc(2 * (size_t)p->m, sizeof(double));
        if (p->chirp == NULL || p->filt == NULL)
            goto fail;
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
                p->filt[2 * (p->m - k)] = p->chirp[2 * k];
                p->filt[2 * (p->m - k) + 1] = -p->chirp[2 * k + 1];
            }
        }
        radix2(p, p->filt);
    }
    *out = p;
    return 0;
fail:
    fw__fft_plan_free(p);
    return -1;
}

int64_t fw__fft_scratch_len(const fw_fft_plan *p) { return p->m == p->n ? 0 : 2 * p->m; }

void fw__fft_exec(const fw_fft_plan *p, double *x, bool inverse, double *scratch)
{
    const int64_t n = p->n, m = p->m;

    /* the inverse is the forward of the conjugate, conjugated */
    if (inverse)
        for (int64_t k = 0; k < n; k++)
            x[2 * k + 1] = -x[2 * k + 1];
    if (m == n) {
        radix2(p, x);
    } else {
        double *a = scratch;
        for (int64_t k = 0; k < n; k++) {
            const double cr = p->chirp[2 * k], ci = p->chirp[2 * k + 1];
            a[2 * k] = x[2 * k] * cr - x[2 * k + 1] * ci;
            a[2 * k + 1] = x[2 * k] * ci + x[2 * k + 1] * cr;
        }
        memset(a + 2 * n, 0, sizeof(double) * 2 * (size_t)(m - n));
        radix2(p, a);
        /* pointwise product with the filter, then an inverse DFT (conjugates) */
        for (int64_t k = 0; k < m; k++) {
            const double fr = p->filt[2 * k], fi = p->filt[2 * k + 1];
            const double ar = a[2 * k], ai = a[2 * k + 1];
            a[2 * k] = ar * fr - ai * fi;
            a[2 * k + 1] = -(ar * fi + ai * fr);
        }
        radix2(p, a);
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
