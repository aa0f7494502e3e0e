// The camera manager: started once per process (libcamera allows one), listing its cameras
// with their properties and the sizes each camera's video stream offers.

#include "private.h"

#include <cerrno>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <type_traits>

using namespace libcamera;

namespace lc {
template <typename T>
static long flatten(const libcamera::ControlValue &v, double *out, size_t cap) {
    if (!v.isArray()) {
        if (cap > 0) out[0] = double(v.get<T>());
        return 1;
    }
    auto span = v.get<libcamera::Span<const T>>();
    for (size_t i = 0; i < span.size() && i < cap; i++) out[i] = double(span[i]);
    return long(span.size());
}

long toDoubles(const ControlValue &v, double *out, size_t cap) {
    if (v.isNone()) return 0;
    switch (v.type()) {
    case ControlTypeBool: return flatten<bool>(v, out, cap);
    case ControlTypeByte: return flatten<uint8_t>(v, out, cap);
    case ControlTypeInteger32: return flatten<int32_t>(v, out, cap);
    case ControlTypeInteger64: return flatten<int64_t>(v, out, cap);
    case ControlTypeFloat: return flatten<float>(v, out, cap);
    case ControlTypeRectangle: {
        std::vector<Rectangle> rects;
        if (v.isArray()) {
            auto span = v.get<Span<const Rectangle>>();
            rects.assign(span.begin(), span.end());
        } else {
            rects.push_back(v.get<Rectangle>());
        }
        for (size_t i = 0; i < rects.size(); i++) {
            const double r[4] = {double(rects[i].x), double(rects[i].y), double(rects[i].width), double(rects[i].height)};
            for (size_t k = 0; k < 4 && 4 * i + k < cap; k++) out[4 * i + k] = r[k];
        }
        return long(4 * rects.size());
    }
    default: return -1;
    }
}

bool toDouble(const ControlValue &v, double *out) {
    double values[4];
    return !v.isArray() && v.type() != ControlTypeRectangle && toDoubles(v, values, 4) == 1 && (*out = values[0], true);
}

static int64_t rounded(double v) { return int64_t(v < 0 ? v - 0.5 : v + 0.5); }

template <typename T>
static void build(bool array, const double *v, size_t n, ControlValue *out) {
    std::unique_ptr<T[]> items(new T[n]);  // not a vector: vector<bool> has no contiguous storage
    for (size_t i = 0; i < n; i++) {
        if constexpr (std::is_same_v<T, bool>) items[i] = v[i] != 0;
        else if constexpr (std::is_floating_point_v<T>) items[i] = T(v[i]);
        else items[i] = T(rounded(v[i]));
    }
    if (array) *out = ControlValue(Span<const T>(items.get(), n));  // ControlValue copies the elements
    else *out = ControlValue(items[0]);
}

bool fromDoubles(ControlType type, bool array, const double *v, size_t n, ControlValue *out) {
    if (n == 0 || (!array && type != ControlTypeRectangle && n != 1)) return false;
    switch (type) {
    case ControlTypeBool: build<bool>(array, v, n, out); return true;
    case ControlTypeByte: build<uint8_t>(array, v, n, out); return true;
    case ControlTypeInteger32: build<int32_t>(array, v, n, out); return true;
    case ControlTypeInteger64: build<int64_t>(array, v, n, out); return true;
    case ControlTypeFloat: build<float>(array, v, n, out); return true;
    case ControlTypeRectangle: {
        if (n % 4 != 0 || (!array && n != 4)) return false;
        std::vector<Rectangle> rects;
        for (size_t i = 0; i < n; i += 4) {
            if (v[i + 2] < 0 || v[i + 3] < 0) return false;
            rects.emplace_back(int(rounded(v[i])), int(rounded(v[i + 1])), unsigned(rounded(v[i + 2])), unsigned(rounded(v[i + 3])));
        }
        if (array) *out = ControlValue(Span<const Rectangle>(rects.data(), rects.size()));
        else *out = ControlValue(rects[0]);
        return true;
    }
    default: return false;
    }
}

int32_t type(ControlType t) {
    // By name, not number: libcamera adds types between versions (its enum's order is its own).
    switch (t) {
    case ControlTypeBool: return LC_TYPE_BOOL;
    case ControlTypeByte: return LC_TYPE_BYTE;
    case ControlTypeInteger32: return LC_TYPE_INT32;
    case ControlTypeInteger64: return LC_TYPE_INT64;
    case ControlTypeFloat: return LC_TYPE_FLOAT;
    case ControlTypeString: return LC_TYPE_STRING;
    case ControlTypeRectangle: return LC_TYPE_RECTANGLE;
    case ControlTypeSize: return LC_TYPE_SIZE;
    default: return LC_TYPE_NONE;
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

extern "C" int lc_manager_controls(lc_manager *m, const char *camera_id, lc_control_info *out, size_t cap, size_t *count) {
    try {
        *count = 0;
        if (!m->started) return -ENODEV;
        std::shared_ptr<Camera> camera = m->manager->get(camera_id);
        if (!camera) return -ENODEV;
        std::map<unsigned, lc_control_info> sorted;  // libcamera's map has no order
        for (const auto &[id, info] : camera->controls()) {
            lc_control_info x{};
            x.id = id->id();
            lc::copy(x.name, sizeof x.name, id->name());
            x.type = lc::type(id->type());
            x.has_range = lc::toDouble(info.min(), &x.min) && lc::toDouble(info.max(), &x.max) ? 1 : 0;
            if (!lc::toDouble(info.def(), &x.def)) x.def = NAN;
            for (const ControlValue &v : info.values()) {
                double d;
                if (x.nvalues < LC_VALUES_MAX && lc::toDouble(v, &d)) x.values[x.nvalues++] = int32_t(d);
            }
            x.has_rect_max = id->type() == ControlTypeRectangle && lc::toDoubles(info.max(), x.rect_max, 4) == 4;
            sorted[x.id] = x;
        }
        size_t n = 0;
        for (const auto &[id, x] : sorted) {
            if (n < cap) out[n] = x;
            n++;
        }
        *count = n;
        return n > cap ? -ENOSPC : 0;
    } catch (...) {
        return -EIO;
    }
}
