// The de-interleaves on the encode path, at memory speed: packed YUYV to Y, U and V planes,
// and interleaved UV (NV12/NV16) to U and V. SSE2 on x86-64 (every x86-64 has it), NEON on
// arm64, plain C elsewhere; every version writes exactly what the plain loop writes.
#ifndef VIEWFINDER_PIXELS_H
#define VIEWFINDER_PIXELS_H

#include <stddef.h>
#include <stdint.h>

/// `rows` rows of `width` (even) pixels of packed 4:2:2, `src_stride` bytes apart; the byte
/// offsets of Y0, U and V in each 4-byte pair (YUYV: 0, 1, 3; UYVY: 1, 0, 2; YVYU: 0, 3, 1).
/// Y rows are `width` bytes, U and V rows `width / 2`.
void vf_split_packed422(const uint8_t *src, size_t src_stride, int width, int rows,
                        int y_offset, int u_offset, int v_offset,
                        uint8_t *y, uint8_t *u, uint8_t *v);

/// `rows` rows of `pairs` interleaved U/V byte pairs, `src_stride` bytes apart, into U and V
/// rows of `pairs` bytes.
void vf_split_uv(const uint8_t *src, size_t src_stride, int pairs, int rows, uint8_t *u, uint8_t *v);

#endif
