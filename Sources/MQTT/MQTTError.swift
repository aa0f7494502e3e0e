// A libmosquitto call that failed: the call's name and its MOSQ_ERR code, read once. For
// MOSQ_ERR_ERRNO the errno of that moment travels with it (libmosquitto keeps errno, as
// its docs say, for exactly this).

import CMosquitto
import Glibc
import SystemSupport

public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    public var call: String
    /// libmosquitto's code (MOSQ_ERR_*).
    public var code: Int32
    /// The system failure behind a MOSQ_ERR_ERRNO (errno read once, as the error is made), else nil.
    public var cause: SystemError?
    /// errno when `code` is MOSQ_ERR_ERRNO, else 0.
    public var errno: Int32 { cause?.errno ?? 0 }

    init(call: String, code: Int32) {
        self.call = call
        self.code = code
        cause = code == Int32(MOSQ_ERR_ERRNO.rawValue) ? .last(call) : nil
    }

    public var description: String {
        let what = errno != 0 ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(code))
        return "\(call) failed: \(what) (mosquitto \(code)\(errno != 0 ? ", errno \(errno)" : ""))"
    }
}

/// Runs a libmosquitto call and throws its failure.
@inline(__always)
func check(_ call: @autoclosure () -> String, _ rc: Int32) throws(MQTTError) {
    if rc != Int32(MOSQ_ERR_SUCCESS.rawValue) { throw MQTTError(call: call(), code: rc) }
}
