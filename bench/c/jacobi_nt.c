/* The swap Jacobi of bench/ping_pong.py in C (float64, 5-point, STEPS
   sweeps, A and B swapped after each), as the ceiling of a streamed
   Jacobi: plain stores, and NT stores of 256 or 512 bits from the first
   aligned element of each row, with or without a prefetcht1 of the row
   below 4 KiB ahead. Built by bench/vector_width.py (gcc -O3 -march=native);
   the 512-bit stores only where the build's CPU has AVX-512
   (widest_nt_bits() says which). */
#include <immintrin.h>
#include <stddef.h>

#define POINT(j) (0.2 * (a[j] + up[j] + down[j] + a[(j) - 1] + a[(j) + 1]))
#define SUM(W, ld, j) _mm##W##_add_pd(_mm##W##_add_pd(_mm##W##_add_pd(_mm##W##_add_pd(ld(a + j), ld(up + j)), \
                      ld(down + j)), ld(a + j - 1)), ld(a + j + 1))

static void sweep(const double *A, double *B, size_t n, size_t m, int bits, int prefetch) {
    for (size_t i = 1; i < n - 1; i++) {
        const double *a = A + i * m, *up = a - m, *down = a + m;
        double *b = B + i * m;
        size_t j = 1, bytes = bits / 8;
        if (bits)
            for (; j < m - 1 && ((size_t)(b + j) & (bytes - 1)); j++) b[j] = POINT(j);
        if (bits == 256)
            for (; j + 4 <= m - 1; j += 4) {
                if (prefetch) _mm_prefetch((const char *)(down + j + 512), _MM_HINT_T1);
                _mm256_stream_pd(b + j, _mm256_mul_pd(_mm256_set1_pd(0.2), SUM(256, _mm256_loadu_pd, j)));
            }
#ifdef __AVX512F__
        if (bits == 512)
            for (; j + 8 <= m - 1; j += 8) {
                if (prefetch) _mm_prefetch((const char *)(down + j + 512), _MM_HINT_T1);
                _mm512_stream_pd(b + j, _mm512_mul_pd(_mm512_set1_pd(0.2), SUM(512, _mm512_loadu_pd, j)));
            }
#endif
        for (; j < m - 1; j++) b[j] = POINT(j);
    }
    _mm_sfence();
}

int widest_nt_bits(void) {
#ifdef __AVX512F__
    return 512;
#else
    return 256;
#endif
}

void jacobi_swap(double *A, double *B, size_t n, size_t m, int steps, int bits, int prefetch) {
    for (int t = 0; t < steps; t++) {
        sweep(A, B, n, m, bits, prefetch);
        double *x = A; A = B; B = x;
    }
}
