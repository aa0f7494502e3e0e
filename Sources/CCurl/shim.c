#include "shim.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CURLcode global = CURLE_OK;

// curl_global_init must run once before any handle, and is not safe beside other threads'
// first calls on every libcurl build: once, here.
static void init(void) { global = curl_global_init(CURL_GLOBAL_DEFAULT); }

// The answer's body is not wanted (a consumer's 200 says it all).
static size_t discard(char *data, size_t size, size_t count, void *user) {
    (void)data; (void)user;
    return size * count;
}

int vf_http_post(const char *url, const void *body, size_t length, const char *content_type,
                 long timeout_ms, long *status, char *error, size_t error_size) {
    char buffer[CURL_ERROR_SIZE] = "";
    *status = 0;
    pthread_once(&once, init);
    if (global != CURLE_OK) {
        snprintf(error, error_size, "curl_global_init: %s", curl_easy_strerror(global));
        return (int)global;
    }
    CURL *curl = curl_easy_init();
    if (!curl) {
        snprintf(error, error_size, "curl_easy_init failed");
        return (int)CURLE_FAILED_INIT;
    }
    char header[256];
    snprintf(header, sizeof header, "Content-Type: %s", content_type);
    struct curl_slist *headers = curl_slist_append(NULL, header);
    // No "Expect: 100-continue" round trip before a small body.
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)length);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "Viewfinder");
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    // Timeouts without SIGALRM: signals are not libcurl's to take in a threaded server.
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, buffer);
    CURLcode code = curl_easy_perform(curl);
    if (code == CURLE_OK) {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    } else {
        snprintf(error, error_size, "%s", buffer[0] ? buffer : curl_easy_strerror(code));
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return (int)code;
}
