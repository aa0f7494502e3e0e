// One WebRTC peer per WHEP session: appsrc → h264parse → rtph264pay → webrtcbin, answering
// the client's offer. WHEP here is not trickled: the answer waits for ICE gathering (host
// candidates take milliseconds) and carries every candidate. DTLS-SRTP and ICE are
// webrtcbin's and libnice's.
#include "private.h"
#define GST_USE_UNSTABLE_API
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>
#include <stdio.h>
#include <string.h>

struct vfg_peer {
    GstElement *pipeline;
    GstElement *webrtc;
    vfg_feed *feed;  // the peer's own reference
    int failed;
    gint64 created;  // g_get_monotonic_time
    /// When the last packet from the peer arrived, in ms after `created` plus one; 0 before one
    /// (an int: atomic everywhere, and enough for 24 days of one peer).
    gint last_received;
};

// Everything the peer sends (RTCP reports and feedback, DTLS) comes up through libnice's
// nicesrc: the last arrival tells a peer that went away (a closed laptop, a lost network)
// from one that is only quiet, within seconds, whatever the ICE layer notices.
static GstPadProbeReturn on_received(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad; (void)info;
    vfg_peer *p = data;
    g_atomic_int_set(&p->last_received, (gint)((g_get_monotonic_time() - p->created) / 1000) + 1);
    return GST_PAD_PROBE_OK;
}

static void watch_received(vfg_peer *p) {
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(p->webrtc));
    GValue item = G_VALUE_INIT;
    while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
        GstElement *e = g_value_get_object(&item);
        GstElementFactory *f = gst_element_get_factory(e);
        if (f && g_strcmp0(GST_OBJECT_NAME(f), "nicesrc") == 0) {
            GstPad *pad = gst_element_get_static_pad(e, "src");
            if (pad) {
                gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_received, p, NULL);
                gst_object_unref(pad);
            }
        }
        g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(it);
}

/// How well an offered H.264 format suits the stream (libx264's Main profile): -1 not at
/// all (packetization-mode 0 cannot carry our slices), Main best; High and Baseline decoders
/// in browsers take it too, as every WHEP server relies on.
static int rank_format(const GstStructure *s) {
    const gchar *name = gst_structure_get_string(s, "encoding-name");
    if (!name || g_ascii_strcasecmp(name, "H264") != 0) return -1;
    const gchar *mode = gst_structure_get_string(s, "packetization-mode");
    if (!mode || strcmp(mode, "1") != 0) return -1;
    const gchar *profile = gst_structure_get_string(s, "profile-level-id");
    if (!profile) return 0;
    if (g_ascii_strncasecmp(profile, "4d", 2) == 0) return 4;
    if (g_ascii_strncasecmp(profile, "64", 2) == 0) return 3;
    if (g_ascii_strncasecmp(profile, "42e0", 4) == 0) return 2;
    return 1;
}

/// The offer's first video m-line carrying H.264 and its best format's caps (or -1).
static int find_h264(const GstSDPMessage *sdp, GstCaps **caps) {
    for (guint i = 0; i < gst_sdp_message_medias_len(sdp); i++) {
        const GstSDPMedia *media = gst_sdp_message_get_media(sdp, i);
        if (g_strcmp0(gst_sdp_media_get_media(media), "video") != 0) continue;
        int best = -1;
        for (guint f = 0; f < gst_sdp_media_formats_len(media); f++) {
            gint pt = atoi(gst_sdp_media_get_format(media, f));
            GstCaps *c = gst_sdp_media_get_caps_from_media(media, pt);
            if (!c) continue;
            int rank = rank_format(gst_caps_get_structure(c, 0));
            if (rank > best) {
                best = rank;
                if (*caps) gst_caps_unref(*caps);
                *caps = c;
            } else {
                gst_caps_unref(c);
            }
        }
        if (best >= 0) return (int)i;
    }
    return -1;
}

static GstPromise *emit_and_wait(GstElement *webrtc, const char *signal, GstWebRTCSessionDescription *description) {
    GstPromise *promise = gst_promise_new();
    if (description) g_signal_emit_by_name(webrtc, signal, description, promise);
    else g_signal_emit_by_name(webrtc, signal, NULL, promise);
    gst_promise_wait(promise);
    return promise;
}

static vfg_peer *fail(vfg_peer *p, int *why, int reason, char *error, size_t error_len, const char *message) {
    *why = reason;
    snprintf(error, error_len, "%s", message);
    if (p) vfg_peer_close(p);
    return NULL;
}

/// The candidates in webrtcbin's local description so far.
static int count_candidates(GstElement *webrtc) {
    GstWebRTCSessionDescription *d = NULL;
    g_object_get(webrtc, "local-description", &d, NULL);
    if (!d) return 0;
    int n = 0;
    for (guint i = 0; i < gst_sdp_message_medias_len(d->sdp); i++) {
        const GstSDPMedia *m = gst_sdp_message_get_media(d->sdp, i);
        for (guint a = 0; a < gst_sdp_media_attributes_len(m); a++) {
            if (g_strcmp0(gst_sdp_media_get_attribute(m, a)->key, "candidate") == 0) n++;
        }
    }
    gst_webrtc_session_description_free(d);
    return n;
}

/// Units sent before DTLS-SRTP was up went nowhere, the first IDR among them: once the peer
/// is connected the next push asks for one, so the picture starts without waiting for the
/// browser's PLI or the keyframe interval.
static void on_connection_state(GObject *webrtc, GParamSpec *spec, gpointer data) {
    (void)spec;
    GstWebRTCPeerConnectionState state = GST_WEBRTC_PEER_CONNECTION_STATE_NEW;
    g_object_get(webrtc, "connection-state", &state, NULL);
    if (state == GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED) vfg_feed_want_keyframe(data);
}

static gint64 deadline_after(unsigned ms) { return g_get_monotonic_time() + (gint64)ms * 1000; }

vfg_peer *vfg_peer_answer(const vfg_peer_options *o, char **answer, vfg_feed **feed, int *why,
                          char *error, size_t error_len) {
    *answer = NULL;
    *feed = NULL;
    *why = VFG_PEER_OK;
    if (vfg_start(error, error_len) != 0) { *why = VFG_PEER_FAILED; return NULL; }
    GstSDPMessage *sdp = NULL;
    if (gst_sdp_message_new_from_text(o->offer, &sdp) != GST_SDP_OK || gst_sdp_message_medias_len(sdp) == 0) {
        if (sdp) gst_sdp_message_free(sdp);
        return fail(NULL, why, VFG_PEER_MALFORMED_OFFER, error, error_len, "the offer is not SDP with a media section");
    }
    GstCaps *codec = NULL;
    int mline = find_h264(sdp, &codec);
    if (mline < 0) {
        gst_sdp_message_free(sdp);
        return fail(NULL, why, VFG_PEER_NO_H264, error, error_len,
                    "the offer has no video with H.264 in packetization-mode 1");
    }
    gint pt = 96;
    GstStructure *cs = gst_caps_get_structure(codec, 0);
    gst_structure_get_int(cs, "payload", &pt);
    gst_structure_set_name(cs, "application/x-rtp");
    // Only what identifies the format: the offer's rtcp-fb and extmap fields would ask the
    // payloader for what it does not do.
    GstCaps *rtp = gst_caps_new_simple("application/x-rtp", "media", G_TYPE_STRING, "video",
                                       "encoding-name", G_TYPE_STRING, "H264", "clock-rate", G_TYPE_INT, 90000,
                                       "payload", G_TYPE_INT, pt, "packetization-mode", G_TYPE_STRING, "1", NULL);
    const gchar *profile = gst_structure_get_string(cs, "profile-level-id");
    if (profile) gst_caps_set_simple(rtp, "profile-level-id", G_TYPE_STRING, profile, NULL);
    gst_caps_unref(codec);

    vfg_peer *p = g_new0(vfg_peer, 1);
    p->created = g_get_monotonic_time();
    gchar *launch = g_strdup_printf(
        "appsrc name=src ! h264parse config-interval=-1 ! rtph264pay name=pay pt=%d mtu=1200 "
        "aggregate-mode=zero-latency ! capsfilter name=rtpcaps ! webrtcbin name=webrtc bundle-policy=max-bundle latency=0",
        pt);
    GError *e = NULL;
    // Linking webrtcbin's sink pad in the launch line makes a transceiver before the offer is
    // set; the offer's m-line then finds it by kind and codec, with no second transceiver.
    p->pipeline = gst_parse_launch(launch, &e);
    g_free(launch);
    if (!p->pipeline || e) {
        char message[256];
        snprintf(message, sizeof message, "gst_parse_launch: %s", e ? e->message : "failed");
        g_clear_error(&e);
        gst_sdp_message_free(sdp);
        return fail(p, why, VFG_PEER_FAILED, error, error_len, message);
    }
    GstElement *capsfilter = gst_bin_get_by_name(GST_BIN(p->pipeline), "rtpcaps");
    g_object_set(capsfilter, "caps", rtp, NULL);
    gst_object_unref(capsfilter);
    p->webrtc = gst_bin_get_by_name(GST_BIN(p->pipeline), "webrtc");
    GstElement *appsrc = gst_bin_get_by_name(GST_BIN(p->pipeline), "src");
    vfg_configure_appsrc(appsrc);
    p->feed = vfg_feed_new(appsrc);
    gst_object_unref(appsrc);
    g_signal_connect(p->webrtc, "notify::connection-state", G_CALLBACK(on_connection_state), p->feed);

    GArray *transceivers = NULL;
    g_signal_emit_by_name(p->webrtc, "get-transceivers", &transceivers);
    for (guint i = 0; transceivers && i < transceivers->len; i++) {
        GstWebRTCRTPTransceiver *t = g_array_index(transceivers, GstWebRTCRTPTransceiver *, i);
        g_object_set(t, "direction", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY, "codec-preferences", rtp, NULL);
    }
    if (transceivers) g_array_unref(transceivers);
    gst_caps_unref(rtp);

    if (o->stun_server) g_object_set(p->webrtc, "stun-server", o->stun_server, NULL);
    for (size_t i = 0; i < o->turn_count; i++) {
        gboolean added = FALSE;
        g_signal_emit_by_name(p->webrtc, "add-turn-server", o->turn_servers[i], &added);
    }
    if (o->address_count > 0) {
        GstWebRTCICE *ice = NULL;
        g_object_get(p->webrtc, "ice-agent", &ice, NULL);
        for (size_t i = 0; ice && i < o->address_count; i++) {
            gboolean added = FALSE;
            g_signal_emit_by_name(ice, "add-local-ip-address", o->addresses[i], &added);
        }
        if (ice) gst_object_unref(ice);
    }
    if (gst_element_set_state(p->pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        gst_sdp_message_free(sdp);
        return fail(p, why, VFG_PEER_FAILED, error, error_len, "the WebRTC pipeline did not start");
    }

    GstWebRTCSessionDescription *offer = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_OFFER, sdp);  // takes sdp
    GstPromise *promise = emit_and_wait(p->webrtc, "set-remote-description", offer);
    gst_webrtc_session_description_free(offer);
    GstPromiseResult result = gst_promise_wait(promise);
    const GstStructure *reply = gst_promise_get_reply(promise);
    GError *set_error = NULL;
    if (reply) gst_structure_get(reply, "error", G_TYPE_ERROR, &set_error, NULL);
    gst_promise_unref(promise);
    if (result != GST_PROMISE_RESULT_REPLIED || set_error) {
        char message[512];
        snprintf(message, sizeof message, "the offer was refused: %s", set_error ? set_error->message : "no reply");
        g_clear_error(&set_error);
        return fail(p, why, VFG_PEER_MALFORMED_OFFER, error, error_len, message);
    }

    promise = emit_and_wait(p->webrtc, "create-answer", NULL);
    reply = gst_promise_get_reply(promise);
    GstWebRTCSessionDescription *local = NULL;
    GError *answer_error = NULL;
    if (reply) {
        gst_structure_get(reply, "answer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &local, NULL);
        gst_structure_get(reply, "error", G_TYPE_ERROR, &answer_error, NULL);
    }
    gst_promise_unref(promise);
    if (!local) {
        char message[512];
        snprintf(message, sizeof message, "no answer to the offer: %s", answer_error ? answer_error->message : "webrtcbin made none");
        g_clear_error(&answer_error);
        return fail(p, why, VFG_PEER_MALFORMED_OFFER, error, error_len, message);
    }
    g_clear_error(&answer_error);
    promise = emit_and_wait(p->webrtc, "set-local-description", local);
    gst_promise_unref(promise);
    gst_webrtc_session_description_free(local);

    // Gathering: host candidates come within milliseconds of the answer, but webrtcbin calls
    // gathering complete only some 200 ms later. With no STUN or TURN server there is nothing
    // more to come: the answer goes once its candidates have stopped arriving for 20 ms.
    // A STUN or TURN server takes longer; the answer goes with what there is at the deadline.
    gboolean host_only = !o->stun_server && o->turn_count == 0;
    gint64 deadline = deadline_after(o->timeout_ms), steady_since = 0;
    int seen = 0;
    while (g_get_monotonic_time() < deadline) {
        GstWebRTCICEGatheringState gathering = GST_WEBRTC_ICE_GATHERING_STATE_NEW;
        g_object_get(p->webrtc, "ice-gathering-state", &gathering, NULL);
        if (gathering == GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE) break;
        if (host_only) {
            int n = count_candidates(p->webrtc);
            if (n != seen) { seen = n; steady_since = g_get_monotonic_time(); }
            else if (n > 0 && g_get_monotonic_time() - steady_since >= 20000) break;
        }
        g_usleep(2000);
    }
    GstWebRTCSessionDescription *described = NULL;
    g_object_get(p->webrtc, "local-description", &described, NULL);
    if (!described) return fail(p, why, VFG_PEER_FAILED, error, error_len, "webrtcbin kept no local description");
    watch_received(p);
    *answer = gst_sdp_message_as_text(described->sdp);
    gst_webrtc_session_description_free(described);
    *feed = vfg_feed_retain(p->feed);
    return p;
}

int vfg_peer_state(vfg_peer *p) {
    GstBus *bus = gst_element_get_bus(p->pipeline);
    // The bus has no watch: its messages are taken here, or they would pile up.
    for (GstMessage *m; (m = gst_bus_pop(bus));) {
        if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) p->failed = 1;
        gst_message_unref(m);
    }
    gst_object_unref(bus);
    if (p->failed) return GST_WEBRTC_PEER_CONNECTION_STATE_FAILED;
    GstWebRTCPeerConnectionState state = GST_WEBRTC_PEER_CONNECTION_STATE_NEW;
    g_object_get(p->webrtc, "connection-state", &state, NULL);
    return (int)state;
}

int vfg_peer_silent_ms(vfg_peer *p) {
    gint last = g_atomic_int_get(&p->last_received);
    return last == 0 ? -1 : (int)((g_get_monotonic_time() - p->created) / 1000) + 1 - last;
}

void vfg_peer_close(vfg_peer *p) {
    if (p->webrtc && p->feed) g_signal_handlers_disconnect_by_data(p->webrtc, p->feed);
    if (p->feed) {
        vfg_feed_close(p->feed);
        vfg_feed_release(p->feed);
    }
    if (p->pipeline) {
        gst_element_set_state(p->pipeline, GST_STATE_NULL);
        gst_object_unref(p->pipeline);
    }
    if (p->webrtc) gst_object_unref(p->webrtc);
    g_free(p);
}

void vfg_webrtc_warm_up(void) {
    if (vfg_start(NULL, 0) != 0) return;
    // dtlssrtpenc's first instance makes the process's certificate (the slow part: a key pair).
    static const char *const elements[] = {"webrtcbin", "dtlssrtpenc", "dtlssrtpdec", "nicesrc"};
    for (size_t i = 0; i < sizeof elements / sizeof elements[0]; i++) {
        GstElement *e = gst_element_factory_make(elements[i], NULL);
        if (!e) continue;
        gst_element_set_state(e, GST_STATE_READY);
        gst_element_set_state(e, GST_STATE_NULL);
        gst_object_unref(e);
    }
}
