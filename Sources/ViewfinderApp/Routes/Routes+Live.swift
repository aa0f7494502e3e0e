// The live H.264 routes: fragmented MP4 for MSE and players, and WebRTC by WHEP
// (draft-ietf-wish-whep): POST an SDP offer, get 201 with the answer and a Location to PATCH
// the viewer's later candidates to (trickle) and to DELETE.

import Foundation
import HTTPServer
import Session
import JSON
import Streaming

extension LiveRequest: RequestBody {
    init(reading body: JSONObjectReader) throws(JSONFieldError) {
        func cap(_ r: JSONObjectReader) throws(JSONFieldError) -> Cap? {
            guard r.has("bitrate") else { return nil }
            if r.value("bitrate") == nil { return .configured }  // null: back to the configured or default cap
            return try r.int("bitrate", in: 100...100_000).map(Cap.kbits)
        }
        let main = try cap(body)
        var sub: Cap?
        if let r = try body.object("sub") {
            sub = try cap(r)
            try r.finish()
        }
        try body.finish()
        self.init(main: main, sub: sub)
    }
}

extension Application {
    func addLiveRoutes(_ r: inout Router, main: @escaping SessionLookup, named: @escaping SessionLookup) {
        let cameras = self.cameras
        r.get("/live.mp4") { [self] request in try liveMP4(request, cameras.mainFeed) }
        r.get("/cameras/:id/live.mp4") { [self] request in try liveMP4(request, SessionFeed(try named(request))) }
        // The streams' caps, moved while they run (a viewer's link, an NVR's budget).
        route(&r, "/api/session/live", main) { (s, l: LiveRequest) in await s.setLive(l) }
        route(&r, "/api/cameras/:id/session/live", named) { (s, l: LiveRequest) in await s.setLive(l) }
        guard configuration.webrtc.enabled else { return }
        // The STUN and TURN servers a browser should use, asked before it makes its offer (the
        // TURN credential minted for this asker: it lapses, the secret stays here).
        r.get("/api/webrtc/ice-servers") { [ice] request in
            json(ice.viewerJSON(for: request.principal?.name.isEmpty == false ? request.principal!.name : "viewer"), headers: Response.noCache)
        }
        // The main preview follows the main camera across a switch, as /stream does.
        r.post("/api/whep") { [self] request in try await whepOffer(request, cameras.mainFeed) }
        r.post("/api/cameras/:id/whep") { [self] request in try await whepOffer(request, SessionFeed(try named(request))) }
        r.delete("/api/whep/:session") { [self] request in
            let id = request.parameters["session"] ?? ""
            guard await whep.close(id) else { throw Self.noWHEPSession(id) }
            return Response(status: 200)
        }
        // The viewer's own candidates, trickled after its offer (RFC 9725, section 4.3.1).
        r.patch("/api/whep/:session") { [self] request in try whepTrickle(request) }
    }

    /// A PATCH of RFC 8840's trickle-ice-sdpfrag to a WHEP session: 204 once its candidates are
    /// given to the peer. Refused whole, nothing given: not a fragment (415, 413, 400), another
    /// ICE session's (412 naming the session's ETag; 422 for an ICE restart, not offered); an
    /// ended or unknown session is 404 before anything else.
    private func whepTrickle(_ request: Request) throws -> Response {
        let id = request.parameters["session"] ?? ""
        guard whep.has(id) else { throw Self.noWHEPSession(id) }  // the resource first, then what was sent to it
        guard request.mediaType == "application/trickle-ice-sdpfrag" else {
            throw HTTPError(415, "unsupported_media_type", "Trickled ICE candidates are a fragment: send them with Content-Type: application/trickle-ice-sdpfrag.")
        }
        guard request.body.count <= ICEFragment.maxBytes else {
            throw HTTPError(413, "body_too_large", "An ICE fragment is at most \(ICEFragment.maxBytes) bytes.")
        }
        guard let text = String(validating: request.body, as: UTF8.self) else {
            throw HTTPError(400, "invalid_sdpfrag", "The ICE fragment is not UTF-8.")
        }
        let fragment: ICEFragment
        do { fragment = try ICEFragment(parsing: text) } catch { throw StreamingError.badFragment(error) }
        switch try whep.trickle(id, fragment, ifMatch: request.header("if-match")?.trimmingCharacters(in: .whitespaces)) {
        case .taken: return Response(status: 204, headers: Response.noCache)
        case .noSession: throw Self.noWHEPSession(id)
        case .otherSession(let etag):
            throw HTTPError(412, "precondition_failed", "If-Match names another ICE session than this one's (\(etag)).", headers: [("ETag", etag)])
        }
    }

    /// The answer to a DELETE or PATCH of a session that ended (or was never opened).
    private static func noWHEPSession(_ id: String) -> HTTPError {
        HTTPError(404, "not_found", "No WHEP session \(id) (it ended, or never began).")
    }

    /// The live H.264 stream of `feed`'s camera as fragmented MP4, with its microphone's AAC
    /// when one runs (`?audio=0`: picture only): a new format ends the stream, and so does a
    /// switch of the main session for a `/live.mp4` client (the player reconnects to the new
    /// camera's stream).
    func liveMP4(_ request: Request, _ feed: SessionFeed) throws -> Response {
        let stream = try liveStream(request)
        let sound: Bool
        switch request.query["audio"] {
        case nil, "1", "true": sound = true
        case "0", "false": sound = false
        case let other?: throw HTTPError(400, "invalid_value", "audio: '\(other)' is not true or false (1 or 0)")
        }
        try admitLiveClient()
        return Response(headers: [("Content-Type", "video/mp4")] + Response.noCache,
                        body: .stream(feed.liveMP4(stream, sound: sound)))
    }

    private func whepOffer(_ request: Request, _ source: SessionFeed) async throws -> Response {
        let offer = try sdpOffer(request, "WHEP")
        // A stream asked for is kept; without one the viewer's link chooses (webrtc.adaptive).
        let stream = request.query["stream"] == nil ? nil : try liveStream(request)
        try admitLiveClient()
        let (id, answer, etag) = try await whep.open(offer: offer, source: source, stream: stream, adaptive: configuration.webrtc.adaptive)
        return Response(status: 201, contentType: "application/sdp", bytes: Array(answer.utf8),
                        headers: [("Location", "/api/whep/\(id)"), ("ETag", etag), ("Accept-Patch", "application/trickle-ice-sdpfrag")]
                            + ice.links(for: id) + Response.noCache)
    }

    /// `?stream=main` (the default) or `sub`.
    func liveStream(_ request: Request) throws(HTTPError) -> LiveStreamName {
        guard let name = request.query["stream"] else { return .main }
        guard let stream = LiveStreamName(rawValue: name), LiveStreamName.h264.contains(stream) else {
            throw HTTPError(400, "invalid_value", "stream: '\(name)' is not main or sub")
        }
        return stream
    }

    /// The SDP offer a WHEP or WHIP request carries (`protocol` names it in the refusals).
    func sdpOffer(_ request: Request, _ protocol: String) throws(HTTPError) -> String {
        guard request.mediaType == "application/sdp" else {
            throw HTTPError(415, "unsupported_media_type", "A \(`protocol`) offer is SDP: send it with Content-Type: application/sdp.")
        }
        guard let offer = String(validating: request.body, as: UTF8.self), !offer.isEmpty else {
            throw HTTPError(400, "invalid_sdp", "The offer is empty or not UTF-8.")
        }
        return offer
    }

    /// `live.maxClients` across WHEP peers, RTSP clients and live.mp4 streams.
    private func admitLiveClient() throws(HTTPError) {
        let max = configuration.live.maxClients
        guard liveClientCount < max else {
            throw HTTPError(503, "too_many_clients", "\(max) live clients are watching (live.maxClients); try again later.",
                            headers: [("Retry-After", "5")])
        }
    }
}
