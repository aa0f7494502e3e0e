// The version a build reports when nothing stamped one: a clean clone built with plain
// `swift build`. `make` (scripts/version) writes Sources/viewfinder/Version.swift, which is
// not committed and whose `viewfinderVersion` shadows this one inside the executable,
// from `git describe`. scripts/version reads the base version from this line.

public let viewfinderVersion = "0.1.0"
