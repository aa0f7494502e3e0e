// The motion detector's per-frame work on a small luma grid (issue 28): the frame reduced to
// cell means, then each cell compared with a slowly updated reference against a noise level
// learned per cell, after the picture's global brightness change is divided out. Plain C,
// built -O2 in every build: a debug build must keep up with the camera too.
#ifndef VIEWFINDER_MOTION_H
#define VIEWFINDER_MOTION_H

#include <stddef.h>
#include <stdint.h>

/// The luma of a `width`×`height` frame as `gw`×`gh` cell means: luma sample (x, y) is
/// `src[y * stride + x * xstep]` (xstep 2 for packed 4:2:2 with `src` at its first Y, 1 for
/// a plane). Each cell is averaged over at most 4×4 evenly spread samples.
void vf_motion_grid(const uint8_t *src, size_t stride, int xstep, int width, int height,
                    int gw, int gh, uint8_t *out);

/// What the comparison is told for one frame.
typedef struct {
    int cells;
    int gw, gh;
    /// A cell's change counts when |cur − ref·gain| > max(min_diff, noise_factor · noise).
    float min_diff;
    float noise_factor;
    /// How fast the reference follows the picture where nothing changed, and where it did
    /// (so a parked car becomes background), per frame.
    float ref_rate, ref_rate_changed;
    /// How fast the learned noise (the mean absolute difference where nothing changed) follows.
    float noise_rate;
    /// How fast a cell's activity (the fraction of frames it changed) follows; a cell busier
    /// than `busy_on` is left out (a flag waving, a clock's digits) until it is calmer than `busy_off`.
    float activity_rate, busy_on, busy_off;
    /// Levels the fitted change of light may move black or white before the frame counts as a
    /// change of light (judged no further: the reference becomes this picture).
    float light_tolerance;
} vf_motion_params;

/// The detector's memory, one entry a cell (the caller owns the arrays).
typedef struct {
    float *ref;
    float *noise;
    float *activity;
    /// 1: left out while busy.
    uint8_t *busy;
} vf_motion_state;

typedef struct {
    /// Cells considered (in `mask`, not busy) and those that changed (with a changed neighbour).
    int considered, changed;
    /// Cells changed before the neighbour test, over those in `mask` (a light switched on
    /// changes most of them).
    int raw_changed, in_mask;
    /// The change of light: the picture ≈ gain · reference + offset.
    float gain, offset;
    /// The light changed beyond the tolerance: nothing was judged, the reference is reset.
    int light_changed;
    /// The changed cells' bounding box in grid cells, [x0, x1) × [y0, y1); empty when none.
    int x0, y0, x1, y1;
} vf_motion_result;

/// Compares `cur` with the reference (after fitting the change of light), writes each cell's verdict into `changed` (1 counted),
/// and updates the reference, noise and activity (unless `learn_only`: then the reference and
/// noise follow fast and nothing is judged). `mask`: 1 where the user lets motion count;
/// `scratch`: `cells` bytes of the caller's.
void vf_motion_step(const vf_motion_params *p, vf_motion_state *s, const uint8_t *cur,
                    const uint8_t *mask, int learn_only, uint8_t *changed, uint8_t *scratch,
                    vf_motion_result *r);

/// Sets the reference to `cur` (a light switched: the new picture is the background).
void vf_motion_rebase(vf_motion_state *s, const uint8_t *cur, int cells);

#endif
