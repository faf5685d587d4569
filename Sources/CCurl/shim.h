// The part of libcurl that swarmgate uses, behind one header. curl_easy_setopt and
// curl_easy_getinfo are variadic, which Swift cannot call: these typed shims can.
#ifndef SWARMGATE_CCURL_SHIM_H
#define SWARMGATE_CCURL_SHIM_H

#include <curl/curl.h>
#include <stdlib.h>

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

/// curl_version_info for the headers' own version (CURLVERSION_NOW is a macro Swift cannot see).
static inline curl_version_info_data *swarmgate_curl_version_info(void) {
    return curl_version_info(CURLVERSION_NOW);
}

#endif
