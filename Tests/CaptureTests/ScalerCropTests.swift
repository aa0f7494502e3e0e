// Zoom as the sensor's crop (libcamera's ScalerCrop), against a pipeline that crops as a Camera
// Module 3's does (FakeLibcameraPipeline: the crop two frames late, on the ISP's 4-pixel pitch,
// reported in each frame's metadata): what a viewer sees — the camera's crop, then what the
// pipeline still crops of it — is what the session asked at every frame, while the zoom and its
// centre move and after; the pipeline crops nothing once the camera has caught up; a rectangle
// is set only when it moved.

import CameraCore
import Capture
import CaptureTestSupport
import SystemSupport
import Testing

@Suite struct ScalerCropTests {
    /// 1920x1080 on the imx708's 4608x2592 array: the whole array is the picture at zoom 1.
    let geometry = ScalerCrop(maximum: [0, 0, 4608, 2592], width: 1920, height: 1080)!

    /// What the viewer sees of the whole picture: the camera's crop, then the pipeline's of it.
    func shown(_ camera: CropRegion, _ rest: FrameTransform) -> CropRegion {
        let r = rest.region
        return CropRegion(x: camera.x + r.x * camera.width, y: camera.y + r.y * camera.height,
                          width: r.width * camera.width, height: r.height * camera.height)
    }

    func close(_ a: CropRegion, _ b: CropRegion, within e: Double) -> Bool {
        abs(a.x - b.x) <= e && abs(a.y - b.y) <= e && abs(a.width - b.width) <= e && abs(a.height - b.height) <= e
    }

    @Test func theWholePictureIsTheLargestOfTheStreamsAspect() throws {
        #expect(geometry.whole == SensorRectangle(x: 0, y: 0, width: 4608, height: 2592))
        // 4:3 from a 16:9 array: the full height, centred.
        #expect(ScalerCrop(maximum: [0, 0, 4608, 2592], width: 640, height: 480)?.whole == SensorRectangle(x: 576, y: 0, width: 3456, height: 2592))
        #expect(ScalerCrop(maximum: nil, width: 640, height: 480) == nil, "no ScalerCrop: the frame is cropped")
        // 2× about a point near the right edge: the crop stops at the edge, on even pixels.
        let r = geometry.rectangle(for: FrameTransform(zoom: 2, center: Point(x: 0.9, y: 0.5)))
        #expect(r == SensorRectangle(x: 2304, y: 648, width: 2304, height: 1296))
        #expect(geometry.region(of: r) == CropRegion(x: 0.5, y: 0.25, width: 0.5, height: 0.5))

        #expect(LibcameraControlMapping(FakeLibcameraPipeline.cameraModule3).capabilities.zoom.sensorCrop)
        #expect(!LibcameraControlMapping(FakeLibcameraPipeline.vimc).capabilities.zoom.sensorCrop)
    }

    @Test func whatRemainsIsTheCropWithinTheCamerasAndAllOfTheOrientation() {
        let t = FrameTransform(zoom: 4, rotation: 90, mirrored: true, center: Point(x: 0.3, y: 0.6))
        // The camera cropped 2× about the same centre: 2× is left, about the frame's middle.
        let half = CropRegion(x: 0.05, y: 0.35, width: 0.5, height: 0.5)
        let rest = t.remaining(after: half)
        #expect(abs(rest.zoom - 2) < 1e-9 && abs(rest.center.x - 0.5) < 1e-9 && abs(rest.center.y - 0.5) < 1e-9)
        #expect(rest.rotation == 90 && rest.mirrored)
        #expect(close(shown(half, rest), t.region, within: 1e-9))
        // Exactly the crop asked: nothing but the orientation.
        let all = t.remaining(after: t.region)
        #expect(all.zoom == 1 && all.rotation == 90 && all.mirrored)
        // Less than asked (the zoom went out while the frame was in flight): the frame whole.
        #expect(FrameTransform(zoom: 2).remaining(after: CropRegion(x: 0.375, y: 0.375, width: 0.25, height: 0.25)).isIdentity)
    }

    @Test func aMovingZoomShowsWhatTheSessionAskedAtEveryFrame() throws {
        let camera = FakeLibcameraPipeline()
        let wanted = Locked(FrameTransform.identity)
        let crops = ScalerCropRequests(geometry: geometry, source: { wanted.withLock { $0 } })
        // The zoom in (1× to 8× over 14 frames, the centre moving to the upper right), held, then out to 2×.
        func session(_ k: Int) -> FrameTransform {
            let z = k < 14 ? 1 + 0.5 * Double(k) : k < 30 ? 8 : 2
            let p = min(Double(k), 14) / 14
            return FrameTransform(zoom: z, center: Point(x: 0.5 + 0.3 * p, y: 0.5 - 0.2 * p))
        }
        var exact = 0, lagging: [Int] = [], cropping = 0
        for k in 0..<40 {
            wanted.withLock { $0 = session(k) }
            crops.prepare(0, on: camera)
            camera.frame()
            // The first frame comes before the camera has applied a crop: the one it was queued with.
            let reading = camera.get("ScalerCrop")
            #expect(k == 0 || reading?.fromMetadata == true, "frame \(k): the frame's metadata names its crop")
            let region = try #require(crops.region(0, reported: reading?.fromMetadata == true ? SensorRectangle(reading?.values) : nil))
            let t = session(k), rest = t.remaining(after: region), w = t.region
            let e = FrameTransform.cropTolerance * w.width
            if region.x <= w.x + e && region.y <= w.y + e && region.x + region.width + e >= w.x + w.width
                && region.y + region.height + e >= w.y + w.height {
                // The camera's crop holds what was asked: the pipeline crops the rest, no more.
                #expect(close(shown(region, rest), w, within: e), "frame \(k)")
                exact += 1
            } else {
                // Made before the latest move (a zoom out, or a centre that moved further than
                // the deeper crop leaves room for): the pipeline cannot show what the camera
                // cropped away, and moves the crop no further than the frame goes.
                lagging.append(k)
                let shownNow = shown(region, rest)
                #expect(shownNow.x >= region.x - 1e-9 && shownNow.x + shownNow.width <= region.x + region.width + 1e-9, "frame \(k)")
            }
            if rest.zoom > 1 { cropping += 1 }
            if k >= 16 && k < 30 { #expect(rest.isIdentity, "frame \(k): the camera has caught up, nothing is left to crop") }
        }
        // The fake's crop reaches the frame after the one it was queued before: only a frame
        // whose asked crop just moved lags.
        #expect(lagging.allSatisfy { k in k > 0 && session(k) != session(k - 1) }, "lagging frames \(lagging)")
        #expect(lagging.contains(30), "the zoom out's first frame was made at 8×")
        #expect(exact >= 40 - 15 && cropping > 0, "\(exact) exact; the pipeline cropped \(cropping) frames while the camera caught up")
        // One rectangle per frame while it moved, none while it held.
        let sets = camera.sets.filter { $0.0 == "ScalerCrop" }.count
        #expect(sets == 14 + 1 + 1, "\(sets) sets: the ramp's 14 frames, the hold's first, the zoom out's")
    }

    @Test func aPipelineThatDoesNotReportItsCropIsTakenAtWhatItWasQueuedWith() {
        let camera = FakeLibcameraPipeline()
        let crops = ScalerCropRequests(geometry: geometry, source: { FrameTransform(zoom: 2) })
        crops.prepare(3, on: camera)
        #expect(crops.region(3, reported: nil) == CropRegion(x: 0.25, y: 0.25, width: 0.5, height: 0.5))
        #expect(crops.region(1, reported: nil) == nil, "a request queued with no crop shows the pipeline's own: the whole")
        // A rectangle the camera refuses: the frames go on with the one it has, nothing set again.
        camera.refuse("ScalerCrop")
        let moved = ScalerCropRequests(geometry: geometry, source: { FrameTransform(zoom: 3) })
        moved.prepare(0, on: camera)
        moved.prepare(1, on: camera)
        #expect(moved.region(0, reported: nil) == nil && camera.sets.filter { $0.0 == "ScalerCrop" }.count == 1)
    }
}
