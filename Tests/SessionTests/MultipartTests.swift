// The preview's multipart framing, laid out as mjpg-streamer and µStreamer lay it out.

import Testing
@testable import Session

@Suite struct MultipartTests {
    @Test func partLayoutMatchesMjpgStreamer() {
        let jpeg: [UInt8] = [0xFF, 0xD8, 1, 2, 3, 0xFF, 0xD9]
        let part = Multipart.part(jpeg: jpeg, timestamp: "1700000000.000123")
        let expectedHead = "--viewfinderframe\r\nContent-Type: image/jpeg\r\nContent-Length: 7\r\nX-Timestamp: 1700000000.000123\r\n\r\n"
        #expect(Array(part.prefix(expectedHead.utf8.count)) == Array(expectedHead.utf8))
        #expect(Array(part.dropFirst(expectedHead.utf8.count).prefix(7)) == jpeg)
        #expect(Array(part.suffix(2)) == [13, 10])
    }

    @Test func parseRoundTripsSeveralPartsAndKeepsTheIncompleteRest() {
        let a: [UInt8] = [0xFF, 0xD8, 0x0D, 0x0A, 0x2D, 0x2D, 0xFF, 0xD9]  // payload containing CRLF--
        let b: [UInt8] = Array(repeating: 7, count: 1000)
        let stream = Multipart.part(jpeg: a, timestamp: "1.000000") + Multipart.part(jpeg: b, timestamp: "2.000000")
        let truncated = stream + Array(Multipart.part(jpeg: a, timestamp: "3.000000").prefix(40))
        let (parts, rest) = Multipart.parse(truncated)
        #expect(parts.count == 2)
        #expect(parts[0].body == a && parts[1].body == b)
        #expect(parts[1].headers["x-timestamp"] == "2.000000")
        #expect(rest == stream.count)
    }

    @Test func contentTypeHasNoSpaceBeforeBoundary() {
        #expect(Multipart.contentType == "multipart/x-mixed-replace;boundary=viewfinderframe")
    }
}
