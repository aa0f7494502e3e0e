// libFuzzer's driver with this target's LLVMFuzzerTestOneInput (see CFuzzDriver.h).
import CFuzzDriver
import Foundation

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data!, size) })
