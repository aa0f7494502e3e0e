// The live H.264 routes: fragmented MP4 for MSE and players, and WebRTC by WHEP
// (draft-ietf-wish-whep): POST an SDP offer, get 201 with the answer and a Location to DELETE.

import Foundation
import HTTPServer
import Session
import Streaming

extension Application {
    func addLiveRoutes(_ r: inout Router, main: @escaping SessionLookup, named: @escaping SessionLookup) {
        let cameras = self.cameras
        r.get("/live.mp4") { [self] _ in try liveMP4(cameras.mainFeed) }
        r.get("/cameras/:id/live.mp4") { [self] request in try liveMP4(SessionFeed(try named(request))) }
        guard configuration.webrtc.enabled else { return }
        // The main preview follows the main camera across a switch, as /stream does.
        r.post("/api/whep") { [self] request in try await whepOffer(request, cameras.mainFeed) }
        r.post("/api/cameras/:id/whep") { [self] request in try await whepOffer(request, SessionFeed(try named(request))) }
        r.delete("/api/whep/:session") { [self] request in
            guard whep.close(request.parameters["session"] ?? "") else {
                throw HTTPError(404, "not_found", "No WHEP session \(request.parameters["session"] ?? "") (it ended, or never began).")
            }
            return Response(status: 200)
        }
    }

    /// The live H.264 stream of `feed`'s camera as fragmented MP4: a new format ends the
    /// stream, and so does a switch of the main session for a `/live.mp4` client (the player
    /// reconnects to the new camera's stream).
    func liveMP4(_ feed: SessionFeed) throws -> Response {
        try admitLiveClient()
        return Response(headers: [("Content-Type", "video/mp4")] + Response.noCache,
                        body: .stream(LiveMP4Stream(feed: feed, clients: liveStreams)))
    }

    private func whepOffer(_ request: Request, _ source: SessionFeed) async throws -> Response {
        let type = request.header("content-type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/sdp" else {
            throw HTTPError(415, "unsupported_media_type", "A WHEP offer is SDP: send it with Content-Type: application/sdp.")
        }
        guard let offer = String(validating: request.body, as: UTF8.self), !offer.isEmpty else {
            throw HTTPError(400, "invalid_sdp", "The offer is empty or not UTF-8.")
        }
        try admitLiveClient()
        let (id, answer) = try await whep.open(offer: offer, source: source)
        return Response(status: 201, contentType: "application/sdp", bytes: Array(answer.utf8),
                        headers: [("Location", "/api/whep/\(id)")] + iceLinks + Response.noCache)
    }

    /// `live.maxClients` across WHEP peers, RTSP clients and live.mp4 streams.
    private func admitLiveClient() throws(HTTPError) {
        let max = configuration.live.maxClients
        guard liveClientCount < max else {
            throw HTTPError(503, "too_many_clients", "\(max) live clients are watching (live.maxClients); try again later.",
                            headers: [("Retry-After", "5")])
        }
    }

    /// WHEP's Link headers: the ICE servers the client should use too.
    private var iceLinks: [(String, String)] {
        configuration.webrtc.iceServers.flatMap { s in
            s.urls.map { url in
                var link = "<\(url)>; rel=\"ice-server\""
                if let u = s.username, let c = s.credential {
                    link += "; username=\"\(u)\"; credential=\"\(c)\"; credential-type=\"password\""
                }
                return ("Link", link)
            }
        }
    }
}
