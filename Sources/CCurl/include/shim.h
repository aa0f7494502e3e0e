// libcurl's easy interface behind one call: its options are C varargs, which Swift cannot
// call, so the one request Viewfinder makes of another server (an ONVIF push subscription's
// Notify) is set up here. The ONVIF module alone imports this.
#pragma once
#include <stddef.h>

/// POSTs `length` bytes of `body` to `url` (http or https only; no redirect followed; the
/// answer's body read and dropped). Returns 0 with the answer's status in `*status`, or
/// libcurl's CURLcode with its message in `error` (at least 256 bytes). Blocks for at most
/// `timeout_ms`; safe from any thread.
int vf_http_post(const char *url, const void *body, size_t length, const char *content_type,
                 long timeout_ms, long *status, char *error, size_t error_size);
