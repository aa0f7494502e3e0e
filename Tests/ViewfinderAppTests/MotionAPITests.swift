// Motion detection over HTTP (issue 28): the settings call and its refusals, events staged with
// the synthetic scene's walker and their movies read back with ffprobe (the pre-roll and the
// post-roll honoured every time), the snapshot, the movies filter, and retention keeping the
// directories under `storage.maxBytes` while a recording is written.

import CaptureTestSupport
import Foundation
import Testing
@testable import ViewfinderApp

@Suite struct MotionAPITests {
    func motion(_ r: TestConnection) -> [String: Any]? { (r.json as? [String: Any])?["motion"] as? [String: Any] }

    /// How far back the rear camera's pre-roll ring reaches now, as its state says.
    static func preRollHeld(_ port: Int) async throws -> Double {
        ((try await fetch(port, "/api/cameras/rear/session").json as? [String: Any])?["motion"] as? [String: Any])?["preRollHeld"] as? Double ?? -1
    }
    func errorField(_ r: TestConnection) -> String? {
        ((r.json as? [String: [String: Any]])?["error"]?["message"] as? String)
    }

    @Test func theMotionCallChangesTheSettingsOrNothing() async throws {
        try await withServer { _, port in
            let set = try await fetch(port, "POST", "/api/session/motion",
                                      body: #"{"enabled": true, "threshold": 2.5, "masks": [[[0, 0], [1, 0], [1, 0.2]]], "preRoll": 2, "postRoll": 4, "record": false}"#)
            #expect(set.status == 200)
            let m = try #require(motion(set))
            #expect(m["enabled"] as? Bool == true && m["threshold"] as? Double == 2.5 && m["record"] as? Bool == false)
            #expect(m["preRoll"] as? Double == 2 && m["postRoll"] as? Double == 4)
            #expect(m["preRollHeld"] as? Double == 0, "recording off: no pre-roll ring runs")
            #expect((m["masks"] as? [[[Double]]])?.first?.count == 3)
            #expect(m.keys.contains("box") && m.keys.contains("since") && m["active"] as? Bool == false)
            // Each refusal names its field and changes nothing.
            for (body, field) in [(#"{"threshold": "high"}"#, "threshold"), (#"{"threshold": 0}"#, "threshold"),
                                  (#"{"preRoll": 31}"#, "preRoll"), (#"{"postRoll": -1}"#, "postRoll"),
                                  (#"{"masks": [[[0, 0], [1, 0]]]}"#, "masks[0]"), (#"{"masks": [[[0, 0], [1, 2], [0, 1]]]}"#, "masks[0]"),
                                  (#"{"masks": [[[0, 0], [1], [0, 1]]]}"#, "masks[0][1]"), (#"{"masks": {}}"#, "masks"), (#"{"masks": null}"#, "masks"),
                                  (#"{"enabled": 1}"#, "enabled"), (#"{"sensitivity": 5}"#, "sensitivity"), ("[]", "object")] {
                let r = try await fetch(port, "POST", "/api/session/motion", body: body)
                #expect(r.status == 400, "\(body): \(r.status)")
                #expect(errorField(r)?.contains(field) == true, "\(body): \(errorField(r) ?? "no message")")
            }
            let after = try #require(motion(try await fetch(port, "/api/session")))
            #expect(after["threshold"] as? Double == 2.5 && after["preRoll"] as? Double == 2 && (after["masks"] as? [Any])?.count == 1)
            // Each camera has its own; an unknown camera is 404.
            let front = try await fetch(port, "POST", "/api/cameras/front/session/motion", body: #"{"enabled": true}"#)
            #expect(front.status == 200 && motion(front)?["threshold"] as? Double == 1)
            #expect(try await fetch(port, "POST", "/api/cameras/nope/session/motion", body: #"{"enabled": true}"#).status == 404)
            // The scene: a walker staged for later is reported, `null` calls it off, bad values are 400.
            let staged = try await fetch(port, "POST", "/api/cameras/rear/scene", body: #"{"walker": {"after": 100, "duration": 2}}"#)
            let walker = (staged.json as? [String: Any])?["walker"] as? [String: Double]
            #expect(staged.status == 200 && walker?["duration"] == 2 && walker?["size"] == 0.5)
            let off = try await fetch(port, "POST", "/api/cameras/rear/scene", body: #"{"walker": null}"#)
            #expect(off.status == 200 && (off.json as? [String: Any])?["walker"] is NSNull)
            for body in [#"{"walker": {"after": 1}}"#, #"{"walker": {"duration": 0}}"#, #"{"moving": "no"}"#, #"{"codes": null}"#] {
                #expect(try await fetch(port, "POST", "/api/cameras/rear/scene", body: body).status == 400, "\(body)")
            }
        }
    }

    /// Ten walkers, one after another: ten events, each a movie that starts at least `preRoll`
    /// before the event's first moving frame and ends at least `postRoll` after its last.
    @Test func everyEventIsAMovieWithItsPreRollAndPostRoll() async throws {
        let preRoll = 2.0, postRoll = 1.0
        try await withServer({ c in
            c.motion = .init(preRoll: preRoll, postRoll: postRoll)
            c.session.preset = "640x480"
        }) { app, port in
            // Detection starts on a still scene: the bars' block moving before would be an event too.
            _ = try await fetch(port, "POST", "/api/cameras/rear/scene", body: #"{"moving": false}"#)
            #expect(try await fetch(port, "POST", "/api/cameras/rear/session/motion", body: #"{"enabled": true}"#).status == 200)
            let events = try await MetadataAPITests.Events(port, camera: "rear")
            // The detector has learned the scene (its first 30 frames: seconds under a sanitizer)…
            func frames() async throws -> Int {
                let line = try await fetch(port, "/metrics").text.split(separator: "\n")
                    .first { $0.hasPrefix(#"viewfinder_motion_score_count{camera="rear"}"#) }
                return Int(line?.split(separator: " ").last ?? "") ?? 0
            }
            #expect(try await eventually(timeout: 20) { try await frames() >= 45 })
            // …and the ring holds the pre-roll (the state says how far back it reaches).
            #expect(try await eventually(timeout: 20) { try await Self.preRollHeld(port) >= preRoll })
            var walkers: [Double] = []
            for _ in 0..<10 {
                let scene = try await fetch(port, "POST", "/api/cameras/rear/scene", body: #"{"walker": {"after": 0.2, "duration": 1.2, "size": 0.6}}"#)
                let walker = try #require((scene.json as? [String: Any])?["walker"] as? [String: Double])
                walkers.append(try #require(walker["startsAt"]))
                let started = try await events.next("motion")
                #expect(started["event"] as? String == "started")
                let start = try #require(started["start"] as? Double)
                #expect(start >= walkers.last! && start - walkers.last! <= 0.5, "detected \(start - walkers.last!) s after the walker entered")
                // Where it moves, a few times a second, until it ends.
                var moving: [[String: Any]] = []
                var ended = try await events.next("motion")
                while ended["event"] as? String == "moving" {
                    moving.append(ended)
                    ended = try await events.next("motion")
                }
                #expect(ended["event"] as? String == "ended")
                #expect(!moving.isEmpty && moving.allSatisfy { $0["box"] is [String: Double] && $0["start"] as? Double == start })
                let times = moving.compactMap { $0["at"] as? Double }
                #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 0.24 }, "at most 4 a second: \(times)")
                // The movie ends a post-roll later; the next walker comes after it (no merge).
                let finished = try await events.next("recording")
                if finished["event"] as? String == "started" { _ = try await events.next("recording") }
            }
            let listed = try await fetch(port, "/api/movies?trigger=motion")
            let movies = try #require((listed.json as? [String: Any])?["movies"] as? [[String: Any]])
            #expect(movies.count == 10)
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            for m in movies {
                let id = try #require(m["id"] as? String)
                #expect(m["trigger"] as? String == "motion" && m["reason"] as? String == "eventEnded")
                let event = try #require(m["event"] as? [String: Double])
                let startedAt = try #require(iso.date(from: m["startedAt"] as? String ?? "")).timeIntervalSince1970
                let probe = try await LiveMP4Tests.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration",
                                                                      "-of", "csv=p=0", app.movies.path(id)])
                let duration = try #require(Double(probe.out.trimmingCharacters(in: .whitespacesAndNewlines)))
                #expect(event["start"]! - startedAt >= preRoll - 0.001, "\(id): \(event["start"]! - startedAt) s before the event")
                #expect(startedAt + duration - event["end"]! >= postRoll - 0.04, "\(id): \(startedAt + duration - event["end"]!) s after it")
                #expect(event["peak"]! >= event["start"]! && event["peak"]! <= event["end"]!)
                let snapshot = try await fetch(port, "/api/movies/\(id)/snapshot")
                #expect(snapshot.status == 200 && snapshot.headers["content-type"] == "image/jpeg" && snapshot.body.count > 1000)
            }
            let manual = try await fetch(port, "/api/movies?trigger=manual")
            #expect(((manual.json as? [String: Any])?["movies"] as? [Any])?.count == 0)
            #expect(try await fetch(port, "/api/movies?trigger=sometimes").status == 400)
            let metrics = try await fetch(port, "/metrics").text
            #expect(metrics.contains(#"viewfinder_motion_events_total{camera="rear"} 10"#))
        }
    }

    /// With the synthetic microphone, an event's movie has the pre-roll's sound too: an AAC
    /// track from the movie's first frame, a beep at every whole second of capture time (the
    /// movie's start is its first frame's capture time, `startedAt`), before the event began as
    /// after it.
    @Test func anEventMovieHasThePreRollsSound() async throws {
        let preRoll = 2.0
        try await withServer({ c in
            c.motion = .init(preRoll: preRoll, postRoll: 1)
            c.session.preset = "640x480"
            c.synthetic.microphone = true
        }) { app, port in
            _ = try await fetch(port, "POST", "/api/cameras/rear/scene", body: #"{"moving": false}"#)
            #expect(try await fetch(port, "POST", "/api/cameras/rear/session/motion", body: #"{"enabled": true}"#).status == 200)
            let events = try await MetadataAPITests.Events(port, camera: "rear")
            #expect(try await eventually(timeout: 20) {
                let line = try await fetch(port, "/metrics").text.split(separator: "\n")
                    .first { $0.hasPrefix(#"viewfinder_motion_score_count{camera="rear"}"#) }
                return Int(line?.split(separator: " ").last ?? "") ?? 0 >= 45
            })
            #expect(try await eventually(timeout: 20) { try await Self.preRollHeld(port) >= preRoll })
            _ = try await fetch(port, "POST", "/api/cameras/rear/scene", body: #"{"walker": {"after": 0.2, "duration": 1.2, "size": 0.6}}"#)
            var e = try await events.next("recording")
            while e["event"] as? String != "finished" { e = try await events.next("recording") }
            let listed = try await fetch(port, "/api/movies?trigger=motion")
            let movie = try #require(((listed.json as? [String: Any])?["movies"] as? [[String: Any]])?.first, "\(listed.text)")
            let sound = try #require(movie["audio"] as? [String: Any], "the event's movie has sound: \(movie)")
            #expect(sound["codec"] as? String == "aac")
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let t0 = try #require(iso.date(from: movie["startedAt"] as? String ?? "")).timeIntervalSince1970
            let start = try #require((movie["event"] as? [String: Double])?["start"])
            let (beeps, samples) = try await AudioAPITests.beeps(ofFile: app.movies.path(try #require(movie["id"] as? String)), start: t0)
            // startedAt carries milliseconds: within 3 ms of the second, as in any movie.
            AudioAPITests.expectOnTheSecond(beeps, within: 3, "its second (\(beeps.map { $0 - t0 }) s into the movie)") {
                #expect(beeps.contains { $0 < start }, "a beep of the pre-roll, before the event at \(start): \(beeps)")
                #expect(beeps.count >= 3, "\(beeps.count) beeps in \(Double(samples) / 48_000) s")
            }
        }
    }

    /// Fifty photos while a movie is being written, under a limit that holds a fraction of them:
    /// the oldest go (each a `deleted` event), the kept one and the recording stay.
    @Test func retentionKeepsTheDirectoriesUnderMaxBytes() async throws {
        let limit: Int64 = 600_000
        try await withServer({ c in c.storage.maxBytes = limit }) { app, port in
            let events = try await MetadataAPITests.Events(port)
            let first = try await fetch(port, "POST", "/api/session/capture?store=true")
            let kept = try #require((first.json as? [String: Any])?["id"] as? String)
            #expect(try await fetch(port, "POST", "/api/photos/\(kept)/keep", body: #"{"keep": true}"#).status == 200)
            #expect(try await fetch(port, "POST", "/api/session/recording/start", body: "{}").status == 200)
            for _ in 0..<50 { #expect(try await fetch(port, "POST", "/api/session/capture?store=true").status == 201) }
            let deleted = try await events.next("deleted")
            #expect(deleted["kind"] as? String == "photo" && deleted["reason"] as? String == "maxBytes")
            func used() -> Int64 {
                [app.photos.directory, app.movies.directory].reduce(0) { total, dir in
                    total + ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).reduce(0) { t, name in
                        t + (((try? FileManager.default.attributesOfItem(atPath: dir + "/" + name))?[.size] as? Int64) ?? 0)
                    }
                }
            }
            #expect(await eventually { used() <= limit }, "\(used()) bytes")
            let photos = try #require((try await fetch(port, "/api/photos").json as? [String: Any])?["photos"] as? [[String: Any]])
            #expect(photos.contains { $0["id"] as? String == kept && $0["keep"] as? Bool == true })
            #expect(photos.count < 51, "51 were stored; how many go depends on the movie's size beside them")
            let stop = try await fetch(port, "POST", "/api/session/recording/stop", body: "{}")
            #expect(stop.status == 201, "the movie being written is never deleted")
            #expect(try await fetch(port, "/metrics").text.contains(#"viewfinder_storage_deleted_total{kind="photo",reason="maxBytes"}"#))
        }
    }
}
