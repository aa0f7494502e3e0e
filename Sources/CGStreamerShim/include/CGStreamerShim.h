// The live H.264 transports (issue 27) through GStreamer 1.22: an RTSP server
// (gst-rtsp-server) and WebRTC peers (webrtcbin), each fed the camera's encoded access
// units through an appsrc (h264parse → rtph264pay). GObject's signals, promises and the
// one subclass (the RTSP server's auth check) stay in these C files; Swift sees opaque
// handles, plain callbacks and status codes. GStreamer's headers are not included here.
#ifndef CGSTREAMER_SHIM_H
#define CGSTREAMER_SHIM_H
#include <stddef.h>
#include <stdint.h>

/// Initializes GStreamer once and starts the thread whose GLib main loop runs the RTSP
/// server. Also checks that every element the pipelines use is installed. 0, or -1 with
/// `error` filled.
int vfg_start(char *error, size_t error_len);

/// An appsrc taking Annex B access units. Reference-counted: whoever is handed one owns a
/// reference and releases it when it will push no more.
typedef struct vfg_feed vfg_feed;

/// Pushes one access unit (copied), captured at `pts90k` (90 kHz, the encoder's). 1 when the
/// pipeline asked for a keyframe since the last push (an RTCP PLI/FIR, a new RTSP client, a
/// unit lost before the pipeline played), 0 otherwise, -1 once the feed is closed.
int vfg_feed_push(vfg_feed *feed, const uint8_t *bytes, size_t length, int64_t pts90k, int keyframe);
/// Whether the pipeline behind the feed has gone (the RTSP media was unprepared, the peer closed).
int vfg_feed_closed(vfg_feed *feed);
void vfg_feed_release(vfg_feed *feed);

// MARK: RTSP

typedef struct vfg_rtsp vfg_rtsp;

typedef struct {
    void *context;
    /// Every request: 0 lets it through; otherwise the RTSP status to answer (401, 403,
    /// 429), with `challenge` holding the WWW-Authenticate values, one per line.
    int (*authorize)(void *context, const char *method, const char *uri, const char *authorization,
                     const char *address, char *challenge, size_t challenge_len);
    /// Before DESCRIBE of `path` ("/rear"): 0, or the status to answer (404, 503).
    int (*describe)(void *context, const char *path);
    /// The shared media of `path` was built: push its access units into `feed` (a
    /// reference the callee owns) until the feed is closed.
    void (*media_started)(void *context, const char *path, vfg_feed *feed);
} vfg_rtsp_callbacks;

/// Listens on `address`:`port` ("0": any free port) with `max_threads` client threads.
/// `with_auth` = 0 lets every request through without calling `authorize`.
vfg_rtsp *vfg_rtsp_start(const char *address, const char *port, int max_threads, int with_auth,
                         vfg_rtsp_callbacks callbacks, char *error, size_t error_len);
int vfg_rtsp_port(vfg_rtsp *server);
/// Serves `path` ("/rear") as one shared H.264 media. 0, or -1 when it is mounted already.
int vfg_rtsp_mount(vfg_rtsp *server, const char *path);
/// Clients connected now (for /metrics and the leak test).
unsigned vfg_rtsp_clients(vfg_rtsp *server);
/// Closes the socket, ends every client's session and frees the server.
void vfg_rtsp_stop(vfg_rtsp *server);

// MARK: WebRTC

typedef struct vfg_peer vfg_peer;

typedef struct {
    /// The client's SDP offer.
    const char *offer;
    /// "stun://host:port", or NULL.
    const char *stun_server;
    /// "turn(s)://user:password@host:port" each.
    const char *const *turn_servers;
    size_t turn_count;
    /// Addresses to offer host candidates on; none: every interface.
    const char *const *addresses;
    size_t address_count;
    /// Longest wait for the answer and ICE gathering.
    unsigned timeout_ms;
} vfg_peer_options;

/// Why an answer could not be made; the message says more.
enum {
    VFG_PEER_OK = 0,
    VFG_PEER_MALFORMED_OFFER = 1,
    VFG_PEER_NO_H264 = 2,
    VFG_PEER_FAILED = 3,
};

/// A sending peer for `options->offer`: the answer (all candidates in it, as WHEP has no
/// trickle here; free with vfg_free) and the feed to push into (a reference the caller owns).
vfg_peer *vfg_peer_answer(const vfg_peer_options *options, char **answer, vfg_feed **feed, int *why,
                          char *error, size_t error_len);

/// The peer connection's state, as RTCPeerConnectionState: 0 new, 1 connecting,
/// 2 connected, 3 disconnected, 4 failed, 5 closed; 4 also when the pipeline posted an error.
int vfg_peer_state(vfg_peer *peer);
/// Milliseconds since the last packet from the peer (RTCP, DTLS), -1 before the first.
int vfg_peer_silent_ms(vfg_peer *peer);
/// Stops the pipeline and frees the peer; its feed is closed.
void vfg_peer_close(vfg_peer *peer);

/// Loads what a first peer would (webrtcbin, libnice, DTLS with the certificate every peer
/// shares, SRTP), so the first viewer does not wait for it. Call it off the request threads.
void vfg_webrtc_warm_up(void);

void vfg_free(void *pointer);

#endif
