import HTTPServer
import Testing

/// RFC 9110 §14: one range is served, anything else the whole representation; a range
/// starting past the end is 416.
@Suite struct ByteRangeTests {
    @Test(arguments: [
        ("bytes=0-99", ByteRange.part(first: 0, last: 99)),
        ("bytes=100-", .part(first: 100, last: 999)),
        ("bytes=-100", .part(first: 900, last: 999)),
        ("bytes=-5000", .part(first: 0, last: 999)),
        ("bytes=990-5000", .part(first: 990, last: 999)),
        ("BYTES = 5-6", .whole),
        ("bytes= 5-6 ", .part(first: 5, last: 6)),
        ("bytes=1000-", .unsatisfiable),
        ("bytes=-0", .unsatisfiable),
        ("bytes=5-1", .whole),
        ("bytes=0-1,4-5", .whole),
        ("items=0-1", .whole),
        ("bytes=a-b", .whole),
        ("bytes=-", .whole),
        ("bytes=+1-2", .whole),
        ("bytes=99999999999999999999-", .whole),
    ])
    func parses(_ header: String, _ expected: ByteRange) {
        #expect(ByteRange.parse(header, size: 1000) == expected, "\(header)")
    }

    @Test func anEmptyFileHasNoRange() {
        #expect(ByteRange.parse("bytes=0-", size: 0) == .unsatisfiable)
        #expect(ByteRange.parse(nil, size: 0) == .whole)
    }
}
