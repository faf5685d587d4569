#ifndef SWARMGATE_CCRYPTO_SHIM_H
#define SWARMGATE_CCRYPTO_SHIM_H
// OpenSSL's libcrypto, for SHA-256 (piece checksums) through the EVP interface, which uses
// the CPU's SHA extensions where it has them.
#include <openssl/evp.h>
#include <openssl/hmac.h>
#endif
