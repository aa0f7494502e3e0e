// The strict JSON reader: types, ranges, unknown keys, and what null means where.

import Testing
@testable import JSON

@Suite struct JSONObjectReaderTests {
    func reader(_ text: String) throws -> JSONObjectReader {
        try JSONObjectReader(try JSONValue.parse(Array(text.utf8)))
    }

    @Test func readsTypedFields() throws {
        let r = try reader(#"{"a": 2, "b": true, "c": "x", "d": 0.5}"#)
        #expect(try r.int("a") == 2)
        #expect(try r.bool("b") == true)
        #expect(try r.string("c") == "x")
        #expect(try r.double("d") == 0.5)
        try r.finish()
    }

    @Test func unknownKeyIsNamed() throws {
        let r = try reader(#"{"factor": 2, "factr": 3}"#)
        _ = try r.double("factor")
        #expect(throws: JSONFieldError(path: "factr", problem: "unknown key")) { try r.finish() }
    }

    @Test func wrongTypesAreRefused() throws {
        let r = try reader(#"{"n": "2", "b": 1, "i": 2.5}"#)
        #expect(throws: JSONFieldError.self) { try r.double("n") }
        #expect(throws: JSONFieldError.self) { try r.bool("b") }
        #expect(throws: JSONFieldError.self) { try r.int("i") }
    }

    @Test(arguments: [#"{"x": NaN}"#, #"{"x": Infinity}"#, #"{"x": -Infinity}"#, "{", "[1,", "{\"x\": }"])
    func nonJSONIsRefused(_ text: String) {
        #expect(throws: (any Error).self) { try JSONValue.parse(Array(text.utf8)) }
    }

    @Test func hugeNumbersAreRefused() {
        // Foundation refuses the overflow while parsing; either way it never becomes a value.
        #expect(throws: (any Error).self) { try reader(#"{"x": 1e400}"#).double("x") }
    }

    @Test func nullIsAbsentInConfigAndRefusedInRequests() throws {
        let text = #"{"camera": null, "inner": {"n": null}}"#
        let config = try reader(text)
        #expect(try config.string("camera") == nil)
        #expect(try config.object("inner")?.double("n") == nil)
        let request = try JSONObjectReader(try JSONValue.parse(Array(text.utf8)), nullIsAbsent: false)
        #expect(throws: JSONFieldError(path: "camera", problem: "expected a string, found null (leave the key out instead)")) {
            try request.string("camera")
        }
        let inner = try #require(try request.object("inner"))
        #expect(throws: JSONFieldError.self, "objects read from it inherit the rule") { try inner.double("n") }
        #expect(try request.nullableObject("missing") == nil && request.value("camera") == nil, "a key that takes null reads it")
    }

    @Test func rangedNumbersAreRefusedNotClamped() throws {
        let r = try reader(#"{"a": 0, "b": 1, "c": 1.0001}"#)
        #expect(try r.double("a", in: 0...1) == 0 && r.double("b", in: 0...1) == 1)
        #expect(throws: JSONFieldError(path: "c", problem: "1.0001 is outside 0.0…1.0")) { try r.double("c", in: 0...1) }
    }

    @Test func nestedPathsAreNamed() throws {
        let r = try reader(#"{"server": {"port": "80"}}"#)
        let s = try #require(try r.object("server"))
        #expect(throws: JSONFieldError(path: "server.port", problem: "expected a number, found a string")) { try s.int("port") }
    }
}
