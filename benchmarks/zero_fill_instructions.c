/* Which store instructions write zeros faster than data on this machine (not a test; no part of
 * numalab builds it). benchmarks/zero_fill.py measures libc's memset, the call the benchmarks'
 * bzero makes; this separates the instructions under it: one thread fills 1 GiB, best of 4, with
 * rep stosb (glibc's large-memset path on ERMS parts), 32-byte AVX2 stores, 32-byte non-temporal
 * stores and, on AMD, clzero (a whole line zeroed without reading it), each writing zeros over
 * ones and ones over zeros.
 *
 *   gcc -O2 -mavx2 -o /tmp/zero_fill_instructions benchmarks/zero_fill_instructions.c
 *   /tmp/zero_fill_instructions            # add "noclzero" on a CPU without clzero (Intel)
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static void stosb(void *p, int v, size_t n) { __asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(v) : "memory"); }

static void avx(void *p, int v, size_t n)
{
    __m256i x = _mm256_set1_epi8((char)v);
    for (size_t i = 0; i < n; i += 32)
        _mm256_store_si256((__m256i *)((char *)p + i), x);
}

static void nt(void *p, int v, size_t n)
{
    __m256i x = _mm256_set1_epi8((char)v);
    for (size_t i = 0; i < n; i += 32)
        _mm256_stream_si256((__m256i *)((char *)p + i), x);
    _mm_sfence();
}

static void clz(void *p, int v, size_t n)
{
    (void)v;   /* clzero writes zeros only */
    for (size_t i = 0; i < n; i += 64)
        __asm__ volatile("clzero" ::"a"((char *)p + i) : "memory");
}

int main(int argc, char **argv)
{
    size_t n = 1UL << 30;
    char *p = aligned_alloc(4096, n);
    if (!p) { perror("aligned_alloc"); return 1; }
    memset(p, 0, n);                                  /* first touch */
    struct { const char *name; void (*f)(void *, int, size_t); } k[] = {
        {"rep stosb", stosb}, {"avx2 store", avx}, {"nt store", nt}, {"clzero", clz}};
    int kinds = (argc > 1 && !strcmp(argv[1], "noclzero")) ? 3 : 4;
    for (int i = 0; i < kinds; i++)
        for (int v = 0; v < 2; v++) {
            if (k[i].f == clz && v == 1)
                continue;
            double best = 0;
            for (int r = 0; r < 4; r++) {
                memset(p, 1 - v, n);
                double t0 = now();
                k[i].f(p, v, n);
                double g = n / (now() - t0) / 1e9;
                if (g > best) best = g;
            }
            printf("%-11s %d over %d: %6.1f GB/s\n", k[i].name, v, 1 - v, best);
        }
    free(p);
    return 0;
}
