// Shared between the shim's C files; not part of the API Swift sees.
#ifndef CGSTREAMER_SHIM_PRIVATE_H
#define CGSTREAMER_SHIM_PRIVATE_H
#include <gst/gst.h>
#include "CGStreamerShim.h"

/// The context the RTSP server is attached to (run by vfg_start's thread).
GMainContext *vfg_main_context(void);
/// A feed on `appsrc` (one reference, the caller's).
vfg_feed *vfg_feed_new(GstElement *appsrc);
vfg_feed *vfg_feed_retain(vfg_feed *feed);
/// The pipeline is going: later pushes return -1.
void vfg_feed_close(vfg_feed *feed);
/// The next push answers 1: the pipeline wants an IDR (it could not use the units before).
void vfg_feed_want_keyframe(vfg_feed *feed);
/// Caps, liveness and the bounded queue every transport's appsrc has.
void vfg_configure_appsrc(GstElement *appsrc);
#endif
