// GET /metrics: Prometheus's text format, one series per camera.

import CameraCore
import Foundation
import HTTPServer
import Session

extension Application {
    func metrics() async -> Response {
        var up = "", encoded = "", copies = "", clients = "", fps = "", recording = "", metadata = "", motion = "", outputs = ""
        for s in cameras.sessions {
            let state = await s.state()
            let label = "{camera=\"\(Self.labelValue(s.id))\"}"
            up += "viewfinder_up\(label) \(state.state == .running ? 1 : 0)\n"
            encoded += "viewfinder_frames_encoded_total\(label) \(s.hub.encodedFrames)\n"
            let handoffs = s.previewHandoffs
            copies += "viewfinder_preview_frames_copied_total\(label) \(handoffs.copied)\n"
                + "viewfinder_preview_frames_lent_total\(label) \(handoffs.lent)\n"
            clients += "viewfinder_stream_clients\(label) \(state.stream.clients)\n"
            fps += "viewfinder_stream_fps\(label) \(state.stream.fps)\n"
            let r = state.recording
            recording += "viewfinder_recording_active\(label) \(r.active ? 1 : 0)\n"
                + "viewfinder_recording_frames\(label) \(r.frames)\n"
                + "viewfinder_recording_dropped\(label) \(r.dropped)\n"
                + "viewfinder_recording_bytes\(label) \(r.bytes)\n"
            metadata += "viewfinder_metadata_scans_total\(label) \(s.metadataScans)\n"
                + "viewfinder_metadata_objects\(label) \(state.metadata.objects.count)\n"
            motion += Self.motionSeries(s.motionTotals, active: state.motion.active, camera: Self.labelValue(s.id))
            outputs += Self.outputSeries(state.outputs, camera: Self.labelValue(s.id))
        }
        let text = """
        # HELP viewfinder_up 1 while the camera's session is running.
        # TYPE viewfinder_up gauge
        \(up)# HELP viewfinder_frames_encoded_total Frames encoded and published to viewers.
        # TYPE viewfinder_frames_encoded_total counter
        \(encoded)# HELP viewfinder_preview_frames_copied_total Frames the preview encode took by copying them since the camera started; viewfinder_preview_frames_lent_total: on the camera's lent buffer, without a copy (V4L2).
        # TYPE viewfinder_preview_frames_copied_total counter
        # TYPE viewfinder_preview_frames_lent_total counter
        \(copies)# HELP viewfinder_stream_clients MJPEG viewers connected.
        # TYPE viewfinder_stream_clients gauge
        \(clients)# HELP viewfinder_stream_fps Frames published over the last second.
        # TYPE viewfinder_stream_fps gauge
        \(fps)# HELP viewfinder_recording_active 1 while the camera records a movie; the other recording series describe that movie.
        # TYPE viewfinder_recording_active gauge
        # TYPE viewfinder_recording_frames gauge
        # TYPE viewfinder_recording_dropped gauge
        # TYPE viewfinder_recording_bytes gauge
        \(recording)# HELP viewfinder_metadata_scans_total Frames the metadata output scanned; viewfinder_metadata_objects: codes in view.
        # TYPE viewfinder_metadata_scans_total counter
        # TYPE viewfinder_metadata_objects gauge
        \(metadata)# HELP viewfinder_motion_events_total Motion events detected; viewfinder_motion_seconds_total: seconds in motion (events ended); viewfinder_motion_detect_seconds_total: CPU seconds the detector took; viewfinder_motion_score: frames judged by score (percent of the unmasked picture changed).
        # TYPE viewfinder_motion_events_total counter
        # TYPE viewfinder_motion_seconds_total counter
        # TYPE viewfinder_motion_detect_seconds_total counter
        # TYPE viewfinder_motion_active gauge
        # TYPE viewfinder_motion_score histogram
        \(motion)# HELP viewfinder_output_active 1 while the output works (the state's outputs[]); viewfinder_output_frames_total: frames it took since the camera started; viewfinder_output_dropped_total: of those, dropped; viewfinder_output_ms_per_frame: its work per frame; viewfinder_output_clients: who it works for, by transport.
        # TYPE viewfinder_output_active gauge
        # TYPE viewfinder_output_frames_total counter
        # TYPE viewfinder_output_dropped_total counter
        # TYPE viewfinder_output_ms_per_frame gauge
        # TYPE viewfinder_output_clients gauge
        \(outputs)# HELP viewfinder_storage_deleted_total Movies and photos retention deleted, by kind and the limit that made them go; viewfinder_storage_deleted_bytes_total: their bytes.
        # TYPE viewfinder_storage_deleted_total counter
        # TYPE viewfinder_storage_deleted_bytes_total counter
        \(retention?.metrics ?? "")# HELP viewfinder_main_camera 1 for the camera /api/session and /stream address.
        # TYPE viewfinder_main_camera gauge
        viewfinder_main_camera{camera="\(Self.labelValue(cameras.mainID))"} 1
        # HELP viewfinder_http_connections Open HTTP connections.
        # TYPE viewfinder_http_connections gauge
        viewfinder_http_connections \(server?.connectionCount ?? 0)
        # HELP viewfinder_live_clients Live H.264 clients by transport (their sum is what live.maxClients caps).
        # TYPE viewfinder_live_clients gauge
        viewfinder_live_clients{transport="webrtc"} \(whep.count)
        viewfinder_live_clients{transport="rtsp"} \(rtspClientCount)
        viewfinder_live_clients{transport="mp4"} \(liveMP4Count)
        # HELP viewfinder_live_encoder_available Live H.264 encoders this machine has (probed at start; 0 once one failed).
        # TYPE viewfinder_live_encoder_available gauge
        \(encoders.entries.map { "viewfinder_live_encoder_available{encoder=\"\($0.name)\"} \($0.available ? 1 : 0)" }.joined(separator: "\n"))
        # HELP viewfinder_live_encoder_fallbacks_total Live streams moved to the next encoder when theirs failed.
        # TYPE viewfinder_live_encoder_fallbacks_total counter
        viewfinder_live_encoder_fallbacks_total \(encoders.fallbacks)

        """
        return Response(status: 200, contentType: "text/plain; version=0.0.4", bytes: Array(text.utf8))
    }

    static func motionSeries(_ f: MotionFigures, active: Bool, camera: String) -> String {
        let label = "{camera=\"\(camera)\"}"
        var text = "viewfinder_motion_events_total\(label) \(f.events)\n"
            + "viewfinder_motion_seconds_total\(label) \((f.secondsInMotion * 1000).rounded() / 1000)\n"
            + "viewfinder_motion_detect_seconds_total\(label) \((f.cpuSeconds * 1e6).rounded() / 1e6)\n"
            + "viewfinder_motion_active\(label) \(active ? 1 : 0)\n"
        for (bound, count) in zip(MotionFigures.buckets, f.scoreBuckets) {
            text += "viewfinder_motion_score_bucket{camera=\"\(camera)\",le=\"\(bound)\"} \(count)\n"
        }
        text += "viewfinder_motion_score_bucket{camera=\"\(camera)\",le=\"+Inf\"} \(f.frames)\n"
            + "viewfinder_motion_score_sum\(label) \((f.scoreSum * 100).rounded() / 100)\n"
            + "viewfinder_motion_score_count\(label) \(f.frames)\n"
        return text
    }

    static func outputSeries(_ outputs: [OutputReport], camera: String) -> String {
        var text = ""
        for o in outputs {
            let label = "{camera=\"\(camera)\",output=\"\(o.type.rawValue)\"}"
            text += "viewfinder_output_active\(label) \(o.active ? 1 : 0)\n"
                + "viewfinder_output_frames_total\(label) \(o.framesIn)\n"
                + "viewfinder_output_dropped_total\(label) \(o.framesDropped)\n"
                + "viewfinder_output_ms_per_frame\(label) \(o.msPerFrame)\n"
            for (transport, n) in o.clients.sorted(by: { $0.key < $1.key }) {
                text += "viewfinder_output_clients{camera=\"\(camera)\",output=\"\(o.type.rawValue)\",transport=\"\(labelValue(transport))\"} \(n)\n"
            }
        }
        return text
    }

    /// A Prometheus label value: backslash, quote and newline escaped.
    static func labelValue(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
