// viewers: N MJPEG viewers on one epoll loop, for `make bench`. Each connection sends
// GET PATH and reads as fast as it can; parts are counted by their boundary. Counting
// starts after a warm-up second. Prints JSON: frames per second per viewer (min, median,
// max) and the number of viewers that stayed connected.
//
//   viewers PORT N SECONDS [PATH] [BOUNDARY]   (BOUNDARY without the leading dashes)
#define _GNU_SOURCE  // memmem
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXB 128
static char BOUNDARY[MAXB] = "--viewfinderframe";
static size_t BLEN = 17;

typedef struct { int fd; long parts; char tail[MAXB]; size_t tail_len; int open; } viewer;

static double now(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: viewers PORT N SECONDS [PATH]\n"); return 2; }
  int port = atoi(argv[1]), n = atoi(argv[2]); double seconds = atof(argv[3]);
  const char *path = argc > 4 ? argv[4] : "/stream";
  if (argc > 5) { snprintf(BOUNDARY, MAXB, "--%s", argv[5]); BLEN = strlen(BOUNDARY); }
  viewer *v = calloc(n, sizeof *v);
  int ep = epoll_create1(0);
  char req[512]; snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
  for (int i = 0; i < n; i++) {
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    v[i].fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(v[i].fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); return 1; }
    if (write(v[i].fd, req, strlen(req)) < 0) { perror("write"); return 1; }
    fcntl(v[i].fd, F_SETFL, O_NONBLOCK);
    v[i].open = 1;
    struct epoll_event e = { .events = EPOLLIN, .data.u32 = i };
    epoll_ctl(ep, EPOLL_CTL_ADD, v[i].fd, &e);
  }
  static char buf[(1 << 18) + MAXB];
  double start = now(), counting = start + 1.0, end = counting + seconds;
  int counting_started = 0;
  struct epoll_event ev[256];
  while (now() < end) {
    if (!counting_started && now() >= counting) {
      for (int i = 0; i < n; i++) v[i].parts = 0;
      counting_started = 1;
    }
    int k = epoll_wait(ep, ev, 256, 100);
    for (int j = 0; j < k; j++) {
      viewer *c = &v[ev[j].data.u32];
      memcpy(buf, c->tail, c->tail_len);
      ssize_t r = read(c->fd, buf + c->tail_len, 1 << 18);
      if (r <= 0) {
        if (r < 0 && errno == EAGAIN) continue;
        c->open = 0; epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL); continue;
      }
      size_t len = c->tail_len + (size_t)r;
      for (char *p = buf; (p = memmem(p, len - (p - buf), BOUNDARY, BLEN)); p += BLEN) c->parts++;
      c->tail_len = len < BLEN - 1 ? len : BLEN - 1;   // a boundary split across reads
      memcpy(c->tail, buf + len - c->tail_len, c->tail_len);
    }
  }
  double *fps = calloc(n, sizeof *fps); int open = 0;
  for (int i = 0; i < n; i++) { fps[i] = v[i].parts / seconds; open += v[i].open; close(v[i].fd); }
  qsort(fps, n, sizeof *fps, cmp);
  printf("{\"viewers\": %d, \"open\": %d, \"fpsMin\": %.2f, \"fpsMedian\": %.2f, \"fpsMax\": %.2f}\n",
         n, open, fps[0], fps[n / 2], fps[n - 1]);
  return 0;
}
