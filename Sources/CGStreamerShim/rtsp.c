// The RTSP server: gst-rtsp-server with one shared media per mount (every client of a
// camera shares one appsrc → h264parse → rtph264pay pipeline, and so the camera's one
// encode; a JPEG mount's appsrc → jpegparse → rtpjpegpay the preview's pictures), RTP over UDP or interleaved in the TCP connection as the client asks. Who may
// play is decided by the application for every request (the one GstRTSPAuth subclass below
// overrides `check`), with the same users, roles and Digest/Basic answers as HTTP.
// The server and its factories are gst-rtsp-server's ONVIF ones: a client that requires
// ONVIF's backchannel gets a media of its own (not shared: it also receives), whose
// G.711 stream from the client is decoded onto the application's speaker.
#include "private.h"
#include <gst/app/gstappsink.h>
#include <gst/base/gstbasesink.h>
#include <gst/rtsp-server/rtsp-onvif-media-factory.h>
#include <gst/rtsp-server/rtsp-onvif-media.h>
#include <gst/rtsp-server/rtsp-onvif-server.h>
#include <gst/rtsp-server/rtsp-server.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define GST_CAT_DEFAULT vfg_rtsp_debug

struct vfg_rtsp {
    GstRTSPServer *server;
    guint source;
    vfg_rtsp_callbacks callbacks;
};

// MARK: The auth check

// Whether the request requires ONVIF's backchannel (the client would talk, not only watch).
static gboolean wants_backchannel(GstRTSPContext *ctx) {
    for (gint i = 0;; i++) {
        gchar *value = NULL;
        if (gst_rtsp_message_get_header(ctx->request, GST_RTSP_HDR_REQUIRE, &value, i) != GST_RTSP_OK) return FALSE;
        if (value && strstr(value, GST_RTSP_ONVIF_BACKCHANNEL_REQUIREMENT)) return TRUE;
    }
}


typedef struct {
    GstRTSPAuth parent;
    vfg_rtsp *owner;
} VfgAuth;
typedef struct {
    GstRTSPAuthClass parent_class;
} VfgAuthClass;
G_DEFINE_TYPE(VfgAuth, vfg_auth, GST_TYPE_RTSP_AUTH)

static gboolean vfg_auth_check(GstRTSPAuth *auth, GstRTSPContext *ctx, const gchar *check) {
    // Only the URL check asks the application; the factory checks would ask for tokens and
    // roles this server keeps in its own accounts, decided already.
    if (!g_str_equal(check, GST_RTSP_AUTH_CHECK_URL) || !ctx->request) return TRUE;
    vfg_rtsp *owner = ((VfgAuth *)auth)->owner;
    GstRTSPMethod method = GST_RTSP_INVALID;
    const gchar *uri = NULL;
    gst_rtsp_message_parse_request(ctx->request, &method, &uri, NULL);
    gchar *authorization = NULL;
    gst_rtsp_message_get_header(ctx->request, GST_RTSP_HDR_AUTHORIZATION, &authorization, 0);
    GstRTSPConnection *connection = gst_rtsp_client_get_connection(ctx->client);
    const gchar *address = connection ? gst_rtsp_connection_get_ip(connection) : "";
    char challenge[1024] = "";
    int status = owner->callbacks.authorize(owner->callbacks.context, gst_rtsp_method_as_text(method), uri ? uri : "",
                                            authorization, address ? address : "", wants_backchannel(ctx),
                                            challenge, sizeof challenge);
    if (status == 0) return TRUE;
    gst_rtsp_message_init_response(ctx->response, (GstRTSPStatusCode)status,
                                   gst_rtsp_status_as_text((GstRTSPStatusCode)status), ctx->request);
    for (char *line = challenge, *end; *line; line = end) {
        end = strchr(line, '\n');
        if (end) *end++ = 0; else end = line + strlen(line);
        if (*line) gst_rtsp_message_add_header(ctx->response, GST_RTSP_HDR_WWW_AUTHENTICATE, line);
    }
    gst_rtsp_client_send_message(ctx->client, ctx->session, ctx->response);
    return FALSE;  // the answer is sent
}

static void vfg_auth_class_init(VfgAuthClass *klass) { GST_RTSP_AUTH_CLASS(klass)->check = vfg_auth_check; }
static void vfg_auth_init(VfgAuth *auth) { (void)auth; }

// MARK: Talk-back (ONVIF's backchannel)

// One talk: what the application's talk_begin gave, ended once. Its references: the client
// that DESCRIBEd it until a media takes it, then that media's appsink and its "unprepared"
// handler; the last one going ends it too (a DESCRIBE that built no media).
typedef struct {
    gint references;
    gint ended;
    void *talk;
    void (*sound)(void *talk, const int16_t *samples, size_t count);
    void (*end)(void *talk);
} Talk;

static Talk *talk_retain(Talk *t) {
    g_atomic_int_inc(&t->references);
    return t;
}

static void talk_end(Talk *t) {
    if (g_atomic_int_compare_and_exchange(&t->ended, 0, 1)) t->end(t->talk);
}

static void talk_release(gpointer data) {
    Talk *t = data;
    if (!g_atomic_int_dec_and_test(&t->references)) return;
    talk_end(t);
    g_free(t);
}

static void talk_closure_free(gpointer data, GClosure *closure) {
    (void)closure;
    talk_release(data);
}

// A media is unprepared after its pipeline is stopped (no sample comes after): the speaker is free.
static void on_talk_over(GstRTSPMedia *media, gpointer data) {
    GST_DEBUG("media %p: the talk ends", (void *)media);
    talk_end(data);
}

static GstFlowReturn on_voice(GstAppSink *sink, gpointer data) {
    Talk *t = data;
    GstSample *sample = gst_app_sink_pull_sample(sink);
    if (!sample) return GST_FLOW_EOS;
    GstBuffer *buffer = gst_sample_get_buffer(sample);
    GstMapInfo map;
    if (buffer && !g_atomic_int_get(&t->ended) && gst_buffer_map(buffer, &map, GST_MAP_READ)) {
        t->sound(t->talk, (const int16_t *)map.data, map.size / sizeof(int16_t));
        gst_buffer_unmap(buffer, &map);
    }
    gst_sample_unref(sample);
    return GST_FLOW_OK;
}


// What a talker sends: G.711 µ-law at 8 kHz, what every ONVIF device must take on its audio
// output (the ONVIF Streaming Specification) and what NVRs and go2rtc send. The element named
// depay_backchannel is what gst-rtsp-server asks for the caps it offers (the SDP's a=sendonly
// section); the sink must not wait to preroll (async=false), or the media never prepares.
static const char *const talk_launch =
    "( capsfilter name=depay_backchannel caps=\"application/x-rtp,media=audio,payload=0,clock-rate=8000,encoding-name=PCMU\" "
    "! rtppcmudepay ! mulawdec ! audioconvert ! audioresample "
    "! audio/x-raw,format=S16LE,rate=48000,channels=1,layout=interleaved "
    "! appsink name=voice async=false sync=false max-buffers=50 drop=true )";

// MARK: Media

// A mount's factory and what its next media is made of: the sound the last DESCRIBE found
// (written on the client threads, read when a media is built), and its shared media while
// one exists (weakly: the factory owns it) with a condition signalled when it is gone.
typedef struct {
    vfg_rtsp *owner;
    gchar *path;
    gint references;
    pthread_mutex_t lock;
    pthread_cond_t gone;
    GWeakRef media;
    vfg_aac aac;  // rate 0: no sound
    gboolean jpeg;  // RTP/JPEG pictures, never sound
    gboolean talk;  // a client may talk back (ONVIF's backchannel)
} Mount;

static Mount *mount_retain(Mount *m) {
    g_atomic_int_inc(&m->references);
    return m;
}

static void mount_release(Mount *m) {
    if (!g_atomic_int_dec_and_test(&m->references)) return;
    g_weak_ref_clear(&m->media);
    pthread_cond_destroy(&m->gone);
    pthread_mutex_destroy(&m->lock);
    g_free(m->path);
    g_free(m);
}

static void mount_free(gpointer data, GClosure *closure) {
    (void)closure;
    mount_release(data);
}

// The encoder puts SPS and PPS before every IDR (a client joins at any keyframe); h264parse
// adds them only where missing, and the payloader adds none of its own. The sound's raw AAC
// frames go out as RFC 3640's AAC-hbr (MPEG4-GENERIC), what NVRs and ffmpeg expect of a camera.
static const char *const video_launch = "( appsrc name=src ! h264parse config-interval=-1 "
                                        "! rtph264pay name=pay0 pt=96 aggregate-mode=zero-latency )";
static const char *const av_launch = "( appsrc name=src ! h264parse config-interval=-1 "
                                     "! rtph264pay name=pay0 pt=96 aggregate-mode=zero-latency "
                                     "appsrc name=asrc ! rtpmp4gpay name=pay1 pt=97 )";

// RFC 2435's payload carries the JPEG's scan and quantization tables. The payloader takes the
// picture's size from its caps, which jpegparse reads from each picture's own header (and
// renews when a format change resizes it): a baseline JPEG of the preview, one a buffer.
static const char *const jpeg_launch = "( appsrc name=src ! jpegparse ! rtpjpegpay name=pay0 pt=26 )";

static void on_new_state(GstRTSPMedia *media, gint state, gpointer data) {
    (void)data;
    GST_DEBUG("media %p: %s (status %d)", (void *)media, gst_element_state_get_name((GstState)state), gst_rtsp_media_get_status(media));
}

static void on_unprepared(GstRTSPMedia *media, gpointer data) {
    GST_DEBUG("media %p unprepared", (void *)media);
    vfg_feed_close(data);
}

// After every other "unprepared" handler — the factory's, which takes the media out of its
// cache — the mount forgets it and wakes a DESCRIBE waiting for it to be gone.
static void on_media_gone(GstRTSPMedia *media, gpointer data) {
    Mount *mount = data;
    pthread_mutex_lock(&mount->lock);
    GstRTSPMedia *current = g_weak_ref_get(&mount->media);
    if (current == media) g_weak_ref_set(&mount->media, NULL);
    if (current) g_object_unref(current);
    pthread_cond_broadcast(&mount->gone);
    pthread_mutex_unlock(&mount->lock);
}


// Lets a media go after the DESCRIBE that held it has long been answered.
static gboolean release_hold(gpointer data) {
    GST_DEBUG("media %p: the DESCRIBE's hold ends", data);
    gst_rtsp_media_unprepare(data);
    return G_SOURCE_REMOVE;
}

// A shared media whose last client just left is unpreparing for a few milliseconds, and
// still in the factory's cache: a DESCRIBE then would be given it, fail to prepare it and be
// answered 503 (a client reconnecting at once got 503 six times in seven). So before a
// DESCRIBE: a media unpreparing is waited for (two seconds at most) until it is gone — the
// DESCRIBE then makes a new one; a prepared one is held (prepared once more, let go two
// seconds later), so a TEARDOWN racing this DESCRIBE cannot start taking it down before the
// new client has prepared it too. (Tried before and left out when a held media, paused with
// no client and played again, got nothing through: its feeds stamped the first units against
// the stale base time — fixed in runtime.c's running_time.)
static void hold_or_wait(Mount *mount) {
    for (int step = 0; step < 200; step++) {  // 200 × 10 ms
        pthread_mutex_lock(&mount->lock);
        GstRTSPMedia *media = g_weak_ref_get(&mount->media);
        pthread_mutex_unlock(&mount->lock);
        if (!media) return;
        GstRTSPMediaStatus status = gst_rtsp_media_get_status(media);
        if (status == GST_RTSP_MEDIA_STATUS_PREPARED) {
            // Outside the mount's lock: preparing takes the media's, under which it signals.
            // A prepared media stops the thread it is given at once (it has its own); one
            // taken down meanwhile refuses it (and the thread is stopped here).
            GstRTSPThread *thread = gst_rtsp_thread_new(GST_RTSP_THREAD_TYPE_MEDIA);
            if (thread && gst_rtsp_media_prepare(media, thread)) {
                GST_DEBUG("media %p: held for a DESCRIBE", (void *)media);
                GSource *later = g_timeout_source_new(2000);
                g_source_set_callback(later, release_hold, media, g_object_unref);  // takes the reference
                g_source_attach(later, vfg_main_context());
                g_source_unref(later);
                return;
            }
            if (thread) gst_rtsp_thread_stop(thread);
            status = gst_rtsp_media_get_status(media);  // it was taken down meanwhile
        }
        g_object_unref(media);
        if (status != GST_RTSP_MEDIA_STATUS_UNPREPARING && status != GST_RTSP_MEDIA_STATUS_UNPREPARED) return;
        // Woken when a media goes; the status is read again every 10 ms all the same (a
        // media's unprepare starts without a word to this mount).
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 10 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
        pthread_mutex_lock(&mount->lock);
        GstRTSPMedia *still = g_weak_ref_get(&mount->media);
        if (still) {
            pthread_cond_timedwait(&mount->gone, &mount->lock, &until);
            g_object_unref(still);
        }
        pthread_mutex_unlock(&mount->lock);
    }
}

// rtpbin's sender reports map an RTP time to the wall clock at the moment a packet is *sent*
// by default: the picture (sent after its encode) and the sound (sent after an AAC frame and
// the encoder's delay, ~43 ms) would then be out of step by the difference of their latencies.
// Mapped at the buffers' own times — their capture times — a client lines them up as captured.
//
// And what a stream sends while no client set it up is dropped at rtpbin instead of failing: a
// client that sets up the picture alone (an NVR, a detector) left the sound's send pad of
// rtpbin unlinked, its appsrc stopped "not-linked", and the shared media went to error — every
// later DESCRIBE of the path was 503 until its last client left.
static GstPadProbeReturn drop_unless_linked(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)info; (void)data;
    return gst_pad_is_linked(pad) ? GST_PAD_PROBE_OK : GST_PAD_PROBE_DROP;
}

static void on_rtpbin_pad(GstElement *rtpbin, GstPad *pad, gpointer data) {
    (void)rtpbin; (void)data;
    if (GST_PAD_DIRECTION(pad) != GST_PAD_SRC || !g_str_has_prefix(GST_PAD_NAME(pad), "send_rt")) return;
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, drop_unless_linked, NULL, NULL);
}

static void on_element_added(GstBin *bin, GstBin *sub, GstElement *element, gpointer data) {
    (void)bin; (void)sub; (void)data;
    // The media's sinks (multiudpsink, and appsink for interleaved TCP) send each packet as it
    // comes, without waiting for its running time on the clock: the units are live already,
    // stamped with their capture times. A sink that synced held the appsrc's streaming thread
    // in gst_base_sink_wait_clock — seen stalled for the whole of a client's 30 s under
    // AddressSanitizer (a stack dump), every client of the media getting nothing.
    if (GST_IS_BASE_SINK(element)) {
        g_object_set(element, "sync", FALSE, NULL);
        return;
    }
    GstElementFactory *f = gst_element_get_factory(element);
    if (!f || !g_str_equal(GST_OBJECT_NAME(f), "rtpbin")) return;
    g_object_set(element, "rtcp-sync-send-time", FALSE, NULL);
    g_signal_connect(element, "pad-added", G_CALLBACK(on_rtpbin_pad), NULL);
}

static void on_media_configure(GstRTSPMediaFactory *factory, GstRTSPMedia *media, gpointer data) {
    (void)factory;
    Mount *mount = data;
    GstElement *bin = gst_rtsp_media_get_element(media);
    GstObject *pipeline = gst_object_get_parent(GST_OBJECT(bin));  // the media's pipeline: rtpbin joins it when prepared
    if (pipeline) {
        g_signal_connect(pipeline, "deep-element-added", G_CALLBACK(on_element_added), NULL);
        gst_object_unref(pipeline);
    }
    GstElement *appsrc = gst_bin_get_by_name_recurse_up(GST_BIN(bin), "src");
    GstElement *asrc = gst_bin_get_by_name_recurse_up(GST_BIN(bin), "asrc");
    GstElement *voice = gst_bin_get_by_name(GST_BIN(bin), "voice");  // in the backchannel's bin
    gst_object_unref(bin);
    if (voice) {
        // The talk its DESCRIBE began (this is that request's thread) is the media's now.
        GstRTSPContext *ctx = gst_rtsp_context_get_current();
        Talk *talk = ctx && ctx->client ? g_object_steal_data(G_OBJECT(ctx->client), "vfg-talk") : NULL;
        if (talk) {
            GstAppSinkCallbacks callbacks = {0};
            callbacks.new_sample = on_voice;
            gst_app_sink_set_callbacks(GST_APP_SINK(voice), &callbacks, talk_retain(talk), talk_release);
            g_signal_connect_data(media, "unprepared", G_CALLBACK(on_talk_over), talk, talk_closure_free, 0);
        }
        gst_object_unref(voice);
    }
    if (!appsrc) {
        if (asrc) gst_object_unref(asrc);
        return;
    }
    if (mount->jpeg) vfg_configure_jpeg_appsrc(appsrc);
    else vfg_configure_appsrc(appsrc);
    vfg_feed *feed = vfg_feed_new(appsrc, 0);
    if (!mount->jpeg) vfg_feed_lead_in(feed);
    gst_object_unref(appsrc);
    vfg_feed *audio = NULL;
    if (asrc) {
        pthread_mutex_lock(&mount->lock);
        vfg_aac aac = mount->aac;
        pthread_mutex_unlock(&mount->lock);
        vfg_configure_aac_appsrc(asrc, &aac);
        audio = vfg_feed_new(asrc, 1);
        gst_object_unref(asrc);
        g_signal_connect_data(media, "unprepared", G_CALLBACK(on_unprepared), audio, (GClosureNotify)(void (*)(void))vfg_feed_release, 0);
    }
    if (!voice) {  // a talker's media is its own: the mount's shared one stays what it was
        pthread_mutex_lock(&mount->lock);
        g_weak_ref_set(&mount->media, media);
        pthread_mutex_unlock(&mount->lock);
        g_signal_connect_data(media, "unprepared", G_CALLBACK(on_media_gone), mount_retain(mount), mount_free, G_CONNECT_AFTER);
    }
    // The media's reference goes when it is unprepared (its last client left, or the server stopped).
    g_signal_connect_data(media, "unprepared", G_CALLBACK(on_unprepared), feed, (GClosureNotify)(void (*)(void))vfg_feed_release, 0);
    g_signal_connect(media, "new-state", G_CALLBACK(on_new_state), NULL);
    GST_DEBUG("media %p of %s built%s", (void *)media, mount->path, audio ? " with sound" : "");
    g_object_set_data_full(G_OBJECT(media), "vfg-feed", vfg_feed_retain(feed), (GDestroyNotify)vfg_feed_release);
    mount->owner->callbacks.media_started(mount->owner->callbacks.context, mount->path, vfg_feed_retain(feed),
                                          audio ? vfg_feed_retain(audio) : NULL);
}

static GstRTSPStatusCode on_pre_describe(GstRTSPClient *client, GstRTSPContext *ctx, gpointer data) {
    vfg_rtsp *owner = data;
    const char *path = ctx->uri && ctx->uri->abspath ? ctx->uri->abspath : "/";
    // A talk this client began with an earlier DESCRIBE and never played ends here.
    g_object_set_data(G_OBJECT(client), "vfg-talk", NULL);
    vfg_aac aac = {0};
    int status = owner->callbacks.describe(owner->callbacks.context, path, &aac);
    if (status != 0) return (GstRTSPStatusCode)status;
    // What a media built for this DESCRIBE is made of (a shared media already playing stays
    // as it was built: its clients see the same SDP).
    GstRTSPMountPoints *mounts = gst_rtsp_server_get_mount_points(owner->server);
    GstRTSPMediaFactory *factory = gst_rtsp_mount_points_match(mounts, path, NULL);
    g_object_unref(mounts);
    if (!factory) return GST_RTSP_STS_OK;
    Mount *mount = g_object_get_data(G_OBJECT(factory), "vfg-mount");
    // A talker gets a media of its own (the ONVIF factory shares none that receives): the
    // speaker is claimed now, so a second talker is answered before anything is built. (A
    // mount that cannot talk is answered 551 by the ONVIF client's requirement check.)
    gboolean talker = mount && mount->talk && wants_backchannel(ctx);
    if (talker) {
        void *talk = NULL;
        status = owner->callbacks.talk_begin(owner->callbacks.context, path, &talk);
        if (status != 0) {
            g_object_unref(factory);
            return (GstRTSPStatusCode)status;
        }
        Talk *t = g_new0(Talk, 1);
        t->references = 1;
        t->talk = talk;
        t->sound = owner->callbacks.talk_sound;
        t->end = owner->callbacks.talk_end;
        g_object_set_data_full(G_OBJECT(client), "vfg-talk", t, talk_release);
    }
    if (mount && mount->jpeg) {
        hold_or_wait(mount);  // pictures alone: the launch never changes
    } else if (mount) {
        if (!talker) hold_or_wait(mount);
        pthread_mutex_lock(&mount->lock);
        mount->aac = aac.rate > 0 && aac.config_length <= sizeof aac.config ? aac : (vfg_aac){0};
        gboolean sound = mount->aac.rate > 0;
        pthread_mutex_unlock(&mount->lock);
        gst_rtsp_media_factory_set_launch(factory, sound ? av_launch : video_launch);
    }
    g_object_unref(factory);
    return GST_RTSP_STS_OK;
}

// A client joining a shared media that is already playing would start mid-GOP: nothing but
// P-frames until the next interval's IDR (up to `live.keyframeInterval`, 2 s by default), which
// its decoder reports as missing references. gst-rtsp-server asks for no keyframe itself, so
// once the PLAY has made the client's transports active the picture's feed asks for one: the
// next encode is an IDR and the joiner's first picture is a frame or two away.
static void on_play(GstRTSPClient *client, GstRTSPContext *ctx, gpointer data) {
    (void)client; (void)data;
    if (!ctx || !ctx->media) return;
    GST_DEBUG("media %p: a client plays", (void *)ctx->media);
    vfg_feed *feed = g_object_get_data(G_OBJECT(ctx->media), "vfg-feed");
    if (feed) vfg_feed_want_keyframe(feed);
}

static void on_client_connected(GstRTSPServer *server, GstRTSPClient *client, gpointer data) {
    (void)server;
    g_signal_connect(client, "pre-describe-request", G_CALLBACK(on_pre_describe), data);
    g_signal_connect(client, "play-request", G_CALLBACK(on_play), data);
}

// MARK: The server

vfg_rtsp *vfg_rtsp_start(const char *address, const char *port, int max_threads, int with_auth,
                         vfg_rtsp_callbacks callbacks, char *error, size_t error_len) {
    if (vfg_start(error, error_len) != 0) return NULL;
    vfg_rtsp *r = g_new0(vfg_rtsp, 1);
    r->callbacks = callbacks;
    r->server = gst_rtsp_onvif_server_new();
    gst_rtsp_server_set_address(r->server, address);
    gst_rtsp_server_set_service(r->server, port);
    GstRTSPThreadPool *pool = gst_rtsp_server_get_thread_pool(r->server);
    gst_rtsp_thread_pool_set_max_threads(pool, max_threads);
    g_object_unref(pool);
    if (with_auth) {
        VfgAuth *auth = g_object_new(vfg_auth_get_type(), NULL);
        auth->owner = r;
        gst_rtsp_server_set_auth(r->server, GST_RTSP_AUTH(auth));
        g_object_unref(auth);
    }
    g_signal_connect(r->server, "client-connected", G_CALLBACK(on_client_connected), r);
    GError *e = NULL;
    GSource *source = gst_rtsp_server_create_source(r->server, NULL, &e);
    if (!source) {
        snprintf(error, error_len, "RTSP on %s:%s: %s", address, port, e ? e->message : "cannot listen");
        g_clear_error(&e);
        g_object_unref(r->server);
        g_free(r);
        return NULL;
    }
    r->source = g_source_attach(source, vfg_main_context());
    g_source_unref(source);
    return r;
}

int vfg_rtsp_port(vfg_rtsp *r) { return gst_rtsp_server_get_bound_port(r->server); }

static int mount_path(vfg_rtsp *r, const char *path, gboolean jpeg, gboolean talk);

int vfg_rtsp_mount(vfg_rtsp *r, const char *path, int talk) { return mount_path(r, path, FALSE, talk != 0); }

int vfg_rtsp_mount_jpeg(vfg_rtsp *r, const char *path) { return mount_path(r, path, TRUE, FALSE); }

static int mount_path(vfg_rtsp *r, const char *path, gboolean jpeg, gboolean talk) {
    GstRTSPMountPoints *mounts = gst_rtsp_server_get_mount_points(r->server);
    GstRTSPMediaFactory *existing = gst_rtsp_mount_points_match(mounts, path, NULL);
    if (existing) {
        g_object_unref(existing);
        g_object_unref(mounts);
        return -1;
    }
    GstRTSPMediaFactory *factory = gst_rtsp_onvif_media_factory_new();
    gst_rtsp_media_factory_set_media_gtype(factory, GST_TYPE_RTSP_ONVIF_MEDIA);  // its factory builds no other
    gst_rtsp_media_factory_set_launch(factory, jpeg ? jpeg_launch : video_launch);
    if (talk) gst_rtsp_onvif_media_factory_set_backchannel_launch(GST_RTSP_ONVIF_MEDIA_FACTORY(factory), talk_launch);
    gst_rtsp_media_factory_set_shared(factory, TRUE);
    gst_rtsp_media_factory_set_protocols(factory, GST_RTSP_LOWER_TRANS_UDP | GST_RTSP_LOWER_TRANS_TCP);
    Mount *m = g_new0(Mount, 1);
    m->owner = r;
    m->path = g_strdup(path);
    m->jpeg = jpeg;
    m->talk = talk;
    m->references = 1;
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->gone, NULL);
    g_weak_ref_init(&m->media, NULL);
    g_object_set_data_full(G_OBJECT(factory), "vfg-mount", mount_retain(m), (GDestroyNotify)mount_release);
    g_signal_connect_data(factory, "media-configure", G_CALLBACK(on_media_configure), m, mount_free, 0);
    gst_rtsp_mount_points_add_factory(mounts, path, factory);  // takes the factory
    g_object_unref(mounts);
    return 0;
}

static GstRTSPFilterResult count_client(GstRTSPServer *server, GstRTSPClient *client, gpointer data) {
    (void)server; (void)client;
    (*(unsigned *)data)++;
    return GST_RTSP_FILTER_KEEP;
}

unsigned vfg_rtsp_clients(vfg_rtsp *r) {
    unsigned n = 0;
    GList *none = gst_rtsp_server_client_filter(r->server, count_client, &n);
    g_list_free(none);
    return n;
}

static GstRTSPFilterResult remove_client(GstRTSPServer *server, GstRTSPClient *client, gpointer data) {
    (void)server; (void)client; (void)data;
    return GST_RTSP_FILTER_REMOVE;
}

void vfg_rtsp_stop(vfg_rtsp *r) {
    GSource *source = g_main_context_find_source_by_id(vfg_main_context(), r->source);
    if (source) g_source_destroy(source);  // closes the listening socket
    GList *none = gst_rtsp_server_client_filter(r->server, remove_client, NULL);
    g_list_free(none);
    g_object_unref(r->server);
    g_free(r);
}
