// cmhd_start and the TLS certificate store: interop only. Errors go back to Swift as the
// failing call with errno or GnuTLS's code; Swift turns them into typed errors.

#include "shim.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>

#define CMHD_MAX_CHAIN 16
#define CMHD_MAX_PEM (1 << 20)

/// One loaded certificate chain with its key. `connections` counts the connections that
/// started while this pair was current and are still open.
struct cmhd_pair {
    gnutls_pcert_st chain[CMHD_MAX_CHAIN];
    unsigned int length;
    gnutls_privkey_t key;
    unsigned long connections;
    struct cmhd_pair *newer;
};

struct cmhd_tls {
    pthread_mutex_t lock;
    struct cmhd_pair *oldest;   /* retired pairs still referenced, then current */
    struct cmhd_pair *current;
};

/// What MHD's socket context holds for a TLS connection.
struct cmhd_tls_connection {
    struct cmhd_tls *tls;
    struct cmhd_pair *started_under;
};

static void pair_free(struct cmhd_pair *p) {
    for (unsigned int i = 0; i < p->length; i++) gnutls_pcert_deinit(&p->chain[i]);
    if (p->key) gnutls_privkey_deinit(p->key);
    free(p);
}

/// Frees retired pairs from the oldest on, while no open connection started under them.
/// A connection takes the pair current at its handshake, which is never older than the
/// one current when it started; so once every connection that started under a pair or an
/// older one has closed, nobody can hold it. Called with the lock held.
static void sweep(struct cmhd_tls *tls) {
    while (tls->oldest && tls->oldest != tls->current && tls->oldest->connections == 0) {
        struct cmhd_pair *p = tls->oldest;
        tls->oldest = p->newer;
        pair_free(p);
    }
}

struct cmhd_tls *cmhd_tls_create(void) {
    struct cmhd_tls *tls = calloc(1, sizeof *tls);
    if (tls) pthread_mutex_init(&tls->lock, NULL);
    return tls;
}

void cmhd_tls_destroy(struct cmhd_tls *tls) {
    if (!tls) return;
    struct cmhd_pair *p = tls->oldest;
    while (p) {
        struct cmhd_pair *next = p->newer;
        pair_free(p);
        p = next;
    }
    pthread_mutex_destroy(&tls->lock);
    free(tls);
}

const char *cmhd_tls_strerror(int code) { return gnutls_strerror(code); }

static int fail(struct cmhd_tls_error *e, const char *call, int file, int err_no, int code) {
    e->call = call;
    e->file = file;
    e->err_no = err_no;
    e->gnutls_code = code;
    return -1;
}

/// Reads a whole PEM file into `out` (NUL-terminated, caller frees out->data).
static int read_pem(const char *path, int file, gnutls_datum_t *out, struct cmhd_tls_error *e) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(e, "open", file, errno, 0);
    struct stat st;
    if (fstat(fd, &st) != 0) { int er = errno; close(fd); return fail(e, "fstat", file, er, 0); }
    if (!S_ISREG(st.st_mode) || st.st_size > CMHD_MAX_PEM) {
        close(fd);
        return fail(e, "fstat", file, S_ISDIR(st.st_mode) ? EISDIR : EFBIG, 0);
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) { close(fd); return fail(e, "malloc", file, ENOMEM, 0); }
    while (n < cap - 1) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { int er = errno; free(buf); close(fd); return fail(e, "read", file, er, 0); }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    out->data = buf;
    out->size = (unsigned int)n;
    return 0;
}

int cmhd_tls_load(struct cmhd_tls *tls, const char *certificate_path, const char *key_path,
                  struct cmhd_tls_error *e) {
    memset(e, 0, sizeof *e);
    gnutls_datum_t cert = {NULL, 0}, key = {NULL, 0};
    struct cmhd_pair *p = NULL;
    int rc = -1, code;
    if (read_pem(certificate_path, 0, &cert, e) != 0) goto out;
    if (read_pem(key_path, 1, &key, e) != 0) goto out;
    if (!(p = calloc(1, sizeof *p))) { fail(e, "malloc", 2, ENOMEM, 0); goto out; }
    p->length = CMHD_MAX_CHAIN;
    code = gnutls_pcert_list_import_x509_raw(p->chain, &p->length, &cert, GNUTLS_X509_FMT_PEM, 0);
    if (code < 0) { p->length = 0; fail(e, "gnutls_pcert_list_import_x509_raw", 0, 0, code); goto out; }
    if (p->length == 0) { fail(e, "gnutls_pcert_list_import_x509_raw", 0, 0, GNUTLS_E_NO_CERTIFICATE_FOUND); goto out; }
    if ((code = gnutls_privkey_init(&p->key)) < 0) { fail(e, "gnutls_privkey_init", 1, 0, code); goto out; }
    code = gnutls_privkey_import_x509_raw(p->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (code < 0) { fail(e, "gnutls_privkey_import_x509_raw", 1, 0, code); goto out; }
    // The key must belong to the certificate, or every handshake would fail after the swap:
    // GnuTLS checks the pair when both go into a credentials structure together.
    gnutls_certificate_credentials_t check;
    if ((code = gnutls_certificate_allocate_credentials(&check)) < 0) {
        fail(e, "gnutls_certificate_allocate_credentials", 2, 0, code);
        goto out;
    }
    code = gnutls_certificate_set_x509_key_mem2(check, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
    gnutls_certificate_free_credentials(check);
    if (code < 0) { fail(e, "gnutls_certificate_set_x509_key_mem2", 2, 0, code); goto out; }

    pthread_mutex_lock(&tls->lock);
    if (tls->current) tls->current->newer = p; else tls->oldest = p;
    tls->current = p;
    p = NULL;
    sweep(tls);
    pthread_mutex_unlock(&tls->lock);
    rc = 0;
out:
    if (p) pair_free(p);
    if (cert.data) { memset(cert.data, 0, cert.size); free(cert.data); }
    if (key.data) { memset(key.data, 0, key.size); free(key.data); }
    return rc;
}

int cmhd_tls_fingerprint(struct cmhd_tls *tls, uint8_t out[32]) {
    size_t size = 32;
    pthread_mutex_lock(&tls->lock);
    int code = tls->current ? gnutls_fingerprint(GNUTLS_DIG_SHA256, &tls->current->chain[0].cert, out, &size)
                            : GNUTLS_E_NO_CERTIFICATE_FOUND;
    pthread_mutex_unlock(&tls->lock);
    return code;
}

void cmhd_tls_connection_started(struct cmhd_tls *tls, void **socket_context) {
    struct cmhd_tls_connection *c = malloc(sizeof *c);
    if (!c) { *socket_context = NULL; return; }
    c->tls = tls;
    pthread_mutex_lock(&tls->lock);
    c->started_under = tls->current;
    if (c->started_under) c->started_under->connections++;
    pthread_mutex_unlock(&tls->lock);
    *socket_context = c;
}

void cmhd_tls_connection_closed(struct cmhd_tls *tls, void **socket_context) {
    struct cmhd_tls_connection *c = *socket_context;
    if (!c) return;
    *socket_context = NULL;
    pthread_mutex_lock(&tls->lock);
    if (c->started_under) c->started_under->connections--;
    sweep(tls);
    pthread_mutex_unlock(&tls->lock);
    free(c);
}

/// gnutls_certificate_retrieve_function2: the current pair for every new handshake. MHD
/// sets the session's pointer to its connection, whose socket context names our store.
static int retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *privkey) {
    (void)req_ca_rdn; (void)nreqs; (void)pk_algos; (void)pk_algos_length;
    struct MHD_Connection *connection = gnutls_session_get_ptr(session);
    const union MHD_ConnectionInfo *info =
        connection ? MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    struct cmhd_tls_connection *c = info ? info->socket_context : NULL;
    if (!c) return -1;
    pthread_mutex_lock(&c->tls->lock);
    struct cmhd_pair *p = c->tls->current;
    if (p) {
        *pcert = p->chain;
        *pcert_length = p->length;
        *privkey = p->key;
    }
    pthread_mutex_unlock(&c->tls->lock);
    return p ? 0 : -1;
}

/* Slots of libmicrohttpd's Digest nonce table (nonce -> highest count seen). 0.9.75 picks a
 * nonce's slot as hash % size, and its hash of a hex nonce takes about 2^20 values whose low
 * ten bits take only 128: a power-of-two size such as 1024 used 128 slots, and a page load's
 * burst of fresh nonces evicted one another (a right answer then fails: DigestAnswer.swift).
 * A prime size uses every slot; 16381 slots of 145 bytes are 2.3 MB of address space, each
 * page resident only once a nonce lands in it. */
#define CMHD_NONCE_SLOTS 16381u

struct MHD_Daemon *cmhd_start(
    unsigned int flags, const struct sockaddr_in *addr,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    MHD_NotifyConnectionCallback notify, void *notify_cls,
    MHD_AcceptPolicyCallback accept, void *accept_cls,
    unsigned int connection_limit, unsigned int connection_timeout,
    struct cmhd_tls *tls, const char *priorities,
    const void *digest_random, size_t digest_random_size, unsigned int threads) {
    /* A pool of one is MHD's single polling thread: the option is left out then. */
    const enum MHD_OPTION pool = threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END;
    if (!tls) {
        return MHD_start_daemon(flags, 0, accept, accept_cls, handler, handler_cls,
            MHD_OPTION_DIGEST_AUTH_RANDOM, digest_random_size, digest_random,
            MHD_OPTION_NONCE_NC_SIZE, CMHD_NONCE_SLOTS,
            MHD_OPTION_SOCK_ADDR, addr,
            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
            MHD_OPTION_NOTIFY_CONNECTION, notify, notify_cls,
            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout,
            MHD_OPTION_UNESCAPE_CALLBACK, cmhd_no_unescape, NULL,
            pool, threads,
            MHD_OPTION_END);
    }
    return MHD_start_daemon(flags | MHD_USE_TLS, 0, accept, accept_cls, handler, handler_cls,
        MHD_OPTION_DIGEST_AUTH_RANDOM, digest_random_size, digest_random,
        MHD_OPTION_NONCE_NC_SIZE, CMHD_NONCE_SLOTS,
        MHD_OPTION_SOCK_ADDR, addr,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
        MHD_OPTION_NOTIFY_CONNECTION, notify, notify_cls,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout,
        MHD_OPTION_UNESCAPE_CALLBACK, cmhd_no_unescape, NULL,
        MHD_OPTION_HTTPS_PRIORITIES, priorities,
        MHD_OPTION_HTTPS_CERT_CALLBACK, &retrieve,
        pool, threads,
        MHD_OPTION_END);
}
