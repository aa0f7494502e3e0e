// The RTSP server: gst-rtsp-server with one shared media per mount (every client of a
// camera shares one appsrc → h264parse → rtph264pay pipeline, and so the camera's one
// encode), RTP over UDP or interleaved in the TCP connection as the client asks. Who may
// play is decided by the application for every request (the one GstRTSPAuth subclass below
// overrides `check`), with the same users, roles and Digest/Basic answers as HTTP.
#include "private.h"
#include <gst/rtsp-server/rtsp-server.h>
#include <stdio.h>
#include <string.h>

struct vfg_rtsp {
    GstRTSPServer *server;
    guint source;
    vfg_rtsp_callbacks callbacks;
};

// MARK: The auth check

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
                                            authorization, address ? address : "", challenge, sizeof challenge);
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

// MARK: Media

typedef struct {
    vfg_rtsp *owner;
    gchar *path;
} Mount;

static void mount_free(gpointer data, GClosure *closure) {
    (void)closure;
    Mount *m = data;
    g_free(m->path);
    g_free(m);
}

static void on_unprepared(GstRTSPMedia *media, gpointer data) {
    (void)media;
    vfg_feed_close(data);
}

static void on_media_configure(GstRTSPMediaFactory *factory, GstRTSPMedia *media, gpointer data) {
    (void)factory;
    Mount *mount = data;
    GstElement *bin = gst_rtsp_media_get_element(media);
    GstElement *appsrc = gst_bin_get_by_name_recurse_up(GST_BIN(bin), "src");
    gst_object_unref(bin);
    if (!appsrc) return;
    vfg_configure_appsrc(appsrc);
    vfg_feed *feed = vfg_feed_new(appsrc);
    gst_object_unref(appsrc);
    // The media's reference goes when it is unprepared (its last client left, or the server stopped).
    g_signal_connect_data(media, "unprepared", G_CALLBACK(on_unprepared), feed, (GClosureNotify)(void (*)(void))vfg_feed_release, 0);
    mount->owner->callbacks.media_started(mount->owner->callbacks.context, mount->path, vfg_feed_retain(feed));
}

static GstRTSPStatusCode on_pre_describe(GstRTSPClient *client, GstRTSPContext *ctx, gpointer data) {
    (void)client;
    vfg_rtsp *owner = data;
    const char *path = ctx->uri && ctx->uri->abspath ? ctx->uri->abspath : "/";
    int status = owner->callbacks.describe(owner->callbacks.context, path);
    return status == 0 ? GST_RTSP_STS_OK : (GstRTSPStatusCode)status;
}

static void on_client_connected(GstRTSPServer *server, GstRTSPClient *client, gpointer data) {
    (void)server;
    g_signal_connect(client, "pre-describe-request", G_CALLBACK(on_pre_describe), data);
}

// MARK: The server

vfg_rtsp *vfg_rtsp_start(const char *address, const char *port, int max_threads, int with_auth,
                         vfg_rtsp_callbacks callbacks, char *error, size_t error_len) {
    if (vfg_start(error, error_len) != 0) return NULL;
    vfg_rtsp *r = g_new0(vfg_rtsp, 1);
    r->callbacks = callbacks;
    r->server = gst_rtsp_server_new();
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

int vfg_rtsp_mount(vfg_rtsp *r, const char *path) {
    GstRTSPMountPoints *mounts = gst_rtsp_server_get_mount_points(r->server);
    GstRTSPMediaFactory *existing = gst_rtsp_mount_points_match(mounts, path, NULL);
    if (existing) {
        g_object_unref(existing);
        g_object_unref(mounts);
        return -1;
    }
    GstRTSPMediaFactory *factory = gst_rtsp_media_factory_new();
    // The encoder puts SPS and PPS before every IDR (a client joins at any keyframe);
    // h264parse adds them only where missing, and the payloader adds none of its own.
    gst_rtsp_media_factory_set_launch(factory,
        "( appsrc name=src ! h264parse config-interval=-1 "
        "! rtph264pay name=pay0 pt=96 aggregate-mode=zero-latency )");
    gst_rtsp_media_factory_set_shared(factory, TRUE);
    gst_rtsp_media_factory_set_protocols(factory, GST_RTSP_LOWER_TRANS_UDP | GST_RTSP_LOWER_TRANS_TCP);
    Mount *m = g_new0(Mount, 1);
    m->owner = r;
    m->path = g_strdup(path);
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
