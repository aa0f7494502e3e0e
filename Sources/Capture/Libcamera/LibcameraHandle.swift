// The acquired camera: the one owner of the facade's camera handle. The capture thread
// streams with it and closes it at its end, once every lent buffer is back (so the next start
// can acquire the camera again); a buffer never given back keeps it, mapped, until the last
// lease lets go. The session sets and reads controls through it from its own thread: those
// calls and the close hold one lock, so a control is never set on a closed camera.

import CLibcamera
import CameraCore
import Foundation
import SystemSupport

final class LibcameraHandle: LibcameraControlPort, Sendable {
    nonisolated(unsafe) let pointer: OpaquePointer  // streamed with by the capture thread alone
    let id: String
    private let closed = Locked(false)

    init(manager: LibcameraManager, id: String) throws(CameraError) {
        var p: OpaquePointer?
        let r = lc_camera_open(manager.handle, id, &p)
        guard r == 0, let p else {
            throw r == -EBUSY || r == -EACCES ? .unavailable("libcamera camera \(id) is in use (by another process, or still by this one's last run)")
                : .system(call: "libcamera acquire(\(id))", errno: -r)
        }
        pointer = p
        self.id = id
    }

    func close() {
        closed.withLock { c in
            if !c { lc_camera_close(pointer) }
            c = true
        }
    }

    deinit { close() }

    /// `body` with the handle while it is open; nil once closed.
    private func open<T>(_ body: (OpaquePointer) -> T) -> T? {
        closed.withLock { c in c ? nil : body(pointer) }
    }

    func set(_ name: String, _ values: [Double]) throws(CameraError) -> Int64 {
        let r = open { p in values.withUnsafeBufferPointer { lc_camera_set_control(p, name, $0.baseAddress, $0.count) } } ?? Int64(-ENODEV)
        guard r < 0 else { return r }
        let errno = Int32(-r)
        switch errno {
        case ENOTSUP: throw .unsupportedControl(name, known: [])
        case ERANGE, EINVAL: throw .refused(control: name, value: Int((values.first ?? 0).rounded()), errno: errno)
        default: throw .system(call: "libcamera set \(name) (\(id))", errno: errno)
        }
    }

    func get(_ name: String) -> LibcameraReading? {
        open { p -> LibcameraReading? in
            var values = [Double](repeating: 0, count: 16)
            var count = 0
            var fromMetadata: Int32 = 0
            let r = lc_camera_get_control(p, name, &values, values.count, &count, &fromMetadata)
            return r == 0 ? LibcameraReading(Array(values.prefix(count)), fromMetadata: fromMetadata != 0) : nil
        } ?? nil
    }

    func waitApplied(_ generation: Int64, timeout: Double) -> Bool {
        open { p in lc_camera_wait_applied(p, generation, Int32(max(timeout, 0) * 1000)) == 0 } ?? false
    }
}
