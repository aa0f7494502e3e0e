#define _GNU_SOURCE
#include "CSystemCalls.h"
#include <fcntl.h>

int vf_fallocate(int fd, int mode, long long offset, long long length) {
    return fallocate(fd, mode, (off_t)offset, (off_t)length);  // errno as fallocate left it
}
