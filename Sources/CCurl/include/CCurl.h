// The part of libcurl that swarmgate uses, behind one header, loaded when first used
// (`swarmgate_curl_load`, see CLoader.h): libcurl's types and constants come from its header,
// its functions through `swarmgate_curl_*`, which the process resolves from libcurl.so.4.
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: the typed
// `setopt`/`getinfo` functions can.
#ifndef SWARMGATE_CCURL_H
#define SWARMGATE_CCURL_H

// curl.h makes curl_easy_setopt and curl_easy_getinfo type-checking macros for some
// compilers (clang from curl 8.16): this file calls them through pointers instead.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

/// Loads libcurl and every function below, the first time; NULL when they are there, else
/// why not (the same answer every time). Call it, and see NULL, before any other.
const char *swarmgate_curl_load(void);

CURLcode swarmgate_curl_global_init(long flags);
CURL *swarmgate_curl_easy_init(void);
void swarmgate_curl_easy_cleanup(CURL *h);
CURLcode swarmgate_curl_easy_pause(CURL *h, int bitmask);
const char *swarmgate_curl_easy_strerror(CURLcode code);
CURLM *swarmgate_curl_multi_init(void);
CURLMcode swarmgate_curl_multi_cleanup(CURLM *m);
CURLMcode swarmgate_curl_multi_add_handle(CURLM *m, CURL *h);
CURLMcode swarmgate_curl_multi_remove_handle(CURLM *m, CURL *h);
CURLMcode swarmgate_curl_multi_perform(CURLM *m, int *running);
CURLMcode swarmgate_curl_multi_poll(CURLM *m, struct curl_waitfd *fds, unsigned int count, int timeoutMilliseconds, int *ready);
CURLMcode swarmgate_curl_multi_wakeup(CURLM *m);
CURLMsg *swarmgate_curl_multi_info_read(CURLM *m, int *left);
const char *swarmgate_curl_multi_strerror(CURLMcode code);
struct curl_slist *swarmgate_curl_slist_append(struct curl_slist *list, const char *text);
void swarmgate_curl_slist_free_all(struct curl_slist *list);
CURLU *swarmgate_curl_url(void);
void swarmgate_curl_url_cleanup(CURLU *u);
CURLUcode swarmgate_curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags);
CURLUcode swarmgate_curl_url_get(CURLU *u, CURLUPart what, char **part, unsigned int flags);
void swarmgate_curl_free(void *p);
/// curl_version_info for the headers' own version (CURLVERSION_NOW is a macro Swift cannot see).
curl_version_info_data *swarmgate_curl_version_info(void);

CURLcode swarmgate_curl_setopt_long(CURL *h, CURLoption o, long v);
CURLcode swarmgate_curl_setopt_string(CURL *h, CURLoption o, const char *v);
CURLcode swarmgate_curl_setopt_pointer(CURL *h, CURLoption o, void *v);
CURLcode swarmgate_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v);
CURLcode swarmgate_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v);
typedef size_t (*swarmgate_curl_data_callback)(char *, size_t, size_t, void *);
CURLcode swarmgate_curl_setopt_data_callback(CURL *h, CURLoption o, swarmgate_curl_data_callback v);
CURLcode swarmgate_curl_getinfo_long(CURL *h, CURLINFO i, long *v);
CURLcode swarmgate_curl_getinfo_string(CURL *h, CURLINFO i, char **v);
CURLcode swarmgate_curl_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v);
CURLMcode swarmgate_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v);

typedef curl_socket_t (*swarmgate_curl_opensocket_callback)(void *, curlsocktype, struct curl_sockaddr *);
CURLcode swarmgate_curl_setopt_opensocket_callback(CURL *h, swarmgate_curl_opensocket_callback v);

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

#endif
