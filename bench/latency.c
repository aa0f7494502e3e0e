// latency: N MJPEG viewers on one epoll loop, for `make bench` (bench/latency.py). Each
// connection sends GET PATH and parses the multipart stream (HTTP/1.1, de-chunked when the
// server chunks it): every part's headers (Content-Length, X-Timestamp: the frame's capture
// time, CLOCK_REALTIME seconds) and body. For every part whose last body byte arrives in the
// window (after a warm-up, for SECONDS), the sample is CLOCK_REALTIME read right after the
// read() that returned that byte, minus X-Timestamp, in ms. A read never goes past the end of
// the body being received, so that read is the one that ended on the part's last byte. The
// kernel's receive timestamp of the same bytes (SO_TIMESTAMPNS: when the last segment read
// reached the socket) is kept too, apart: the difference is the time the byte waited for
// this process to read it. A part whose X-Timestamp equals the previous one's (the server's
// once-a-second resend) is counted as a repeat, not a sample.
// Prints JSON: samples and percentiles over all viewers' parts (p50, p90, p99, max), the same
// for the kernel's timestamps, per-viewer fps (min, median), parts' median size, viewers
// that stayed connected, repeats and parse errors. Run time is bounded: connect, warm-up,
// SECONDS, then exit, whatever the server does.
//
//   latency PORT N SECONDS [PATH] [WARMUP]
#define _GNU_SOURCE  // memmem, strcasestr
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define HDR_MAX 8192          // HTTP response head or one part's head, at most
#define BUF (1 << 18)         // one read, at most
#define HEAD_READ 4096        // a read while a head is awaited (smaller than any JPEG)
#define READS_PER_WAKE 64     // then the next ready connection gets its turn

typedef struct { double *v; size_t n, cap; } series;

static void push(series *s, double x) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 4096;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    if (!s->v) { perror("realloc"); exit(1); }
  }
  s->v[s->n++] = x;
}

enum { HTTP_HEAD, BODY };                        // connection: response head, then the body
enum { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };  // de-chunker
enum { MP_HEAD, MP_BODY };                       // multipart: a part's head, then its body

typedef struct {
  int fd, open, phase, chunked;
  char head[HDR_MAX]; size_t head_len;           // the response head, then each part's head
  char boundary[128]; size_t blen;               // "--token"
  int ch_state; uint64_t ch_left; char ch_line[64]; size_t ch_line_len;
  int mp_state; uint64_t body_left; double ts, last_ts; uint64_t part_len;
  long parts;                                    // parts completed in the window
} viewer;

static long repeats, errors;
static series lat, klat, sizes;

static double mono(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double real(void) {
  struct timespec ts; clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y);
}

/// A number for JSON: null when there is none.
static void num(const char *name, double x, const char *sep) {
  if (isnan(x)) printf("\"%s\": null%s", name, sep); else printf("\"%s\": %.3f%s", name, x, sep);
}

/// Nearest-rank percentile of a sorted series.
static double pct(const series *s, double q) {
  if (!s->n) return NAN;
  size_t k = (size_t)ceil(q * s->n);
  return s->v[k ? k - 1 : 0];
}

/// The value of header `name` in a head (case-insensitive, at a line start), copied to out.
static int header(const char *head, const char *name, char *out, size_t outsz) {
  size_t nl = strlen(name);
  for (const char *p = head; p && *p; p = strstr(p, "\r\n"), p = p ? p + 2 : NULL) {
    if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
      const char *v = p + nl + 1;
      while (*v == ' ' || *v == '\t') v++;
      const char *e = strstr(v, "\r\n");
      size_t n = e ? (size_t)(e - v) : strlen(v);
      if (n >= outsz) n = outsz - 1;
      memcpy(out, v, n); out[n] = 0;
      return 1;
    }
  }
  return 0;
}

/// The response head is complete in c->head: status 200, chunked or not, the boundary.
static int response_head(viewer *c) {
  char v[256];
  if (strncmp(c->head, "HTTP/1.", 7) != 0 || strncmp(c->head + 8, " 200", 4) != 0) {
    fprintf(stderr, "latency: not 200: %.40s\n", c->head); return 0;
  }
  c->chunked = header(c->head, "Transfer-Encoding", v, sizeof v) && strcasestr(v, "chunked");
  snprintf(c->boundary, sizeof c->boundary, "--viewfinderframe");
  if (header(c->head, "Content-Type", v, sizeof v)) {
    char *b = strcasestr(v, "boundary=");
    if (b) {
      b += 9;
      if (*b == '"') b++;
      size_t n = strcspn(b, "\";, ");
      if (n > 0 && n < sizeof c->boundary - 3) snprintf(c->boundary, sizeof c->boundary, "--%.*s", (int)n, b);
    }
  }
  c->blen = strlen(c->boundary);
  return 1;
}

/// Multipart bytes (de-chunked) arriving at time `t` (kernel time `kt`, 0 if unknown).
static void multipart(viewer *c, const char *p, size_t n, double t, double kt, double from, double to) {
  while (n) {
    if (c->mp_state == MP_BODY) {
      size_t k = n < c->body_left ? n : (size_t)c->body_left;
      c->body_left -= k; p += k; n -= k;
      if (c->body_left == 0) {
        c->mp_state = MP_HEAD; c->head_len = 0;
        int repeat = c->ts == c->last_ts;
        c->last_ts = c->ts;
        if (t >= from && t < to) {
          if (repeat) { repeats++; continue; }
          c->parts++;
          push(&lat, (t - c->ts) * 1000);
          if (kt > 0) push(&klat, (kt - c->ts) * 1000);
          push(&sizes, (double)c->part_len);
        }
      }
      continue;
    }
    // MP_HEAD: gather up to the blank line that ends the part's head.
    size_t room = HDR_MAX - 1 - c->head_len;
    if (room == 0) {  // no head end in 8 KB: resynchronise on the next boundary
      errors++;
      memmove(c->head, c->head + c->head_len - 4, 4); c->head_len = 4; room = HDR_MAX - 5;
    }
    size_t k = n < room ? n : room;
    memcpy(c->head + c->head_len, p, k);
    size_t old = c->head_len;
    c->head_len += k; c->head[c->head_len] = 0;
    char *b = memmem(c->head, c->head_len, c->boundary, c->blen);
    char *end = b ? memmem(b, c->head_len - (b - c->head), "\r\n\r\n", 4) : NULL;
    if (!end) { p += k; n -= k; continue; }
    size_t used = (size_t)(end + 4 - c->head) - old;  // bytes of this chunk up to the head's end
    *end = 0;
    char v[64], stamp[64];
    char *line = strstr(b, "\r\n");
    if (!line || !header(line + 2, "Content-Length", v, sizeof v) ||
        !header(line + 2, "X-Timestamp", stamp, sizeof stamp)) {
      errors++; c->head_len = 0; p += used; n -= used; continue;
    }
    c->part_len = c->body_left = strtoull(v, NULL, 10);
    c->ts = strtod(stamp, NULL);
    c->mp_state = MP_BODY; c->head_len = 0;
    p += used; n -= used;
  }
}

/// Body bytes as they came off the wire: de-chunked when the response is chunked.
static void body(viewer *c, const char *p, size_t n, double t, double kt, double from, double to) {
  if (!c->chunked) { multipart(c, p, n, t, kt, from, to); return; }
  while (n) {
    switch (c->ch_state) {
    case CH_SIZE:  // "HEX[;ext]\r\n"
      if (*p == '\n') {
        c->ch_line[c->ch_line_len] = 0;
        c->ch_left = strtoull(c->ch_line, NULL, 16);
        c->ch_line_len = 0;
        c->ch_state = c->ch_left ? CH_DATA : CH_TRAILER;
      } else if (c->ch_line_len < sizeof c->ch_line - 1) {
        c->ch_line[c->ch_line_len++] = *p;
      }
      p++; n--;
      break;
    case CH_DATA: {
      size_t k = n < c->ch_left ? n : (size_t)c->ch_left;
      multipart(c, p, k, t, kt, from, to);
      c->ch_left -= k; p += k; n -= k;
      if (!c->ch_left) c->ch_state = CH_DATA_END;
      break;
    }
    case CH_DATA_END:  // the CRLF after a chunk's data
      if (*p == '\n') c->ch_state = CH_SIZE;
      p++; n--;
      break;
    default:  // the last chunk: the stream has ended
      c->ch_state = CH_DONE;
      return;
    }
  }
}

/// How much the next read may take: never past the end of the body being received.
static size_t want(const viewer *c) {
  if (c->phase == BODY && c->mp_state == MP_BODY)
    return c->body_left < BUF ? (c->body_left ? (size_t)c->body_left : 1) : BUF;
  return HEAD_READ;
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: latency PORT N SECONDS [PATH] [WARMUP]\n"); return 2; }
  int port = atoi(argv[1]), n = atoi(argv[2]); double seconds = atof(argv[3]);
  const char *path = argc > 4 ? argv[4] : "/stream";
  double warmup = argc > 5 ? atof(argv[5]) : 1.0;
  if (n < 1 || seconds <= 0) { fprintf(stderr, "latency: N >= 1, SECONDS > 0\n"); return 2; }
  viewer *v = calloc(n, sizeof *v);
  int ep = epoll_create1(0);
  char req[512];
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: viewfinder-latency\r\n\r\n", path);
  for (int i = 0; i < n; i++) {
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    v[i].fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = { .tv_sec = 5 };
    setsockopt(v[i].fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(v[i].fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    if (connect(v[i].fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); return 1; }
    if (write(v[i].fd, req, strlen(req)) < 0) { perror("write"); return 1; }
    fcntl(v[i].fd, F_SETFL, O_NONBLOCK);
    v[i].open = 1;
    v[i].last_ts = -1;
    struct epoll_event e = { .events = EPOLLIN, .data.u32 = i };
    epoll_ctl(ep, EPOLL_CTL_ADD, v[i].fd, &e);
  }
  static char buf[BUF];
  char control[256];
  double start = mono(), end = start + warmup + seconds;
  // The window in wall-clock time, as the samples are stamped.
  double from = real() + warmup, to = from + seconds;
  struct epoll_event ev[256];
  while (mono() < end) {
    int k = epoll_wait(ep, ev, 256, 100);
    for (int j = 0; j < k; j++) {
      viewer *c = &v[ev[j].data.u32];
      for (int r = 0; r < READS_PER_WAKE && c->open; r++) {
        size_t w = want(c);
        if (c->phase == HTTP_HEAD && w > HDR_MAX - 1 - c->head_len) w = HDR_MAX - 1 - c->head_len;
        struct iovec io = { .iov_base = buf, .iov_len = w };
        struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
        ssize_t got = recvmsg(c->fd, &m, 0);
        double t = real();
        if (got <= 0) {
          if (got < 0 && (errno == EAGAIN || errno == EINTR)) break;
          c->open = 0; epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL); break;
        }
        double kt = 0;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
          if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts; memcpy(&ts, CMSG_DATA(cm), sizeof ts);
            kt = ts.tv_sec + ts.tv_nsec / 1e9;
            if (kt > t + 0.001 || kt < t - 60) kt = 0;  // not a receive time after all
          }
        const char *p = buf; size_t len = (size_t)got;
        if (c->phase == HTTP_HEAD) {
          memcpy(c->head + c->head_len, p, len);
          c->head_len += len; c->head[c->head_len] = 0;
          char *e = memmem(c->head, c->head_len, "\r\n\r\n", 4);
          if (!e) {
            if (c->head_len >= HDR_MAX - 1) { errors++; c->open = 0; epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL); }
            continue;
          }
          size_t rest = c->head_len - (size_t)(e + 4 - c->head);
          char tail[HDR_MAX]; memcpy(tail, e + 4, rest);
          e[2] = 0;  // keep the last header's CRLF for header()
          if (!response_head(c)) { errors++; c->open = 0; epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL); break; }
          c->phase = BODY; c->head_len = 0; c->mp_state = MP_HEAD; c->ch_state = CH_SIZE;
          body(c, tail, rest, t, kt, from, to);
        } else {
          body(c, p, len, t, kt, from, to);
        }
        if (c->chunked && c->ch_state == CH_DONE) { c->open = 0; epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL); }
      }
    }
  }
  double *fps = calloc(n, sizeof *fps); int open = 0;
  for (int i = 0; i < n; i++) { fps[i] = v[i].parts / seconds; open += v[i].open; close(v[i].fd); }
  qsort(fps, n, sizeof *fps, cmp);
  qsort(lat.v, lat.n, sizeof *lat.v, cmp);
  qsort(klat.v, klat.n, sizeof *klat.v, cmp);
  qsort(sizes.v, sizes.n, sizeof *sizes.v, cmp);
  printf("{\"viewers\": %d, \"open\": %d, \"seconds\": %g, \"count\": %zu, ", n, open, seconds, lat.n);
  num("min", pct(&lat, 0), ", "); num("p50", pct(&lat, 0.5), ", "); num("p90", pct(&lat, 0.9), ", ");
  num("p99", pct(&lat, 0.99), ", "); num("max", lat.n ? lat.v[lat.n - 1] : NAN, ", ");
  if (klat.n) {
    printf("\"kernel\": {\"count\": %zu, ", klat.n);
    num("p50", pct(&klat, 0.5), ", "); num("p90", pct(&klat, 0.9), ", ");
    num("p99", pct(&klat, 0.99), ", "); num("max", klat.v[klat.n - 1], "}, ");
  } else {
    printf("\"kernel\": null, ");
  }
  printf("\"fpsMin\": %.2f, \"fpsMedian\": %.2f, ", fps[0], fps[n / 2]);
  num("bytesMedian", pct(&sizes, 0.5), ", ");
  printf("\"repeats\": %ld, \"errors\": %ld}\n", repeats, errors);
  return 0;
}
