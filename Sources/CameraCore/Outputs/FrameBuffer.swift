// A frame's bytes as a hand-off's slot keeps them between the capture thread and the pool.

/// A frame's bytes, reused from frame to frame; grows to the largest frame seen.
final class FrameBuffer: @unchecked Sendable {  // owned by one thread at a time, handed on under a lock
    private(set) var storage = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private(set) var count = 0

    deinit { storage.deallocate() }

    func fill(from bytes: UnsafeRawBufferPointer) {
        if storage.count < bytes.count {
            storage.deallocate()
            storage = .allocate(byteCount: bytes.count, alignment: 64)
        }
        if bytes.count > 0 { storage.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        count = bytes.count
    }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<count]) }
}
