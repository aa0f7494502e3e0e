// The `auth` section of config.json, read strictly like the rest: `"none"`, or realm,
// digest challenge, metrics access, the brute-force limit, users and tokens. A password in
// plaintext is refused: only hashes written by `viewfinder user add` belong here — except a
// user's `onvifPassword`, written by `viewfinder user add --onvif` (ONVIF's PasswordDigest is
// checked against the password itself).

import Auth
import HTTPServer
import JSON

enum AuthConfiguration {
    static func decode(_ v: JSONValue) throws(JSONFieldError) -> AuthSettings {
        var a = AuthSettings()
        if case .string("none") = v { a.mode = .none; return a }
        guard case .object = v else {
            throw JSONFieldError(path: "auth", problem: "expected \"none\" or an object with users and tokens")
        }
        let r = try JSONObjectReader(v, path: "auth")
        a.realm = try r.string("realm") ?? a.realm
        if a.realm.isEmpty || a.realm.contains("\"") { throw JSONFieldError(path: "auth.realm", problem: "needs a name without quotes") }
        a.digestChallenge = try r.string("digest", allowed: ["MD5", "SHA-256"]) ?? a.digestChallenge
        a.metricsOpen = (try r.string("metrics", allowed: ["viewer", "open"]) ?? "viewer") == "open"
        a.failuresPerMinute = try r.int("failuresPerMinute", in: 1...10_000) ?? a.failuresPerMinute
        a.nonceLifetime = try r.int("nonceLifetime", in: 1...86_400) ?? a.nonceLifetime
        if let users = r.value("users") {
            guard case .array(let items) = users else { throw JSONFieldError(path: "auth.users", problem: "expected a list") }
            for (i, item) in items.enumerated() {
                let u = try JSONObjectReader(item, path: "auth.users[\(i)]")
                let name = try nameField(u, "auth.users[\(i)].name")
                let role = try roleField(u, "auth.users[\(i)].role")
                guard let hash = try u.string("password"), hash.hasPrefix("$"), hash.count > 20 else {
                    throw JSONFieldError(path: "auth.users[\(i)].password", problem: "expected a password hash ($y$…); never a password — use `viewfinder user add`")
                }
                let md5 = try hexField(u, "digestMD5", 32, "auth.users[\(i)]")
                let sha = try hexField(u, "digestSHA256", 64, "auth.users[\(i)]")
                // ONVIF's PasswordDigest needs the password itself (`viewfinder user add --onvif`).
                let onvif = try u.string("onvifPassword")
                if let onvif, onvif.isEmpty { throw JSONFieldError(path: "auth.users[\(i)].onvifPassword", problem: "empty: leave it out for no ONVIF sign-in") }
                try u.finish()
                if a.users.contains(where: { $0.name == name }) { throw JSONFieldError(path: "auth.users[\(i)].name", problem: "'\(name)' is used twice") }
                a.users.append(UserRecord(name: name, role: role, passwordHash: hash, digestMD5: md5, digestSHA256: sha, onvifPassword: onvif))
            }
        }
        if let tokens = r.value("tokens") {
            guard case .array(let items) = tokens else { throw JSONFieldError(path: "auth.tokens", problem: "expected a list") }
            for (i, item) in items.enumerated() {
                let t = try JSONObjectReader(item, path: "auth.tokens[\(i)]")
                let record = TokenRecord(name: try nameField(t, "auth.tokens[\(i)].name"), role: try roleField(t, "auth.tokens[\(i)].role"),
                                         sha256: try hexField(t, "sha256", 64, "auth.tokens[\(i)]"))
                try t.finish()
                a.tokens.append(record)
            }
        }
        try r.finish()
        a.mode = a.users.isEmpty && a.tokens.isEmpty ? .unconfigured : .accounts
        return a
    }

    static func nameField(_ r: JSONObjectReader, _ path: String) throws(JSONFieldError) -> String {
        guard let name = try r.string("name"), !name.isEmpty, !name.contains(":"), !name.contains("\""),
              name.unicodeScalars.allSatisfy({ $0.value >= 0x20 }) else {
            throw JSONFieldError(path: path, problem: "required: a name without ':' or quotes")
        }
        return name
    }

    static func roleField(_ r: JSONObjectReader, _ path: String) throws(JSONFieldError) -> Role {
        guard let s = try r.string("role", allowed: ["viewer", "operator"]), let role = Role(rawValue: s) else {
            throw JSONFieldError(path: path, problem: "required (viewer or operator)")
        }
        return role
    }

    static func hexField(_ r: JSONObjectReader, _ key: String, _ length: Int, _ path: String) throws(JSONFieldError) -> String {
        guard let h = try r.string(key), h.count == length, Hashes.bytes(hex: h) != nil else {
            throw JSONFieldError(path: "\(path).\(key)", problem: "expected \(length) hex digits")
        }
        return h.lowercased()
    }

    /// The section as config.json holds it (for `viewfinder user add` and `token add`).
    static func encode(_ a: AuthSettings) -> JSONValue {
        guard a.mode != .none else { return .string("none") }
        var o: [String: JSONValue] = ["realm": .string(a.realm), "digest": .string(a.digestChallenge),
                                      "metrics": .string(a.metricsOpen ? "open" : "viewer"),
                                      "failuresPerMinute": .number(Double(a.failuresPerMinute)),
                                      "nonceLifetime": .number(Double(a.nonceLifetime))]
        o["users"] = .array(a.users.map { u in
            var user: [String: JSONValue] = ["name": .string(u.name), "role": .string(u.role.rawValue), "password": .string(u.passwordHash),
                                             "digestMD5": .string(u.digestMD5), "digestSHA256": .string(u.digestSHA256)]
            if let p = u.onvifPassword { user["onvifPassword"] = .string(p) }
            return .object(user)
        })
        o["tokens"] = .array(a.tokens.map { t in .object(["name": .string(t.name), "role": .string(t.role.rawValue), "sha256": .string(t.sha256)]) })
        return .object(o)
    }
}
