// The ALSA microphone against libasound itself. This host has no sound card (the VM tests
// run a real one: snd-aloop), but ALSA's own `null` PCM is a device every libasound has:
// it opens, takes hw_params, and captures silence as fast as it is read. So the open,
// configure, read and close path runs here for real, and so do the refusals.

import CameraCore
import CaptureTestSupport
import Foundation
import SystemSupport
import Testing
@testable import Sound

@Suite struct ALSAMicrophoneTests {
    @Test func theNullDeviceOpensCapturesAndCloses() async throws {
        let mic = ALSAMicrophone(pcm: "null")
        let caps = try mic.capabilities()
        #expect(caps.rates.contains(48_000) && caps.channels.contains(1) && !caps.mixer)
        let count = Locked(0), wrong = Locked(0)
        let got = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        // `null` has no clock: it captures as fast as it is read. After ten buffers the
        // handler holds the capture thread until the test stops it, rather than spin a core
        // beside the other suites.
        let format = try mic.start { buffer in
            if !(buffer.format.sampleRate == 48_000 && buffer.frames > 0 && buffer.frames <= 480) { wrong.withLock { $0 += 1 } }
            if count.withLock({ c in c += 1; return c }) == 10 {
                got.signal()
                release.wait()
            }
        }
        #expect(format.sampleRate == 48_000 && format.encoding == .s16le)
        let arrived = try await offload { got.wait(timeout: .now() + 10) == .success }
        release.signal()
        mic.stop()
        #expect(arrived)
        #expect(wrong.withLock { $0 } == 0, "every buffer 48 kHz, one period at most")
        let after = count.withLock { $0 }
        #expect(count.withLock { $0 } == after, "nothing is delivered after stop returns")
        #expect(mic.name == "null")
        #expect(throws: AudioError.noMixer) { try mic.setMixerGain(3) }
    }

    @Test func anUnknownDeviceIsRefusedNamingTheCallAndTheDevice() {
        let mic = ALSAMicrophone(pcm: "hw:CARD=NoSuchCard,DEV=0")
        do {
            _ = try mic.start { _ in }
            Issue.record("opened a card that does not exist")
        } catch {
            guard case .system(let e) = error else { Issue.record("\(error)"); return }
            #expect(e.call == "snd_pcm_open hw:CARD=NoSuchCard,DEV=0")
            #expect(e.errno != 0)
        }
        #expect(throws: AudioError.self) { try mic.capabilities() }
    }

    @Test func autoWithoutASoundCardSaysSo() {
        let mic = ALSAMicrophone(auto: { nil })
        #expect(mic.name == "auto")
        #expect(throws: AudioError.unavailable("the camera has no sound card of its own (audio \"auto\")")) { try mic.start { _ in } }
    }
}
