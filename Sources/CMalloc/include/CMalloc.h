// The process's memory policy: glibc's malloc tuning (mallopt, set by a constructor in CMalloc.c
// before any thread starts) and transparent huge pages (prctl, variadic: Swift cannot call it).
// Linked into the viewfinder executable only.
#ifndef CMALLOC_H
#define CMALLOC_H
#include <malloc.h>

/// PR_SET_THP_DISABLE for this process and the threads it starts: 0, or the errno.
int vf_disable_transparent_huge_pages(void);
#endif
