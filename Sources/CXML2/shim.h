// libxml2: SOAP envelopes read and written (the SOAP module alone).

// Debian's libxml2 is built with ICU, so its encoding.h includes the system's ICU headers,
// whose UErrorCode differs from the one Foundation carries (_FoundationICU): any module that
// loads both — every module above SOAP, whatever the access level of SOAP's import — fails
// to build ("'UErrorCode' has different definitions in different modules"). Nothing here
// touches an encoding handler's fields (the only ones ICU adds; Swift sees the handler only
// by pointer), so the headers are read as if libxml2 had no ICU.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlsave.h>

// libxml2's deallocator is a global function pointer (xmlFree), which Swift 6 sees as shared
// mutable state: called through this instead.
static inline void vf_xml_free(void *p) { xmlFree(p); }
