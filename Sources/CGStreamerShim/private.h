// Shared between the shim's C files; not part of the API Swift sees.
#ifndef CGSTREAMER_SHIM_PRIVATE_H
#define CGSTREAMER_SHIM_PRIVATE_H
#ifndef GST_USE_UNSTABLE_API
#define GST_USE_UNSTABLE_API  // webrtcbin's library says its API may change
#endif
#include <gst/gst.h>
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>
#include "CGStreamerShim.h"

/// rtsp.c's debug category (GST_DEBUG=vfgrtsp:5): a media's life and its clients' requests.
GST_DEBUG_CATEGORY_EXTERN(vfg_rtsp_debug);
/// The context the RTSP server is attached to (run by vfg_start's thread).
GMainContext *vfg_main_context(void);
/// A feed on `appsrc` (one reference, the caller's), its units stamped with the running time
/// at which they were captured; `audio`: packets that each decode alone.
vfg_feed *vfg_feed_new(GstElement *appsrc, int audio);
vfg_feed *vfg_feed_retain(vfg_feed *feed);
/// RTSP's H.264: the first IDR after a start goes after the picture before it (runtime.c says why).
void vfg_feed_lead_in(vfg_feed *feed);
/// The pipeline is going: later pushes return -1.
void vfg_feed_close(vfg_feed *feed);
/// The next push answers 1: the pipeline wants an IDR (it could not use the units before).
void vfg_feed_want_keyframe(vfg_feed *feed);
/// Caps, liveness and the bounded queue every transport's appsrc has.
void vfg_configure_appsrc(GstElement *appsrc);
/// The same for VP8 frames (one a buffer).
void vfg_configure_vp8_appsrc(GstElement *appsrc);
/// The same for JPEG pictures (one a buffer).
void vfg_configure_jpeg_appsrc(GstElement *appsrc);
/// The same for an AAC appsrc (raw AAC frames, `aac`'s AudioSpecificConfig as codec_data).
void vfg_configure_aac_appsrc(GstElement *appsrc, const vfg_aac *aac);
/// The same for an Opus appsrc (one Opus packet a buffer, 48 kHz, `channels`).
void vfg_configure_opus_appsrc(GstElement *appsrc, int channels);
/// webrtc.c's offer/answer, shared by a sending peer and a talker: ICE from `o`, `pipeline`
/// started, `sdp` (taken) answered on `webrtc` with every candidate gathered by the deadline.
/// VFG_PEER_OK, or the reason with `error`.
int vfg_webrtc_answer(GstElement *pipeline, GstElement *webrtc, GstSDPMessage *sdp, const vfg_peer_options *o,
                      char **answer, char *error, size_t error_len);
/// When a WebRTC peer's last packet arrived (ms after `created`, plus one; 0 before one).
typedef struct {
    gint64 created;  // g_get_monotonic_time
    gint last;       // atomic: 24 days of a peer fit
} vfg_arrivals;
/// Probes the nicesrc elements of `webrtc`: each packet from the peer updates `arrivals`.
void vfg_watch_arrivals(GstElement *webrtc, vfg_arrivals *arrivals);
/// Milliseconds since the last arrival, -1 before the first.
int vfg_arrivals_silent_ms(vfg_arrivals *arrivals);
/// The offer's first audio m-line, if it offers Opus at 48 kHz: its index, and the payload
/// type in `pt` (else -1).
int vfg_sdp_find_opus(const GstSDPMessage *sdp, gint *pt);
/// libwebrtc's playout-delay header extension: a receiver that understands it shows each frame
/// as soon as it is decoded.
#define VFG_PLAYOUT_DELAY_URI "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"
/// Adds it to `payloader` (an RTP payloader), written into every packet under `id`.
void vfg_add_playout_delay(GstElement *payloader, guint id);
/// Emits `signal` (with `description`, or none) on `webrtc` and waits for its promise.
GstPromise *vfg_emit_and_wait(GstElement *webrtc, const char *signal, GstWebRTCSessionDescription *description);
#endif
