import Testing
@testable import HTTPServer

/// The header syntax the server refuses itself (libmicrohttpd 0.9.75 lets it through).
@Suite struct HeaderSyntaxTests {
    static let fine: [(String, [UInt8])] = [
        ("Host", Array("127.0.0.1:8080".utf8)), ("X-Tab", Array("a\tb".utf8)), ("Accept", []),
        ("X-Utf8", [0xC3, 0xA9, 0xFF]),  // obs-text in a value is allowed (RFC 9110 §5.5)
        ("!#$%&'*+-.^_`|~09azAZ", Array("v".utf8)),
    ]

    @Test(arguments: fine) func wellFormedFieldsPass(_ name: String, _ value: [UInt8]) {
        #expect(HeaderSyntax.problem(name: Array(name.utf8), value: value) == nil)
    }

    static let malformed: [([UInt8], [UInt8], String)] = [
        ([], Array("v".utf8), "no name"),
        (Array("X-Space ".utf8), Array("v".utf8), "'X-Space '"),
        (Array("X A".utf8), Array("v".utf8), "'X A'"),
        ([0x58, 0x00, 0x59], Array("v".utf8), "'X\\x00Y'"),
        ([0x58, 0xFF], Array("v".utf8), "'X\\xff'"),
        (Array("X(".utf8), Array("v".utf8), "not a token"),
        (Array("X-Cr".utf8), [0x61, 0x0D, 0x62], "'X-Cr' holds a NUL, CR or LF"),
        (Array("X-Lf".utf8), [0x61, 0x0A], "NUL, CR or LF"),
        (Array("X-Nul".utf8), [0x00], "NUL, CR or LF"),
    ]

    @Test(arguments: malformed) func malformedFieldsAreNamed(_ name: [UInt8], _ value: [UInt8], _ says: String) throws {
        let problem = try #require(HeaderSyntax.problem(name: name, value: value))
        #expect(problem.contains(says), "\(problem)")
    }

    @Test func hostIsOnceInHTTP11AndAtMostOnceBefore() {
        #expect(HeaderSyntax.hostProblem(version: "HTTP/1.1", hosts: 1) == nil)
        #expect(HeaderSyntax.hostProblem(version: "HTTP/1.0", hosts: 0) == nil)
        #expect(HeaderSyntax.hostProblem(version: "HTTP/1.0", hosts: 1) == nil)
        #expect(HeaderSyntax.hostProblem(version: "HTTP/1.1", hosts: 0)?.contains("needs a Host") == true)
        #expect(HeaderSyntax.hostProblem(version: "HTTP/1.1", hosts: 2)?.contains("2 times") == true)
        #expect(HeaderSyntax.hostProblem(version: "HTTP/1.0", hosts: 3)?.contains("3 times") == true)
    }

    @Test func longNamesAreCutInTheMessage() throws {
        let problem = try #require(HeaderSyntax.problem(name: Array(repeating: 0x20, count: 5000), value: []))
        #expect(problem.count < 200 && problem.contains("…"))
    }
}
