// See pixels.h. The vector loops take 32 pixels (or 32 U/V pairs) a step; the tail of each
// row goes through the plain loop, so any width works.

#include "pixels.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define VF_SSE2 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define VF_NEON 1
#endif

static void split_packed_row_plain(const uint8_t *s, int from, int width, int yo, int uo, int vo,
                                   uint8_t *y, uint8_t *u, uint8_t *v) {
    for (int x = from; x < width; x += 2) {
        const uint8_t *p = s + x * 2;
        y[x] = p[yo];
        y[x + 1] = p[yo + 2];
        u[x / 2] = p[uo];
        v[x / 2] = p[vo];
    }
}

#if VF_SSE2
/// Low bytes of the 16-bit lanes of a and b, packed: the even bytes of 32.
static inline __m128i even_bytes(__m128i a, __m128i b) {
    const __m128i low = _mm_set1_epi16(0x00FF);
    return _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low));
}
/// High bytes of the 16-bit lanes: the odd bytes of 32.
static inline __m128i odd_bytes(__m128i a, __m128i b) {
    return _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8));
}
#endif

void vf_split_packed422(const uint8_t *src, size_t src_stride, int width, int rows,
                        int yo, int uo, int vo, uint8_t *y, uint8_t *u, uint8_t *v) {
    const int cw = width / 2;
    for (int r = 0; r < rows; r++) {
        const uint8_t *s = src + (size_t)r * src_stride;
        uint8_t *yr = y + (size_t)r * width, *ur = u + (size_t)r * cw, *vr = v + (size_t)r * cw;
        int x = 0;
#if VF_SSE2
        // Y in the even bytes (YUYV, YVYU) or the odd (UYVY); chroma in the others, U and V
        // alternating: split those once more.
        const int y_even = (yo == 0);
        const int u_first = (uo < vo);
        for (; x + 32 <= width; x += 32) {
            const __m128i *p = (const __m128i *)(s + x * 2);
            __m128i a = _mm_loadu_si128(p), b = _mm_loadu_si128(p + 1);
            __m128i c = _mm_loadu_si128(p + 2), d = _mm_loadu_si128(p + 3);
            __m128i y0 = y_even ? even_bytes(a, b) : odd_bytes(a, b);
            __m128i y1 = y_even ? even_bytes(c, d) : odd_bytes(c, d);
            __m128i c0 = y_even ? odd_bytes(a, b) : even_bytes(a, b);   // 8 chroma pairs
            __m128i c1 = y_even ? odd_bytes(c, d) : even_bytes(c, d);
            __m128i first = even_bytes(c0, c1), second = odd_bytes(c0, c1);
            _mm_storeu_si128((__m128i *)(yr + x), y0);
            _mm_storeu_si128((__m128i *)(yr + x + 16), y1);
            _mm_storeu_si128((__m128i *)(ur + x / 2), u_first ? first : second);
            _mm_storeu_si128((__m128i *)(vr + x / 2), u_first ? second : first);
        }
#elif VF_NEON
        for (; x + 32 <= width; x += 32) {
            uint8x16x4_t q = vld4q_u8(s + x * 2);  // bytes 0, 1, 2, 3 of each 4-byte pair
            uint8x16x2_t yy = { { q.val[yo], q.val[yo + 2] } };
            vst2q_u8(yr + x, yy);
            vst1q_u8(ur + x / 2, q.val[uo]);
            vst1q_u8(vr + x / 2, q.val[vo]);
        }
#endif
        split_packed_row_plain(s, x, width, yo, uo, vo, yr, ur, vr);
    }
}

void vf_split_uv(const uint8_t *src, size_t src_stride, int pairs, int rows, uint8_t *u, uint8_t *v) {
    for (int r = 0; r < rows; r++) {
        const uint8_t *s = src + (size_t)r * src_stride;
        uint8_t *ur = u + (size_t)r * pairs, *vr = v + (size_t)r * pairs;
        int i = 0;
#if VF_SSE2
        for (; i + 16 <= pairs; i += 16) {
            __m128i a = _mm_loadu_si128((const __m128i *)(s + i * 2)), b = _mm_loadu_si128((const __m128i *)(s + i * 2 + 16));
            _mm_storeu_si128((__m128i *)(ur + i), even_bytes(a, b));
            _mm_storeu_si128((__m128i *)(vr + i), odd_bytes(a, b));
        }
#elif VF_NEON
        for (; i + 16 <= pairs; i += 16) {
            uint8x16x2_t q = vld2q_u8(s + i * 2);
            vst1q_u8(ur + i, q.val[0]);
            vst1q_u8(vr + i, q.val[1]);
        }
#endif
        for (; i < pairs; i++) { ur[i] = s[i * 2]; vr[i] = s[i * 2 + 1]; }
    }
}
