#include "CMotion.h"
#include <math.h>
#include <string.h>

void vf_motion_grid(const uint8_t *src, size_t stride, int xstep, int width, int height,
                    int gw, int gh, uint8_t *out) {
    int cw = width / gw, ch = height / gh;
    int sx = cw >= 4 ? cw / 4 : 1, sy = ch >= 4 ? ch / 4 : 1;
    int nx = cw < 4 ? cw : 4, ny = ch < 4 ? ch : 4;
    int n = nx * ny;
    for (int gy = 0; gy < gh; gy++) {
        for (int gx = 0; gx < gw; gx++) {
            unsigned sum = 0;
            const uint8_t *cell = src + (size_t)(gy * ch + sy / 2) * stride + (size_t)(gx * cw + sx / 2) * xstep;
            for (int j = 0; j < ny; j++) {
                const uint8_t *row = cell + (size_t)(j * sy) * stride;
                for (int i = 0; i < nx; i++) sum += row[(size_t)(i * sx) * xstep];
            }
            out[gy * gw + gx] = (uint8_t)((sum + n / 2) / n);
        }
    }
}

/// Cells near black or white are left out of the light's fit: clipped, they do not follow it.
static inline int unclipped(float v) { return v > 8 && v < 247; }

/// The change of light as cur ≈ gain · ref + offset, fitted by least squares over the cells in
/// `mask` (and, when `skip` is given, not in it): exposure and gain scale the picture, a torch
/// or a lamp adds to it. Without enough spread to fit a slope, the means' ratio alone.
typedef struct {
    float gain, offset;
    /// The span of reference levels the fit saw (mean ± 2 standard deviations): the light is
    /// judged there, not extrapolated to levels the picture does not have.
    float low, high;
} light;

static light light_of(const vf_motion_state *s, const uint8_t *cur, const uint8_t *mask, const uint8_t *skip, int cells) {
    double n = 0, sr = 0, sc = 0, srr = 0, src = 0;
    for (int i = 0; i < cells; i++) {
        if (!mask[i] || s->busy[i] || (skip && skip[i])) continue;
        float r = s->ref[i], c = cur[i];
        if (!unclipped(c) || !unclipped(r)) continue;
        n += 1; sr += r; sc += c; srr += (double)r * r; src += (double)r * c;
    }
    light l = {1, 0, 16, 235};
    if (n < 16 || sr <= 0) return l;
    double var = srr - sr * sr / n, cov = src - sr * sc / n;
    double mean = sr / n, sd = sqrt(var / n);
    l.low = (float)(mean - 2 * sd < 16 ? 16 : mean - 2 * sd);
    l.high = (float)(mean + 2 * sd > 235 ? 235 : mean + 2 * sd);
    if (var > n * 16) {  // a spread of more than 4 levels: a slope can be fitted
        double g = cov / var;
        if (g < 0.05) g = 0.05;  // ±4 EV in a frame: beyond that, a light switched (the caller's verdict)
        if (g > 20) g = 20;
        l.gain = (float)g;
        l.offset = (float)((sc - g * sr) / n);
    } else if (sc > 0) {
        l.gain = (float)(sc / sr);
    }
    return l;
}

static inline float expected_of(float ref, light l) {
    float e = ref * l.gain + l.offset;
    return e < 0 ? 0 : e > 255 ? 255 : e;
}

/// How far `cur` is from what the light predicts, counting only what clipping cannot explain:
/// a reference clipped white was at least that bright (so the prediction is a floor), one
/// clipped black at most that dark (a ceiling), and so for the picture now.
static inline float difference(float ref, float cur, light l) {
    float e = expected_of(ref, l), d = cur - e;
    int floor_only = ref >= 250 || cur >= 250, ceiling_only = ref <= 5 || cur <= 5;
    if (floor_only && d > 0) return 0;
    if (ceiling_only && d < 0) return 0;
    return fabsf(d);
}

static int classify(const vf_motion_params *p, const vf_motion_state *s, const uint8_t *cur, const uint8_t *mask,
                    light l, uint8_t *raw) {
    int count = 0;
    for (int i = 0; i < p->cells; i++) {
        float d = difference(s->ref[i], cur[i], l);
        float limit = p->noise_factor * s->noise[i];
        if (limit < p->min_diff) limit = p->min_diff;
        raw[i] = mask[i] && d > limit;
        count += raw[i];
    }
    return count;
}

void vf_motion_step(const vf_motion_params *p, vf_motion_state *s, const uint8_t *cur,
                    const uint8_t *mask, int learn_only, uint8_t *changed, uint8_t *scratch,
                    vf_motion_result *r) {
    int cells = p->cells, gw = p->gw, gh = p->gh;
    memset(r, 0, sizeof *r);
    r->x0 = gw; r->y0 = gh;
    // The brightness ratio twice: the second time without what the first found changed, so
    // a large subject does not pass for a change of light.
    uint8_t *raw = scratch, *kept = changed;
    light l = light_of(s, cur, mask, NULL, cells);
    if (!learn_only) {
        classify(p, s, cur, mask, l, raw);
        l = light_of(s, cur, mask, raw, cells);
    }
    r->gain = l.gain;
    r->offset = l.offset;
    if (!learn_only) {
        // The light moved more than the tolerance anywhere between black and white: a light,
        // the torch or the exposure changed. Nothing is judged; the picture is the new background.
        float dark = l.low * (l.gain - 1) + l.offset, bright = l.high * (l.gain - 1) + l.offset;
        if (fabsf(dark) > p->light_tolerance || fabsf(bright) > p->light_tolerance) {
            r->light_changed = 1;
            for (int i = 0; i < cells; i++) { s->ref[i] = cur[i]; changed[i] = 0; }
            return;
        }
    }
    for (int i = 0; i < cells; i++) r->in_mask += mask[i];
    if (learn_only) {
        for (int i = 0; i < cells; i++) {
            float d = fabsf((float)cur[i] - expected_of(s->ref[i], l));
            s->noise[i] += (d - s->noise[i]) * 0.25f;
            s->ref[i] += ((float)cur[i] - s->ref[i]) * 0.25f;
            changed[i] = 0;
        }
        return;
    }
    r->raw_changed = classify(p, s, cur, mask, l, raw);
    // A change counts when a 4-neighbour changed too: a lone cell is noise or a speck.
    for (int y = 0; y < gh; y++) {
        for (int x = 0; x < gw; x++) {
            int i = y * gw + x;
            kept[i] = raw[i] && ((x > 0 && raw[i - 1]) || (x + 1 < gw && raw[i + 1]) ||
                                 (y > 0 && raw[i - gw]) || (y + 1 < gh && raw[i + gw]));
        }
    }
    for (int y = 0; y < gh; y++) {
        for (int x = 0; x < gw; x++) {
            int i = y * gw + x;
            float d = difference(s->ref[i], cur[i], l);
            // A cell changing most of the time (a flag, a clock's digits) is left out while it does.
            s->activity[i] += ((float)kept[i] - s->activity[i]) * p->activity_rate;
            if (s->busy[i] ? s->activity[i] < p->busy_off : s->activity[i] > p->busy_on) s->busy[i] ^= 1;
            int counted = kept[i] && !s->busy[i];
            if (mask[i] && !s->busy[i]) r->considered++;
            if (counted) {
                r->changed++;
                if (x < r->x0) r->x0 = x;
                if (y < r->y0) r->y0 = y;
                if (x + 1 > r->x1) r->x1 = x + 1;
                if (y + 1 > r->y1) r->y1 = y + 1;
            }
            if (!raw[i]) {  // the noise is learned where nothing changed
                float limit = p->noise_factor * 3 * (s->noise[i] > 1 ? s->noise[i] : 1);
                s->noise[i] += ((d < limit ? d : limit) - s->noise[i]) * p->noise_rate;
            }
            // The reference follows the picture as it is now (light and all): the fit only has
            // to explain the last fraction of a second's change.
            s->ref[i] += ((float)cur[i] - s->ref[i]) * (raw[i] ? p->ref_rate_changed : p->ref_rate);
            kept[i] = (uint8_t)counted;  // the neighbour test above read `raw`, not these
        }
    }
    if (r->changed == 0) { r->x0 = r->y0 = r->x1 = r->y1 = 0; }
}

void vf_motion_rebase(vf_motion_state *s, const uint8_t *cur, int cells) {
    for (int i = 0; i < cells; i++) s->ref[i] = cur[i];
}
