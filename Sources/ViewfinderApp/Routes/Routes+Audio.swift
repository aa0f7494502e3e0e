// Sound: the microphone's connection (mute, gain) and the audio data output's live PCM.
//
//   POST …/session/audio {"muted"?, "gainDb"?}      the state
//   GET  /audio.wav, /cameras/{id}/audio.wav        16-bit PCM WAV from the next buffer on;
//        ?seconds=N                                 a clip of the next N seconds (≤ 3600)
//
// The WAV's `X-Timestamp` is the capture time of its first sample, on the clock the video
// frames' X-Timestamp and timecode use: a client lines the two up without guessing.

import CameraCore
import HTTPServer
import JSON
import Session

extension AudioRequest: RequestBody {
    init(reading body: JSONObjectReader) throws(JSONFieldError) {
        self.init(muted: try body.bool("muted"), gainDb: try body.double("gainDb"))
        try body.finish()
    }
}

extension Application {
    func addAudioRoutes(_ r: inout Router, main: @escaping SessionLookup, named: @escaping SessionLookup) {
        route(&r, "/api/session/audio", main) { (s, a: AudioRequest) in try await s.setAudio(a) }
        route(&r, "/api/cameras/:id/session/audio", named) { (s, a: AudioRequest) in try await s.setAudio(a) }
        r.get("/audio.wav") { [self] request in try await wav(request, main) }
        r.get("/cameras/:id/audio.wav") { [self] request in try await wav(request, named) }
    }

    private func wav(_ request: Request, _ lookup: SessionLookup) async throws -> Response {
        let session = try lookup(request)
        var seconds: Double?
        if let text = request.query["seconds"] {
            guard let n = Double(text), n.isFinite, n > 0, n <= 3600 else {
                throw HTTPError(400, "invalid_value", "seconds: '\(text)' is not a number of seconds in 0…3600")
            }
            seconds = n
        }
        guard let output = session.audioData else {
            throw SessionError.unsupported("sound (camera \(session.id) has no audio input)", supported: [])
        }
        guard await session.isRunning else { throw SessionError.notRunning }
        let client = output.subscription(seconds: seconds)
        guard let first = await client.start(timeout: 2) else {
            client.cancel()
            let why = await session.state().audio?.error ?? "no sound arrived within 2 s"
            throw SessionError.camera(.unavailable("the microphone: \(why)"))
        }
        return Response(headers: [("Content-Type", "audio/wav"),
                                  ("X-Timestamp", EncodedFrame.format(first.timestamp)),
                                  ("X-Audio-Rate", String(first.format.sampleRate)),
                                  ("X-Audio-Channels", String(first.format.channels)),
                                  ("X-Viewfinder-Camera", session.id)] + Response.noCache,
                        body: .stream(client))
    }
}
