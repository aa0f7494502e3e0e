// The movie output over HTTP: recording/start|stop|frame on every session's path, and the
// finished movies, served from their files with byte ranges so players and browsers seek.

import CameraCore
import Foundation
import HTTPServer
import Movie
import Session
import JSON

extension Application {
    func addRecordingRoutes(_ r: inout Router, _ prefix: String, _ lookup: @escaping SessionLookup) {
        r.post(prefix + "/recording/start") { [self] request in
            await sessionCall(request) { body throws(SessionError) in
                let options: RecordingOptions
                do throws(JSONFieldError) { options = try Self.recordingOptions(body) } catch { throw .invalidValue(error.description) }
                return try await lookup(request).startRecording(options)
            }
        }
        r.post(prefix + "/recording/stop") { request in
            let recorder: MovieRecorder, body: JSONObjectReader
            do throws(HTTPError) { body = try bodyObject(request) } catch { return error.response }
            do throws(SessionError) {
                try noOptions(body)
                recorder = try await lookup(request).stopRecording()
            } catch { return error.http.response }
            let outcome = await recorder.outcome()
            guard let movie = outcome.movie else {
                if outcome.reason == .stopped && outcome.message == nil {
                    return HTTPError(409, "empty_recording", "The recording ended before any frame was written; no movie was kept.").response
                }
                return HTTPError(503, "storage_unavailable", "The movie could not be kept: \(outcome.message ?? outcome.reason.rawValue)").response
            }
            return json(movie, status: 201, headers: [("Location", movie.url)])
        }
        r.post(prefix + "/recording/frame") { [self] request in
            await sessionCall(request) { body throws(SessionError) in
                try noOptions(body)
                return try await lookup(request).addRecordingFrame()
            }
        }
    }

    func addMovieRoutes(_ r: inout Router) {
        r.get("/api/movies") { [movies] _ in json(["movies": movies.list()]) }
        r.get("/api/movies/:id") { [movies] request in
            let id = request.parameters["id"] ?? ""
            guard movies.info(id) != nil, let file = movies.openFile(id) else { return Self.unknownMovie(id) }
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
                close(file.fd)
                var e = HTTPError(416, "range_not_satisfiable",
                                  "The range '\(request.headers["range"] ?? "")' starts past the movie's end (\(file.size) bytes).").response
                e.headers.append(("Content-Range", "bytes */\(file.size)"))
                return e
            }
        }
        r.delete("/api/movies/:id") { [movies] request in
            let id = request.parameters["id"] ?? ""
            guard movies.delete(id) else { return Self.unknownMovie(id) }
            return Response(status: 204)
        }
    }

    static func unknownMovie(_ id: String) -> Response {
        HTTPError(404, "unknown_movie", "No movie '\(id)'; GET /api/movies lists them.").response
    }

    /// `{maxDuration?, maxBytes?, codec?, timelapse?: {interval | trigger: "api", fps?}}`.
    static func recordingOptions(_ body: JSONObjectReader) throws(JSONFieldError) -> RecordingOptions {
        var o = RecordingOptions()
        if let d = try body.double("maxDuration") {
            guard d > 0 else { throw JSONFieldError(path: "maxDuration", problem: "must be more than 0 seconds") }
            o.maxDuration = d
        }
        if let b = try body.double("maxBytes") {
            // At most 2^52, where every whole number is still exact in a JSON reader's double.
            guard b == b.rounded(), b >= 65536, b <= 4_503_599_627_370_496 else {
                throw JSONFieldError(path: "maxBytes", problem: "must be a whole number of bytes within 65536…4503599627370496 (2^52)")
            }
            o.maxBytes = Int64(b)
        }
        if let c = try body.string("codec", allowed: MovieCodec.allCases.map(\.rawValue)) { o.codec = MovieCodec(rawValue: c)! }
        if let t = try body.object("timelapse") {
            let fps = try t.double("fps") ?? 30
            guard (1...120).contains(fps) else { throw JSONFieldError(path: "timelapse.fps", problem: "must be within 1…120") }
            let trigger = try t.string("trigger", allowed: ["interval", "api"]).flatMap(Timelapse.Trigger.init(rawValue:))
            let interval = try t.double("interval")
            guard let kind = trigger ?? (interval == nil ? nil : .interval) else {
                throw JSONFieldError(path: "timelapse", problem: "needs \"interval\" (seconds between frames) or \"trigger\": \"api\"")
            }
            switch (kind, interval) {
            case (.api, nil):
                o.timelapse = Timelapse(trigger: .api, interval: nil, fps: fps)
            case (.api, _?):
                throw JSONFieldError(path: "timelapse.interval", problem: "a timelapse triggered by the API has no interval")
            case (.interval, let i?):
                guard i > 0, i <= 86400 else { throw JSONFieldError(path: "timelapse.interval", problem: "must be within 0…86400 seconds") }
                o.timelapse = Timelapse(trigger: .interval, interval: i, fps: fps)
            case (.interval, nil):
                throw JSONFieldError(path: "timelapse.interval", problem: "seconds between frames are needed")
            }
            try t.finish()
        }
        try body.finish()
        return o
    }
}
