// libFuzzer's driver as a library call. SwiftPM links an executable target's entry point as
// `main` itself (`--defsym main=<Target>_main`), so libFuzzer's own main (FuzzerMain.o in
// libclang_rt.fuzzer) is never pulled in: each target's main.swift runs the driver.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
