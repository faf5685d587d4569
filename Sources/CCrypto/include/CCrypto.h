// SHA-256 and HMAC-SHA256 from OpenSSL's libcrypto (its EVP interface uses the CPU's SHA
// extensions where it has them), loaded when first used (see CLoader.h).
#ifndef SWARMGATE_CCRYPTO_H
#define SWARMGATE_CCRYPTO_H

#include <stddef.h>

/// Loads libcrypto and the functions below need, the first time; NULL when they are there,
/// else why not (the same answer every time). Call it, and see NULL, before any other.
const char *swarmgate_crypto_load(void);

/// The SHA-256 of `count` bytes at `data` into `out` (32 bytes); 1 when done.
int swarmgate_sha256(const void *data, size_t count, unsigned char *out);

/// A SHA-256 fed in parts: NULL when out of memory.
void *swarmgate_sha256_new(void);
/// Feeds `count` bytes; 1 when done.
int swarmgate_sha256_update(void *context, const void *data, size_t count);
/// The digest of everything fed (32 bytes into `out`), after which the context starts over;
/// 1 when done.
int swarmgate_sha256_finish(void *context, unsigned char *out);
void swarmgate_sha256_free(void *context);

/// HMAC-SHA256 of `count` bytes at `message` under `key` (32 bytes into `out`); 1 when done.
int swarmgate_hmac_sha256(const void *key, int keyLength, const void *message, size_t count, unsigned char *out);

#endif
