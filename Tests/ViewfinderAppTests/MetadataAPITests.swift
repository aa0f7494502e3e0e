import Barcodes
import CameraCore
import Foundation
import HTTPServer
import JPEG
import Metadata
import Testing
@testable import ViewfinderApp

/// The metadata output over HTTP, reading codes the synthetic camera shows (the test
/// double's surface): events with values and bounds where the code is drawn, through
/// rotation and mirroring, the types filter, the region of interest, the lens's focus.
@Suite struct MetadataAPITests {
    func code(_ r: TestConnection) -> String? { (r.json as? [String: [String: Any]])?["error"]?["code"] as? String }

    /// Events as they arrive on /api/events (the connection stays open).
    final class Events: @unchecked Sendable {
        let connection: TestConnection
        var seen = 0
        init(_ port: Int, camera: String? = nil) async throws {
            connection = try TestConnection(port: port)
            try connection.request("GET", "/api/events" + (camera.map { "?camera=\($0)" } ?? ""))
            try await connection.read { String(decoding: $0, as: UTF8.self).contains("\n\n") }
        }

        /// The next `metadata` event's JSON (bounded by `timeout`).
        func nextMetadata(timeout: Double = 15) async throws -> [String: Any] { try await next("metadata", timeout: timeout) }

        /// The next event named `name`'s JSON (bounded by `timeout`).
        func next(_ name: String, timeout: Double = 15) async throws -> [String: Any] {
            let marker = "event: \(name)\ndata: "
            let start = seen
            try await connection.read(timeout: timeout) { bytes in
                let text = String(decoding: bytes, as: UTF8.self)
                guard let r = text.range(of: marker, range: text.index(text.startIndex, offsetBy: min(start, text.count))..<text.endIndex) else { return false }
                return text[r.upperBound...].contains("\n")
            }
            let text = connection.text
            let r = try #require(text.range(of: marker, range: text.index(text.startIndex, offsetBy: start)..<text.endIndex))
            let line = text[r.upperBound...].prefix { $0 != "\n" }
            seen = text.distance(from: text.startIndex, to: r.upperBound) + line.count
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    static func centre(_ object: [String: Any]) -> (Double, Double) {
        let b = object["bounds"] as? [String: Double] ?? [:]
        return ((b["x"] ?? -1) + (b["width"] ?? 0) / 2, (b["y"] ?? -1) + (b["height"] ?? 0) / 2)
    }

    func scene(_ port: Int, _ codes: String, camera: String = "rear") async throws -> TestConnection {
        try await fetch(port, "POST", "/api/cameras/\(camera)/scene", body: #"{"codes": \#(codes)}"#)
    }

    func scans(_ port: Int) async throws -> Int {
        let text = try await fetch(port, "/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix(#"viewfinder_metadata_scans_total{camera="rear"}"#) }
        return Int(line?.split(separator: " ").last ?? "") ?? -1
    }

    /// Waits until the output has scanned `n` more frames: what it finds by then is what it sees.
    func waitForScans(_ port: Int, _ n: Int) async throws {
        let from = try await scans(port)
        #expect(try await eventually(timeout: 15) { try await scans(port) >= from + n }, "no \(n) scans")
    }

    @Test func aQRCodeInTheSceneIsReadWhereItIsDrawnThroughRotationAndMirror() async throws {
        try await withServer({ $0.session.preset = "640x480" }) { _, port in
            let events = try await Events(port)
            #expect(try await scene(port, #"[{"type": "qr", "value": "hello", "x": 0.3, "y": 0.4, "size": 0.4}]"#).status == 200)
            let on = try await fetch(port, "POST", "/api/session/metadata", body: #"{"types": ["qr"]}"#)
            #expect(on.status == 200)
            #expect(((on.json as? [String: Any])?["metadata"] as? [String: Any])?["types"] as? [String] == ["qr"])
            let event = try await events.nextMetadata()
            let objects = try #require(event["objects"] as? [[String: Any]])
            #expect(objects.count == 1 && objects.first?["value"] as? String == "hello" && objects.first?["type"] as? String == "qr")
            #expect(event["camera"] as? String == "rear" && event["frameSequence"] is Int)
            let c = Self.centre(objects[0])
            #expect(abs(c.0 - 0.3) < 0.03 && abs(c.1 - 0.4) < 0.03, "drawn at (0.3, 0.4), found at \(c)")
            let b = objects[0]["bounds"] as? [String: Double] ?? [:]
            #expect(abs((b["height"] ?? 0) - 0.4 * 29 / 29 * (21.0 / 29)) < 0.05, "21 of 29 modules are the symbol: \(b)")

            // Rotated a quarter clockwise and mirrored: (x, y) → (1 − y, x) → (y, x).
            _ = try await fetch(port, "POST", "/api/session/orientation", body: #"{"rotation": 90, "mirrored": true}"#)
            _ = try await fetch(port, "POST", "/api/session/metadata", body: #"{"types": ["qr"]}"#)  // afresh
            let turned = try #require((try await events.nextMetadata()["objects"] as? [[String: Any]])?.first)
            let t = Self.centre(turned)
            #expect(abs(t.0 - 0.4) < 0.03 && abs(t.1 - 0.3) < 0.03, "expected (0.4, 0.3), found \(t)")
            let state = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            let inState = ((state["metadata"] as? [String: Any])?["objects"] as? [[String: Any]])?.first
            #expect(inState?["value"] as? String == "hello")
            // The truth: where zbar finds the code in the picture viewers get.
            let snapshot = try JPEGDecoder.decodeRGB(try await fetch(port, "/snapshot").body)
            let luma = (0..<(snapshot.width * snapshot.height)).map { i in UInt8(snapshot.pixels[i * 3 + 1]) }
            let seen = try #require(luma.withUnsafeBytes {
                CodeScanner().scan($0, width: snapshot.width, height: snapshot.height, stride: snapshot.width, types: [.qr])
            }.first)
            let xs = seen.corners.map { $0.x / Double(snapshot.width) }, ys = seen.corners.map { $0.y / Double(snapshot.height) }
            let inPicture = ((xs.min()! + xs.max()!) / 2, (ys.min()! + ys.max()!) / 2)
            #expect(abs(inPicture.0 - t.0) < 0.02 && abs(inPicture.1 - t.1) < 0.02, "reported \(t), in the snapshot \(inPicture)")

            // The code leaves the scene: an event with no objects.
            _ = try await scene(port, "[]")
            #expect((try await events.nextMetadata()["objects"] as? [[String: Any]])?.isEmpty == true)
        }
    }

    @Test func twoCodesTheTypesFilterAndTheRegionOfInterest() async throws {
        try await withServer({ $0.session.preset = "640x480" }) { _, port in
            let events = try await Events(port)
            _ = try await scene(port, #"[{"type": "qr", "value": "left", "x": 0.2, "y": 0.3, "size": 0.4}, {"type": "ean13", "value": "4006381333931", "x": 0.6, "y": 0.78, "size": 0.35}, {"type": "code128", "value": "VF-128", "x": 0.7, "y": 0.3, "size": 0.25}]"#)
            _ = try await fetch(port, "POST", "/api/session/metadata", body: #"{"types": ["qr", "ean13", "code128"]}"#)
            var values: Set<String> = []
            for _ in 0..<3 where values.count < 3 {  // a scan may see the scene half drawn: the set settles
                values = Set((try await events.nextMetadata()["objects"] as? [[String: Any]] ?? []).compactMap { $0["value"] as? String })
            }
            #expect(values == ["left", "4006381333931", "VF-128"])

            _ = try await fetch(port, "POST", "/api/session/metadata", body: #"{"types": ["ean13"]}"#)
            let only = try await events.nextMetadata()["objects"] as? [[String: Any]] ?? []
            #expect(only.map { $0["type"] as? String } == ["ean13"])

            // A region that holds only the QR code (its centre is at (0.2, 0.3)).
            _ = try await fetch(port, "POST", "/api/session/metadata",
                                body: #"{"types": ["qr", "ean13"], "rectOfInterest": {"x": 0, "y": 0, "width": 0.45, "height": 0.6}}"#)
            let inRegion = try await events.nextMetadata()["objects"] as? [[String: Any]] ?? []
            #expect(inRegion.map { $0["value"] as? String } == ["left"])
            // A region with no code: scans go on and find nothing.
            _ = try await fetch(port, "POST", "/api/session/metadata",
                                body: #"{"types": ["qr", "ean13"], "rectOfInterest": {"x": 0.4, "y": 0.0, "width": 0.1, "height": 0.1}}"#)
            try await waitForScans(port, 3)
            let state = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect(((state["metadata"] as? [String: Any])?["objects"] as? [Any])?.isEmpty == true)

            // Off: no scans, no events, even with a new code in view.
            _ = try await fetch(port, "POST", "/api/session/metadata", body: #"{"types": []}"#)
            let before = try await scans(port)
            _ = try await scene(port, #"[{"type": "qr", "value": "unseen", "x": 0.5, "y": 0.5, "size": 0.4}]"#)
            let frames = try await fetch(port, "/snapshot")  // frames go on being captured
            #expect(frames.status == 200)
            try await Task.sleep(nanoseconds: 600_000_000)  // six scan periods: the bound of a check that nothing happens
            #expect(try await scans(port) == before)
            #expect(!events.connection.text.contains("unseen"))
        }
    }

    @Test func anOutOfFocusLensReadsNothingUntilFocusReturns() async throws {
        try await withServer({ $0.session.preset = "640x480" }) { _, port in
            let events = try await Events(port)
            _ = try await scene(port, #"[{"type": "qr", "value": "sharp", "x": 0.5, "y": 0.35, "size": 0.3}]"#)
            _ = try await fetch(port, "POST", "/api/session/focus", body: #"{"mode": "locked", "lensPosition": 1.0}"#)
            _ = try await fetch(port, "POST", "/api/session/metadata", body: #"{"types": ["qr"]}"#)
            try await waitForScans(port, 5)
            let state = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect(((state["metadata"] as? [String: Any])?["objects"] as? [Any])?.isEmpty == true, "blurred: unreadable")
            #expect(!events.connection.text.contains("sharp"))
            _ = try await fetch(port, "POST", "/api/session/focus", body: #"{"mode": "locked", "lensPosition": 0.3}"#)
            let event = try await events.nextMetadata()
            #expect((event["objects"] as? [[String: Any]])?.first?["value"] as? String == "sharp")
        }
    }

    @Test func aPhotoOfAQRCodeThroughTheImageCamera() async throws {
        // A "photo": the code on a grey card, JPEG-compressed.
        let grid = try Symbol.grid(.qr, "from a photo")
        var yuyv = [UInt8](repeating: 128, count: 640 * 480 * 2)
        for i in stride(from: 0, to: yuyv.count, by: 2) { yuyv[i] = 150 }
        let s = 8, x0 = 120, y0 = 60
        for y in 0..<(grid.height * s) { for x in 0..<(grid.width * s) { yuyv[((y0 + y) * 640 + x0 + x) * 2] = grid[x / s, y / s] ? 30 : 220 } }
        let jpeg = try yuyv.withUnsafeBytes { try JPEGEncoder().encodeYUYV($0, width: 640, height: 480, stride: 1280, quality: 85) }
        let path = NSTemporaryDirectory() + "vf-qr-\(UUID().uuidString).jpg"
        try Data(jpeg).write(to: URL(fileURLWithPath: path))
        try await withServer({
            $0.cameras = .list([.init(id: "card", source: .image, path: path)])
            $0.session.preset = "640x480"
        }) { _, port in
            let events = try await Events(port)
            _ = try await fetch(port, "POST", "/api/session/metadata", body: #"{"types": ["qr"]}"#)
            let object = try #require((try await events.nextMetadata()["objects"] as? [[String: Any]])?.first)
            #expect(object["value"] as? String == "from a photo")
            let side = Double(grid.width * s)
            let c = Self.centre(object)
            #expect(abs(c.0 - (Double(x0) + side / 2) / 640) < 0.03 && abs(c.1 - (Double(y0) + side / 2) / 480) < 0.03, "\(c)")
            let r = try await scene(port, "[]", camera: "card")
            #expect(r.status == 409 && code(r) == "not_synthetic")
        }
    }

    @Test func badRequestsAreRefusedAndChangeNothing() async throws {
        try await withServer { _, port in
            let unknown = try await fetch(port, "POST", "/api/session/metadata", body: #"{"types": ["qr", "vp9"]}"#)
            #expect(unknown.status == 422 && code(unknown) == "unsupported")
            #expect(((unknown.json as? [String: [String: Any]])?["error"]?["supported"] as? [String])?.contains("ean13") == true)
            for body in [#"{"types": "qr"}"#, #"{"types": [1]}"#, #"{}"#, #"{"types": ["qr"], "rectOfInterest": {"x": 1, "y": 0, "width": 0.5, "height": 1}}"#,
                         #"{"types": ["qr"], "rectOfInterest": {"x": 0, "y": 0, "width": 1}}"#, #"{"types": ["qr"], "speed": 1}"#,
                         #"{"types": ["qr"], "rectOfInterest": {"x": 0, "y": 0, "width": 0, "height": 1}}"#, #"{"types": null}"#] {
                let r = try await fetch(port, "POST", "/api/session/metadata", body: body)
                #expect(r.status == 400 && code(r) == "invalid_value", "\(body) → \(r.status)")
            }
            let state = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect(((state["metadata"] as? [String: Any])?["types"] as? [String])?.isEmpty == true)

            // A rectangle reaching past the picture is cut at its edge, and the state says so.
            let over = try await fetch(port, "POST", "/api/session/metadata",
                                       body: #"{"types": ["qr"], "rectOfInterest": {"x": 0.5, "y": 0.25, "width": 0.8, "height": 0.5}}"#)
            let rect = ((over.json as? [String: Any])?["metadata"] as? [String: Any])?["rectOfInterest"] as? [String: Double]
            #expect(over.status == 200 && rect == ["x": 0.5, "y": 0.25, "width": 0.5, "height": 0.5], "\(over.status) \(String(describing: rect))")
            _ = try await fetch(port, "POST", "/api/session/metadata", body: #"{"types": []}"#)

            let badEAN = try await scene(port, #"[{"type": "ean13", "value": "4006381333932"}]"#)
            #expect(badEAN.status == 400 && code(badEAN) == "invalid_value")
            let undrawable = try await scene(port, #"[{"type": "upca", "value": "012345678905"}]"#)
            #expect(undrawable.status == 422 && code(undrawable) == "unsupported")
            let unknownCamera = try await scene(port, "[]", camera: "nope")
            #expect(unknownCamera.status == 404 && code(unknownCamera) == "unknown_camera")
            #expect(((try await fetch(port, "/api/cameras/rear/scene").json as? [String: Any])?["codes"] as? [Any])?.isEmpty == true)

            let cameras = try #require((try await fetch(port, "/api/cameras").json as? [String: Any])?["cameras"] as? [[String: Any]])
            let available = ((cameras.first?["capabilities"] as? [String: Any])?["metadata"] as? [String: Any])?["availableTypes"] as? [String]
            #expect(available?.contains("qr") == true && available?.contains("code128") == true)
        }
    }
}
