#include "CCrypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "CLoader.h"

// Every libcrypto function swarmgate calls (each through a pointer of the type its headers declare).
#define SWARMGATE_CRYPTO_FUNCTIONS(X) \
    X(EVP_Digest) \
    X(EVP_sha256) \
    X(EVP_MD_CTX_new) \
    X(EVP_MD_CTX_free) \
    X(EVP_DigestInit_ex) \
    X(EVP_DigestUpdate) \
    X(EVP_DigestFinal_ex) \
    X(HMAC)

// OpenSSL 3, else 1.1 (the same functions, with the same types).
SWARMGATE_LAZY_LIBRARY(SWARMGATE_CRYPTO_FUNCTIONS, swarmgate_crypto_load, "libcrypto", ("libcrypto.so.3", "libcrypto.so.1.1"),
                       ("libcrypto.3.dylib"))

int swarmgate_sha256(const void *data, size_t count, unsigned char *out) {
    unsigned int size = 0;
    return f.EVP_Digest(data, count, out, &size, f.EVP_sha256(), NULL) == 1 && size == 32;
}

void *swarmgate_sha256_new(void) {
    EVP_MD_CTX *context = f.EVP_MD_CTX_new();
    if (context != NULL && f.EVP_DigestInit_ex(context, f.EVP_sha256(), NULL) != 1) {
        f.EVP_MD_CTX_free(context);
        return NULL;
    }
    return context;
}

int swarmgate_sha256_update(void *context, const void *data, size_t count) {
    return f.EVP_DigestUpdate(context, data, count) == 1;
}

int swarmgate_sha256_finish(void *context, unsigned char *out) {
    unsigned int size = 0;
    return f.EVP_DigestFinal_ex(context, out, &size) == 1 && size == 32 && f.EVP_DigestInit_ex(context, f.EVP_sha256(), NULL) == 1;
}

void swarmgate_sha256_free(void *context) { f.EVP_MD_CTX_free(context); }

int swarmgate_hmac_sha256(const void *key, int keyLength, const void *message, size_t count, unsigned char *out) {
    unsigned int size = 0;
    return f.HMAC(f.EVP_sha256(), key, keyLength, message, count, out, &size) != NULL && size == 32;
}
