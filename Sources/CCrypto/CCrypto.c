#include "CCrypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "CLoader.h"

// Every libcrypto function swarmgate calls: its type, and its name in libcrypto.
#define SWARMGATE_CRYPTO_FUNCTIONS(X)                                                                          \
    X(int, EVP_Digest, (const void *, size_t, unsigned char *, unsigned int *, const EVP_MD *, ENGINE *))      \
    X(const EVP_MD *, EVP_sha256, (void))                                                                      \
    X(EVP_MD_CTX *, EVP_MD_CTX_new, (void))                                                                    \
    X(void, EVP_MD_CTX_free, (EVP_MD_CTX *))                                                                   \
    X(int, EVP_DigestInit_ex, (EVP_MD_CTX *, const EVP_MD *, ENGINE *))                                        \
    X(int, EVP_DigestUpdate, (EVP_MD_CTX *, const void *, size_t))                                             \
    X(int, EVP_DigestFinal_ex, (EVP_MD_CTX *, unsigned char *, unsigned int *))                                \
    X(unsigned char *, HMAC, (const EVP_MD *, const void *, int, const unsigned char *, size_t, unsigned char *, \
                              unsigned int *))

SWARMGATE_LAZY_LIBRARY(SWARMGATE_CRYPTO_FUNCTIONS, swarmgate_crypto_load, "libcrypto.so.3", "libcrypto.3.dylib")

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
