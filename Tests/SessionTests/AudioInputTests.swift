// The microphone as an input of the session's graph (issue 37): it runs with its camera and
// stops with it; a missing or lost one leaves the picture alone, says why, and is reopened
// when it comes back; mute disables the audio connections (silence, in time) and the gain
// goes through the mixer, stepped and read back. Over a model of a C920's microphone
// (FakeMicrophone) beside the synthetic camera.

import CameraCore
import Capture
import CaptureTestSupport
import Foundation
import Sound
import Subscriptions
import SystemSupport
import Testing
@testable import Session

@Suite(.serialized) struct AudioInputTests {
    func session(_ mic: FakeMicrophone, _ timekeeper: any Timekeeper = SystemTimekeeper()) throws -> CaptureSession {
        try CaptureSession(camera: SyntheticCamera(id: "rear", position: .rear), microphones: ["rear": mic],
                           configuration: SessionConfiguration(preset: "352x288"), timekeeper: timekeeper)
    }

    /// Polls the session's state until `condition` holds (bounded): the state follows events
    /// on the microphone's own thread, which the test cannot await.
    func until(_ s: CaptureSession, timeout: Double = TestTime.patience, _ condition: (SessionState) -> Bool) async -> SessionState {
        let deadline = TestTime.deadline(timeout)
        var state = await s.state()
        while !condition(state) && Date() < deadline {
            try? await Task.sleep(nanoseconds: 20_000_000)
            state = await s.state()
        }
        return state
    }

    /// Reads `seconds` of a client of the audio data output, with the capture time of its first sample.
    func clip(_ s: CaptureSession, seconds: Double) async throws -> (start: Double, samples: [Int16]) {
        let client = try #require(s.audioData).subscription(seconds: seconds)
        let first = try #require(await client.start(timeout: TestTime.patience * TestTime.scale))
        let woke = DispatchSemaphore(value: 0)
        client.attach { woke.signal() }
        var bytes: [UInt8] = []
        let deadline = TestTime.deadline(seconds + TestTime.patience)
        loop: while Date() < deadline {
            switch client.next() {
            case .item(let b): bytes += b
            case .wait: _ = try await offload { woke.wait(timeout: .now() + 0.5) }
            case .end: break loop
            }
        }
        let pcm = Array(bytes.dropFirst(44))
        let samples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        return (first.timestamp, samples)
    }

    func peak(_ samples: ArraySlice<Int16>) -> Int { samples.map { abs(Int($0)) }.max() ?? 0 }

    @Test func theMicrophoneRunsWithItsCameraAndTheStateSaysSo() async throws {
        let mic = FakeMicrophone()
        let s = try session(mic)
        let idle = await s.state()
        #expect(idle.audio?.running == false && idle.audio?.device == "hw:CARD=C920,DEV=0")
        #expect(idle.inputs == [InputReport(device: "rear", mediaType: .video), InputReport(device: "hw:CARD=C920,DEV=0", mediaType: .audio)])
        #expect(idle.outputs.map(\.type).last == .audio)
        // The microphone feeds the movie (its sound track) and the audio data output.
        #expect(idle.connections.filter { $0.mediaType == .audio } == [.movie, .audio].map {
            CaptureConnection(input: "hw:CARD=C920,DEV=0", output: $0, mediaType: .audio, enabled: true)
        })
        #expect(idle.connections.filter { $0.mediaType == .video }.allSatisfy { $0.output != .audio })

        try await s.start()
        let running = await until(s) { $0.audio?.running == true && $0.audio?.peakDb != nil }
        #expect(running.audio?.format == FakeMicrophone.format)
        #expect(abs((running.audio?.peakDb ?? 0) - -20) < 0.5, "the tone's level: \(running.audio?.peakDb ?? 0)")
        // Two seconds of it: whole, in time (the first sample's capture time and the count agree).
        let asked = SystemSupport.Clock.now()
        let (start, samples) = try await clip(s, seconds: 2)
        #expect(samples.count == 2 * 48_000 * 2)
        // Stamped on the capture clock: before it was read, and not long before the client
        // asked (a device held up by a loaded host delivers late what it captured then).
        let earliest: Double = asked - 10, latest: Double = SystemSupport.Clock.now() - 2
        #expect(start >= earliest && start <= latest, "\(start - asked)")
        #expect(await s.state().outputs.first { $0.type == .audio }?.framesIn ?? 0 >= 200)
        await s.stop()
        #expect(await s.state().audio?.running == false)
        #expect(!mic.isRunning, "the device is closed with its camera")
    }

    @Test func aMissingMicrophoneLeavesThePictureAloneAndIsOpenedWhenItComes() async throws {
        // The reopens' waits on a clock the test advances: none happens behind the test's back
        // (a reopen that failed meanwhile would put its own error in the state).
        let mic = FakeMicrophone(plugged: false), clock = ManualTimekeeper()
        let s = try session(mic, clock)
        let started = try await s.start()
        #expect(started.state == .running, "the picture does not depend on the sound")
        // A WebRTC viewer's sound, asked for while no microphone runs: heard from the
        // microphone's first packets once it comes, with nothing polling for it.
        let sound = SessionFeed(s).sound(.opus)
        let heard = DispatchSemaphore(value: 0)
        sound.attach { heard.signal() }
        let missing = await until(s) { $0.audio?.error != nil }
        #expect(missing.audio?.running == false)
        #expect(missing.audio?.error?.contains("snd_pcm_open hw:CARD=C920,DEV=0") == true, "\(missing.audio?.error ?? "")")
        #expect(await clock.waitForSleepers() && clock.requested == [0.5], "tried again after 0.5 s: \(clock.requested)")
        let viewer = s.hub.addViewer(maxFps: 0)
        #expect(await s.hub.nextFrame(after: s.hub.latestFrame?.sequence ?? 0, timeout: TestTime.patience * TestTime.scale) != nil)
        s.hub.removeViewer(viewer)

        mic.replug()
        clock.advance(by: 0.5)
        let back = await until(s) { $0.audio?.running == true }
        #expect(back.audio?.running == true && back.audio?.error == nil)
        #expect(try await offload { heard.wait(timeout: .now() + TestTime.patience * TestTime.scale) } == .success,
                "the viewer's sound woke for the microphone's packets")
        if case .item(let packet) = sound.next() { #expect(!packet.bytes.isEmpty) } else { Issue.record("no Opus packet queued") }
        sound.cancel()

        // Unplugged while running: the loss is reported, the picture goes on, and it comes back.
        mic.unplug()
        let lost = await until(s) { $0.audio?.running == false }
        #expect(lost.audio?.error?.contains("No such device") == true, "\(lost.audio?.error ?? "")")
        #expect(lost.state == .running)
        let opens = mic.opens
        #expect(await clock.waitForSleepers(), "the reopen waits on the clock")
        mic.replug()
        clock.advance(by: clock.requested.last ?? 0)
        #expect(await until(s) { $0.audio?.running == true }.audio?.running == true)
        #expect(mic.opens == opens + 1)
        await s.stop()
    }

    @Test func muteSendsSilenceInTimeAndTheGainGoesThroughTheMixer() async throws {
        let mic = FakeMicrophone()
        let s = try session(mic)
        try await s.start()
        _ = await until(s) { $0.audio?.running == true }

        // The mixer's steps: 7.4 dB is 7.5 (0.375 dB steps), read back; the tone comes in louder.
        let gained = try await s.setAudio(AudioRequest(gainDb: 7.4))
        #expect(gained.audio?.gainDb == 7.5 && gained.audio?.gainControl == .mixer && mic.mixerGain == 7.5)
        #expect(try await s.setAudio(AudioRequest(gainDb: 99)).audio?.gainDb == 30, "clamped to the mixer's range")
        _ = try await s.setAudio(AudioRequest(gainDb: 6))
        let (_, loud) = try await clip(s, seconds: 0.3)
        let expected = FakeMicrophone.toneAmplitude * pow(10, 6.0 / 20)
        #expect(abs(Double(peak(loud[...])) - expected) < expected * 0.05, "\(peak(loud[...])) against \(expected)")

        // Muted: the connection is disabled and carries silence — as many samples, in time.
        let muted = try await s.setAudio(AudioRequest(muted: true))
        #expect(muted.audio?.muted == true)
        #expect(muted.connections.first { $0.mediaType == .audio }?.enabled == false)
        let asked = SystemSupport.Clock.now()
        let (start, silent) = try await clip(s, seconds: 0.5)
        #expect(silent.count == 48_000 && peak(silent[...]) == 0)
        #expect(start >= asked - 10, "the silence is in time: stamped as the samples it stands for")
        _ = try await s.setAudio(AudioRequest(muted: false))
        let (_, again) = try await clip(s, seconds: 0.2)
        #expect(peak(again[...]) > 1000)
        await #expect(throws: SessionError.self) { try await s.setAudio(AudioRequest(gainDb: .nan)) }
        await s.stop()
    }

    @Test func aDigitalGainScalesTheSyntheticMicrophone() async throws {
        let s = try CaptureSession(camera: SyntheticCamera(id: "rear", position: .rear), microphones: ["rear": SyntheticMicrophone()],
                                   configuration: SessionConfiguration(preset: "352x288"))
        try await s.start()
        _ = await until(s) { $0.audio?.running == true }
        let set = try await s.setAudio(AudioRequest(gainDb: -6.2))
        #expect(set.audio?.gainDb == -6 && set.audio?.gainControl == .digital, "the digital gain's 0.5 dB steps")
        #expect(try await s.setAudio(AudioRequest(gainDb: -100)).audio?.gainDb == AudioCapabilities.digitalGain.min)
        _ = try await s.setAudio(AudioRequest(gainDb: -6))
        let (start, samples) = try await clip(s, seconds: 1.2)
        // The beep at the whole second inside the clip, at −12 dBFS now (−6 −6).
        let second = (start + 0.001).rounded(.up)
        let at = Int(((second - start) * 48_000).rounded())
        let beep = peak(samples[at..<min(samples.count, at + 480)])
        let expected = SyntheticMicrophone.beepAmplitude * pow(10, -6.0 / 20)
        #expect(abs(Double(beep) - expected) < expected * 0.05, "\(beep) against \(expected)")
        await s.stop()
    }

    /// A client of audio.wav that stops reading is ended once ten seconds wait for it, and
    /// the others go on; a clip ends at its length, its header exact.
    @Test func aClientThatStopsReadingIsEndedAndTheOthersGoOn() {
        let output = AudioDataOutput()
        let stalled = output.subscription(seconds: nil), reading = output.subscription(seconds: nil)
        let clip = output.subscription(seconds: 0.05)
        for s in [stalled, reading, clip] { s.attach {} }
        output.audioStarted(SyntheticMicrophone.format)
        let samples = [Int16](repeating: 7, count: 480)
        var readBytes = 0, clipBytes: [UInt8] = []
        for k in 0..<1_100 {  // 11 s of 48 kHz mono in 10 ms buffers
            samples.withUnsafeBytes { raw in
                output.takeAudio(AudioBuffer(format: SyntheticMicrophone.format, bytes: raw, stride: 2, sequence: UInt64(k * 480),
                                             timestamp: 1_000 + Double(k) / 100))
            }
            if case .item(let b) = reading.next() { readBytes += b.count }
            if case .item(let b) = clip.next() { clipBytes += b }
        }
        #expect(isEnd(stalled.next()), "ended, not queueing without bound")
        #expect(readBytes == 44 + 1_100 * 960, "the reading client got every byte")
        #expect(clipBytes.count == 44 + 2_400 * 2 && isEnd(clip.next()), "a clip of 50 ms, whole")
        #expect(Array(clipBytes[40..<44]) == [0xC0, 0x12, 0, 0], "its data size: 4800 bytes")
        #expect(output.report.framesDropped == 1 && output.report.clients["wav"] == 1)
    }

    /// A hole in the capture timeline (a device that started over after a long stall) ends a
    /// WAV stream: the samples after it could not keep the time its header gives them.
    @Test func aHoleInTheTimelineEndsTheStream() {
        let output = AudioDataOutput()
        let client = output.subscription(seconds: nil)
        client.attach {}
        let samples = [Int16](repeating: 7, count: 480)
        func feed(_ t: Double) {
            samples.withUnsafeBytes { raw in
                output.takeAudio(AudioBuffer(format: SyntheticMicrophone.format, bytes: raw, stride: 2, sequence: 0, timestamp: t))
            }
        }
        for k in 0..<10 { feed(1_000 + Double(k) / 100) }
        feed(1_000.1003)  // a card's clock followed by a fraction of a millisecond: continuous
        guard case .item(let bytes) = client.next() else { Issue.record("no item"); return }
        #expect(bytes.count == 44 + 11 * 960)
        feed(1_010.2)  // ten seconds later
        #expect(isEnd(client.next()))
    }

    @Test func aSessionWithoutAMicrophoneHasNoSound() async throws {
        let s = try CaptureSession(camera: SyntheticCamera(id: "rear", position: .rear), configuration: SessionConfiguration(preset: "352x288"))
        let state = await s.state()
        #expect(state.audio == nil && state.inputs.count == 1 && !state.outputs.contains { $0.type == .audio })
        #expect(s.audioData == nil)
        await #expect(throws: SessionError.self) { try await s.setAudio(AudioRequest(muted: true)) }
    }
}

/// Whether a pull is the end of the stream.
func isEnd(_ pull: Pull<[UInt8]>) -> Bool {
    if case .end = pull { return true }
    return false
}
