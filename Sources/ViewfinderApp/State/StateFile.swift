// The saved state's file (issue 57): what a user changed since the configuration, kept apart
// from config.json (the user's own text, never rewritten behind their back). One JSON
// document, versioned, written whole or not at all, and the copy before it kept beside it:
//
//   state.json       {"version": 1, "state": {…}}   the last write
//   state.prev.json  the same, one write older: the last good copy when state.json is not
//
// A write goes to a temporary file that is fsynced, the current file becomes the previous
// one as well (a hard link renamed into place: state.json is there at every moment), the
// temporary file becomes the current one, and the directory is fsynced. What a killed write
// leaves (its temporary files) is removed at the next start.
// A file that cannot be used — truncated, not JSON, another version, unreadable — is set
// aside under a name that says so (`state.json.unusable-<unix time>`) and the reason told,
// never deleted and never a reason not to start.

import Foundation
import JSON
import SystemSupport

public struct StateFile: Sendable {
    /// The version this build writes and reads.
    public static let version = 1

    /// `state.json`'s path.
    public let path: String
    /// The last good copy's.
    public var previousPath: String { (path.hasSuffix(".json") ? String(path.dropLast(5)) : path) + ".prev.json" }

    public init(path: String) {
        self.path = path
    }

    /// The state read back, and how.
    public struct Loaded: Sendable, Equatable {
        /// Spelled as `GET /api/state`'s `loadedFrom` says it.
        public enum Source: String, Sendable, Equatable {
            /// `state.json`.
            case current
            /// `state.prev.json`, as `state.json` was missing or set aside.
            case previous
            /// Neither: the configuration's values.
            case none
        }
        public var state: JSONValue?
        public var source: Source
        /// What was wrong with a file, each set aside (the path it was moved to and why).
        public var problems: [String] = []

        public init(state: JSONValue?, source: Source, problems: [String] = []) {
            self.state = state
            self.source = source
            self.problems = problems
        }
    }

    /// Reads the state: `state.json`, else the last good copy, else none. A file that cannot
    /// be used is set aside, and said in `problems`.
    public func load(now: Double = Date().timeIntervalSince1970) -> Loaded {
        var problems: [String] = []
        for (candidate, source) in [(path, Loaded.Source.current), (previousPath, .previous)] {
            switch read(candidate) {
            case .missing:
                continue
            case .state(let state):
                return Loaded(state: state, source: source, problems: problems)
            case .unusable(let why):
                problems.append(setAside(candidate, why, now: now))
            }
        }
        return Loaded(state: nil, source: .none, problems: problems)
    }

    /// Writes `state` whole or not at all (see above), 0600 for a new file. Throws the call
    /// that failed (a full disk, a read-only directory); the files are then as they were.
    public func save(_ state: JSONValue) throws(SystemError) {
        let bytes = JSONValue.object(["version": .number(Double(Self.version)), "state": state]).encoded()
        do throws(SystemError) { try AtomicFile.write(bytes, to: path, keepingPrevious: previousPath) } catch {
            guard error.errno == ENOENT else { throw error }
            try makeDirectory()  // the first write: the directory is made (0700, the service's user's)
            try AtomicFile.write(bytes, to: path, keepingPrevious: previousPath)
        }
    }

    /// Makes the file's directory and those above it that are missing.
    private func makeDirectory() throws(SystemError) {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let directory = path[..<slash]
        var made = directory.hasPrefix("/") ? "" : "."
        for part in directory.split(separator: "/") {
            made += "/" + part
            do throws(SystemError) { try Sys.mkdir(made, mode: 0o700) } catch { if error.errno != EEXIST { throw error } }
        }
    }

    /// Forgets one camera's saved settings (`viewfinder state reset CAMERA`); false when none
    /// were saved. The previous copy is the state before the reset.
    public func removeCamera(_ id: String) throws(SystemError) -> Bool {
        guard case .object(var top)? = load().state, case .object(var cameras)? = top["cameras"],
              cameras.removeValue(forKey: id) != nil else { return false }
        top["cameras"] = .object(cameras)
        if case .string(id)? = top["main"] { top["main"] = nil }
        try save(.object(top))
        return true
    }

    /// Removes the temporary files a killed writer left (`….tmp-<pid>` of a process no longer
    /// running: never a state, never read); answers how many.
    @discardableResult
    public func removeLeftovers() -> Int {
        guard let slash = path.lastIndex(of: "/") else { return 0 }
        let directory = String(path[..<slash])
        let names = [path, previousPath].map { ($0.split(separator: "/").last.map(String.init) ?? $0) + ".tmp-" }
        var removed = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            guard let prefix = names.first(where: { name.hasPrefix($0) }), let pid = Int32(name.dropFirst(prefix.count)),
                  !Sys.processExists(pid) else { continue }
            if (try? Sys.unlink(directory + "/" + name)) != nil { removed += 1 }
        }
        return removed
    }

    /// Removes both copies (a factory reset of what was saved).
    public func remove() throws(SystemError) {
        for p in [path, previousPath] {
            do throws(SystemError) { try Sys.unlink(p) } catch { if error.errno != ENOENT { throw error } }
        }
        AtomicFile.syncDirectory(of: path)
    }

    private enum Reading {
        case missing
        case state(JSONValue)
        case unusable(String)
    }

    private func read(_ file: String) -> Reading {
        let bytes: [UInt8]
        do throws(SystemError) { bytes = try Sys.readFile(file) } catch {
            return error.errno == ENOENT ? .missing : .unusable(error.description)
        }
        guard let document = try? JSONValue.parse(bytes), case .object(let top) = document else {
            return .unusable(bytes.isEmpty ? "empty" : "not a JSON object (\(bytes.count) bytes: truncated or corrupt)")
        }
        guard case .number(let version)? = top["version"] else { return .unusable("no version") }
        guard version == Double(Self.version) else {
            return .unusable("version \(version == version.rounded() ? String(Int(version)) : String(version)), this build reads \(Self.version)")
        }
        guard let state = top["state"], case .object = state else { return .unusable("no state object") }
        return .state(state)
    }

    /// Moves `file` aside; answers what was done, for the log and the state.
    private func setAside(_ file: String, _ why: String, now: Double) -> String {
        let aside = "\(file).unusable-\(Int(now))"
        do throws(SystemError) {
            try Sys.rename(file, to: aside)
            AtomicFile.syncDirectory(of: file)
            return "\(file): \(why); set aside as \(aside)"
        } catch {
            return "\(file): \(why); could not be set aside (\(error)), left as it is"
        }
    }
}
