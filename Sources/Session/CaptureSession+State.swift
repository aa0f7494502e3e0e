// What `GET /api/session` answers and every `state` event carries: the device's settings as
// read back, the session's own parts (zoom, orientation), and the capture graph — the inputs
// and every output with its clients and figures (issue 36), as go2rtc lists a stream's
// producers and consumers.

import CameraCore
import SystemSupport

extension CaptureSession {
    public func state() -> SessionState {
        let latest = hub.latestFrame
        let now = timekeeper.now, ramp = pipelineSettings.ramp
        var s = settings
        s.zoom.factor = (ramp.factor(at: now) * 1000).rounded() / 1000
        s.zoom.digital = (pipelineSettings.digitalZoom(at: now) * 1000).rounded() / 1000
        s.zoom.ramping = zoomRamping(at: now)
        let pan = pipelineSettings.pan
        if !pan.isFixed { s.zoom.center = pipelineSettings.shownCenter(at: now) }  // where the pan has got to
        s.zoom.panning = pan.isMoving(at: now)
        var state = SessionState(
            state: run.state, online: run.state == .running,
            camera: SessionState.CameraRef(id: camera.descriptor.id, name: camera.descriptor.name,
                                           position: camera.descriptor.position.rawValue,
                                           kind: camera.descriptor.kind.rawValue),
            format: format, preset: preset,
            zoom: s.zoom, focus: s.focus, exposure: s.exposure,
            whiteBalance: s.whiteBalance, torch: s.torch, orientation: s.orientation,
            stream: .init(clients: hub.viewerCount, fps: (hub.fps * 10).rounded() / 10,
                          quality: pipelineSettings.quality, subsampling: pipelineSettings.subsampling.rawValue,
                          workers: min(configuration.streamWorkers, configuration.pool.threads)),
            frames: .init(sequence: latest?.sequence ?? 0,
                          dropped: run.pipeline == nil ? 0 : graph.preview.droppedThisRun + camera.rejectedFrames),
            error: run.error, recording: graph.movie.recorder?.status ?? .inactive, metadata: metadata.state,
            motion: graph.motion.state)
        state.controls = s.controls
        state.motion.preRollHeld = graph.movie.preRollHeld
        state.inputs = [InputReport(device: camera.descriptor.id, mediaType: .video)]
        if let mic = audioInput {
            state.inputs.append(InputReport(device: mic.device.name, mediaType: .audio))
            state.audio = mic.report
        }
        state.live = liveStreams
        state.outputs = outputReports
        state.connections = graph.connections(of: camera.descriptor.id)
        return state
    }

    /// Every output of the graph, in one order whether the camera runs or not, with its
    /// figures since it was added (across runs); the clients from the hubs, which outlive a
    /// run (a viewer waits on a stopped camera).
    var outputReports: [OutputReport] {
        let events = events.clientCounts(camera: id).filter { ["sse", "mqtt"].contains($0.key) }
            .merging(["sse": 0, "mqtt": 0]) { a, _ in a }
        return graph.listed.map { o in
            var r = o.report
            switch r.type {
            case .preview: r.clients = ["mjpeg": hub.viewerCount]
            case .live, .liveSub, .liveVP8:
                let hub = live(r.type == .live ? .main : r.type == .liveSub ? .sub : .vp8)
                let kinds = r.type == .liveVP8 ? ["webrtc"] : ["rtsp", "webrtc", "mp4"]  // VP8 goes to WebRTC alone
                r.clients = hub.clientCounts.filter { kinds.contains($0.key) }
                    .merging(Dictionary(uniqueKeysWithValues: kinds.map { ($0, 0) })) { a, _ in a }
                r.viewers = hub.viewerReports
            case .motion, .metadata: r.clients = events
            case .audio: r.clients["sse"] = self.events.levelClientCount(camera: id)
            default: break
            }
            return r
        }
    }

    /// Frames the preview's encode took since the session was made: by copying them, and on
    /// the camera's lent buffer (V4L2: zero copies before the encode).
    public nonisolated var previewHandoffs: (copied: UInt64, lent: UInt64) { graph.preview.handoffs }
}
