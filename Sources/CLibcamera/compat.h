// Where libcamera's API differs between the versions the facade builds against (Debian 12's
// 0.0.3; bookworm-backports' 0.3.2 and later), in this one file.

#pragma once

#include <libcamera/controls.h>
#include <libcamera/version.h>

#include <cstring>

#define LC_LIBCAMERA_AT_LEAST(major, minor) \
    (LIBCAMERA_VERSION_MAJOR > (major) || (LIBCAMERA_VERSION_MAJOR == (major) && LIBCAMERA_VERSION_MINOR >= (minor)))

namespace lc {
// Whether a control's value is an array (a Span). Newer libcamera says so on the ControlId;
// 0.0.3 only in the control's declaration, so the standard array controls are named here (a
// name libcamera keeps across versions; a vendor array control is not set by the facade).
inline bool isArray(const libcamera::ControlId &id) {
    static const char *const arrays[] = {"AfWindows", "ColourGains", "ColourCorrectionMatrix", "FrameDurationLimits",
                                         "SensorBlackLevels"};
    for (const char *name : arrays) {
        if (id.name() == name) return true;
    }
    return false;
}
}  // namespace lc
