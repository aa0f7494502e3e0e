// Bytes laid around a JPEG as it is copied out of libturbojpeg's buffer, so a wire format's
// part (a multipart part's headers before the JPEG and its CRLF after) is finished by the
// same copy that takes the JPEG out of the encoder — no second copy to put a header in
// front. The head depends on the JPEG's length (Content-Length), so it is made per frame.

public struct JPEGFraming: Sendable {
    public var head: @Sendable (_ jpegCount: Int) -> [UInt8]
    public var tail: [UInt8]

    public init(head: @escaping @Sendable (_ jpegCount: Int) -> [UInt8], tail: [UInt8]) {
        self.head = head
        self.tail = tail
    }

    /// `jpeg` with the head before it and the tail after, in one allocation; and where the
    /// JPEG sits in it.
    public func wrap(_ jpeg: UnsafeRawBufferPointer) -> (bytes: [UInt8], jpeg: Swift.Range<Int>) {
        let h = head(jpeg.count)
        let total = h.count + jpeg.count + tail.count
        let bytes = [UInt8](unsafeUninitializedCapacity: total) { out, initialized in
            let base = UnsafeMutableRawPointer(out.baseAddress!)
            h.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            if jpeg.count > 0 { (base + h.count).copyMemory(from: jpeg.baseAddress!, byteCount: jpeg.count) }
            tail.withUnsafeBytes { if $0.count > 0 { (base + h.count + jpeg.count).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            initialized = total
        }
        return (bytes, h.count..<(h.count + jpeg.count))
    }
}
