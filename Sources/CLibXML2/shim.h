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
}

#endif
