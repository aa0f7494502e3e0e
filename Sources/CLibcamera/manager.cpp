// The camera manager: started once per process (libcamera allows one), listing its cameras
// with their properties and the sizes each camera's video stream offers.

#include "private.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace libcamera;

namespace lc {
bool toDouble(const ControlValue &v, double *out) {
    if (v.isNone() || v.isArray()) return false;
    switch (v.type()) {
    case ControlTypeBool: *out = v.get<bool>() ? 1 : 0; return true;
    case ControlTypeByte: *out = v.get<uint8_t>(); return true;
    case ControlTypeInteger32: *out = v.get<int32_t>(); return true;
    case ControlTypeInteger64: *out = double(v.get<int64_t>()); return true;
    case ControlTypeFloat: *out = v.get<float>(); return true;
    default: return false;
    }
}

bool fromDouble(ControlType type, double value, ControlValue *out) {
    switch (type) {
    case ControlTypeBool: *out = ControlValue(value != 0); return true;
    case ControlTypeByte: *out = ControlValue(uint8_t(value)); return true;
    case ControlTypeInteger32: *out = ControlValue(int32_t(value < 0 ? value - 0.5 : value + 0.5)); return true;
    case ControlTypeInteger64: *out = ControlValue(int64_t(value < 0 ? value - 0.5 : value + 0.5)); return true;
    case ControlTypeFloat: *out = ControlValue(float(value)); return true;
    default: return false;
    }
}

void copy(char *to, size_t size, const std::string &from) {
    std::strncpy(to, from.c_str(), size - 1);
    to[size - 1] = 0;
}
}  // namespace lc

extern "C" const char *lc_version(void) {
    static const std::string version = CameraManager::version();
    return version.c_str();
}

extern "C" int lc_manager_start(lc_manager **out) {
    try {
        // libcamera logs every warning to stderr unless told otherwise; a user's setting wins.
        setenv("LIBCAMERA_LOG_LEVELS", "*:ERROR", 0);
        auto m = std::make_unique<lc_manager>();
        m->manager = std::make_unique<CameraManager>();
        int r = m->manager->start();
        if (r == -ENODEV) {
            m->started = false;  // no media device directory: a machine without cameras
        } else if (r < 0) {
            return r;
        } else {
            m->started = true;
        }
        *out = m.release();
        return 0;
    } catch (...) {
        return -EIO;
    }
}

extern "C" void lc_manager_stop(lc_manager *m) {
    if (!m) return;
    try {
        if (m->started) m->manager->stop();
    } catch (...) {
    }
    delete m;
}

extern "C" int lc_manager_cameras(lc_manager *m, lc_camera_info *out, size_t cap, size_t *count) {
    try {
        *count = 0;
        if (!m->started) return 0;
        auto cameras = m->manager->cameras();
        *count = cameras.size();
        for (size_t i = 0; i < cameras.size() && i < cap; i++) {
            const auto &camera = cameras[i];
            const ControlList &p = camera->properties();
            lc_camera_info &info = out[i];
            std::memset(&info, 0, sizeof info);
            lc::copy(info.id, sizeof info.id, camera->id());
            lc::copy(info.model, sizeof info.model, p.get(properties::Model).value_or(""));
            info.location = p.get(properties::Location).value_or(LC_LOCATION_NONE);
            info.rotation = p.get(properties::Rotation).value_or(-1);
            Size array = p.get(properties::PixelArraySize).value_or(Size());
            info.pixel_width = array.width;
            info.pixel_height = array.height;
        }
        return cameras.size() > cap ? -ENOSPC : 0;
    } catch (...) {
        return -EIO;
    }
}

extern "C" int lc_manager_formats(lc_manager *m, const char *id, lc_stream_format *out, size_t cap, size_t *count) {
    try {
        *count = 0;
        if (!m->started) return -ENODEV;
        std::shared_ptr<Camera> camera = m->manager->get(id);
        if (!camera) return -ENODEV;
        std::vector<StreamRole> roles{StreamRole::VideoRecording};
        std::unique_ptr<CameraConfiguration> config = camera->generateConfiguration(roles);
        if (!config || config->empty()) return -EINVAL;
        // A range's sizes are libcamera's list of common ones inside it, not all of which the
        // pipeline takes as they are (vimc 0.0.3 rounds to multiples of 6): only those that
        // validate unchanged are offered, so a session never asks for a size it would not get.
        const StreamFormats formats = config->at(0).formats();
        size_t n = 0;
        for (const PixelFormat &pf : formats.pixelformats()) {
            for (const Size &size : formats.sizes(pf)) {
                StreamConfiguration &s = config->at(0);
                s.pixelFormat = pf;
                s.size = size;
                if (config->validate() != CameraConfiguration::Valid) continue;
                if (n < cap) out[n] = lc_stream_format{pf.fourcc(), size.width, size.height};
                n++;
            }
        }
        *count = n;
        return n > cap ? -ENOSPC : 0;
    } catch (...) {
        return -EIO;
    }
}
