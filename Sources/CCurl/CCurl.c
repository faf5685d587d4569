#include "CCurl.h"

#include "CLoader.h"

// Every libcurl function swarmgate calls (each through a pointer of the type curl.h declares).
#define SWARMGATE_CURL_FUNCTIONS(X) \
    X(curl_global_init) \
    X(curl_easy_init) \
    X(curl_easy_cleanup) \
    X(curl_easy_setopt) \
    X(curl_easy_getinfo) \
    X(curl_easy_pause) \
    X(curl_easy_strerror) \
    X(curl_multi_init) \
    X(curl_multi_cleanup) \
    X(curl_multi_add_handle) \
    X(curl_multi_remove_handle) \
    X(curl_multi_perform) \
    X(curl_multi_poll) \
    X(curl_multi_wakeup) \
    X(curl_multi_info_read) \
    X(curl_multi_strerror) \
    X(curl_multi_setopt) \
    X(curl_slist_append) \
    X(curl_slist_free_all) \
    X(curl_url) \
    X(curl_url_cleanup) \
    X(curl_url_set) \
    X(curl_url_get) \
    X(curl_free) \
    X(curl_version_info)

// The OpenSSL build first (Debian's libcurl4), else the GnuTLS one (libcurl3-gnutls, which
// many hosts have for git): swarmgate uses nothing that differs between them.
SWARMGATE_LAZY_LIBRARY(SWARMGATE_CURL_FUNCTIONS, swarmgate_curl_load, "libcurl", ("libcurl.so.4", "libcurl-gnutls.so.4"),
                       ("libcurl.4.dylib"))

CURLcode swarmgate_curl_global_init(long flags) { return f.curl_global_init(flags); }
CURL *swarmgate_curl_easy_init(void) { return f.curl_easy_init(); }
void swarmgate_curl_easy_cleanup(CURL *h) { f.curl_easy_cleanup(h); }
CURLcode swarmgate_curl_easy_pause(CURL *h, int bitmask) { return f.curl_easy_pause(h, bitmask); }
const char *swarmgate_curl_easy_strerror(CURLcode code) { return f.curl_easy_strerror(code); }
CURLM *swarmgate_curl_multi_init(void) { return f.curl_multi_init(); }
CURLMcode swarmgate_curl_multi_cleanup(CURLM *m) { return f.curl_multi_cleanup(m); }
CURLMcode swarmgate_curl_multi_add_handle(CURLM *m, CURL *h) { return f.curl_multi_add_handle(m, h); }
CURLMcode swarmgate_curl_multi_remove_handle(CURLM *m, CURL *h) { return f.curl_multi_remove_handle(m, h); }
CURLMcode swarmgate_curl_multi_perform(CURLM *m, int *running) { return f.curl_multi_perform(m, running); }
CURLMcode swarmgate_curl_multi_poll(CURLM *m, struct curl_waitfd *fds, unsigned int count, int timeoutMilliseconds, int *ready) {
    return f.curl_multi_poll(m, fds, count, timeoutMilliseconds, ready);
}
CURLMcode swarmgate_curl_multi_wakeup(CURLM *m) { return f.curl_multi_wakeup(m); }
CURLMsg *swarmgate_curl_multi_info_read(CURLM *m, int *left) { return f.curl_multi_info_read(m, left); }
const char *swarmgate_curl_multi_strerror(CURLMcode code) { return f.curl_multi_strerror(code); }
struct curl_slist *swarmgate_curl_slist_append(struct curl_slist *list, const char *text) { return f.curl_slist_append(list, text); }
void swarmgate_curl_slist_free_all(struct curl_slist *list) { f.curl_slist_free_all(list); }
CURLU *swarmgate_curl_url(void) { return f.curl_url(); }
void swarmgate_curl_url_cleanup(CURLU *u) { f.curl_url_cleanup(u); }
CURLUcode swarmgate_curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags) { return f.curl_url_set(u, what, part, flags); }
CURLUcode swarmgate_curl_url_get(CURLU *u, CURLUPart what, char **part, unsigned int flags) { return f.curl_url_get(u, what, part, flags); }
void swarmgate_curl_free(void *p) { f.curl_free(p); }
curl_version_info_data *swarmgate_curl_version_info(void) { return f.curl_version_info(CURLVERSION_NOW); }

CURLcode swarmgate_curl_setopt_long(CURL *h, CURLoption o, long v) { return f.curl_easy_setopt(h, o, v); }
CURLcode swarmgate_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return f.curl_easy_setopt(h, o, v); }
CURLcode swarmgate_curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return f.curl_easy_setopt(h, o, v); }
CURLcode swarmgate_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return f.curl_easy_setopt(h, o, v); }
CURLcode swarmgate_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return f.curl_easy_setopt(h, o, v); }
CURLcode swarmgate_curl_setopt_data_callback(CURL *h, CURLoption o, swarmgate_curl_data_callback v) { return f.curl_easy_setopt(h, o, v); }
CURLcode swarmgate_curl_setopt_opensocket_callback(CURL *h, swarmgate_curl_opensocket_callback v) {
    return f.curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, v);
}
CURLcode swarmgate_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return f.curl_easy_getinfo(h, i, v); }
CURLcode swarmgate_curl_getinfo_string(CURL *h, CURLINFO i, char **v) { return f.curl_easy_getinfo(h, i, v); }
CURLcode swarmgate_curl_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return f.curl_easy_getinfo(h, i, v); }
CURLMcode swarmgate_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return f.curl_multi_setopt(m, o, v); }
