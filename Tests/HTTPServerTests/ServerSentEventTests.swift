import Testing
@testable import HTTPServer

@Suite struct ServerSentEventTests {
    @Test func serverSentEventSplitsLines() {
        let e = String(decoding: ServerSentEvent.format(event: "state", data: "{\"a\":1}\n{\"b\":2}"), as: UTF8.self)
        #expect(e == "event: state\ndata: {\"a\":1}\ndata: {\"b\":2}\n\n")
    }
}
