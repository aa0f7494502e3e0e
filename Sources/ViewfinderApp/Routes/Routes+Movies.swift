// The movie output over HTTP: recording/stop answers the finished movie, and the movies are
// served from their files with byte ranges so players and browsers seek. (recording/start
// and recording/frame are rows of the session table.)

import CameraCore
import Foundation
import HTTPServer
import Movie
import Session
import SystemSupport

extension Application {
    /// Ends the recording and answers the movie once its file is complete.
    func stopRecording(_ request: Request, _ lookup: SessionLookup) async throws -> Response {
        _ = try NoOptions(reading: try bodyObject(request))
        let recorder = try await lookup(request).stopRecording()
        let outcome = await recorder.outcome()
        guard let movie = outcome.movie else {
            if outcome.reason == .stopped && outcome.message == nil {
                throw HTTPError(409, "empty_recording", "The recording ended before any frame was written; no movie was kept.")
            }
            throw HTTPError(503, "storage_unavailable", "The movie could not be kept: \(outcome.message ?? outcome.reason.rawValue)")
        }
        return json(movie, status: 201, headers: [("Location", movie.url)])
    }

    /// `{"active": true|false}`: a switch's one route (Home Assistant's recording switch).
    /// true starts with the start's defaults, false stops and keeps the movie; a switch already
    /// where it is asked to be stays. The answer is the state either way.
    func recordingSwitch(_ request: Request, _ lookup: SessionLookup) async throws -> Response {
        let body = try RecordingSwitch(reading: try bodyObject(request))
        let session = try lookup(request)
        let active = await session.state().recording.active
        // A switch says what it wants, not a change: a second "on" or "off" that crossed the
        // first (an MQTT command sent again while the first was still ending the movie) finds
        // it done, and answers the state rather than 409.
        if body.active && !active {
            let refused = await Self.refusal { () async throws(SessionError) in _ = try await session.startRecording(RecordingOptions()) }
            if let refused, refused != .alreadyRecording { throw refused }
        }
        if !body.active && active {
            var recorder: MovieRecorder?
            let refused = await Self.refusal { () async throws(SessionError) in recorder = try await session.stopRecording() }
            if let refused, refused != .notRecording { throw refused }
            if let recorder { _ = await recorder.outcome() }
        }
        return json(cameras.marked(await session.state()))
    }

    /// What `body` threw, or nil.
    private static func refusal(_ body: () async throws(SessionError) -> Void) async -> SessionError? {
        do { try await body() } catch { return error }
        return nil
    }

    func addMovieRoutes(_ r: inout Router) {
        r.get("/api/movies") { [movies] request in
            // `?trigger=motion` (or `manual`): only the movies so started.
            guard let t = request.query["trigger"] else { return json(["movies": movies.list()]) }
            guard let trigger = MovieTrigger(rawValue: t) else {
                throw HTTPError(400, "invalid_value", "trigger: '\(t)' is not one of manual, motion")
            }
            return json(["movies": movies.list().filter { ($0.trigger ?? .manual) == trigger }])
        }
        r.get("/api/movies/:id/snapshot") { [movies] request in
            let id = request.parameters["id"] ?? ""
            guard let file = movies.openSnapshot(id) else {
                throw HTTPError(404, "unknown_snapshot", "Movie '\(id)' has no snapshot; motion movies keep one (their `snapshot` field).")
            }
            return Response(status: 200, headers: [("Content-Type", "image/jpeg"), ("Cache-Control", "private, max-age=31536000, immutable")],
                            body: .file(FileBody(fd: file.fd, offset: 0, length: file.size)))
        }
        r.post("/api/movies/:id/keep") { [movies] request in
            let id = request.parameters["id"] ?? ""
            let body = try KeepBody(reading: try bodyObject(request))
            guard let info = movies.setKeep(id, body.keep) else { throw Self.unknownMovie(id) }
            return json(info)
        }
        r.get("/api/movies/:id") { [movies] request in
            let id = request.parameters["id"] ?? ""
            guard movies.info(id) != nil, let file = movies.openFile(id) else { throw Self.unknownMovie(id) }
            var headers = [("Content-Type", "video/mp4"), ("Accept-Ranges", "bytes"),
                           ("Cache-Control", "private, max-age=31536000, immutable")]
            switch ByteRange.parse(request.headers["range"], size: file.size) {
            case .whole:
                return Response(status: 200, headers: headers, body: .file(FileBody(fd: file.fd, offset: 0, length: file.size)))
            case .part(let first, let last):
                headers.append(("Content-Range", "bytes \(first)-\(last)/\(file.size)"))
                return Response(status: 206, headers: headers,
                                body: .file(FileBody(fd: file.fd, offset: first, length: last - first + 1)))
            case .unsatisfiable:
                try? Sys.close(file.fd)  // only opened to read
                throw HTTPError(416, "range_not_satisfiable",
                                "The range '\(request.headers["range"] ?? "")' starts past the movie's end (\(file.size) bytes).",
                                headers: [("Content-Range", "bytes */\(file.size)")])
            }
        }
        r.delete("/api/movies/:id") { [movies] request in
            let id = request.parameters["id"] ?? ""
            guard movies.delete(id) else { throw Self.unknownMovie(id) }
            return Response(status: 204)
        }
    }

    static func unknownMovie(_ id: String) -> HTTPError {
        HTTPError(404, "unknown_movie", "No movie '\(id)'; GET /api/movies lists them.")
    }
}
