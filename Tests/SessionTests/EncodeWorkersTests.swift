// The encode workers: the capture thread hands a copy over and never waits; frames reach
// viewers in capture order (a worker that finishes late drops its older frame); with every
// worker busy the newest frame waits for the first that finishes (an older waiting one is
// skipped and counted); closing waits for the frames in hand.
// The encoder here is a gate the test opens, so the order the workers finish in is the
// test's choice, not the scheduler's.

import CameraCore
import CaptureTestSupport
import Foundation
import JPEG
import SystemSupport
import Testing
@testable import Session

/// Encodes by echoing the frame's first byte, once the test opens the frame's gate.
private final class GatedEncoder: Sendable {
    private let gates = Locked<[UInt64: DispatchSemaphore]>([:])
    private let started = Locked<[UInt64]>([])
    let startedSignal = DispatchSemaphore(value: 0)

    private func gate(_ sequence: UInt64) -> DispatchSemaphore {
        gates.withLock { g in
            if let s = g[sequence] { return s }
            let s = DispatchSemaphore(value: 0)
            g[sequence] = s
            return s
        }
    }

    func open(_ sequence: UInt64) { gate(sequence).signal() }

    /// Returns once a worker has begun encoding frame `sequence`, false after `timeout` seconds.
    func waitStarted(_ sequence: UInt64, timeout: Double = 5) -> Bool {
        let deadline = TestTime.deadline(timeout)
        while Date() < deadline {
            if started.withLock({ $0.contains(sequence) }) { return true }
            _ = startedSignal.wait(timeout: .now() + 0.1)
        }
        return false
    }

    var encode: EncodeWorkers.Encode {
        { [self] _, frame, quality, _, _, sequence in
            let first = frame.bytes.first ?? 0
            started.withLock { $0.append(sequence) }
            startedSignal.signal()
            gate(sequence).wait()
            return EncodedFrame(jpeg: [first, UInt8(quality)], width: frame.format.width, height: frame.format.height,
                                sequence: sequence, timestamp: frame.timestamp)
        }
    }
}

@Suite struct EncodeWorkersTests {
    static let format = VideoFormat(pixelFormat: .yuyv, width: 4, height: 2, fps: 30)

    /// Hands a frame whose every byte is `fill` to `pool` as sequence `sequence`.
    static func submit(_ pool: EncodeWorkers, fill: UInt8, sequence: UInt64, photos: [CaptureTicket] = []) -> Bool {
        var bytes = [UInt8](repeating: fill, count: 16)
        let taken = bytes.withUnsafeBytes { b in
            pool.submit(RawFrame(format: format, bytes: b, stride: 8, sequence: sequence, timestamp: Double(sequence))) {
                EncodeWorkers.Job(format: format, stride: 8, timestamp: Double(sequence), sequence: sequence,
                                  transform: .identity, preview: (80, .s422), photos: photos)
            }
        }
        // The camera reuses its buffer at once: the worker must have taken a copy.
        for i in bytes.indices { bytes[i] = 0xEE }
        return taken
    }

    @Test func aWorkerThatFinishesLateDropsItsOlderFrameSoViewersOnlyMoveForward() async throws {
        let hub = FrameHub(), gates = GatedEncoder()
        let pool = EncodeWorkers(count: 2, name: "t", encode: gates.encode, publish: { hub.publish($0) })
        #expect(Self.submit(pool, fill: 1, sequence: 1))
        #expect(Self.submit(pool, fill: 2, sequence: 2))
        #expect(gates.waitStarted(1) && gates.waitStarted(2))
        gates.open(2)  // the newer frame finishes first
        let second = await hub.nextFrame(after: 0, timeout: 5)
        #expect(second?.sequence == 2 && second?.jpeg == [2, 80])
        gates.open(1)
        pool.close()  // returns once frame 1 was handled: dropped as older
        #expect(hub.latestFrame?.sequence == 2)
        #expect(hub.encodedFrames == 1)
    }

    @Test func everyWorkerBusyLeavesTheNewestFramePendingForTheFirstThatFinishes() throws {
        let hub = FrameHub(), gates = GatedEncoder()
        let pool = EncodeWorkers(count: 2, name: "t", encode: gates.encode, publish: { hub.publish($0) })
        #expect(Self.submit(pool, fill: 1, sequence: 1))
        #expect(Self.submit(pool, fill: 2, sequence: 2))
        let start = Clock.monotonic()
        #expect(Self.submit(pool, fill: 3, sequence: 3))  // both are encoding: frame 3 waits
        #expect(Self.submit(pool, fill: 4, sequence: 4))  // and is replaced by a newer one
        #expect(Clock.monotonic() - start < 1)  // the capture thread did not wait for an encoder
        #expect(pool.skipped == 1)
        gates.open(1)  // the worker that finishes takes frame 4 at once
        #expect(gates.waitStarted(4))
        gates.open(2)
        gates.open(4)
        pool.close()
        #expect(hub.latestFrame?.sequence == 4 && hub.latestFrame?.jpeg == [4, 80])  // a copy: the source was overwritten
        #expect(gates.waitStarted(3, timeout: 0.3) == false)  // frame 3 was never encoded
    }

    @Test func aReplacedPendingFramesPhotosAreAnsweredByTheNewerOne() async throws {
        let hub = FrameHub(), gates = GatedEncoder()
        let pool = EncodeWorkers(count: 1, name: "t", encode: gates.encode, publish: { hub.publish($0) })
        let ticket = CaptureTicket(quality: 95, requested: 0)
        #expect(Self.submit(pool, fill: 1, sequence: 1))
        #expect(gates.waitStarted(1))
        #expect(Self.submit(pool, fill: 2, sequence: 2, photos: [ticket]))  // pending, with a photo
        #expect(Self.submit(pool, fill: 3, sequence: 3))  // replaces it
        gates.open(1)
        gates.open(3)
        gates.open(3)  // the photo, then the preview
        #expect(await ticket.frame(timeout: 5)?.jpeg == [3, 95])
        pool.close()
        #expect(hub.latestFrame?.sequence == 3)
    }

    @Test func closeWaitsForTheFramesInHandAndTakesNoMore() async throws {
        let hub = FrameHub(), gates = GatedEncoder()
        let pool = EncodeWorkers(count: 1, name: "t", encode: gates.encode, publish: { hub.publish($0) })
        #expect(Self.submit(pool, fill: 7, sequence: 5))
        #expect(gates.waitStarted(5))
        let closed = DispatchSemaphore(value: 0)
        Thread { pool.close(); closed.signal() }.start()
        #expect(closed.wait(timeout: .now() + 0.3) == .timedOut)  // frame 5 is still encoding
        gates.open(5)
        #expect(closed.wait(timeout: .now() + 5 * TestTime.scale) == .success)
        #expect(hub.latestFrame?.jpeg == [7, 80])  // published before close returned
        #expect(!Self.submit(pool, fill: 8, sequence: 6))  // closed: nothing taken
    }

    @Test func photosAreEncodedAtTheirOwnQualityByTheWorker() async throws {
        let hub = FrameHub(), gates = GatedEncoder()
        let pool = EncodeWorkers(count: 2, name: "t", encode: gates.encode, publish: { hub.publish($0) })
        let ticket = CaptureTicket(quality: 97, requested: 0)
        #expect(Self.submit(pool, fill: 4, sequence: 1, photos: [ticket]))
        gates.open(1)
        gates.open(1)  // the photo, then the preview
        let photo = await ticket.frame(timeout: 5)
        #expect(photo?.jpeg == [4, 97])
        #expect(await hub.nextFrame(after: 0, timeout: 5)?.jpeg == [4, 80])
        pool.close()
    }

    @Test func aPoolLetGoWithoutCloseEndsItsThreads() throws {
        // Named threads of this pool, from /proc (comm holds the first 15 bytes of the name).
        func ours() -> Int {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return tasks.filter { ((try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) ?? "").hasPrefix("letgo-encode") }.count
        }
        do {
            let pool = EncodeWorkers(count: 3, name: "letgo", encode: GatedEncoder().encode, publish: { _ in })
            #expect(pool.count == 3)
            let deadline = TestTime.deadline(5)
            while ours() < 3 && Date() < deadline { usleep(10_000) }  // threads name themselves as they start
            #expect(ours() == 3)
        }
        let deadline = TestTime.deadline(5)  // deinit waited for each; the kernel reaps them just after
        while ours() > 0 && Date() < deadline { usleep(10_000) }
        #expect(ours() == 0)
    }
}
