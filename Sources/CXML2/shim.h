// libxml2: SOAP envelopes read and written (the SOAP module alone).
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlsave.h>

// libxml2's deallocator is a global function pointer (xmlFree), which Swift 6 sees as shared
// mutable state: called through this instead.
static inline void vf_xml_free(void *p) { xmlFree(p); }
