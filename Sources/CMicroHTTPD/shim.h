// Swift cannot call C variadic functions or see macros that expand to casts, so the two
// pieces of libmicrohttpd's API that need them are wrapped here. Nothing else.
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

/// MHD_start_daemon is variadic; this fixes the options Viewfinder uses.
static inline struct MHD_Daemon *cmhd_start(
    unsigned int flags, const struct sockaddr_in *addr,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    MHD_NotifyConnectionCallback notify, void *notify_cls,
    unsigned int connection_limit, unsigned int connection_timeout,
    const void *digest_random, size_t digest_random_size) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
        MHD_OPTION_DIGEST_AUTH_RANDOM, digest_random_size, digest_random,
        MHD_OPTION_NONCE_NC_SIZE, (unsigned int)1024,
        MHD_OPTION_SOCK_ADDR, addr,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
        MHD_OPTION_NOTIFY_CONNECTION, notify, notify_cls,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout,
        MHD_OPTION_UNESCAPE_CALLBACK, cmhd_no_unescape, NULL,
        MHD_OPTION_END);
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

/// The bound port (useful after binding port 0).
static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
#endif
