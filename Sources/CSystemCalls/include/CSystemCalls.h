// The libc calls the Sys funnel (SystemSupport, its one importer) makes that Swift's Glibc
// module does not import: fallocate(2) is a GNU extension, declared only under _GNU_SOURCE,
// which Swift's C headers are not read with. Each answers as the libc call does (-1 with errno
// set), so the funnel reads errno straight after it, as for every other call.
#ifndef CSYSTEMCALLS_H
#define CSYSTEMCALLS_H

/// fallocate(2)'s modes (linux/falloc.h).
enum { VF_FALLOC_KEEP_SIZE = 0x01, VF_FALLOC_PUNCH_HOLE = 0x02 };

/// fallocate(2): `mode` on `length` bytes at `offset` of `fd`.
int vf_fallocate(int fd, int mode, long long offset, long long length);
#endif
