// What `GET /api/session` answers and every `state` event carries: the device's settings as
// read back, the session's own parts (zoom, orientation), and the capture graph — the inputs
// and every output with its clients and figures (issue 36), as go2rtc lists a stream's
// producers and consumers.

import CameraCore
import SystemSupport

extension CaptureSession {
    public func state() -> SessionState {
        let latest = hub.latestFrame
        let now = Clock.monotonic(), ramp = pipelineSettings.ramp
        var s = settings
        s.zoom.factor = (ramp.factor(at: now) * 1000).rounded() / 1000
        s.zoom.digital = (pipelineSettings.digitalZoom(at: now) * 1000).rounded() / 1000
        s.zoom.ramping = ramp.isRamping(at: now) || lensRamping
        var state = SessionState(
            state: runState, online: runState == .running,
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
                          dropped: pipeline?.output(PreviewOutput.self).map { $0.report.framesDropped + camera.rejectedFrames } ?? 0),
            error: lastError, recording: recorder?.status ?? .inactive, metadata: metadata.state, motion: motionState)
        state.inputs = [InputReport(device: camera.descriptor.id, mediaType: .video)]
        state.outputs = outputReports
        return state
    }

    /// Every output of the session, in one order whether the camera runs or not: the running
    /// pipeline's report each (figures since the camera started), else the output idle; the
    /// clients from the hubs, which outlive a run (a viewer waits on a stopped camera).
    var outputReports: [OutputReport] {
        var running: [OutputKind: OutputReport] = [:]
        for o in pipeline?.outputs ?? [] { let r = o.report; running[r.type] = r }
        running[.metadata] = metadata.report  // kept across runs: scans since the server started
        let events = events.clientCounts(camera: id).filter { ["sse", "mqtt"].contains($0.key) }
            .merging(["sse": 0, "mqtt": 0]) { a, _ in a }
        return OutputKind.allCases.compactMap { kind -> OutputReport? in
            if kind == .ring && configuration.frameRing <= 0 { return nil }
            var r = running[kind] ?? OutputReport(type: kind, active: false)
            switch kind {
            case .preview: r.clients = ["mjpeg": hub.viewerCount]
            case .live: r.clients = live.clientCounts.filter { ["rtsp", "webrtc", "mp4"].contains($0.key) }
                .merging(["rtsp": 0, "webrtc": 0, "mp4": 0]) { a, _ in a }
            case .motion, .metadata: r.clients = events
            case .movie:
                // A recording that shares the live encode, or a motion event's movie, takes access
                // units from the live stream rather than frames from the pipeline: its own report.
                if running[.movie] == nil, let rec = recorder ?? eventMovie?.recorder { r = rec.report }
            default: break
            }
            return r
        }
    }

    /// Frames the preview's encode took since the camera started: by copying them, and on the
    /// camera's lent buffer (V4L2: zero copies before the encode).
    public var previewHandoffs: (copied: UInt64, lent: UInt64) {
        pipeline?.output(PreviewOutput.self).map { ($0.copied, $0.lent) } ?? (0, 0)
    }
}
