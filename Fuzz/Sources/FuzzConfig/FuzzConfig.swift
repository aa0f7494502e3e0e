// libFuzzer target: config.json, through Configuration.parse (strict JSON, every key typed
// and range-checked, unknown keys refused, cross-field validation).
//
// Input: the file's bytes.
//
// Invariants beyond "no crash":
//  - A configuration that parses is valid (validate() passes) and stays inside the ranges
//    the server relies on (ports, counts, qualities, rates, unique camera ids).
//  - check-config's output reads back: parse(c.jsonText) == c, and printing that again gives
//    the same text (README: "prints the configuration serve would use").
//  - A refusal is a message, never empty.

import JSON
import ViewfinderApp

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size <= 65536 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let c: Configuration
    do { c = try Configuration.parse(bytes) } catch {
        precondition(!error.description.isEmpty)
        return 0
    }
    do { try c.validate() } catch { preconditionFailure("parsed but invalid: \(error)") }
    precondition((0...65535).contains(c.server.port) && c.server.maxConnections >= 1 && c.server.maxConnectionsPerAddress >= 1)
    precondition((1...100).contains(c.stream.quality) && (1...100).contains(c.capture.quality))
    precondition(c.stream.maxFps.map { (1...120).contains($0) } ?? true && (1...120).contains(c.session.fps))
    precondition(c.server.threads.map { (1...64).contains($0) } ?? true && c.server.maxConnections >= 1)
    precondition(Configuration.Stream.workersRange.contains(c.stream.workers))
    precondition(c.metadata.rate.isFinite && (0.1...60).contains(c.metadata.rate))
    precondition(c.motion.problem == nil, "motion settings parsed out of range")
    precondition((c.storage.maxBytes ?? 1) >= 1 && (c.storage.maxAge ?? 1) >= 1 && (c.storage.minFreeBytes ?? 0) >= 0)
    if case .list(let entries) = c.cameras {
        precondition(!entries.isEmpty)
        precondition(Set(entries.map(\.id)).count == entries.count, "duplicate camera ids")
        for e in entries {
            precondition(!e.id.isEmpty)
            if let led = e.torchLED { precondition(!led.isEmpty && !led.contains("/") && !led.hasPrefix(".")) }
        }
    }
    for l in c.server.listen { precondition((0...65535).contains(l.port) && !l.camera.isEmpty) }

    let text = c.jsonText
    let again: Configuration
    do { again = try Configuration.parse(Array(text.utf8)) } catch {
        preconditionFailure("check-config's output does not read back: \(error)\n\(text)")
    }
    precondition(again == c, "check-config's output reads back as another configuration:\n\(text)\nfrom\n\(String(decoding: bytes, as: UTF8.self))")
    precondition(again.jsonText == text, "jsonText is not a fixed point")
    return 0
}
