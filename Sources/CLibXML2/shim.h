// The part of libxml2 that swarmgate uses, behind one header.
#ifndef SWARMGATE_CLIBXML2_SHIM_H
#define SWARMGATE_CLIBXML2_SHIM_H

#include <libxml/xmlversion.h>
// Debian builds libxml2 with ICU, and encoding.h then includes ICU's headers, whose types clash
// with the ICU copy inside Foundation. swarmgate never touches the encoder structs whose layout
// this changes (it only passes their pointers around), so ICU stays out of the module.
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlsave.h>
#include <stdio.h>
#include <stdlib.h>

/// The libxml2 version the process runs with, as LIBXML_VERSION's number (e.g. 20914).
static inline int swarmgate_xml_runtime_version(void) {
    return xmlParserVersion ? atoi(xmlParserVersion) : 0;
}

/// Turns off libxml2's default error printing (it goes to stderr otherwise); errors are read
/// from the parser context instead.
static void swarmgate_xml_silent_error(void *ctx, const char *msg, ...) { (void)ctx; (void)msg; }
static inline void swarmgate_xml_silence_errors(void) {
    xmlSetGenericErrorFunc(NULL, swarmgate_xml_silent_error);
    // The default for threads that have not touched libxml2 yet (the setting is per thread).
    xmlThrDefSetGenericErrorFunc(NULL, swarmgate_xml_silent_error);
}

/// The first error of one parse: what swarmgate reports, since libxml2's last error is often a
/// consequence of the first ("Extra content at the end" after "AttValue length too long").
typedef struct {
    int code;
    int line;
    char message[160];
} swarmgate_xml_error;

static void swarmgate_xml_record_error(void *userData, xmlErrorPtr error) {
    xmlParserCtxtPtr ctxt = (xmlParserCtxtPtr)userData;
    if (ctxt == NULL || ctxt->_private == NULL || error == NULL || error->level < XML_ERR_ERROR) return;
    swarmgate_xml_error *first = (swarmgate_xml_error *)ctxt->_private;
    if (first->code != 0) return;
    first->code = error->code;
    first->line = error->line;
    snprintf(first->message, sizeof first->message, "%s", error->message ? error->message : "XML error");
}

/// A parser context that records its first error into `sink` and prints nothing. The context
/// is libxml2's SAX2 user data, so the structured handler receives it.
static inline xmlParserCtxtPtr swarmgate_xml_new_parser(swarmgate_xml_error *sink) {
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (ctxt == NULL) return NULL;
    ctxt->_private = sink;
    ctxt->sax->serror = swarmgate_xml_record_error;
    return ctxt;
}

/// The only parse options swarmgate uses: no network, the caller's encoding (UTF-8) instead of
/// the document's declaration, line numbers past 65535, errors recorded rather than printed.
/// Never NOENT, DTDLOAD, DTDATTR, DTDVALID, HUGE or XINCLUDE.
static inline int swarmgate_xml_safe_parse_options(void) {
    return XML_PARSE_NONET | XML_PARSE_IGNORE_ENC | XML_PARSE_BIG_LINES | XML_PARSE_NOERROR | XML_PARSE_NOWARNING;
}

/// Save options: no reformatting; `declaration` 0 drops the XML declaration.
static inline int swarmgate_xml_save_options(int declaration) {
    return declaration ? 0 : XML_SAVE_NO_DECL;
}

static inline void swarmgate_xml_free(void *p) { xmlFree(p); }

#endif
