// Talk-back (issue 37): WHIP — POST an SDP offer that sends Opus, get 201 with the answer and
// a Location to DELETE — and what the synthetic speaker played.
//
//   POST   /api/talk, /api/cameras/{id}/talk     talk to the main camera / camera {id} (operator)
//   DELETE /api/talk/{session}                    end the talk
//   GET    /api/cameras/{id}/speaker.wav?seconds=N   the last N s the synthetic speaker played

import CameraCore
import Foundation
import HTTPServer
import Session
import Sound

extension Application {
    func addTalkRoutes(_ r: inout Router, main: @escaping SessionLookup, named: @escaping SessionLookup) {
        r.get("/api/cameras/:id/speaker.wav") { [self] request in try speakerWAV(request, try named(request).id) }
        r.get("/api/speaker.wav") { [self] request in try speakerWAV(request, try main(request).id) }
        guard configuration.webrtc.enabled else { return }
        r.post("/api/talk") { [self] request in try await talkOffer(request, try main(request).id) }
        r.post("/api/cameras/:id/talk") { [self] request in try await talkOffer(request, try named(request).id) }
        r.delete("/api/talk/:session") { [self] request in
            guard await talk.close(request.parameters["session"] ?? "") else {
                throw HTTPError(404, "not_found", "No talk \(request.parameters["session"] ?? "") (it ended, or never began).")
            }
            return Response(status: 200)
        }
    }

    private func talkOffer(_ request: Request, _ camera: String) async throws -> Response {
        let offer = try sdpOffer(request, "WHIP")
        let (id, answer) = try await talk.open(offer: offer, camera: camera)
        return Response(status: 201, contentType: "application/sdp", bytes: Array(answer.utf8),
                        headers: [("Location", "/api/talk/\(id)")] + Response.noCache)
    }

    /// The last `seconds` (default 5, at most 30) the synthetic speaker played, as WAV.
    private func speakerWAV(_ request: Request, _ camera: String) throws -> Response {
        var seconds = 5.0
        if let text = request.query["seconds"] {
            guard let n = Double(text), n.isFinite, n > 0, n <= SyntheticSpeaker.keep else {
                throw HTTPError(400, "invalid_value", "seconds: '\(text)' is not a number of seconds in 0…\(Int(SyntheticSpeaker.keep))")
            }
            seconds = n
        }
        guard let speaker = talk.speaker(of: camera) as? SyntheticSpeaker else {
            throw HTTPError(422, "unsupported", "Camera \(camera)'s speaker is not the synthetic one: only it keeps what it played.")
        }
        let samples = speaker.recent(seconds: seconds)
        let format = AudioFormat(encoding: .s16le, sampleRate: SyntheticSpeaker.rate, channels: 1)
        var body = WAVHeader.bytes(format, dataBytes: samples.count * 2)
        samples.withUnsafeBytes { body += $0 }
        return Response(status: 200, contentType: "audio/wav", bytes: body, headers: Response.noCache)
    }
}
