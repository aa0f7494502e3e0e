// The microphone's lifecycle, on the session's queue: it starts with the camera's run and
// stops with it (a switch moves to the other camera's microphone), and a microphone that is
// missing or fails leaves the picture alone — the state says why (`audio.error`) and the
// device is tried again, waiting longer each time (to ten seconds), as a lost camera is.

import CameraCore
import Movie
import SystemSupport

extension CaptureSession {
    /// The running camera's microphone, if it has one.
    var audioInput: AudioInput? { graph.microphones[camera.descriptor.id] }

    /// The audio data output (`audio.wav`), when the session has sound.
    public nonisolated var audioData: AudioDataOutput? { graph.audioData }

    /// Whether the session has a microphone (running or not): a transport that can add sound
    /// later (WebRTC) offers a sound track for it.
    public nonisolated var hasMicrophone: Bool { !graph.microphones.isEmpty }

    /// The sound of the microphone that runs now in `codec` (its track), for a transport that
    /// sends it beside the picture (RTSP: AAC; WebRTC: Opus); nil when none runs (or the codec
    /// cannot take its format).
    public nonisolated func soundTrack(_ codec: AudioTrackInfo.Codec) -> AudioTrackInfo? { running(codec)?.track }

    /// Each packet of `track` (its codec's) until the subscription is cancelled, for a
    /// transport whose track is fixed (RTSP's SDP, a movie's): nil when no microphone runs.
    public nonisolated func subscribeSound(_ track: AudioTrackInfo) -> SoundSubscription? {
        running(track.codec)?.subscribe(track)
    }

    /// Each packet in `codec` of the session's microphone, in whatever track it makes, from
    /// when it runs (a WebRTC viewer's Opus): nil when the session has no microphone.
    public nonisolated func subscribeSound(_ codec: AudioTrackInfo.Codec) -> SoundSubscription? {
        graph.microphones[graph.camera.descriptor.id].map { (codec == .aac ? $0.aac : $0.opus).subscribe(nil) }
    }

    private nonisolated func running(_ codec: AudioTrackInfo.Codec) -> AudioEncodeStream? {
        let streams = graph.microphones.values.map { codec == .aac ? $0.aac : $0.opus }
        return streams.first { $0.track != nil }
    }

    /// Camera `id`'s microphone as `/api/cameras` lists it: the device and what it offers
    /// (read when it was last opened, else by opening it), or why that cannot be read.
    public nonisolated func microphone(of id: String) -> (device: String, capabilities: Result<AudioCapabilities, AudioError>)? {
        guard let input = graph.microphones[id] else { return nil }
        return (input.device.name, Result { () throws(AudioError) in try input.device.capabilities() })
    }

    func startAudio() {
        guard let input = audioInput else { return }
        openAudio(input, run: input.nextRun())
    }

    func stopAudio() {
        for input in graph.microphones.values {
            _ = input.nextRun()
            input.close()
        }
    }

    private func openAudio(_ input: AudioInput, run: Int) {
        guard input.isCurrent(run), self.run.state == .running || self.run.state == .interrupted else { return }
        // Weakly: the device keeps its handler, and the input keeps the device.
        input.device.setInterruptionHandler { [weak self, weak input] error in
            guard let input else { return }
            Task { await self?.audioInterrupted(input, error, run: run) }
        }
        let before = input.report.error
        do throws(AudioError) {
            try input.open()
            if before != nil { logger.info("camera \(input.camera): sound from \(input.device.name)") }
            announce()
        } catch {
            let delay = input.failed(error)
            if before != error.description {
                logger.warning("camera \(input.camera): no sound (\(error.description)); the picture goes on")
                announce()
            }
            scheduleAudioReopen(input, run: run, after: delay)
        }
    }

    private func audioInterrupted(_ input: AudioInput, _ error: AudioError, run: Int) {
        guard input.isCurrent(run) else { return }
        logger.warning("camera \(input.camera): sound lost (\(error.description)); the picture goes on")
        let delay = input.failed(error)
        announce()
        scheduleAudioReopen(input, run: run, after: delay)
    }

    private func scheduleAudioReopen(_ input: AudioInput, run: Int, after delay: Double) {
        let timekeeper = self.timekeeper
        Task { [weak self] in
            try? await timekeeper.sleep(delay)
            await self?.openAudio(input, run: run)
        }
    }

    /// `POST …/session/audio`: mutes or unmutes the audio connections, sets the capture gain
    /// (the mixer's, read back, where the device has one; digital otherwise). Validated
    /// whole before anything changes.
    @discardableResult
    public func setAudio(_ request: AudioRequest) throws(SessionError) -> SessionState {
        guard let input = audioInput else {
            throw .unsupported("sound (camera \(camera.descriptor.id) has no audio input)", supported: [])
        }
        if let g = request.gainDb, !g.isFinite {
            throw .invalidValue("gainDb must be a number of decibels")
        }
        if let g = request.gainDb {
            do throws(AudioError) { _ = try input.setGain(g) } catch {
                throw .invalidValue("the microphone's mixer refused a gain of \(g) dB: \(error.description)")
            }
        }
        if let m = request.muted { input.setMuted(m) }
        return announce()
    }
}
