// An ONVIF talker for Tests/onvif/test_backchannel.py: GStreamer's rtspsrc with
// backchannel=onvif plays an RTSP path (the picture counted, into fakesinks) and sends a tone
// into the section the server marks a=sendonly, by rtspsrc's push-backchannel-sample — what a
// GStreamer-based NVR does. (In C: in GStreamer 1.22 the signal takes the sample's reference,
// which a binding such as PyGObject cannot give it.)
//
// talker URL USER PASSWORD HZ SECONDS tcp|udp — prints one JSON line when done:
// {"backchannel": caps, "pushed": n, "refused": n, "video": n, "error": message or null}
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static GstElement *rtspsrc, *pipeline, *sender;
static gint pushed, refused, video, stream = -1, hz;
static gchar *backchannel_caps;

static GstFlowReturn on_sample(GstAppSink *sink, gpointer data) {
    (void)data;
    GstSample *sample = gst_app_sink_pull_sample(sink);
    if (!sample) return GST_FLOW_EOS;
    GstFlowReturn ret = GST_FLOW_ERROR;
    g_signal_emit_by_name(rtspsrc, "push-backchannel-sample", (guint)stream, sample, &ret);  // takes the reference (1.22)
    g_atomic_int_inc(ret == GST_FLOW_OK ? &pushed : &refused);
    return GST_FLOW_OK;
}

static gboolean on_select(GstElement *src, guint index, GstCaps *caps, gpointer data) {
    (void)src; (void)data;
    const GstStructure *s = gst_caps_get_structure(caps, 0);
    if (!gst_structure_has_field(s, "a-sendonly") || sender) return TRUE;
    gint pt = 0, rate = 8000;
    gst_structure_get_int(s, "payload", &pt);
    gst_structure_get_int(s, "clock-rate", &rate);
    const gchar *encoding = gst_structure_get_string(s, "encoding-name");
    backchannel_caps = gst_caps_to_string(caps);
    stream = (gint)index;
    gchar *launch = g_strdup_printf(
        "audiotestsrc is-live=true freq=%d volume=0.4 samplesperbuffer=160 ! audio/x-raw,rate=%d,channels=1 "
        "! mulawenc ! rtppcmupay pt=%d ! appsink name=out sync=false caps=application/x-rtp,media=audio,payload=%d,clock-rate=%d,encoding-name=%s",
        hz, rate, pt, pt, rate, encoding ? encoding : "PCMU");
    sender = gst_parse_launch(launch, NULL);
    g_free(launch);
    if (!sender) return TRUE;
    GstElement *out = gst_bin_get_by_name(GST_BIN(sender), "out");
    GstAppSinkCallbacks callbacks = {0};
    callbacks.new_sample = on_sample;
    gst_app_sink_set_callbacks(GST_APP_SINK(out), &callbacks, NULL, NULL);
    gst_object_unref(out);
    gst_element_set_state(sender, GST_STATE_PLAYING);
    return TRUE;
}

static GstPadProbeReturn count_video(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad; (void)info; (void)data;
    g_atomic_int_inc(&video);
    return GST_PAD_PROBE_OK;
}

static void on_pad(GstElement *src, GstPad *pad, gpointer data) {
    (void)src; (void)data;
    GstElement *sink = gst_element_factory_make("fakesink", NULL);
    g_object_set(sink, "sync", FALSE, NULL);
    gst_bin_add(GST_BIN(pipeline), sink);
    gst_element_sync_state_with_parent(sink);
    GstPad *in = gst_element_get_static_pad(sink, "sink");
    gst_pad_link(pad, in);
    gst_object_unref(in);
    GstCaps *caps = gst_pad_get_current_caps(pad);
    if (caps && g_strcmp0(gst_structure_get_string(gst_caps_get_structure(caps, 0), "media"), "video") == 0)
        gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, count_video, NULL, NULL);
    if (caps) gst_caps_unref(caps);
}

int main(int argc, char **argv) {
    gst_init(&argc, &argv);
    if (argc != 7) {
        fprintf(stderr, "usage: talker URL USER PASSWORD HZ SECONDS tcp|udp\n");
        return 2;
    }
    hz = atoi(argv[4]);
    pipeline = gst_pipeline_new("talker");
    rtspsrc = gst_element_factory_make("rtspsrc", NULL);
    gst_util_set_object_arg(G_OBJECT(rtspsrc), "backchannel", "onvif");
    gst_util_set_object_arg(G_OBJECT(rtspsrc), "protocols", argv[6]);
    g_object_set(rtspsrc, "location", argv[1], "user-id", argv[2], "user-pw", argv[3], "latency", 100, NULL);
    gst_bin_add(GST_BIN(pipeline), rtspsrc);
    g_signal_connect(rtspsrc, "select-stream", G_CALLBACK(on_select), NULL);
    g_signal_connect(rtspsrc, "pad-added", G_CALLBACK(on_pad), NULL);
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    // Runs SECONDS, or until an error.
    GstBus *bus = gst_element_get_bus(pipeline);
    GstMessage *m = gst_bus_timed_pop_filtered(bus, (GstClockTime)(atof(argv[5]) * GST_SECOND), GST_MESSAGE_ERROR);
    gchar *error = NULL;
    if (m) {
        GError *e = NULL;
        gst_message_parse_error(m, &e, NULL);
        error = g_strdup(e ? e->message : "error");
        g_clear_error(&e);
        gst_message_unref(m);
    }
    gst_object_unref(bus);
    if (sender) gst_element_set_state(sender, GST_STATE_NULL);
    gst_element_set_state(pipeline, GST_STATE_NULL);  // TEARDOWN
    gchar *caps = backchannel_caps ? g_strescape(backchannel_caps, NULL) : NULL;
    gchar *why = error ? g_strescape(error, NULL) : NULL;
    printf("{\"backchannel\": %s%s%s, \"pushed\": %d, \"refused\": %d, \"video\": %d, \"error\": %s%s%s}\n",
           caps ? "\"" : "", caps ? caps : "null", caps ? "\"" : "", pushed, refused, video,
           why ? "\"" : "", why ? why : "null", why ? "\"" : "");
    return 0;
}
