// Only the declaration in include/CFuzzDriver.h; the definition is libFuzzer's
// (-sanitize=fuzzer links libclang_rt.fuzzer).
#include "CFuzzDriver.h"
