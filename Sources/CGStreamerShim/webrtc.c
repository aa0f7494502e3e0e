// One WebRTC peer per WHEP session: appsrc → h264parse → rtph264pay → webrtcbin, and for an
// offer that receives Opus from a camera with sound, appsrc → rtpopuspay → webrtcbin beside
// it (the camera's Opus packets, encoded once for every viewer), answering the client's offer. The answer waits for the server's ICE gathering (host
// candidates take milliseconds) and carries every candidate of its own: WHEP has no way to
// trickle the server's (RFC 9725's PATCH carries the client's); the client's may come later,
// trickled (vfg_peer_add_candidate). DTLS-SRTP and ICE are
// webrtcbin's and libnice's.
#include "private.h"
#include <stdio.h>
#include <string.h>

struct vfg_peer {
    GstElement *pipeline;
    GstElement *webrtc;
    vfg_feed *feed;  // the peer's own reference
    vfg_feed *audio;  // the sound's, or NULL
    int failed;
    vfg_arrivals arrivals;
    guint video_ssrc;
    int vp8;  // the picture goes as VP8: the offer had no H.264
    int main_profile;  // its H.264 may be Main (the offer has Main or High), else Constrained Baseline
};

// Everything the peer sends (RTCP reports and feedback, DTLS, a talker's RTP) comes up
// through libnice's nicesrc: the last arrival tells a peer that went away (a closed laptop,
// a lost network) from one that is only quiet, within seconds, whatever the ICE layer notices.
static GstPadProbeReturn on_received(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)pad; (void)info;
    vfg_arrivals *a = data;
    g_atomic_int_set(&a->last, (gint)((g_get_monotonic_time() - a->created) / 1000) + 1);
    return GST_PAD_PROBE_OK;
}

void vfg_watch_arrivals(GstElement *webrtc, vfg_arrivals *arrivals) {
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(webrtc));
    GValue item = G_VALUE_INIT;
    while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
        GstElement *e = g_value_get_object(&item);
        GstElementFactory *f = gst_element_get_factory(e);
        if (f && g_strcmp0(GST_OBJECT_NAME(f), "nicesrc") == 0) {
            GstPad *pad = gst_element_get_static_pad(e, "src");
            if (pad) {
                gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_received, arrivals, NULL);
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

/// VP8 at 90 kHz: what a browser without H.264 (Firefox without OpenH264) offers first.
static int rank_vp8(const GstStructure *s) {
    const gchar *name = gst_structure_get_string(s, "encoding-name");
    return name && g_ascii_strcasecmp(name, "VP8") == 0 ? 0 : -1;
}

/// The id the offer's media `mline` gives header extension `uri` (`a=extmap:5 uri`, or
/// `5/recvonly`), or 0 when it offers none. Ids 1–14: the one-byte header every receiver reads.
static guint offered_extension(const GstSDPMessage *sdp, int mline, const char *uri) {
    const GstSDPMedia *media = gst_sdp_message_get_media(sdp, (guint)mline);
    for (guint i = 0; media && i < gst_sdp_media_attributes_len(media); i++) {
        const GstSDPAttribute *a = gst_sdp_media_get_attribute(media, i);
        if (g_strcmp0(a->key, "extmap") != 0 || !a->value) continue;
        gchar *end = NULL;
        guint64 id = g_ascii_strtoull(a->value, &end, 10);
        if (end == a->value || id < 1 || id > 14) continue;
        const gchar *named = strchr(end, ' ');
        if (!named) continue;
        while (*named == ' ') named++;
        size_t length = strcspn(named, " ");
        if (length == strlen(uri) && strncmp(named, uri, length) == 0) return (guint)id;
    }
    return 0;
}

/// The offer's first video m-line carrying H.264 and its best format's caps (or -1); with
/// `vp8`, the first carrying VP8 instead.
static int find_video(const GstSDPMessage *sdp, GstCaps **caps, int vp8) {
    for (guint i = 0; i < gst_sdp_message_medias_len(sdp); i++) {
        const GstSDPMedia *media = gst_sdp_message_get_media(sdp, i);
        if (g_strcmp0(gst_sdp_media_get_media(media), "video") != 0) continue;
        int best = -1;
        for (guint f = 0; f < gst_sdp_media_formats_len(media); f++) {
            gint pt = atoi(gst_sdp_media_get_format(media, f));
            GstCaps *c = gst_sdp_media_get_caps_from_media(media, pt);
            if (!c) continue;
            const GstStructure *st = gst_caps_get_structure(c, 0);
            int rank = vp8 ? rank_vp8(st) : rank_format(st);
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

int vfg_sdp_find_opus(const GstSDPMessage *sdp, gint *pt) {
    for (guint i = 0; i < gst_sdp_message_medias_len(sdp); i++) {
        const GstSDPMedia *media = gst_sdp_message_get_media(sdp, i);
        if (g_strcmp0(gst_sdp_media_get_media(media), "audio") != 0) continue;
        for (guint f = 0; f < gst_sdp_media_formats_len(media); f++) {
            gint format = atoi(gst_sdp_media_get_format(media, f));
            GstCaps *c = gst_sdp_media_get_caps_from_media(media, format);
            if (!c) continue;
            const GstStructure *s = gst_caps_get_structure(c, 0);
            const gchar *name = gst_structure_get_string(s, "encoding-name");
            gint rate = 0;
            gst_structure_get_int(s, "clock-rate", &rate);
            gboolean opus = name && g_ascii_strcasecmp(name, "OPUS") == 0 && rate == 48000;
            gst_caps_unref(c);
            if (opus) {
                *pt = format;
                return (int)i;
            }
        }
        return -1;  // the first audio section only: a second would need a second track
    }
    return -1;
}

/// The transceiver webrtcbin made for the sink pad that `element`'s src pad is linked to.
static GstWebRTCRTPTransceiver *transceiver_after(GstElement *element) {
    GstWebRTCRTPTransceiver *t = NULL;
    GstPad *src = gst_element_get_static_pad(element, "src");
    GstPad *sink = src ? gst_pad_get_peer(src) : NULL;
    if (sink && g_object_class_find_property(G_OBJECT_GET_CLASS(sink), "transceiver")) g_object_get(sink, "transceiver", &t, NULL);
    if (sink) gst_object_unref(sink);
    if (src) gst_object_unref(src);
    return t;
}

/// Sends only, in the one format given (the offer's other formats would ask the payloader
/// for what it does not do), from an SSRC chosen now: the answer then names each stream's
/// SSRC and msid — the picture's too, whose caps are otherwise known only at its first
/// access unit — and a browser puts both tracks in one stream and lines them up (Chromium
/// syncs only tracks of one msid stream).
static guint prefer(GstElement *pipeline, const char *payloader, const char *capsfilter, GstCaps *rtp) {
    GstElement *filter = gst_bin_get_by_name(GST_BIN(pipeline), capsfilter);
    GstElement *pay = gst_bin_get_by_name(GST_BIN(pipeline), payloader);
    if (!filter || !pay) {
        if (filter) gst_object_unref(filter);
        if (pay) gst_object_unref(pay);
        return 0;
    }
    guint ssrc = g_random_int();
    g_object_set(pay, "ssrc", ssrc, NULL);
    gst_object_unref(pay);
    gst_caps_set_simple(rtp, "ssrc", G_TYPE_UINT, ssrc, NULL);
    g_object_set(filter, "caps", rtp, NULL);
    GstWebRTCRTPTransceiver *t = transceiver_after(filter);
    if (t) {
        g_object_set(t, "direction", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY, "codec-preferences", rtp, NULL);
        // The picture's lost packets are sent again when the viewer NACKs them (RFC 4588's rtx,
        // where the offer has it): a keyframe's burst a shallow router queue dropped is repaired
        // in a round trip, instead of a freeze until the next keyframe.
        if (g_str_equal(payloader, "pay")) g_object_set(t, "do-nack", TRUE, NULL);
        gst_object_unref(t);
    }
    gst_object_unref(filter);
    return ssrc;
}

// rtpbin's sender reports map an RTP time to the wall clock when a packet is sent, by default:
// the picture (sent after its encode, ~10 ms) and the sound (after an Opus frame and its
// look-ahead, ~30 ms) would be out of step in a browser's lip-sync by the difference. Mapped
// at the buffers' own times — their capture times — a browser lines them up as captured.
static void sync_reports_at_buffer_times(GstElement *webrtc) {
    GstIterator *it = gst_bin_iterate_recurse(GST_BIN(webrtc));
    GValue item = G_VALUE_INIT;
    while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
        GstElement *e = g_value_get_object(&item);
        GstElementFactory *f = gst_element_get_factory(e);
        if (f && g_strcmp0(GST_OBJECT_NAME(f), "rtpbin") == 0) g_object_set(e, "rtcp-sync-send-time", FALSE, NULL);
        g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(it);
}

// A lost packet is sent again only while it can still be in time for a low-latency viewer:
// rtprtxsend keeps 150 ms of the stream. A viewer behind a link too slow for its stream (a
// router's queue hundreds of ms long, dropping at its tail) asks for packets long gone by the
// time it notices: answering those would flood the link that lost them — measured: with
// every NACK answered, a 1 Mbit/s viewer whose probe of the main stream failed dropped 700–1,200
// packets a second for 8 s and decoded 6 frames a second on the sub stream it was moved to.
static void limit_retransmissions(GstBin *bin, GstBin *sub, GstElement *element, gpointer data) {
    (void)bin; (void)sub; (void)data;
    GstElementFactory *f = gst_element_get_factory(element);
    if (f && g_str_equal(GST_OBJECT_NAME(f), "rtprtxsend")) g_object_set(element, "max-size-time", 150u, NULL);
}

GstPromise *vfg_emit_and_wait(GstElement *webrtc, const char *signal, GstWebRTCSessionDescription *description) {
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

/// Configures ICE from `o` (STUN, TURN, the addresses to offer), starts `pipeline`, sets
/// `sdp` (taken) as the remote offer on `webrtc` and answers it: the answer's text (vfg_free)
/// with every candidate gathered by the deadline. VFG_PEER_OK, or the reason with `error`.
int vfg_webrtc_answer(GstElement *pipeline, GstElement *webrtc, GstSDPMessage *sdp, const vfg_peer_options *o,
                      char **answer, char *error, size_t error_len) {
    if (o->stun_server) g_object_set(webrtc, "stun-server", o->stun_server, NULL);
    for (size_t i = 0; i < o->turn_count; i++) {
        gboolean added = FALSE;
        g_signal_emit_by_name(webrtc, "add-turn-server", o->turn_servers[i], &added);
    }
    GstWebRTCICE *ice = NULL;
    g_object_get(webrtc, "ice-agent", &ice, NULL);
    if (ice) {
        // No UPnP: libnice would ask the LAN's router (SSDP multicast, from a thread of its
        // own that is never joined) to forward a port for every peer. A port forward is the
        // user's to configure; nothing here talks to the network unasked.
        GObject *agent = NULL;
        if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "agent")) g_object_get(ice, "agent", &agent, NULL);
        if (agent && g_object_class_find_property(G_OBJECT_GET_CLASS(agent), "upnp")) g_object_set(agent, "upnp", FALSE, NULL);
        if (agent) g_object_unref(agent);
        for (size_t i = 0; i < o->address_count; i++) {
            gboolean added = FALSE;
            g_signal_emit_by_name(ice, "add-local-ip-address", o->addresses[i], &added);
        }
        // A firewall's or a port forward's range: libnice takes each peer's ports from it (one
        // a peer with BUNDLE and rtcp-mux; no port is shared between peers).
        if (o->max_port > 0) g_object_set(ice, "min-rtp-port", o->min_port, "max-rtp-port", o->max_port, NULL);
        gst_object_unref(ice);
    }
    if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        gst_sdp_message_free(sdp);
        snprintf(error, error_len, "the WebRTC pipeline did not start");
        return VFG_PEER_FAILED;
    }

    GstWebRTCSessionDescription *offer = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_OFFER, sdp);  // takes sdp
    GstPromise *promise = vfg_emit_and_wait(webrtc, "set-remote-description", offer);
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
        snprintf(error, error_len, "%s", message);
        return VFG_PEER_MALFORMED_OFFER;
    }

    promise = vfg_emit_and_wait(webrtc, "create-answer", NULL);
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
        snprintf(error, error_len, "%s", message);
        return VFG_PEER_MALFORMED_OFFER;
    }
    g_clear_error(&answer_error);
    promise = vfg_emit_and_wait(webrtc, "set-local-description", local);
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
        g_object_get(webrtc, "ice-gathering-state", &gathering, NULL);
        if (gathering == GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE) break;
        if (host_only) {
            int n = count_candidates(webrtc);
            if (n != seen) { seen = n; steady_since = g_get_monotonic_time(); }
            else if (n > 0 && g_get_monotonic_time() - steady_since >= 20000) break;
        }
        g_usleep(2000);
    }
    GstWebRTCSessionDescription *described = NULL;
    g_object_get(webrtc, "local-description", &described, NULL);
    if (!described) {
        snprintf(error, error_len, "webrtcbin kept no local description");
        return VFG_PEER_FAILED;
    }
    *answer = gst_sdp_message_as_text(described->sdp);
    gst_webrtc_session_description_free(described);
    return VFG_PEER_OK;
}

vfg_peer *vfg_peer_answer(const vfg_peer_options *o, char **answer, vfg_feed **feed, vfg_feed **audio,
                          int *why, char *error, size_t error_len) {
    *answer = NULL;
    *feed = NULL;
    *audio = NULL;
    *why = VFG_PEER_OK;
    if (vfg_start(error, error_len) != 0) { *why = VFG_PEER_FAILED; return NULL; }
    GstSDPMessage *sdp = NULL;
    if (gst_sdp_message_new_from_text(o->offer, &sdp) != GST_SDP_OK || gst_sdp_message_medias_len(sdp) == 0) {
        if (sdp) gst_sdp_message_free(sdp);
        return fail(NULL, why, VFG_PEER_MALFORMED_OFFER, error, error_len, "the offer is not SDP with a media section");
    }
    // H.264 where the offer has it (the one encode every other client shares); VP8 where it
    // has not (a second encode, while such viewers watch).
    GstCaps *codec = NULL;
    int vp8 = 0;
    int mline = find_video(sdp, &codec, 0);
    if (mline < 0) {
        vp8 = 1;
        mline = find_video(sdp, &codec, 1);
    }
    if (mline < 0) {
        gst_sdp_message_free(sdp);
        return fail(NULL, why, VFG_PEER_NO_H264, error, error_len,
                    "the offer has no video with H.264 in packetization-mode 1, nor VP8");
    }
    gint pt = 96;
    GstStructure *cs = gst_caps_get_structure(codec, 0);
    gst_structure_get_int(cs, "payload", &pt);
    gst_structure_set_name(cs, "application/x-rtp");
    // Only what identifies the format: the offer's rtcp-fb and extmap fields would ask the
    // payloader for what it does not do.
    GstCaps *rtp = gst_caps_new_simple("application/x-rtp", "media", G_TYPE_STRING, "video",
                                       "encoding-name", G_TYPE_STRING, vp8 ? "VP8" : "H264", "clock-rate", G_TYPE_INT, 90000,
                                       "payload", G_TYPE_INT, pt, NULL);
    int main_profile = 0;
    if (!vp8) {
        gst_caps_set_simple(rtp, "packetization-mode", G_TYPE_STRING, "1", NULL);
        const gchar *profile = gst_structure_get_string(cs, "profile-level-id");
        if (profile) gst_caps_set_simple(rtp, "profile-level-id", G_TYPE_STRING, profile, NULL);
        // The best format is Main or High (rank_format prefers them): the shared Main stream
        // plays. Else (42…, or none: RFC 6184's default is Baseline) it must be Constrained Baseline.
        main_profile = profile && (g_ascii_strncasecmp(profile, "4d", 2) == 0 || g_ascii_strncasecmp(profile, "64", 2) == 0);
    }
    gst_caps_unref(codec);
    gint opus_pt = -1;
    if (o->opus_channels <= 0 || vfg_sdp_find_opus(sdp, &opus_pt) < 0) opus_pt = -1;

    vfg_peer *p = g_new0(vfg_peer, 1);
    p->vp8 = vp8;
    p->main_profile = main_profile;
    p->arrivals.created = g_get_monotonic_time();
    gchar *sound = opus_pt < 0 ? g_strdup("")
                               : g_strdup_printf(" appsrc name=asrc ! rtpopuspay name=apay pt=%d ! capsfilter name=artpcaps ! webrtc.", opus_pt);
    gchar *launch = vp8 ? g_strdup_printf(
        "appsrc name=src ! rtpvp8pay name=pay pt=%d mtu=1200 picture-id-mode=15-bit "
        "! capsfilter name=rtpcaps ! webrtcbin name=webrtc bundle-policy=max-bundle latency=0%s", pt, sound)
                        : g_strdup_printf(
        "appsrc name=src ! h264parse config-interval=-1 ! rtph264pay name=pay pt=%d mtu=1200 "
        "aggregate-mode=zero-latency ! capsfilter name=rtpcaps ! webrtcbin name=webrtc bundle-policy=max-bundle latency=0%s",
        pt, sound);
    g_free(sound);
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
    p->webrtc = gst_bin_get_by_name(GST_BIN(p->pipeline), "webrtc");
    // Where the offer has libwebrtc's playout delay (Chromium's does), every packet says "show
    // it at once": Chromium then holds no frame for its jitter estimate and render delay. The
    // extmap in the codec preferences puts it in the answer.
    guint playout = offered_extension(sdp, mline, VFG_PLAYOUT_DELAY_URI);
    if (playout) {
        GstElement *pay = gst_bin_get_by_name(GST_BIN(p->pipeline), "pay");
        vfg_add_playout_delay(pay, playout);
        gst_object_unref(pay);
        gchar *field = g_strdup_printf("extmap-%u", playout);
        gst_caps_set_simple(rtp, field, G_TYPE_STRING, VFG_PLAYOUT_DELAY_URI, NULL);
        g_free(field);
    }
    p->video_ssrc = prefer(p->pipeline, "pay", "rtpcaps", rtp);
    gst_caps_unref(rtp);
    // The picture's and the sound's buffers carry the running times at which they were captured
    // (as RTSP's media): a browser's lip-sync lines them up as they were captured.
    GstElement *appsrc = gst_bin_get_by_name(GST_BIN(p->pipeline), "src");
    if (vp8) vfg_configure_vp8_appsrc(appsrc); else vfg_configure_appsrc(appsrc);
    p->feed = vfg_feed_new(appsrc, 0);
    gst_object_unref(appsrc);
    if (opus_pt >= 0) {
        GstCaps *opus = gst_caps_new_simple("application/x-rtp", "media", G_TYPE_STRING, "audio", "encoding-name", G_TYPE_STRING, "OPUS",
                                            "clock-rate", G_TYPE_INT, 48000, "payload", G_TYPE_INT, opus_pt, NULL);
        prefer(p->pipeline, "apay", "artpcaps", opus);
        gst_caps_unref(opus);
        GstElement *asrc = gst_bin_get_by_name(GST_BIN(p->pipeline), "asrc");
        vfg_configure_opus_appsrc(asrc, o->opus_channels);
        p->audio = vfg_feed_new(asrc, 1);
        gst_object_unref(asrc);
    }
    sync_reports_at_buffer_times(p->webrtc);
    g_signal_connect(p->pipeline, "deep-element-added", G_CALLBACK(limit_retransmissions), NULL);  // made with the answer
    g_signal_connect(p->webrtc, "notify::connection-state", G_CALLBACK(on_connection_state), p->feed);

    char *text = NULL;
    int reason = vfg_webrtc_answer(p->pipeline, p->webrtc, sdp, o, &text, error, error_len);
    if (reason != VFG_PEER_OK) {
        *why = reason;
        vfg_peer_close(p);
        return NULL;
    }
    vfg_watch_arrivals(p->webrtc, &p->arrivals);
    *answer = text;
    *feed = vfg_feed_retain(p->feed);
    if (p->audio) *audio = vfg_feed_retain(p->audio);
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

// webrtcbin's stats: one structure per stat, keyed by its id. The picture's are the
// outbound-rtp of its SSRC (what was sent) and the remote-inbound-rtp of the same SSRC (what
// the viewer's receiver reports say).
static void copy_field(const GstStructure *s, const char *name, char *to, size_t size) {
    const gchar *v = gst_structure_get_string(s, name);
    if (v) g_strlcpy(to, v, size);
}

/// The selected pair's ends: webrtcbin's stats have a local-candidate and a remote-candidate
/// entry for the pair its ICE agent selected, none before.
static void read_candidate(const GstStructure *s, vfg_candidate *c) {
    copy_field(s, "candidate-type", c->type, sizeof c->type);
    copy_field(s, "protocol", c->protocol, sizeof c->protocol);
    copy_field(s, "relay-protocol", c->relay_protocol, sizeof c->relay_protocol);
    copy_field(s, "address", c->address, sizeof c->address);
    gst_structure_get_uint(s, "port", &c->port);
}

static gboolean read_link(GQuark field, const GValue *value, gpointer data) {
    (void)field;
    vfg_link *out = ((void **)data)[0];
    guint want = *(guint *)((void **)data)[1];
    if (!GST_VALUE_HOLDS_STRUCTURE(value)) return TRUE;
    const GstStructure *s = gst_value_get_structure(value);
    GstWebRTCStatsType type = 0;
    guint ssrc = 0;
    if (!gst_structure_get(s, "type", GST_TYPE_WEBRTC_STATS_TYPE, &type, NULL)) return TRUE;
    if (type == GST_WEBRTC_STATS_LOCAL_CANDIDATE) read_candidate(s, &out->pair.local);
    if (type == GST_WEBRTC_STATS_REMOTE_CANDIDATE) read_candidate(s, &out->pair.remote);
    if (!gst_structure_get_uint(s, "ssrc", &ssrc) || ssrc != want) return TRUE;
    if (type == GST_WEBRTC_STATS_OUTBOUND_RTP) {
        guint64 n = 0;
        if (gst_structure_get_uint64(s, "bytes-sent", &n)) out->bytes_sent = n;
        if (gst_structure_get_uint64(s, "packets-sent", &n)) out->packets_sent = n;
    } else if (type == GST_WEBRTC_STATS_REMOTE_INBOUND_RTP) {
        // Set from a receiver report's block: without one the structure has no fraction-lost.
        if (!gst_structure_get_double(s, "fraction-lost", &out->fraction_lost)) return TRUE;
        out->reported = 1;
        gst_structure_get_double(s, "round-trip-time", &out->round_trip);
        gst_structure_get_double(s, "jitter", &out->jitter);
        gint lost32 = 0;
        gint64 lost64 = 0;
        if (gst_structure_get_int64(s, "packets-lost", &lost64)) out->packets_lost = lost64;
        else if (gst_structure_get_int(s, "packets-lost", &lost32)) out->packets_lost = lost32;
    }
    return TRUE;
}

int vfg_peer_link(vfg_peer *p, vfg_link *out) {
    memset(out, 0, sizeof *out);
    if (!p->webrtc || !p->video_ssrc) return -1;
    GstPromise *promise = gst_promise_new();
    g_signal_emit_by_name(p->webrtc, "get-stats", NULL, promise);
    if (gst_promise_wait(promise) != GST_PROMISE_RESULT_REPLIED) {
        gst_promise_unref(promise);
        return -1;
    }
    const GstStructure *stats = gst_promise_get_reply(promise);
    if (stats) {
        void *data[2] = {out, &p->video_ssrc};
        gst_structure_foreach(stats, read_link, data);
    }
    gst_promise_unref(promise);
    return stats ? 0 : -1;
}

int vfg_arrivals_silent_ms(vfg_arrivals *a) {
    gint last = g_atomic_int_get(&a->last);
    return last == 0 ? -1 : (int)((g_get_monotonic_time() - a->created) / 1000) + 1 - last;
}

int vfg_peer_silent_ms(vfg_peer *p) { return vfg_arrivals_silent_ms(&p->arrivals); }

void vfg_peer_close(vfg_peer *p) {
    if (p->webrtc && p->feed) g_signal_handlers_disconnect_by_data(p->webrtc, p->feed);
    if (p->feed) {
        vfg_feed_close(p->feed);
        vfg_feed_release(p->feed);
    }
    if (p->audio) {
        vfg_feed_close(p->audio);
        vfg_feed_release(p->audio);
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

int vfg_peer_codec(vfg_peer *p) { return p->vp8 ? 1 : 0; }

int vfg_peer_accepts_main(vfg_peer *p) { return p->main_profile; }

// webrtcbin 1.22 takes "candidate:…" or "a=candidate:…" and nothing else: an empty string (as
// some stacks signal end-of-candidates) would reach libnice as no candidate at all, so the end
// of a viewer's candidates is kept by the caller, not given here.
void vfg_peer_add_candidate(vfg_peer *p, unsigned mline, const char *candidate) {
    if (p->webrtc && candidate && g_str_has_prefix(candidate, "candidate:")) g_signal_emit_by_name(p->webrtc, "add-ice-candidate", mline, candidate);
}
