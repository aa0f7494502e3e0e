import Foundation
import Testing

/// The saved state on a disk that will not take it (issue 57): a real full disk and a real
/// read-only file system, each a tmpfs mounted in a user and mount namespace the server runs in
/// alone (`unshare`, as FullDiskTests' disk). The change is applied all the same, the state
/// says it could not be saved and why, the server serves on, and a file that was there is read.
extension ProcessTests {
    /// The server's state, through its API (the disk is its namespace's alone).
    func stateReport(_ port: Int) async throws -> [String: Any] {
        try #require(try await fetch(port, "/api/state").json as? [String: Any])
    }

    func zoom(_ port: Int, camera: String = "rear") async throws -> Double? {
        let s = try await fetch(port, "/api/cameras/\(camera)/session").json as? [String: Any]
        return (s?["zoom"] as? [String: Any])?["factor"] as? Double
    }

    /// Runs the server with its state directory on a tmpfs that `prepare` (a shell line, `$0` the
    /// mount point) made ready, and answers the process and its port.
    func launchOnDisk(_ dir: String, size: String, prepare: String) async throws -> (Process, Int) {
        try FileManager.default.createDirectory(atPath: dir + "/disk", withIntermediateDirectories: true)
        let config = dir + "/config.json"
        try Data(#"{"state": {"directory": "\#(dir)/disk/state"}}"#.utf8).write(to: URL(fileURLWithPath: config))
        let mount = #"mount -t tmpfs -o size=\#(size) tmpfs "$0" && mkdir -p "$0/state" && \#(prepare) && exec "$@""#
        let (p, port, _) = try await launch(["--config", config],
                                            under: ["/usr/bin/unshare", "--user", "--map-root-user", "--mount", "--",
                                                    "/bin/sh", "-c", mount, dir + "/disk"])
        return (p, port)
    }

    @Test func aFullDiskKeepsTheChangeAppliedAndSaysItIsNotSaved() async throws {
        let dir = NSTemporaryDirectory() + "vf-state-full-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Every byte of the disk taken before the server starts (head stops at the full disk).
        let (p, port) = try await launchOnDisk(dir, size: "1m", prepare: #"{ head -c 2097152 /dev/zero > "$0/filler" 2>/dev/null || true; }"#)
        defer { p.terminate() }
        #expect(try await fetch(port, "POST", "/api/cameras/rear/session/zoom", body: #"{"factor": 2}"#).status == 200)
        let said = try await eventually { (try await self.stateReport(port))["error"] as? String != nil }
        let report = try await stateReport(port)
        #expect(said && report["saved"] as? Bool == false, "\(report)")
        #expect((report["error"] as? String)?.contains("No space left on device") == true, "\(report)")
        #expect(try await zoom(port) == 2, "the change is applied, unsaved")
        #expect(try await fetch(port, "/healthz").status == 200)
    }

    @Test func aReadOnlyDirectoryIsReadAndAChangeAppliedUnsaved() async throws {
        let dir = NSTemporaryDirectory() + "vf-state-ro-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A state saved before (zoom 3), then the file system made read-only under it.
        let saved = #"{"version": 1, "state": {"cameras": {"rear": {"zoom": {"factor": 3}}}}}"#
        let (p, port) = try await launchOnDisk(dir, size: "1m", prepare: #"printf '%s' '\#(saved)' > "$0/state/state.json" && mount -o remount,ro "$0""#)
        defer { p.terminate() }
        let before = try await stateReport(port)
        #expect(before["loadedFrom"] as? String == "current" && (before["problems"] as? [Any])?.isEmpty == true, "\(before)")
        #expect(try await zoom(port) == 3, "what was saved is read from a read-only disk")
        #expect(try await fetch(port, "POST", "/api/cameras/rear/session/zoom", body: #"{"factor": 2}"#).status == 200)
        let said = try await eventually { (try await self.stateReport(port))["error"] as? String != nil }
        let report = try await stateReport(port)
        #expect(said && report["saved"] as? Bool == false, "\(report)")
        #expect((report["error"] as? String)?.contains("Read-only file system") == true, "\(report)")
        #expect(try await zoom(port) == 2, "the change is applied, unsaved")
    }
}
