// Swift cannot call C variadic functions or see macros that expand to casts, so the
// pieces of libmicrohttpd's API that need them are wrapped here, with the TLS certificate
// store (shim.c), which needs GnuTLS types. Nothing else. GnuTLS's headers are included
// by shim.c only: Swift sees the store as an opaque pointer.
#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdint.h>
#include <microhttpd.h>

static const uint64_t CMHD_SIZE_UNKNOWN = MHD_SIZE_UNKNOWN;
static const ssize_t CMHD_CONTENT_READER_END_OF_STREAM = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t CMHD_CONTENT_READER_END_WITH_ERROR = MHD_CONTENT_READER_END_WITH_ERROR;

static const enum MHD_ResponseMemoryMode CMHD_RESPMEM_MUST_COPY = MHD_RESPMEM_MUST_COPY;
static const enum MHD_ConnectionNotificationCode CMHD_CONNECTION_NOTIFY_STARTED = MHD_CONNECTION_NOTIFY_STARTED;

/// Leaves URLs and query arguments exactly as received: MHD's own unescaping would decode
/// %2F into a path separator and cut the URL at %00. The server decodes per segment.
static size_t cmhd_no_unescape(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls; (void)c;
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

/// MHD_start_daemon is variadic; this fixes the options Viewfinder uses. With `tls` set
/// the daemon speaks HTTPS (MHD_USE_TLS) with `priorities`, and every handshake takes the
/// store's current certificate through MHD_OPTION_HTTPS_CERT_CALLBACK. `accept` decides
/// per client address before a connection is set up (NULL: accept all). `threads` > 1 runs
/// that many polling threads (MHD_OPTION_THREAD_POOL_SIZE), each with its own epoll set and
/// its share of the connections; 1 is MHD's single internal polling thread.
struct cmhd_tls;
struct MHD_Daemon *cmhd_start(
    unsigned int flags, const struct sockaddr_in *addr,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    MHD_NotifyConnectionCallback notify, void *notify_cls,
    MHD_AcceptPolicyCallback accept, void *accept_cls,
    unsigned int connection_limit, unsigned int connection_timeout,
    struct cmhd_tls *tls, const char *priorities,
    const void *digest_random, size_t digest_random_size, unsigned int threads);

/// Sets one connection's idle timeout in seconds (MHD_set_connection_option is variadic).
static inline void cmhd_set_connection_timeout(struct MHD_Connection *c, unsigned int seconds) {
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, seconds);
}

/// The client's IPv4 address in network byte order, or 0 when it is not IPv4.
static inline uint32_t cmhd_client_ipv4(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr || info->client_addr->sa_family != AF_INET) return 0;
    return ((const struct sockaddr_in *)info->client_addr)->sin_addr.s_addr;
}

/// The client's address as text (IPv4 or IPv6), into `out`; empty when unknown.
/// (MHD_get_connection_info is variadic.)
#include <arpa/inet.h>
static inline void cmhd_client_address(struct MHD_Connection *c, char *out, socklen_t size) {
    out[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr) return;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET) inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, size);
    else if (sa->sa_family == AF_INET6) inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, size);
}

/// The IPv4 address of a socket address handed to the accept policy, or 0.
static inline uint32_t cmhd_sockaddr_ipv4(const struct sockaddr *a, socklen_t len) {
    if (!a || len < (socklen_t)sizeof(struct sockaddr_in) || a->sa_family != AF_INET) return 0;
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr;
}

// MARK: TLS certificate store (shim.c)
//
// Holds the PEM certificate chain and key that handshakes are given. A reload loads and
// checks the new pair completely before swapping it in under a mutex; connections already
// open keep the session they negotiated. A replaced pair is freed once every connection
// that was open while it was current has closed (a handshake in flight may still use it).

/// Which call failed, on which file: errno for reading, a GnuTLS code for parsing.
struct cmhd_tls_error {
    const char *call;   /* "open", "read", "gnutls_pcert_list_import_x509_raw", ... */
    int file;           /* 0 the certificate, 1 the key, 2 the two together */
    int err_no;         /* errno when non-zero */
    int gnutls_code;    /* a GnuTLS error code when non-zero */
};

struct cmhd_tls *cmhd_tls_create(void);
void cmhd_tls_destroy(struct cmhd_tls *tls);
/// Loads, checks and swaps in a certificate chain and key; 0 on success, else -1 with
/// `error` filled and the previous pair still current.
int cmhd_tls_load(struct cmhd_tls *tls, const char *certificate_path, const char *key_path,
                  struct cmhd_tls_error *error);
/// GnuTLS's message for a code.
const char *cmhd_tls_strerror(int code);
/// SHA-256 fingerprint of the current leaf certificate (32 bytes); 0 on success.
int cmhd_tls_fingerprint(struct cmhd_tls *tls, uint8_t out[32]);
/// Called from the connection-notify callback with MHD's per-connection socket context.
void cmhd_tls_connection_started(struct cmhd_tls *tls, void **socket_context);
void cmhd_tls_connection_closed(struct cmhd_tls *tls, void **socket_context);

/// The bound port (useful after binding port 0).
static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
#endif
