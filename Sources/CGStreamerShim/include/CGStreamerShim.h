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

/// Pushes one access unit or sound packet (copied), captured at `capture_ns` (nanoseconds of
/// capture time: the feeds of one media share its mapping to the pipeline's time, so picture
/// and sound keep their offset). 1 when the pipeline asked for a keyframe since the last push
/// (an RTCP PLI/FIR, a new RTSP client, a unit lost before the pipeline played), 0
/// otherwise, -1 once the feed is closed. A unit not after the last one is dropped.
int vfg_feed_push(vfg_feed *feed, const uint8_t *bytes, size_t length, int64_t capture_ns, int keyframe);
/// Whether the pipeline behind the feed has gone (the RTSP media was unprepared, the peer closed).
int vfg_feed_closed(vfg_feed *feed);
void vfg_feed_release(vfg_feed *feed);

/// An AAC-LC stream's format: its rate, channels and AudioSpecificConfig.
typedef struct {
    int rate;
    int channels;
    uint8_t config[16];
    size_t config_length;
} vfg_aac;

// MARK: RTSP

typedef struct vfg_rtsp vfg_rtsp;

typedef struct {
    void *context;
    /// Every request: 0 lets it through; otherwise the RTSP status to answer (401, 403,
    /// 429), with `challenge` holding the WWW-Authenticate values, one per line. `talk`: the
    /// request requires ONVIF's backchannel (the client would talk).
    int (*authorize)(void *context, const char *method, const char *uri, const char *authorization,
                     const char *address, int talk, char *challenge, size_t challenge_len);
    /// Before DESCRIBE of `path` ("/rear"): 0, or the status to answer (404, 503). With 0,
    /// `aac->rate` > 0 gives a media built from now on a second stream, AAC (MPEG4-GENERIC).
    int (*describe)(void *context, const char *path, vfg_aac *aac);
    /// The shared media of `path` was built: push its access units into `video` and, when
    /// it has sound, its AAC packets into `audio` (NULL otherwise) — references the callee
    /// owns — until the feeds are closed.
    void (*media_started)(void *context, const char *path, vfg_feed *video, vfg_feed *audio);
    /// A DESCRIBE of a talking mount's `path` that asks for ONVIF's audio backchannel
    /// (`Require: www.onvif.org/ver20/backchannel`): 0 with `*talk` set — the speaker is the
    /// caller's until `talk_end(talk)` —, or the status to answer (503: someone talks already).
    int (*talk_begin)(void *context, const char *path, void **talk);
    /// The talker's voice, decoded to 48 kHz mono s16, on its media's streaming thread.
    void (*talk_sound)(void *talk, const int16_t *samples, size_t count);
    /// The talk is over — its media gone (TEARDOWN, the client left, the server stopped), or the
    /// DESCRIBE that began it led to no media; once, and nothing more is said of `talk` after.
    void (*talk_end)(void *talk);
} vfg_rtsp_callbacks;

/// Listens on `address`:`port` ("0": any free port) with `max_threads` client threads.
/// `with_auth` = 0 lets every request through without calling `authorize`.
vfg_rtsp *vfg_rtsp_start(const char *address, const char *port, int max_threads, int with_auth,
                         vfg_rtsp_callbacks callbacks, char *error, size_t error_len);
int vfg_rtsp_port(vfg_rtsp *server);
/// Serves `path` ("/rear") as one shared media: H.264, and AAC when `describe` gives it. With
/// `talk`, a client may also send its voice (ONVIF's backchannel: G.711 µ-law, 8 kHz) in a
/// media of its own, to `talk_begin`'s speaker. 0, or -1 when it is mounted already.
int vfg_rtsp_mount(vfg_rtsp *server, const char *path, int talk);
/// Serves `path` as one shared media of JPEG pictures (RFC 2435's RTP/JPEG, ONVIF Profile S's
/// mandatory stream): each push one whole baseline JPEG, 4:2:0 or 4:2:2, at most 2040 px a side.
int vfg_rtsp_mount_jpeg(vfg_rtsp *server, const char *path);
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
    /// The local ports ICE may take (UDP, and passive ICE-TCP), first…last; 0, 0: any.
    unsigned min_port, max_port;
    /// Longest wait for the answer and ICE gathering.
    unsigned timeout_ms;
    /// The camera's sound as Opus (48 kHz, this many channels), or 0 for none: an offer that
    /// receives Opus then gets a second, audio, stream.
    int opus_channels;
} vfg_peer_options;

/// Why an answer could not be made; the message says more.
enum {
    VFG_PEER_OK = 0,
    VFG_PEER_MALFORMED_OFFER = 1,
    VFG_PEER_NO_H264 = 2,
    VFG_PEER_FAILED = 3,
    /// A talk offer that sends no Opus.
    VFG_PEER_NO_OPUS = 4,
};

/// A sending peer for `options->offer`: the answer (all candidates in it, as WHEP has no
/// trickle here; free with vfg_free) and the feeds to push into (references the caller owns):
/// the picture's, and the sound's (Opus packets) when the offer takes Opus and
/// `opus_channels` is set, else NULL. Both feeds share one capture-time clock.
vfg_peer *vfg_peer_answer(const vfg_peer_options *options, char **answer, vfg_feed **feed, vfg_feed **audio,
                          int *why, char *error, size_t error_len);
/// What the peer's picture is sent as: 0 H.264, 1 VP8 (its offer had no H.264).
int vfg_peer_codec(vfg_peer *peer);
/// 1 when its offer takes H.264's Main profile (Main or High offered), 0 when Constrained Baseline alone.
int vfg_peer_accepts_main(vfg_peer *peer);
/// Gives the peer's ICE agent a candidate the viewer trickled ("candidate:…") for media line
/// `mline` (webrtcbin queues it until both descriptions are set).
void vfg_peer_add_candidate(vfg_peer *peer, unsigned mline, const char *candidate);

/// One end of the ICE pair the peer selected, as webrtcbin's stats have it (its
/// local-candidate and remote-candidate entries, there once a pair is selected).
typedef struct {
    /// "host", "srflx", "prflx" or "relay"; empty before a pair is selected.
    char type[8];
    /// "udp" or "tcp": how this end's packets go (a relayed candidate's own is UDP).
    char protocol[4];
    /// A relayed candidate's way to its TURN server ("udp", "tcp", "tls"; libnice may say
    /// "none"); empty otherwise.
    char relay_protocol[8];
    char address[64];
    unsigned port;
} vfg_candidate;

typedef struct {
    vfg_candidate local, remote;
} vfg_pair;

/// The peer connection's state, as RTCPeerConnectionState: 0 new, 1 connecting,
/// 2 connected, 3 disconnected, 4 failed, 5 closed; 4 also when the pipeline posted an error.
int vfg_peer_state(vfg_peer *peer);
/// Milliseconds since the last packet from the peer (RTCP, DTLS), -1 before the first.
int vfg_peer_silent_ms(vfg_peer *peer);
/// What the viewer's receiver reports (RTCP RR, RFC 3550) say of the picture's path, and what
/// was sent on it: webrtcbin's stats for the picture's SSRC.
typedef struct {
    /// A receiver report has come (the fields below are its; zero before).
    int reported;
    /// The last report's fraction of packets lost since the one before (0…1).
    double fraction_lost;
    /// Round-trip time from the last report's LSR/DLSR, seconds.
    double round_trip;
    /// Interarrival jitter, seconds.
    double jitter;
    /// Packets lost since the start, as the viewer counts them.
    long long packets_lost;
    /// RTP bytes and packets of the picture sent since the start.
    unsigned long long bytes_sent, packets_sent;
    /// The ICE pair selected (its ends' types empty before one is).
    vfg_pair pair;
} vfg_link;

/// The picture's link as webrtcbin's stats say now (waits for webrtcbin's reply; 0, or -1
/// when it gave none).
int vfg_peer_link(vfg_peer *peer, vfg_link *out);
/// Stops the pipeline and frees the peer; its feed is closed.
void vfg_peer_close(vfg_peer *peer);

// MARK: Talk-back

typedef struct vfg_talk vfg_talk;
/// Decoded sound from a talker: `frames` frames of interleaved s16 at `rate` and `channels`.
typedef void (*vfg_talk_sound)(void *context, const int16_t *samples, size_t frames, int rate, int channels);

/// A receiving peer for a WHIP offer whose first audio section sends Opus: the answer (as
/// vfg_peer_answer's) and the talker's voice, decoded (opusdec) to 48 kHz mono s16 and handed
/// to `sound` on the pipeline's thread until vfg_talk_close. NULL with `why` (VFG_PEER_NO_OPUS
/// for an offer without Opus to send) and `error`.
vfg_talk *vfg_talk_answer(const vfg_peer_options *options, vfg_talk_sound sound, void *context, char **answer,
                          int *why, char *error, size_t error_len);
/// As vfg_peer_state.
int vfg_talk_state(vfg_talk *talk);
/// As vfg_peer_silent_ms: a talker sends RTP all along, so a few seconds is a talker gone.
int vfg_talk_silent_ms(vfg_talk *talk);
/// Stops the pipeline (`sound` is not called after this returns) and frees the talk.
void vfg_talk_close(vfg_talk *talk);

/// Loads what a first peer would (webrtcbin, libnice, DTLS with the certificate every peer
/// shares, SRTP), so the first viewer does not wait for it. Call it off the request threads.
void vfg_webrtc_warm_up(void);

void vfg_free(void *pointer);

#endif
