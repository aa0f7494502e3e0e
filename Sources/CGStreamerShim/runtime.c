// GStreamer's start (once), the GLib main loop thread, and the appsrc feed every transport
// pushes access units into.
#include "CGStreamerShim.h"
#include "private.h"
#include <gst/app/gstappsrc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

// What a feed dropped and why (GST_DEBUG=vfgfeed:6): the first thing to read when a client
// gets nothing.
GST_DEBUG_CATEGORY_STATIC(vfg_feed_debug);
#define GST_CAT_DEFAULT vfg_feed_debug
GST_DEBUG_CATEGORY(vfg_rtsp_debug);

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
    static const char *const needed[] = {"appsrc", "h264parse", "rtph264pay", "rtpmp4gpay", "webrtcbin", "nicesrc", "dtlssrtpenc", "rtpbin",
                                         "rtppcmudepay", "mulawdec"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        GstElementFactory *f = gst_element_factory_find(needed[i]);
        if (!f) {
            snprintf(start_error, sizeof start_error, "GStreamer element '%s' is not installed", needed[i]);
            return;
        }
        gst_object_unref(f);
    }
    GST_DEBUG_CATEGORY_INIT(vfg_feed_debug, "vfgfeed", 0, "Viewfinder's appsrc feeds");
    GST_DEBUG_CATEGORY_INIT(vfg_rtsp_debug, "vfgrtsp", 0, "Viewfinder's RTSP mounts");
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

// Capture time (ns) → the pipeline's running time: the running time at which the unit was
// captured, in the past by its latency — the wall clock's relation to the pipeline's clock,
// read at each push. So a media's picture and sound (or a WebRTC peer's) keep the offset
// between them they had when captured, and rtpbin's sender reports (which extrapolate from
// the last buffer's time only forwards) never claim a buffer stamped ahead of now is now.
//
// Read at each push, not anchored once: an anchor shared by two streams was moved by whichever
// strayed — a sound starved for seconds under a sanitizer (its packets 3 s old) re-anchored it
// at every packet, the picture at every frame back again, and the picture was dropped as "not
// after the last" half the time (RTSPSoundTests got 0 to 33 of its 90 frames).
static GstClockTimeDiff capture_running_time(GstClockTime now, GstClockTimeDiff capture) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);  // the capture times' clock (Clock.now)
    GstClockTimeDiff wall = (GstClockTimeDiff)ts.tv_sec * GST_SECOND + ts.tv_nsec;
    return capture + ((GstClockTimeDiff)now - wall);
}

struct vfg_feed {
    gint references;
    // A pthread mutex, not GLib's GMutex: GMutex is a futex ThreadSanitizer cannot see, and
    // it reported the appsrc's close racing with the pump's check (make test-tsan, RTSPTests).
    pthread_mutex_t lock;
    GstElement *appsrc;  // NULL once closed
    gint keyframe_wanted;
    gulong probe;
    // The running time of the last buffer pushed: a unit not after it is dropped.
    gboolean pushed;
    GstClockTimeDiff last;
    // Sound: every packet decodes alone (no keyframes to wait for).
    gboolean audio;
    // Units are dropped until an IDR: at the start, and after one was lost (pushed before
    // the pipeline played), so the first unit a pipeline sees decodes.
    gboolean need_key;
    // RTSP's H.264 (vfg_feed_lead_in): the first IDR a pipeline gets goes after a lead-in, the
    // picture before it. FFmpeg's parser gives the first access unit it reads no timestamp
    // whatever the stream (RTP's packets carry no byte position, and its first-frame case
    // needs one): an IDR first reached `ffmpeg -c copy` unstamped ("Timestamps are unset in
    // a packet"), what Frigate's and Home Assistant's recorders write at each segment's start.
    // A P-frame first is the one left unstamped, and ffmpeg drops it (nothing before the first
    // keyframe is copied); any decoder skips it as it skips a GOP joined midway.
    gboolean lead_in;
    GstBuffer *held;  // the last picture while waiting for an IDR, stamped at its capture
    // An IDR was dropped for want of a lead-in: the next one goes without (a stream of IDRs
    // only — a keyframe interval at or under a frame's — would otherwise never start).
    gboolean key_dropped;
};

// An upstream GstForceKeyUnit event (rtph264pay or webrtcbin turn a PLI/FIR into one) reaches
// the appsrc's pad: the next push says so. (An RTSP client joining a playing media asks
// through vfg_feed_want_keyframe: gst-rtsp-server sends no event for it.)
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

vfg_feed *vfg_feed_new(GstElement *appsrc, int audio) {
    vfg_feed *feed = g_new0(vfg_feed, 1);
    feed->references = 1;
    pthread_mutex_init(&feed->lock, NULL);
    feed->appsrc = gst_object_ref(appsrc);
    feed->audio = audio != 0;
    feed->keyframe_wanted = !feed->audio;
    feed->need_key = !feed->audio;
    GstPad *pad = gst_element_get_static_pad(appsrc, "src");
    if (pad) {
        // The probe holds a reference to the feed until vfg_feed_close removes it.
        feed->probe = gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, on_upstream_event,
                                        vfg_feed_retain(feed), (GDestroyNotify)vfg_feed_release);
        gst_object_unref(pad);
    }
    return feed;
}

void vfg_feed_lead_in(vfg_feed *feed) { feed->lead_in = !feed->audio; }

vfg_feed *vfg_feed_retain(vfg_feed *feed) {
    g_atomic_int_inc(&feed->references);
    return feed;
}

void vfg_feed_close(vfg_feed *feed) {
    pthread_mutex_lock(&feed->lock);
    GstElement *appsrc = feed->appsrc;
    feed->appsrc = NULL;
    pthread_mutex_unlock(&feed->lock);
    if (!appsrc) return;
    GstPad *pad = gst_element_get_static_pad(appsrc, "src");
    if (pad && feed->probe) gst_pad_remove_probe(pad, feed->probe);  // drops the probe's reference
    if (pad) gst_object_unref(pad);
    gst_object_unref(appsrc);
}

/// The running time of `element`'s pipeline now, or GST_CLOCK_TIME_NONE unless it plays. Its
/// clock is there a moment before its base time is (both come on the way to PLAYING) and stays
/// while it is paused, when its base time is stale: "now" would then be the clock's own time
/// (the machine's uptime) — a unit stamped hours ahead, and every later one dropped as not after
/// it (an RTSP client that got nothing for its whole 30 s, once in a few runs under the
/// sanitizers, which stretch that moment).
static GstClockTime running_time(GstElement *element) {
    GST_OBJECT_LOCK(element);
    GstState state = GST_STATE(element);
    GST_OBJECT_UNLOCK(element);
    if (state != GST_STATE_PLAYING) return GST_CLOCK_TIME_NONE;
    GstClock *clock = gst_element_get_clock(element);
    if (!clock) return GST_CLOCK_TIME_NONE;
    GstClockTime now = gst_clock_get_time(clock), base = gst_element_get_base_time(element);
    gst_object_unref(clock);
    return now > base ? now - base : 0;
}

/// Pushes the held picture before the IDR `key` (stamped `at`), after the IDR's own parameter
/// sets (what precedes its first slice): h264parse drops a picture it has no SPS/PPS for. A
/// held picture not before the IDR is let go.
static void push_lead_in(vfg_feed *feed, GstElement *appsrc, const uint8_t *key, size_t length, GstClockTimeDiff at) {
    GstBuffer *held = feed->held;
    feed->held = NULL;
    if ((GstClockTimeDiff)GST_BUFFER_PTS(held) >= at) {
        gst_buffer_unref(held);
        return;
    }
    size_t sets = 0;  // the bytes before the first slice NAL (type 1 or 5), start code included
    for (size_t i = 0; i + 3 < length; i++) {
        if (key[i] != 0 || key[i + 1] != 0 || key[i + 2] != 1) continue;
        uint8_t type = key[i + 3] & 0x1f;
        if (type == 1 || type == 5) {
            sets = i > 0 && key[i - 1] == 0 ? i - 1 : i;
            break;
        }
    }
    GstBuffer *lead = held;  // an IDR with nothing before its first slice: the picture alone
    if (sets > 0) {
        lead = gst_buffer_new_memdup(key, sets);
        GST_BUFFER_PTS(lead) = GST_BUFFER_DTS(lead) = GST_BUFFER_PTS(held);
        GST_BUFFER_FLAG_SET(lead, GST_BUFFER_FLAG_DELTA_UNIT);
        lead = gst_buffer_append(lead, held);  // takes both
    }
    GstFlowReturn flow = gst_app_src_push_buffer(GST_APP_SRC(appsrc), lead);
    GST_LOG_OBJECT(appsrc, "pushed the lead-in (%s)", gst_flow_get_name(flow));
}

int vfg_feed_push(vfg_feed *feed, const uint8_t *bytes, size_t length, int64_t capture_ns, int keyframe) {
    pthread_mutex_lock(&feed->lock);
    GstElement *appsrc = feed->appsrc ? gst_object_ref(feed->appsrc) : NULL;
    pthread_mutex_unlock(&feed->lock);
    if (!appsrc) return -1;
    GstClockTime now = running_time(appsrc);
    if (now == GST_CLOCK_TIME_NONE) {  // not playing yet: the unit would be flushed
        GST_LOG_OBJECT(appsrc, "not playing: unit dropped");
        gst_object_unref(appsrc);
        feed->need_key = !feed->audio;
        return 0;
    }
    GstClockTimeDiff at = capture_running_time(now, (GstClockTimeDiff)capture_ns);
    if (feed->need_key && !keyframe) {  // playing, and waiting for an IDR: ask for one (once a frame)
        GST_LOG_OBJECT(appsrc, "waiting for an IDR: unit %s", feed->lead_in ? "held as the lead-in" : "dropped");
        if (feed->lead_in && at >= 0 && (!feed->pushed || at > feed->last)) {
            if (feed->held) gst_buffer_unref(feed->held);
            feed->held = gst_buffer_new_memdup(bytes, length);
            GST_BUFFER_PTS(feed->held) = GST_BUFFER_DTS(feed->held) = (GstClockTime)at;
            GST_BUFFER_FLAG_SET(feed->held, GST_BUFFER_FLAG_DELTA_UNIT);
        }
        gst_object_unref(appsrc);
        g_atomic_int_set(&feed->keyframe_wanted, 0);
        return 1;
    }
    if (feed->need_key && feed->lead_in && !feed->held && !feed->key_dropped) {
        // An IDR with no picture before it (a fresh encoder's first unit): wait for the next
        // picture to lead in with, which then asks for another IDR. Once: a second IDR with
        // still no picture before it goes out as it is.
        GST_LOG_OBJECT(appsrc, "an IDR without a lead-in: dropped");
        feed->key_dropped = TRUE;
        gst_object_unref(appsrc);
        return 0;
    }
    feed->key_dropped = FALSE;
    // Captured before the pipeline started (its running time began after), or not after the
    // last: dropped (a picture then waits for an IDR). A negative time made unsigned would be
    // centuries ahead, and the media's sinks would wait for it.
    if (at < 0 || (feed->pushed && at <= feed->last)) {
        GST_DEBUG_OBJECT(appsrc, "unit at %" G_GINT64_FORMAT " (running time now %" G_GUINT64_FORMAT ", last %" G_GINT64_FORMAT
                         "): dropped", at, now, feed->last);
        gst_object_unref(appsrc);
        feed->need_key = !feed->audio;
        return feed->audio ? 0 : 1;
    }
    if (feed->need_key && feed->held) push_lead_in(feed, appsrc, bytes, length, at);
    // An IDR going out answers any keyframe asked for before it (the feed's start asks for one:
    // a second IDR a frame later was the start's cost).
    if (keyframe && !feed->audio) g_atomic_int_set(&feed->keyframe_wanted, 0);
    feed->need_key = FALSE;
    feed->pushed = TRUE;
    feed->last = at;
    GstBuffer *buffer = gst_buffer_new_memdup(bytes, length);
    GST_BUFFER_PTS(buffer) = GST_BUFFER_DTS(buffer) = (GstClockTime)at;  // no B-frames: decode order is display order
    if (!keyframe) GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DELTA_UNIT);
    GstFlowReturn flow = gst_app_src_push_buffer(GST_APP_SRC(appsrc), buffer);  // takes the buffer
    if (flow != GST_FLOW_OK) GST_DEBUG_OBJECT(appsrc, "push: %s", gst_flow_get_name(flow));
    else GST_LOG_OBJECT(appsrc, "pushed %s at %" G_GINT64_FORMAT " (now %" G_GUINT64_FORMAT ")", keyframe ? "a keyframe" : "a unit", at, now);
    gst_object_unref(appsrc);
    if (flow == GST_FLOW_FLUSHING) feed->need_key = !feed->audio;  // lost: start again at an IDR
    if ((flow == GST_FLOW_FLUSHING || flow == GST_FLOW_EOS) && vfg_feed_closed(feed)) return -1;
    return g_atomic_int_exchange(&feed->keyframe_wanted, 0) && !feed->audio ? 1 : 0;
}

void vfg_feed_want_keyframe(vfg_feed *feed) { g_atomic_int_set(&feed->keyframe_wanted, 1); }

int vfg_feed_closed(vfg_feed *feed) {
    pthread_mutex_lock(&feed->lock);
    int closed = feed->appsrc == NULL;
    pthread_mutex_unlock(&feed->lock);
    return closed;
}

void vfg_feed_release(vfg_feed *feed) {
    if (!g_atomic_int_dec_and_test(&feed->references)) return;
    vfg_feed_close(feed);
    if (feed->held) gst_buffer_unref(feed->held);
    pthread_mutex_destroy(&feed->lock);
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

void vfg_configure_vp8_appsrc(GstElement *appsrc) {
    vfg_configure_appsrc(appsrc);
    GstCaps *caps = gst_caps_from_string("video/x-vp8");
    g_object_set(appsrc, "caps", caps, NULL);
    gst_caps_unref(caps);
}

void vfg_configure_jpeg_appsrc(GstElement *appsrc) {
    vfg_configure_appsrc(appsrc);
    GstCaps *caps = gst_caps_from_string("image/jpeg");
    g_object_set(appsrc, "caps", caps, NULL);
    gst_caps_unref(caps);
}

void vfg_configure_opus_appsrc(GstElement *appsrc, int channels) {
    GstCaps *caps = gst_caps_new_simple("audio/x-opus", "channel-mapping-family", G_TYPE_INT, 0, "rate", G_TYPE_INT, 48000,
                                        "channels", G_TYPE_INT, channels, NULL);
    // Live and stamped like the picture; a second of 20 ms packets at most.
    g_object_set(appsrc, "caps", caps, "is-live", TRUE, "format", GST_FORMAT_TIME, "do-timestamp", FALSE,
                 "max-buffers", (guint64)50, "block", FALSE, NULL);
    gst_util_set_object_arg(G_OBJECT(appsrc), "leaky-type", "downstream");
    gst_caps_unref(caps);
}

void vfg_configure_aac_appsrc(GstElement *appsrc, const vfg_aac *aac) {
    GstBuffer *config = gst_buffer_new_memdup(aac->config, aac->config_length);
    GstCaps *caps = gst_caps_new_simple("audio/mpeg", "mpegversion", G_TYPE_INT, 4, "stream-format", G_TYPE_STRING, "raw",
                                        "rate", G_TYPE_INT, aac->rate, "channels", G_TYPE_INT, aac->channels,
                                        "codec_data", GST_TYPE_BUFFER, config, NULL);
    gst_buffer_unref(config);
    // Live and stamped like the picture; a second of packets (47 at 48 kHz) at most.
    g_object_set(appsrc, "caps", caps, "is-live", TRUE, "format", GST_FORMAT_TIME, "do-timestamp", FALSE,
                 "max-buffers", (guint64)50, "block", FALSE, NULL);
    gst_util_set_object_arg(G_OBJECT(appsrc), "leaky-type", "downstream");
    gst_caps_unref(caps);
}
