// What the facade's files share: the manager and camera behind the C handles, and the
// conversions between ControlValue and the numbers the C side speaks.

#pragma once

#include "CLibcamera.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <libcamera/camera.h>
#include <libcamera/camera_manager.h>
#include <libcamera/control_ids.h>
#include <libcamera/controls.h>
#include <libcamera/framebuffer_allocator.h>
#include <libcamera/property_ids.h>
#include <libcamera/request.h>
#include <libcamera/stream.h>

struct lc_manager {
    std::unique_ptr<libcamera::CameraManager> manager;
    bool started = false;  // false: no media subsystem, so no cameras
};

struct lc_camera {
    std::shared_ptr<libcamera::Camera> camera;
    std::unique_ptr<libcamera::CameraConfiguration> config;
    std::unique_ptr<libcamera::FrameBufferAllocator> allocator;
    libcamera::Stream *stream = nullptr;
    std::vector<std::unique_ptr<libcamera::Request>> requests;
    std::vector<const uint8_t *> data;  // each request's buffer, mapped
    struct Mapping { void *base; size_t length; };
    std::vector<Mapping> mappings;
    int completions = -1;  // eventfd
    std::atomic<bool> running{false};  // set by the capture thread, read by a wait for settings too

    std::mutex lock;  // what libcamera's thread touches, and the controls
    std::deque<libcamera::Request *> done;
    std::map<unsigned, libcamera::ControlValue> pending;  // for the next queued request
    std::map<unsigned, libcamera::ControlValue> current;  // everything set: given again at start
    std::map<unsigned, libcamera::ControlValue> latest;   // the newest completed metadata
    int64_t generation = 0;                // settings made so far
    int64_t done_generation = 0;           // every setting up to this is in a completed request
    std::vector<int64_t> request_generation;  // per request: the settings it carries, up to
    std::condition_variable applied;       // done_generation moved

    // Called by libcamera on its own thread: queue and wake, nothing else.
    void completed(libcamera::Request *request);
    void unmap();
};

namespace lc {
// The value's numbers, flattened (a rectangle as x, y, width, height; an array element after
// element), at most `cap` written; the count, or -1 for a type the facade does not speak.
long toDoubles(const libcamera::ControlValue &v, double *out, size_t cap);
// The first number of a scalar (a bool as 0/1); false for anything else.
bool toDouble(const libcamera::ControlValue &v, double *out);
// `n` numbers as a value of `type`: a scalar (n 1; a rectangle: 4), or, with `array`, a Span
// of them; false for a count that does not fit the type or a type the facade does not set.
bool fromDoubles(libcamera::ControlType type, bool array, const double *v, size_t n, libcamera::ControlValue *out);
// libcamera's ControlType as the facade's LC_TYPE_*.
int32_t type(libcamera::ControlType t);
void copy(char *to, size_t size, const std::string &from);
}
