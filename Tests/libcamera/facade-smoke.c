// The facade run end to end from C, on whichever libcamera it was linked with (facade-versions
// builds it against each): the manager lists the camera named on the command line, its
// formats and controls; the camera is opened, configured, started; frames complete through
// the descriptor; a control set is carried by a completed request (wait_applied) and read
// back (from metadata where the pipeline reports it; vimc's does not report Brightness, so
// there the value is the one set — test_vimc.py reads the sensor's V4L2 control for that);
// an out-of-range value and a control it lacks are refused; stop and close. Prints what it
// found, one `key: value` a line, and exits non-zero at the first thing that fails.
//
// Usage: facade-smoke CAMERA-ID WIDTH HEIGHT CONTROL VALUE

#include "CLibcamera.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOURCC(a, b, c, d) ((uint32_t)(a) | ((uint32_t)(b) << 8) | ((uint32_t)(c) << 16) | ((uint32_t)(d) << 24))

static int fail(const char *what, long r) {
    fprintf(stderr, "facade-smoke: %s: %ld (%s)\n", what, r, strerror((int)(r < 0 ? -r : r)));
    return 1;
}

// Waits for and gives back `n` completed requests; answers how many were whole frames.
static int frames(lc_camera *c, int n) {
    int good = 0;
    for (int tries = 0; n > 0 && tries < 400; tries++) {
        struct pollfd fd = {lc_camera_completion_fd(c), POLLIN, 0};
        if (poll(&fd, 1, 250) < 0) return -1;
        lc_completion done;
        while (n > 0 && lc_camera_next(c, &done) == 0) {
            good += done.ok && done.bytes > 0;
            n--;
            lc_camera_queue(c, done.index);
        }
    }
    return good;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: facade-smoke CAMERA-ID WIDTH HEIGHT CONTROL VALUE\n");
        return 2;
    }
    const char *id = argv[1], *control = argv[4];
    uint32_t width = (uint32_t)atoi(argv[2]), height = (uint32_t)atoi(argv[3]);
    double value = atof(argv[5]);
    printf("version: %s\n", lc_version());

    lc_manager *m;
    long r = lc_manager_start(&m);
    if (r) return fail("lc_manager_start", r);
    lc_camera_info infos[8];
    size_t count = 0;
    r = lc_manager_cameras(m, infos, 8, &count);
    int found = 0;
    for (size_t i = 0; i < count && i < 8; i++) found |= strcmp(infos[i].id, id) == 0;
    printf("cameras: %zu, %s: %s\n", count, id, found ? "listed" : "missing");
    if (r || !found) return fail("lc_manager_cameras", r ? r : -ENODEV);

    lc_stream_format formats[256];
    r = lc_manager_formats(m, id, formats, 256, &count);
    int offered = 0;
    for (size_t i = 0; i < count && i < 256; i++) {
        offered |= formats[i].fourcc == FOURCC('B', 'G', '2', '4') && formats[i].width == width && formats[i].height == height;
    }
    printf("formats: %zu, BG24 %ux%u: %s\n", count, width, height, offered ? "offered" : "missing");
    if ((r && r != -ENOSPC) || !offered) return fail("lc_manager_formats", r ? r : -EINVAL);

    lc_control_info controls[64];
    r = lc_manager_controls(m, id, controls, 64, &count);
    const lc_control_info *info = NULL;
    for (size_t i = 0; i < count && i < 64; i++) {
        printf("control: %s [%g, %g]\n", controls[i].name, controls[i].min, controls[i].max);
        if (strcmp(controls[i].name, control) == 0) info = &controls[i];
    }
    if (r || !info) return fail("lc_manager_controls", r ? r : -ENOTSUP);

    lc_camera *c;
    r = lc_camera_open(m, id, &c);
    if (r) return fail("lc_camera_open", r);
    lc_stream s;
    r = lc_camera_configure(c, FOURCC('B', 'G', '2', '4'), width, height, 4, &s);
    printf("configured: %ux%u stride %u, %u buffers, adjusted %d\n", s.width, s.height, s.stride, s.buffers, s.adjusted);
    if (r || s.adjusted) return fail("lc_camera_configure", r ? r : -EINVAL);
    r = lc_camera_start(c);
    if (r) return fail("lc_camera_start", r);
    int good = frames(c, 3);
    printf("frames: %d of 3\n", good);
    if (good < 3) return fail("frames", -ETIMEDOUT);

    long generation = (long)lc_camera_set_control(c, control, &value, 1);
    if (generation < 0) return fail("lc_camera_set_control", generation);
    // The wait is for the capture side to take completions: this thread is it, so step it.
    int applied = -ETIMEDOUT;
    for (int i = 0; i < 20 && applied != 0; i++) {
        frames(c, 1);
        applied = lc_camera_wait_applied(c, generation, 0);
    }
    double read = 0;
    int32_t from_metadata = 0;
    r = lc_camera_get_control(c, control, &read, 1, &count, &from_metadata);
    printf("%s: set %g, generation %ld applied %s, read %g (%s)\n", control, value, generation, applied ? "no" : "yes", read,
           from_metadata ? "metadata" : "as set");
    if (applied || r || read != value) return fail("the control's read back", r ? r : -EINVAL);

    double outside = info->max + 1;
    r = (long)lc_camera_set_control(c, control, &outside, 1);
    printf("%s %g: %s\n", control, outside, r == -ERANGE ? "refused (ERANGE)" : "not refused");
    if (r != -ERANGE) return fail("an out-of-range value", r);
    double zero = 0;
    r = (long)lc_camera_set_control(c, "NoSuchControl", &zero, 1);
    printf("NoSuchControl: %s\n", r == -ENOTSUP ? "refused (ENOTSUP)" : "not refused");
    if (r != -ENOTSUP) return fail("a control it lacks", r);

    r = lc_camera_stop(c);
    if (r) return fail("lc_camera_stop", r);
    lc_camera_close(c);
    lc_manager_stop(m);
    printf("ok\n");
    return 0;
}
