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
#include <libxml/SAX2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/// What checking one document found: its first error (libxml2's last error is often a
/// consequence of the first, "Extra content at the end" after "AttValue length too long"), and
/// whether it declared a DTD or entities.
typedef struct {
    int code;
    int line;
    int declarations;
    char message[160];
} swarmgate_xml_check_result;

static void swarmgate_xml_record_error(void *userData, xmlErrorPtr error) {
    xmlParserCtxtPtr ctxt = (xmlParserCtxtPtr)userData;
    if (ctxt == NULL || ctxt->_private == NULL || error == NULL || error->level < XML_ERR_ERROR) return;
    swarmgate_xml_check_result *result = (swarmgate_xml_check_result *)ctxt->_private;
    if (result->code != 0) return;
    result->code = error->code;
    result->line = error->line;
    snprintf(result->message, sizeof result->message, "%s", error->message ? error->message : "XML error");
}

static void swarmgate_xml_saw_subset(void *userData, const xmlChar *name, const xmlChar *publicID, const xmlChar *systemID) {
    (void)name; (void)publicID; (void)systemID;
    xmlParserCtxtPtr ctxt = (xmlParserCtxtPtr)userData;
    if (ctxt != NULL && ctxt->_private != NULL) ((swarmgate_xml_check_result *)ctxt->_private)->declarations = 1;
}

static void swarmgate_xml_saw_entity(void *userData, const xmlChar *name, int type, const xmlChar *publicID,
                                     const xmlChar *systemID, xmlChar *content) {
    (void)type; (void)content;
    swarmgate_xml_saw_subset(userData, name, publicID, systemID);
}

/// Checks that `bytes` is a well-formed, namespace-well-formed XML document, with libxml2 as a
/// SAX parser that builds nothing: no tree, no entity expansion, no network, no DTD loading.
/// The bytes are read as UTF-8 whatever their declaration says. Options: NONET, IGNORE_ENC,
/// NOERROR, NOWARNING; never NOENT, DTDLOAD, DTDATTR, DTDVALID, HUGE or XINCLUDE, so
/// libxml2's own limits hold (nesting 256, names and attribute values 10,000,000 bytes).
/// Returns 1 when well-formed, 0 when not, -1 when out of memory.
static inline int swarmgate_xml_check(const char *bytes, int size, swarmgate_xml_check_result *result) {
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (ctxt == NULL) return -1;
    memset(ctxt->sax, 0, sizeof(xmlSAXHandler));
    ctxt->sax->initialized = XML_SAX2_MAGIC;
    ctxt->sax->serror = swarmgate_xml_record_error;
    ctxt->sax->internalSubset = swarmgate_xml_saw_subset;
    ctxt->sax->externalSubset = swarmgate_xml_saw_subset;
    ctxt->sax->entityDecl = swarmgate_xml_saw_entity;
    ctxt->_private = result;
    int options = XML_PARSE_NONET | XML_PARSE_IGNORE_ENC | XML_PARSE_NOERROR | XML_PARSE_NOWARNING;
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, bytes, size, NULL, "UTF-8", options);
    if (doc != NULL) xmlFreeDoc(doc);  // nothing builds one without a startDocument handler
    int wellFormed = ctxt->wellFormed && result->code == 0;
    xmlFreeParserCtxt(ctxt);
    return wellFormed ? 1 : 0;
}

#endif
