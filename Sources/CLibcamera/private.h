// What the facade's two files share: the manager and camera behind the C handles, and the
// conversions between ControlValue and the doubles the C side speaks.

#pragma once

#include "CLibcamera.h"

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
    bool running = false;

    std::mutex lock;  // what libcamera's thread touches, and the controls
    std::deque<libcamera::Request *> done;
    std::map<unsigned, libcamera::ControlValue> pending;  // for the next queued request
    std::map<unsigned, libcamera::ControlValue> current;  // everything set: given again at start
    std::map<unsigned, libcamera::ControlValue> latest;   // the newest completed metadata

    // Called by libcamera on its own thread: queue and wake, nothing else.
    void completed(libcamera::Request *request);
    void unmap();
};

namespace lc {
// The value as a double (a scalar of a numeric type or a bool); false for anything else.
bool toDouble(const libcamera::ControlValue &v, double *out);
// `value` as a ControlValue of `type`; false for a type the facade does not set.
bool fromDouble(libcamera::ControlType type, double value, libcamera::ControlValue *out);
void copy(char *to, size_t size, const std::string &from);
}
