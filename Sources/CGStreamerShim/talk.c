// Talk-back (WHIP): a client sends its microphone as Opus; webrtcbin receives it, and the
// decoded voice goes to the caller's callback — rtpopusdepay → opusdec → 48 kHz mono s16 →
// appsink. The offer/answer and ICE are webrtc.c's, as a sending peer's.
#include "private.h"
#include <gst/app/gstappsink.h>
#include <stdio.h>
#include <string.h>

struct vfg_talk {
    GstElement *pipeline;
    GstElement *webrtc;
    vfg_talk_sound sound;
    void *context;
    gint failed;  // set by the pipeline's threads (atomic)
    vfg_arrivals arrivals;
};

static GstFlowReturn on_sample(GstAppSink *sink, gpointer data) {
    vfg_talk *t = data;
    GstSample *sample = gst_app_sink_pull_sample(sink);
    if (!sample) return GST_FLOW_EOS;
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    GstMapInfo map;
    if (buffer && gst_buffer_map(buffer, &map, GST_MAP_READ)) {
        t->sound(t->context, (const int16_t *)map.data, map.size / sizeof(int16_t), 48000, 1);
        gst_buffer_unmap(buffer, &map);
    }
    gst_sample_unref(sample);
    return GST_FLOW_OK;
}

// The talker's stream arrives as webrtcbin's src pad once its first packets are decrypted:
// the decoding branch is made then and joins the running pipeline. Opus's packet loss
// concealment fills what the network lost; the resampler makes whatever the decoder gives
// (a stereo talker) the speaker's 48 kHz mono.
static void on_pad_added(GstElement *webrtc, GstPad *pad, gpointer data) {
    (void)webrtc;
    vfg_talk *t = data;
    if (GST_PAD_DIRECTION(pad) != GST_PAD_SRC) return;
    GError *e = NULL;
    GstElement *bin = gst_parse_bin_from_description(
        "rtpopusdepay ! opusdec plc=true ! audioconvert ! audioresample "
        "! audio/x-raw,format=S16LE,rate=48000,channels=1,layout=interleaved "
        "! appsink name=voice sync=false max-buffers=50 drop=true",
        TRUE, &e);
    if (!bin) {
        g_clear_error(&e);
        g_atomic_int_set(&t->failed, 1);
        return;
    }
    GstElement *sink = gst_bin_get_by_name(GST_BIN(bin), "voice");
    GstAppSinkCallbacks callbacks = {0};
    callbacks.new_sample = on_sample;
    gst_app_sink_set_callbacks(GST_APP_SINK(sink), &callbacks, t, NULL);
    gst_object_unref(sink);
    gst_bin_add(GST_BIN(t->pipeline), bin);
    gst_element_sync_state_with_parent(bin);
    GstPad *in = gst_element_get_static_pad(bin, "sink");
    if (gst_pad_link(pad, in) != GST_PAD_LINK_OK) g_atomic_int_set(&t->failed, 1);
    gst_object_unref(in);
}

vfg_talk *vfg_talk_answer(const vfg_peer_options *o, vfg_talk_sound sound, void *context, char **answer,
                          int *why, char *error, size_t error_len) {
    *answer = NULL;
    *why = VFG_PEER_OK;
    if (vfg_start(error, error_len) != 0) { *why = VFG_PEER_FAILED; return NULL; }
    GstSDPMessage *sdp = NULL;
    if (gst_sdp_message_new_from_text(o->offer, &sdp) != GST_SDP_OK || gst_sdp_message_medias_len(sdp) == 0) {
        if (sdp) gst_sdp_message_free(sdp);
        *why = VFG_PEER_MALFORMED_OFFER;
        snprintf(error, error_len, "the offer is not SDP with a media section");
        return NULL;
    }
    gint pt = -1;
    int mline = vfg_sdp_find_opus(sdp, &pt);
    const GstSDPMedia *media = mline >= 0 ? gst_sdp_message_get_media(sdp, (guint)mline) : NULL;
    // The client must send: an offer only to receive has nothing to say.
    gboolean sends = media && !gst_sdp_media_get_attribute_val(media, "recvonly") && !gst_sdp_media_get_attribute_val(media, "inactive");
    if (!sends) {
        gst_sdp_message_free(sdp);
        *why = VFG_PEER_NO_OPUS;
        snprintf(error, error_len, "the offer sends no Opus (an audio section with opus/48000/2, sendonly or sendrecv)");
        return NULL;
    }
    vfg_talk *t = g_new0(vfg_talk, 1);
    t->sound = sound;
    t->context = context;
    t->arrivals.created = g_get_monotonic_time();
    t->pipeline = gst_pipeline_new("talk");
    // A little jitter buffer: a voice is heard a few tens of ms later, without gaps.
    t->webrtc = gst_element_factory_make("webrtcbin", "webrtc");
    if (!t->webrtc) {
        gst_sdp_message_free(sdp);
        vfg_talk_close(t);
        *why = VFG_PEER_FAILED;
        snprintf(error, error_len, "no webrtcbin");
        return NULL;
    }
    g_object_set(t->webrtc, "bundle-policy", GST_WEBRTC_BUNDLE_POLICY_MAX_BUNDLE, "latency", 60, NULL);
    gst_bin_add(GST_BIN(t->pipeline), gst_object_ref(t->webrtc));
    GstCaps *caps = gst_caps_new_simple("application/x-rtp", "media", G_TYPE_STRING, "audio", "encoding-name", G_TYPE_STRING, "OPUS",
                                        "clock-rate", G_TYPE_INT, 48000, "payload", G_TYPE_INT, pt, NULL);
    GstWebRTCRTPTransceiver *transceiver = NULL;
    g_signal_emit_by_name(t->webrtc, "add-transceiver", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY, caps, &transceiver);
    gst_caps_unref(caps);
    if (transceiver) gst_object_unref(transceiver);
    g_signal_connect(t->webrtc, "pad-added", G_CALLBACK(on_pad_added), t);
    int reason = vfg_webrtc_answer(t->pipeline, t->webrtc, sdp, o, answer, error, error_len);
    if (reason != VFG_PEER_OK) {
        *why = reason;
        vfg_talk_close(t);
        return NULL;
    }
    vfg_watch_arrivals(t->webrtc, &t->arrivals);
    return t;
}

int vfg_talk_state(vfg_talk *t) {
    GstBus *bus = gst_element_get_bus(t->pipeline);
    for (GstMessage *m; (m = gst_bus_pop(bus));) {
        if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) g_atomic_int_set(&t->failed, 1);
        gst_message_unref(m);
    }
    gst_object_unref(bus);
    if (g_atomic_int_get(&t->failed)) return GST_WEBRTC_PEER_CONNECTION_STATE_FAILED;
    GstWebRTCPeerConnectionState state = GST_WEBRTC_PEER_CONNECTION_STATE_NEW;
    g_object_get(t->webrtc, "connection-state", &state, NULL);
    return (int)state;
}

int vfg_talk_silent_ms(vfg_talk *t) { return vfg_arrivals_silent_ms(&t->arrivals); }

void vfg_talk_close(vfg_talk *t) {
    if (t->pipeline) {
        // NULL joins the streaming threads: no callback runs after this.
        gst_element_set_state(t->pipeline, GST_STATE_NULL);
        gst_object_unref(t->pipeline);
    }
    if (t->webrtc) gst_object_unref(t->webrtc);
    g_free(t);
}
