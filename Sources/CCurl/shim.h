// The part of libcurl that swarmgate uses, behind one header. curl_easy_setopt and
// curl_easy_getinfo are variadic, which Swift cannot call: these typed shims can.
#ifndef SWARMGATE_CCURL_SHIM_H
#define SWARMGATE_CCURL_SHIM_H

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

static inline CURLcode swarmgate_curl_setopt_long(CURL *h, CURLoption o, long v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode swarmgate_curl_setopt_string(CURL *h, CURLoption o, const char *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode swarmgate_curl_setopt_pointer(CURL *h, CURLoption o, void *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode swarmgate_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode swarmgate_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
    return curl_easy_setopt(h, o, v);
}
typedef size_t (*swarmgate_curl_data_callback)(char *, size_t, size_t, void *);
static inline CURLcode swarmgate_curl_setopt_data_callback(CURL *h, CURLoption o, swarmgate_curl_data_callback v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode swarmgate_curl_getinfo_long(CURL *h, CURLINFO i, long *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode swarmgate_curl_getinfo_string(CURL *h, CURLINFO i, char **v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode swarmgate_curl_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLMcode swarmgate_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}

typedef curl_socket_t (*swarmgate_curl_opensocket_callback)(void *, curlsocktype, struct curl_sockaddr *);
static inline CURLcode swarmgate_curl_setopt_opensocket_callback(CURL *h, swarmgate_curl_opensocket_callback v) {
    return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, v);
}

/// Macros Swift cannot import (composite or cast-valued) as constants.
static const size_t swarmgate_curl_writefunc_pause = CURL_WRITEFUNC_PAUSE;
static const int swarmgate_curlpause_cont = CURLPAUSE_CONT;
static const curl_socket_t swarmgate_curl_socket_bad = CURL_SOCKET_BAD;

/// The IP address a curl_sockaddr holds, in network byte order: 4 bytes for AF_INET, 16 for
/// AF_INET6 (written to `out`). Returns the address's length, or 0 for any other family.
/// (`struct curl_sockaddr` declares a bare `struct sockaddr` but curl stores a whole
/// sockaddr_in6 there, which is easier to read in C than in Swift.)
static inline int swarmgate_curl_sockaddr_ip(const struct curl_sockaddr *a, unsigned char out[16]) {
    if (a->family == AF_INET && a->addrlen >= sizeof(struct sockaddr_in)) {
        memcpy(out, &((const struct sockaddr_in *)&a->addr)->sin_addr, 4);
        return 4;
    }
    if (a->family == AF_INET6 && a->addrlen >= sizeof(struct sockaddr_in6)) {
        memcpy(out, &((const struct sockaddr_in6 *)&a->addr)->sin6_addr, 16);
        return 16;
    }
    return 0;
}

/// curl_version_info for the headers' own version (CURLVERSION_NOW is a macro Swift cannot see).
static inline curl_version_info_data *swarmgate_curl_version_info(void) {
    return curl_version_info(CURLVERSION_NOW);
}

#endif
