// `viewfinder user add|remove` and `token add|remove`: the accounts written into
// config.json, the rest of the file kept. Only hashes are written; the password is read
// from standard input (never from the command line), without echo on a terminal.

import Auth
import Foundation
import HTTPServer
import SystemSupport
import JSON

public enum AccountsFile {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// `onvif`: the password is kept too (ONVIF's PasswordDigest needs it), and the file is
    /// made readable by its owner and group only.
    public static func addUser(_ name: String, role: String, password: String, onvif: Bool = false, config path: String) throws(Failure) {
        guard let role = Role(rawValue: role) else { throw Failure(description: "--role: '\(role)' is not viewer or operator") }
        guard !password.isEmpty else { throw Failure(description: "an empty password") }
        try edit(path) { auth throws(Failure) in
            try check(name)
            let record: UserRecord
            do { record = try UserRecord.make(name: name, role: role, password: password, realm: auth.realm, onvif: onvif) } catch {
                throw Failure(description: "hashing the password: \(error)")
            }
            auth.users.removeAll { $0.name == name }  // adding again changes the password
            auth.users.append(record)
        }
    }

    public static func removeUser(_ name: String, config path: String) throws(Failure) {
        try edit(path) { auth throws(Failure) in
            guard auth.users.contains(where: { $0.name == name }) else { throw Failure(description: "no user '\(name)'") }
            auth.users.removeAll { $0.name == name }
        }
    }

    /// Adds a token and answers it: it is shown once and only its SHA-256 is kept.
    public static func addToken(_ name: String, role: String, config path: String) throws(Failure) -> String {
        guard let role = Role(rawValue: role) else { throw Failure(description: "--role: '\(role)' is not viewer or operator") }
        var token = ""
        try edit(path) { auth throws(Failure) in
            try check(name)
            guard !auth.tokens.contains(where: { $0.name == name }) else { throw Failure(description: "a token '\(name)' exists; remove it first") }
            do {
                let made = try TokenRecord.make(name: name, role: role)
                token = made.token
                auth.tokens.append(made.record)
            } catch { throw Failure(description: "making a token: \(error)") }
        }
        return token
    }

    public static func removeToken(_ name: String, config path: String) throws(Failure) {
        try edit(path) { auth throws(Failure) in
            guard auth.tokens.contains(where: { $0.name == name }) else { throw Failure(description: "no token '\(name)'") }
            auth.tokens.removeAll { $0.name == name }
        }
    }

    static func check(_ name: String) throws(Failure) {
        guard !name.isEmpty, !name.contains(":"), !name.contains("\""), name.unicodeScalars.allSatisfy({ $0.value >= 0x20 }) else {
            throw Failure(description: "'\(name)' is not a name (no ':', quotes or control characters)")
        }
    }

    /// Reads the file (or starts one), lets `change` edit its `auth`, checks the result as a
    /// whole configuration, and replaces the file atomically with the same permissions.
    static func edit(_ path: String, _ change: (inout AuthSettings) throws(Failure) -> Void) throws(Failure) {
        var root: [String: JSONValue] = [:]
        var data: [UInt8]?  // none: a file to start
        do { data = try Sys.readFile(path) } catch { guard error.errno == ENOENT else { throw Failure(description: "\(error)") } }
        if let data {
            guard case .object(let o)? = try? JSONValue.parse(data) else {
                throw Failure(description: "\(path): not a JSON object")
            }
            root = o
        }
        var auth = AuthSettings()
        if let a = root["auth"] {
            do throws(JSONFieldError) { auth = try AuthConfiguration.decode(a) } catch { throw Failure(description: "\(path): \(error)") }
        }
        if auth.mode == .none { auth.mode = .accounts }
        try change(&auth)
        auth.mode = auth.users.isEmpty && auth.tokens.isEmpty ? .unconfigured : .accounts
        root["auth"] = AuthConfiguration.encode(auth)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard var bytes = try? [UInt8](encoder.encode(JSONValue.object(root))) else { throw Failure(description: "encoding the file") }
        bytes.append(0x0A)
        do throws(Configuration.Error) { _ = try Configuration.parse(bytes) } catch {
            throw Failure(description: "the result would not load: \(error)")
        }
        try replace(path, with: bytes, private: auth.users.contains { $0.onvifPassword != nil })
    }

    /// `private`: the file holds a password (ONVIF sign-in): no one but its owner and group may read it.
    static func replace(_ path: String, with bytes: [UInt8], private: Bool = false) throws(Failure) {
        var mode: mode_t? = nil
        if `private` { mode = ((try? Sys.stat(path)).map { $0.st_mode & 0o770 } ?? 0o600) }
        do throws(SystemError) { try AtomicFile.write(bytes, to: path, mode: mode) } catch {
            throw Failure(description: "writing \(path): \(error)")
        }
    }

    /// One line from standard input; on a terminal, prompted on standard error and not echoed.
    public static func readPassword(prompt: String) -> String? {
        let terminal = isatty(0) == 1
        // A terminal whose settings cannot be read is left as it is (not given zeroed ones back).
        let saved = terminal ? try? Sys.tcgetattr(0) : nil
        if terminal {
            // Echo off before the prompt shows: nothing typed after it is ever echoed.
            if var quiet = saved {
                quiet.c_lflag &= ~tcflag_t(ECHO)
                try? Sys.tcsetattr(0, TCSAFLUSH, quiet)
            }
            FileHandle.standardError.write(Data(prompt.utf8))
        }
        defer {
            if terminal {
                if let saved { try? Sys.tcsetattr(0, TCSAFLUSH, saved) }
                FileHandle.standardError.write(Data("\n".utf8))
            }
        }
        return readLine(strippingNewline: true)
    }
}
