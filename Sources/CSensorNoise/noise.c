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

void vf_noise_yuyv(uint8_t *frame, size_t bytes, const int8_t *pattern, size_t pattern_count, size_t offset,
                   const uint16_t luma_sigma[256], uint16_t chroma_sigma) {
    if (pattern_count < 2) return;
    offset = (offset % pattern_count) & ~(size_t)1;
    size_t i = 0;
    while (i + 1 < bytes) {
        // A run to the end of the frame or of the pattern, whichever comes first: no modulo per byte.
        size_t run = bytes - i, left = (pattern_count - offset) & ~(size_t)1;
        if (run > left) run = left;
        const int8_t *n = pattern + offset;
        uint8_t *p = frame + i;
        for (size_t k = 0; k + 1 < run; k += 2) {
            int y = p[k];
            p[k] = clamp(y + ((n[k] * (int)luma_sigma[y]) >> 8));
            p[k + 1] = clamp(p[k + 1] + ((n[k + 1] * (int)chroma_sigma) >> 8));
        }
        i += run;
        offset += run;
        if (offset + 1 >= pattern_count) offset = 0;
    }
}
