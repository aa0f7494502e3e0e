// GnuTLS's hashes and random numbers (Debian's libgnutls28-dev): SHA-256 and MD5 for
// Digest's HA1 and token fingerprints, HMAC-SHA1 for TURN credentials, and the random bytes
// of tokens.
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
