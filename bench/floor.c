// floor: the HTTP layer's floor for MJPEG fan-out (issue 14), for `make bench` (bench/floor.py).
// A bare libmicrohttpd server that streams ONE fixed JPEG as an endless multipart MJPEG
// response to every client, at FPS parts a second: what Viewfinder's HTTP layer has to do at
// the least, with nothing captured, encoded, routed or counted.
//
//   floor JPEG FPS [PORT] [THREADS]   (PORT 0 or absent: a free one; binds 127.0.0.1 only;
//                                      THREADS > 1: libmicrohttpd's thread pool of that size,
//                                      as Viewfinder's server.threads)
//
// Prints "floor listening on http://127.0.0.1:PORT/" as its first line (bench/server.py reads
// Viewfinder's "Viewfinder listening on http://127.0.0.1:PORT/" the same way); stops on
// SIGTERM or SIGINT.
//
// Done as Viewfinder does it (Sources/HTTPServer/HTTPServer.swift, StreamConnection.swift,
// Sources/Session/Preview/FrameHub.swift, Sources/ViewfinderApp/Clients/MJPEGStream.swift): the same daemon
// flags (one internal polling thread with epoll, suspend/resume), a response from
// MHD_create_response_from_callback with 32 KB blocks (chunked under HTTP/1.1), the same part
// layout and boundary (Multipart.swift: Content-Type, Content-Length, X-Timestamp, the JPEG,
// CRLF), the same response headers (the no-cache set, Connection: close). A connection that has
// sent the current frame is suspended from inside the content reader; a ticker thread takes
// the next frame number at every tick and resumes every parked connection (one
// MHD_resume_connection each, as FrameHub.publish wakes each viewer). The part is built once
// and shared by every connection (as the hub's frame is); its X-Timestamp (Viewfinder's
// SECONDS.MICROS form, fixed width) is rewritten in place at every tick with the tick's wall
// clock, before the parked viewers are resumed, so bench/out/latency measures the floor's
// publish → last byte (a viewer still sending the previous part at a tick may see mixed
// digits: only a viewer a whole frame behind, which the latency client counts as an outlier).
// Each part has the bytes of a Viewfinder part of the same JPEG.
#include <microhttpd.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/time.h>

#define BOUNDARY "viewfinderframe"

/// One viewer: where it is in the shared part, the frame it is sending or sent last.
struct stream {
    struct MHD_Connection *connection;
    size_t offset;
    uint64_t sequence;
    int parked;
    struct stream *next_parked;
};

static unsigned char *part;
static size_t part_length;
/// Where the X-Timestamp value sits in `part` (17 characters: 10 digits, a dot, 6 digits).
static size_t stamp_offset;

/// Writes the wall clock into the part's X-Timestamp (the lock held).
static void stamp(void) {
    struct timeval now;
    gettimeofday(&now, NULL);
    char digits[32];
    snprintf(digits, sizeof digits, "%010ld.%06ld", (long)now.tv_sec, (long)now.tv_usec);
    memcpy(part + stamp_offset, digits, 17);
}

/// The frame number, the parked viewers (a stack) and the stop flag, under one lock.
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t sequence = 1;
static struct stream *parked;
static int stopping;

/// Takes every parked viewer off the stack (the lock held); the caller resumes them.
static struct stream *take_parked(void) {
    struct stream *all = parked;
    parked = NULL;
    for (struct stream *s = all; s; s = s->next_parked) s->parked = 0;
    return all;
}

static void resume(struct stream *list) {
    while (list) {
        struct stream *next = list->next_parked;  // read before the resume: the connection may run at once
        MHD_resume_connection(list->connection);
        list = next;
    }
}

/// MHD's content reader (its polling thread): the rest of the current part, or park until the
/// next tick once this viewer has sent the newest frame.
static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    struct stream *s = cls;
    if (s->offset == part_length) {
        pthread_mutex_lock(&lock);
        if (stopping) { pthread_mutex_unlock(&lock); return MHD_CONTENT_READER_END_OF_STREAM; }
        if (s->sequence == sequence) {
            s->parked = 1;
            s->next_parked = parked;
            parked = s;
            MHD_suspend_connection(s->connection);
            pthread_mutex_unlock(&lock);
            return 0;
        }
        s->sequence = sequence;
        pthread_mutex_unlock(&lock);
        s->offset = 0;
    }
    size_t n = part_length - s->offset < max ? part_length - s->offset : max;
    memcpy(buf, part + s->offset, n);
    s->offset += n;
    return (ssize_t)n;
}

static void reader_free(void *cls) {
    // A parked connection is never closed by MHD (stop resumes them all first), so it is not
    // on the stack here.
    free(cls);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *connection, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
    (void)cls; (void)url; (void)version; (void)upload; (void)upload_size; (void)con_cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0) return MHD_NO;
    struct stream *s = calloc(1, sizeof *s);
    if (!s) return MHD_NO;
    s->connection = connection;
    s->offset = part_length;  // nothing sent yet: the first read takes the current frame
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, reader, s, reader_free);
    if (!r) { free(s); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", "multipart/x-mixed-replace;boundary=" BOUNDARY);
    MHD_add_response_header(r, "Cache-Control", "no-store, no-cache, must-revalidate, proxy-revalidate, max-age=0");
    MHD_add_response_header(r, "Pragma", "no-cache");
    MHD_add_response_header(r, "Expires", "Mon, 3 Jan 2000 12:34:56 GMT");
    MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result rc = MHD_queue_response(connection, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

/// Every 1/FPS s (absolute deadlines, CLOCK_MONOTONIC): a new frame number, every parked viewer resumed.
static void *ticker(void *arg) {
    double fps = *(double *)arg;
    long period = (long)(1e9 / fps);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    for (;;) {
        t.tv_nsec += period;
        while (t.tv_nsec >= 1000000000L) { t.tv_nsec -= 1000000000L; t.tv_sec++; }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {}
        pthread_mutex_lock(&lock);
        if (stopping) { pthread_mutex_unlock(&lock); return NULL; }
        stamp();
        sequence++;
        struct stream *wake = take_parked();
        pthread_mutex_unlock(&lock);
        resume(wake);
    }
}

static unsigned char *read_file(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    unsigned char *data = malloc(cap);
    size_t r;
    while (data && (r = fread(data + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) data = realloc(data, cap *= 2);
    }
    fclose(f);
    *length = n;
    return data;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: floor JPEG FPS [PORT]\n"); return 2; }
    double fps = atof(argv[2]);
    int port = argc > 3 ? atoi(argv[3]) : 0;
    unsigned int threads = argc > 4 ? (unsigned int)atoi(argv[4]) : 1;
    if (fps <= 0 || port < 0 || port > 65535) { fprintf(stderr, "floor: bad FPS or PORT\n"); return 2; }
    size_t jpeg_length;
    unsigned char *jpeg = read_file(argv[1], &jpeg_length);
    if (!jpeg || jpeg_length < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) {
        fprintf(stderr, "floor: %s is not a JPEG\n", argv[1]);
        return 1;
    }
    // The part, as Multipart.part builds it (X-Timestamp: SECONDS.MICROS, here the start time).
    struct timeval now;
    gettimeofday(&now, NULL);
    char head[256];
    int head_length = snprintf(head, sizeof head,
        "--" BOUNDARY "\r\nContent-Type: image/jpeg\r\nContent-Length: %zu\r\nX-Timestamp: %010ld.%06ld\r\n\r\n",
        jpeg_length, (long)now.tv_sec, (long)now.tv_usec);
    stamp_offset = (size_t)(strstr(head, "X-Timestamp: ") - head) + strlen("X-Timestamp: ");
    part_length = (size_t)head_length + jpeg_length + 2;
    part = malloc(part_length);
    if (!part) return 1;
    memcpy(part, head, (size_t)head_length);
    memcpy(part + head_length, jpeg, jpeg_length);
    memcpy(part + head_length + jpeg_length, "\r\n", 2);
    free(jpeg);

    // SIGTERM and SIGINT are taken by sigwait below; every thread started from here blocks them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);

    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL,
        handler, NULL, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_CONNECTION_LIMIT, 2048u,
        threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads, MHD_OPTION_END);
    if (!d) { perror("floor: MHD_start_daemon"); return 1; }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("floor listening on http://127.0.0.1:%u/\n", info ? (unsigned)info->port : (unsigned)port);
    fflush(stdout);

    pthread_t tick;
    if (pthread_create(&tick, NULL, ticker, &fps) != 0) { perror("floor: pthread_create"); return 1; }
    int sig;
    sigwait(&signals, &sig);

    // MHD must not be stopped with connections suspended: mark stopping (readers end their
    // streams), resume every parked one, then stop.
    pthread_mutex_lock(&lock);
    stopping = 1;
    struct stream *wake = take_parked();
    pthread_mutex_unlock(&lock);
    resume(wake);
    pthread_join(tick, NULL);
    MHD_stop_daemon(d);
    free(part);
    return 0;
}
