#include "CSensorNoise.h"
#include <math.h>

static uint64_t next(uint64_t *s) {  // splitmix64: fast, and the same everywhere
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void vf_noise_pattern(int8_t *pattern, size_t count, uint64_t seed) {
    uint64_t s = seed;
    for (size_t i = 0; i < count; i += 2) {  // Box-Muller: two samples a draw
        double u1 = ((next(&s) >> 11) + 1.0) / 9007199254740993.0, u2 = (next(&s) >> 11) / 9007199254740992.0;
        double r = sqrt(-2 * log(u1)) * 32;
        double a = r * cos(6.283185307179586 * u2), b = r * sin(6.283185307179586 * u2);
        pattern[i] = (int8_t)(a > 127 ? 127 : a < -127 ? -127 : a);
        if (i + 1 < count) pattern[i + 1] = (int8_t)(b > 127 ? 127 : b < -127 ? -127 : b);
    }
}

static inline uint8_t clamp(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

// One run of pixel pairs (Y, then U or V) against as many pattern samples. The luma's sigma is
// computed, not looked up: a table indexed by the pixel is a gather, which keeps the loop
// scalar (5-7 ms a 1080p frame on this machine's cores); the square root vectorizes (1.2 ms
// with AVX2, 1.5 with SSE4.1). It needs -fno-math-errno (Package.swift): a sqrtf that may set
// errno is a call.
__attribute__((always_inline)) static inline void noise_pairs(uint8_t *restrict p, const int8_t *restrict n, size_t pairs,
                                                              float luma_a, float luma_b, int chroma_sigma) {
    for (size_t k = 0; k < pairs; k++) {
        int y = p[2 * k], c = p[2 * k + 1];
        int s = (int)(sqrtf(luma_a * (float)y + luma_b) + 0.5f);
        p[2 * k] = clamp(y + ((n[2 * k] * s) >> 8));
        p[2 * k + 1] = clamp(c + ((n[2 * k + 1] * chroma_sigma) >> 8));
    }
}

typedef void (*noise_fn)(uint8_t *restrict, const int8_t *restrict, size_t, float, float, int);

static void noise_pairs_baseline(uint8_t *restrict p, const int8_t *restrict n, size_t pairs, float a, float b, int cs) {
    noise_pairs(p, n, pairs, a, b, cs);
}

#if defined(__x86_64__) && defined(__clang__)
// x86-64's baseline (SSE2) has no byte-to-int widening and stays scalar: the same loop
// compiled for AVX2 and for SSE4.1, chosen by the CPU at each frame. Chosen in code, not by
// the loader (target_clones' ifunc): an ifunc resolver runs before ThreadSanitizer's and
// AddressSanitizer's runtimes exist, and an instrumented one crashed the tests' start.
// Other architectures have their SIMD in the baseline (NEON on arm64).
__attribute__((target("avx2"))) static void noise_pairs_avx2(uint8_t *restrict p, const int8_t *restrict n, size_t pairs,
                                                             float a, float b, int cs) {
    noise_pairs(p, n, pairs, a, b, cs);
}
__attribute__((target("sse4.1"))) static void noise_pairs_sse41(uint8_t *restrict p, const int8_t *restrict n, size_t pairs,
                                                                float a, float b, int cs) {
    noise_pairs(p, n, pairs, a, b, cs);
}
static noise_fn choose(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) return noise_pairs_avx2;
    if (__builtin_cpu_supports("sse4.1")) return noise_pairs_sse41;
    return noise_pairs_baseline;
}
#else
static noise_fn choose(void) { return noise_pairs_baseline; }
#endif

void vf_noise_yuyv(uint8_t *frame, size_t bytes, const int8_t *pattern, size_t pattern_count, size_t offset,
                   float luma_a, float luma_b, uint16_t chroma_sigma) {
    if (pattern_count < 2) return;
    offset = (offset % pattern_count) & ~(size_t)1;
    noise_fn pairs = choose();
    size_t i = 0;
    while (i + 1 < bytes) {
        // A run to the end of the frame or of the pattern, whichever comes first: no modulo per byte.
        size_t run = bytes - i, left = (pattern_count - offset) & ~(size_t)1;
        if (run > left) run = left;
        run &= ~(size_t)1;
        pairs(frame + i, pattern + offset, run / 2, luma_a, luma_b, chroma_sigma);
        i += run;
        offset += run;
        if (offset + 1 >= pattern_count) offset = 0;
    }
}
