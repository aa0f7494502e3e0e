// glibc's malloc tuning (mallopt), which Swift's Glibc module does not export.
#ifndef CMALLOC_SHIM_H
#define CMALLOC_SHIM_H
#include <malloc.h>
#endif
