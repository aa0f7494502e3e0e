#include "CMalloc.h"
#include <errno.h>
#include <sys/prctl.h>

// Runs before main, and so before any thread exists: glibc gives a thread an arena of its own the
// first time it allocates (until the limit is reached), and no later mallopt merges arenas again.
// (A mallopt in main came too late: the Swift runtime's pool threads had already made a second
// arena.)
__attribute__((constructor)) static void vf_malloc_policy(void) {
    // One arena, the main one. malloc_trim gives back the free pages inside every arena but the
    // free memory at the top of the main arena only (glibc 2.36's mtrim; a thread arena's top
    // shrinks only past M_TRIM_THRESHOLD, below). With an arena per core the soak saw 10 to 16 MiB
    // of x264's freed buffers stay resident at a thread arena's top after every movie, so RSS at
    // the same idle state wandered by 20 %. Small allocations still take no lock (each thread's
    // tcache); frames are a few large allocations each.
    mallopt(M_ARENA_MAX, 1);
    // glibc trims and unmaps freed heap eagerly; on the frame path that turned every
    // tjTransform's large buffers into fresh page faults (2.4x slower here). Keep them between
    // frames; the server's periodic malloc_trim gives them back.
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

int vf_disable_transparent_huge_pages(void) {
    return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0 ? 0 : errno;
}
