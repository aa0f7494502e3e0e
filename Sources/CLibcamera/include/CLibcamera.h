// A C facade over libcamera (C++17 inside, Capture the one Swift module above it), as
// camera-streamer's device/libcamera is: enumerate cameras, configure one stream, map its
// buffers, queue requests and learn of completed ones through a file descriptor, list and set
// controls by name. libcamera calls back on its own thread; the facade only queues what it is
// told there and wakes the descriptor, so nothing of ours ever runs on libcamera's thread.
//
// Every int is 0 (or a count) on success and -errno on failure: -ENODEV no such camera (or it
// went away), -EBUSY held by another process or running, -EACCES the wrong state, -EINVAL a
// bad argument or a value of the wrong type, -ENOTSUP a control the camera lacks, -ENOSPC a
// caller's array too small (the count says how many there are), -EAGAIN nothing completed,
// -EIO anything else libcamera refused. No C++ exception crosses into Swift.

#ifndef CLIBCAMERA_H
#define CLIBCAMERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lc_manager lc_manager;
typedef struct lc_camera lc_camera;

enum { LC_LOCATION_NONE = -1, LC_LOCATION_FRONT = 0, LC_LOCATION_BACK = 1, LC_LOCATION_EXTERNAL = 2 };
/// A control's value type (libcamera's ControlType, mapped by name: its numbering changes).
enum { LC_TYPE_NONE, LC_TYPE_BOOL, LC_TYPE_BYTE, LC_TYPE_INT32, LC_TYPE_INT64, LC_TYPE_FLOAT,
       LC_TYPE_STRING, LC_TYPE_RECTANGLE, LC_TYPE_SIZE };

#define LC_ID_MAX 256
#define LC_NAME_MAX 64
#define LC_MAX_PLANES 3
#define LC_VALUES_MAX 16

typedef struct {
    char id[LC_ID_MAX];         // libcamera's camera id ("platform/vimc.0 Sensor B")
    char model[LC_NAME_MAX];    // properties::Model, "" without one
    int32_t location;           // LC_LOCATION_*
    int32_t rotation;           // degrees, -1 without the property
    uint32_t pixel_width, pixel_height;  // properties::PixelArraySize, 0 without one
} lc_camera_info;

/// One size a stream can be configured at, in one pixel format (a DRM fourcc).
typedef struct {
    uint32_t fourcc;
    uint32_t width, height;
} lc_stream_format;

/// A control the camera has (its ControlInfoMap): its range and default as doubles (a bool
/// as 0/1), the values an enumerated one takes (AfMode's modes), and for a rectangle (ScalerCrop)
/// its largest as x, y, width, height. An array's range is its elements'.
typedef struct {
    uint32_t id;
    char name[LC_NAME_MAX];
    int32_t type;               // LC_TYPE_*
    int32_t has_range;
    double min, max, def;
    uint32_t nvalues;           // 0: not an enumerated control
    int32_t values[LC_VALUES_MAX];
    int32_t has_rect_max;
    double rect_max[4];
} lc_control_info;

/// The stream as configured: what libcamera applied (validate() may have adjusted it).
typedef struct {
    uint32_t fourcc;
    uint32_t width, height;
    uint32_t stride;            // bytes per row of the first plane
    uint32_t frame_size;        // bytes of a whole frame
    uint32_t buffers;           // requests (one buffer each) the camera cycles
    int32_t adjusted;           // 1 when libcamera changed what was asked
} lc_stream;

/// A completed request: its index (what lc_camera_queue takes back), its buffer's bytes.
typedef struct {
    uint32_t index;
    int32_t ok;                 // 0: cancelled or failed (a dropped frame)
    uint32_t sequence;
    uint64_t timestamp_ns;      // the frame's, on CLOCK_MONOTONIC in practice (V4L2's)
    const uint8_t *data;        // the mapped buffer, valid until the request is queued again
    size_t bytes;               // bytesused of every plane, added
    int32_t has_crop;           // 1: the request's metadata says the crop the frame was made with
    double crop[4];             // ScalerCrop as x, y, width, height (the sensor's pixels)
} lc_completion;

const char *lc_version(void);

/// The process's one camera manager, started (libcamera allows one). A machine without a
/// media subsystem starts one with no cameras.
int lc_manager_start(lc_manager **out);
void lc_manager_stop(lc_manager *m);
/// Its cameras now; *count is how many there are, whatever `cap` is.
int lc_manager_cameras(lc_manager *m, lc_camera_info *out, size_t cap, size_t *count);
/// The sizes a camera's video stream takes as they are, per pixel format (without acquiring it).
int lc_manager_formats(lc_manager *m, const char *id, lc_stream_format *out, size_t cap, size_t *count);
/// The controls a camera takes (its ControlInfoMap, without acquiring it), by id.
int lc_manager_controls(lc_manager *m, const char *id, lc_control_info *out, size_t cap, size_t *count);

/// Acquires the camera (-EBUSY: another process holds it).
int lc_camera_open(lc_manager *m, const char *id, lc_camera **out);
/// Stops, frees the buffers and releases the camera.
void lc_camera_close(lc_camera *c);
/// Configures the one video stream (fourcc, size, `buffers` requests to cycle where the pipeline
/// lets the count be chosen; 0: its own) and maps its buffers; `out` says what was applied.
int lc_camera_configure(lc_camera *c, uint32_t fourcc, uint32_t width, uint32_t height, uint32_t buffers, lc_stream *out);
/// Sets a control on the requests queued from now on, as `count` numbers: one for a scalar,
/// x, y, width, height for a rectangle, element after element for an array (FrameDurationLimits'
/// two, AfWindows' rectangles). libcamera does not check a value against its control: the
/// facade does — -ENOTSUP a control the camera lacks, -ERANGE a number outside its range or
/// not among an enumerated control's values, -EINVAL the wrong count for its type. Answers the
/// generation of this setting (see lc_camera_wait_applied) or -errno.
int64_t lc_camera_set_control(lc_camera *c, const char *name, const double *values, size_t count);
/// A control's value, flattened as set takes it: from the newest completed request's metadata
/// (*from_metadata 1), else the last value set (0); -ENOENT when neither has it, -ENOSPC when
/// `cap` is too small (*count says how many). Names any control libcamera defines, the camera's
/// or metadata's only (AfState, SensorTimestamp).
int lc_camera_get_control(lc_camera *c, const char *name, double *out, size_t cap, size_t *count, int32_t *from_metadata);
/// Waits at most `timeout_ms` until a request carrying every setting up to `generation` has
/// completed (its metadata is what get reads); 0 then, -ETIMEDOUT otherwise, -EACCES not running.
int lc_camera_wait_applied(lc_camera *c, int64_t generation, int timeout_ms);
/// Starts, queueing every request.
int lc_camera_start(lc_camera *c);
/// Stops; every request comes back (cancelled ones are dropped).
int lc_camera_stop(lc_camera *c);
/// A descriptor that is readable while a completed request waits (an eventfd).
int lc_camera_completion_fd(const lc_camera *c);
/// The next completed request, or -EAGAIN.
int lc_camera_next(lc_camera *c, lc_completion *out);
/// Gives a completed request back to the camera (with the controls set since).
int lc_camera_queue(lc_camera *c, uint32_t index);
/// Makes the completion descriptor readable (a buffer lent out came back: the capture thread
/// queues it again without waiting for its poll's timeout).
void lc_camera_wake(lc_camera *c);

#ifdef __cplusplus
}
#endif

#endif
