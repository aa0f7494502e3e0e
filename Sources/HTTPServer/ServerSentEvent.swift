// Server-Sent Events framing (the WHATWG event-stream format).

public enum ServerSentEvent {
    public static func format(event: String, data: String) -> [UInt8] {
        var s = "event: \(event)\n"
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) { s += "data: \(line)\n" }
        return Array((s + "\n").utf8)
    }

    /// A comment line; keeps idle connections alive through proxies.
    public static let keepAlive = Array(": keep-alive\n\n".utf8)
}
