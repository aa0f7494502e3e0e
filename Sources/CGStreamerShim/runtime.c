// GStreamer's start (once), the GLib main loop thread, and the appsrc feed every transport
// pushes access units into.
#include "CGStreamerShim.h"
#include "private.h"
#include <gst/app/gstappsrc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static GMainContext *main_context;
static char start_error[256];
static int start_result = -1;

static gpointer run_main_loop(gpointer data) {
    GMainLoop *loop = data;
    g_main_context_push_thread_default(main_context);
    g_main_loop_run(loop);  // for the life of the process
    return NULL;
}

static void start_once(void) {
    GError *error = NULL;
    if (!gst_init_check(NULL, NULL, &error)) {
        snprintf(start_error, sizeof start_error, "gst_init_check: %s", error ? error->message : "failed");
        g_clear_error(&error);
        return;
    }
    // Every element a pipeline names: a missing plugin package fails here, by name, not at
    // a client's first request.
    static const char *const needed[] = {"appsrc", "h264parse", "rtph264pay", "webrtcbin", "nicesrc", "dtlssrtpenc", "rtpbin"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        GstElementFactory *f = gst_element_factory_find(needed[i]);
        if (!f) {
            snprintf(start_error, sizeof start_error, "GStreamer element '%s' is not installed", needed[i]);
            return;
        }
        gst_object_unref(f);
    }
    main_context = g_main_context_new();
    GMainLoop *loop = g_main_loop_new(main_context, FALSE);
    g_thread_unref(g_thread_new("gst-main", run_main_loop, loop));
    start_result = 0;
}

int vfg_start(char *error, size_t error_len) {
    // pthread_once, not GLib's g_once: ThreadSanitizer sees its ordering (GLib is not
    // instrumented), so reading start_result after it is not taken for a race.
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, start_once);
    if (start_result != 0 && error && error_len) snprintf(error, error_len, "%s", start_error);
    return start_result;
}

GMainContext *vfg_main_context(void) { return main_context; }

void vfg_free(void *pointer) { g_free(pointer); }

// MARK: Feeds

struct vfg_feed {
    gint references;
    GMutex lock;
    GstElement *appsrc;  // NULL once closed
    gint keyframe_wanted;
    gulong probe;
    // Capture time (ns) → the pipeline's running time: set at the first unit and again when
    // the stream's times jump (a new encoder), so units keep the camera's cadence and no
    // push-time jitter.
    gboolean anchored;
    GstClockTimeDiff offset;
    GstClockTime last;
    // Units are dropped until an IDR: at the start, and after one was lost (pushed before
    // the pipeline played), so the first unit a pipeline sees decodes.
    gboolean need_key;
};

// An upstream GstForceKeyUnit event (rtph264pay or webrtcbin turn a PLI/FIR into one;
// gst-rtsp-server sends one for a new client) reaches the appsrc's pad: the next push says so.
static GstPadProbeReturn on_upstream_event(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad;
    vfg_feed *feed = data;
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    if (event && GST_EVENT_TYPE(event) == GST_EVENT_CUSTOM_UPSTREAM) {
        const GstStructure *s = gst_event_get_structure(event);
        if (s && gst_structure_has_name(s, "GstForceKeyUnit")) g_atomic_int_set(&feed->keyframe_wanted, 1);
    }
    return GST_PAD_PROBE_OK;
}

vfg_feed *vfg_feed_new(GstElement *appsrc) {
    vfg_feed *feed = g_new0(vfg_feed, 1);
    feed->references = 1;
    g_mutex_init(&feed->lock);
    feed->appsrc = gst_object_ref(appsrc);
    feed->keyframe_wanted = 1;
    feed->need_key = TRUE;
    GstPad *pad = gst_element_get_static_pad(appsrc, "src");
    if (pad) {
        // The probe holds a reference to the feed until vfg_feed_close removes it.
        feed->probe = gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, on_upstream_event,
                                        vfg_feed_retain(feed), (GDestroyNotify)vfg_feed_release);
        gst_object_unref(pad);
    }
    return feed;
}

vfg_feed *vfg_feed_retain(vfg_feed *feed) {
    g_atomic_int_inc(&feed->references);
    return feed;
}

void vfg_feed_close(vfg_feed *feed) {
    g_mutex_lock(&feed->lock);
    GstElement *appsrc = feed->appsrc;
    feed->appsrc = NULL;
    g_mutex_unlock(&feed->lock);
    if (!appsrc) return;
    GstPad *pad = gst_element_get_static_pad(appsrc, "src");
    if (pad && feed->probe) gst_pad_remove_probe(pad, feed->probe);  // drops the probe's reference
    if (pad) gst_object_unref(pad);
    gst_object_unref(appsrc);
}

/// The running time of `element`'s pipeline now, or GST_CLOCK_TIME_NONE before it has a clock.
static GstClockTime running_time(GstElement *element) {
    GstClock *clock = gst_element_get_clock(element);
    if (!clock) return GST_CLOCK_TIME_NONE;
    GstClockTime now = gst_clock_get_time(clock), base = gst_element_get_base_time(element);
    gst_object_unref(clock);
    return now > base ? now - base : 0;
}

int vfg_feed_push(vfg_feed *feed, const uint8_t *bytes, size_t length, int64_t pts90k, int keyframe) {
    g_mutex_lock(&feed->lock);
    GstElement *appsrc = feed->appsrc ? gst_object_ref(feed->appsrc) : NULL;
    g_mutex_unlock(&feed->lock);
    if (!appsrc) return -1;
    GstClockTime now = running_time(appsrc);
    if (now == GST_CLOCK_TIME_NONE) {  // not playing yet: the unit would be flushed
        gst_object_unref(appsrc);
        feed->need_key = TRUE;
        return 0;
    }
    if (feed->need_key && !keyframe) {  // playing, and waiting for an IDR: ask for one (once a frame)
        gst_object_unref(appsrc);
        g_atomic_int_set(&feed->keyframe_wanted, 0);
        return 1;
    }
    feed->need_key = FALSE;
    GstClockTime pts = gst_util_uint64_scale((guint64)MAX(pts90k, 0), GST_SECOND, 90000);
    GstClockTimeDiff at = (GstClockTimeDiff)pts + feed->offset;
    if (!feed->anchored || at < (GstClockTimeDiff)feed->last || GST_CLOCK_DIFF(now, at) > GST_SECOND ||
        GST_CLOCK_DIFF(at, now) > GST_SECOND) {
        feed->offset = (GstClockTimeDiff)now - (GstClockTimeDiff)pts;
        feed->anchored = TRUE;
        at = (GstClockTimeDiff)now;
    }
    feed->last = (GstClockTime)at;
    GstBuffer *buffer = gst_buffer_new_memdup(bytes, length);
    GST_BUFFER_PTS(buffer) = GST_BUFFER_DTS(buffer) = (GstClockTime)at;  // no B-frames: decode order is display order
    if (!keyframe) GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DELTA_UNIT);
    GstFlowReturn flow = gst_app_src_push_buffer(GST_APP_SRC(appsrc), buffer);  // takes the buffer
    gst_object_unref(appsrc);
    if (flow == GST_FLOW_FLUSHING) feed->need_key = TRUE;  // lost: start again at an IDR
    if ((flow == GST_FLOW_FLUSHING || flow == GST_FLOW_EOS) && vfg_feed_closed(feed)) return -1;
    return g_atomic_int_exchange(&feed->keyframe_wanted, 0) ? 1 : 0;
}

void vfg_feed_want_keyframe(vfg_feed *feed) { g_atomic_int_set(&feed->keyframe_wanted, 1); }

int vfg_feed_closed(vfg_feed *feed) {
    g_mutex_lock(&feed->lock);
    int closed = feed->appsrc == NULL;
    g_mutex_unlock(&feed->lock);
    return closed;
}

void vfg_feed_release(vfg_feed *feed) {
    if (!g_atomic_int_dec_and_test(&feed->references)) return;
    vfg_feed_close(feed);
    g_mutex_clear(&feed->lock);
    g_free(feed);
}

void vfg_configure_appsrc(GstElement *appsrc) {
    GstCaps *caps = gst_caps_from_string("video/x-h264,stream-format=byte-stream,alignment=au");
    // Live, stamped by vfg_feed_push in running time, and never a queue that grows: past 30
    // units (a second) the oldest go; the hub resyncs a late client.
    g_object_set(appsrc, "caps", caps, "is-live", TRUE, "format", GST_FORMAT_TIME, "do-timestamp", FALSE,
                 "max-buffers", (guint64)30, "block", FALSE, NULL);
    gst_util_set_object_arg(G_OBJECT(appsrc), "leaky-type", "downstream");
    gst_caps_unref(caps);
}
