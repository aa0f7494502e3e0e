// The synthetic sensor's noise (issue 27, item 6), in C so a debug build still adds it to a
// 1080p frame within a frame's time: a fixed pattern of Gaussian samples, read from an offset
// that changes every frame, scaled per pixel by the noise a real sensor has at that level.
#ifndef CSENSORNOISE_H
#define CSENSORNOISE_H
#include <stddef.h>
#include <stdint.h>

/// Fills `pattern` with Gaussian samples of standard deviation 32 (clipped to ±127), the same
/// for the same `seed`.
void vf_noise_pattern(int8_t *pattern, size_t count, uint64_t seed);

/// Adds noise to a YUYV frame of `bytes` bytes: luma byte Y gets pattern·s/256 with
/// s = round(sqrt(luma_a·Y + luma_b)) (8 × the standard deviation in code values at that level),
/// chroma bytes pattern·chroma_sigma/256. The pattern is read from `offset` on (wrapping), one
/// sample per byte.
void vf_noise_yuyv(uint8_t *frame, size_t bytes, const int8_t *pattern, size_t pattern_count, size_t offset,
                   float luma_a, float luma_b, uint16_t chroma_sigma);
#endif
