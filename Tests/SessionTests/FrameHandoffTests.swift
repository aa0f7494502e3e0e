// The one hand-off off the capture thread: the capture thread hands a copy over and never
// waits; with newest-wins, frames reach viewers in capture order (a worker that finishes
// late drops its older frame at the hub) and, with every worker busy, the newest frame waits
// for the first that finishes (an older waiting one is skipped, counted, and its job merged
// into the newer one's); with a bounded queue, frames wait in order and one that finds the
// queue full is dropped and counted; closing waits for the frames in hand.
// The work here is a gate the test opens, so the order the workers finish in is the test's
// choice, not the scheduler's.

import CameraCore
import CaptureTestSupport
import Foundation
import SystemSupport
import Testing
@testable import Session

/// Works on a frame by echoing its first byte, once the test opens the frame's gate.
private final class Gates: Sendable {
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

    /// Returns once a worker has begun on frame `sequence`, false after `timeout` seconds.
    func waitStarted(_ sequence: UInt64, timeout: Double = 5) -> Bool {
        let deadline = TestTime.deadline(timeout)
        while Date() < deadline {
            if started.withLock({ $0.contains(sequence) }) { return true }
            _ = startedSignal.wait(timeout: .now() + 0.1)
        }
        return false
    }

    /// Passes the gate; answers the frame's first byte (read after the gate: the copy must hold).
    func pass(_ frame: borrowing RawFrame) -> UInt8 {
        started.withLock { $0.append(frame.sequence) }
        startedSignal.signal()
        gate(frame.sequence).wait()
        return frame.bytes.first ?? 0
    }
}

/// A preview-like job: publish to the hub; `photos` are qualities answered with the frame.
private struct Job: Sendable {
    var photos: [Int] = []
}

@Suite struct FrameHandoffTests {
    static let format = VideoFormat(pixelFormat: .yuyv, width: 4, height: 2, fps: 30)

    /// A newest-wins lane (of a pool of its own, a thread per slot) publishing [first byte, 80]
    /// to `hub`, photos to `photos`.
    private static func pool(_ gates: Gates, hub: FrameHub, workers: Int, name: String = "t",
                             photos: Locked<[[UInt8]]> = Locked([])) -> FrameHandoff<Job> {
        FrameHandoff(name: name, workers: workers, policy: .newestWins,
                     merge: { older, newer in Job(photos: older.photos + newer.photos) },
                     pool: EncodePool(threads: workers, name: name)) {
            { frame, job in
                let first = gates.pass(frame)
                for q in job.photos { photos.withLock { $0.append([first, UInt8(q)]) } }
                hub.publish(EncodedFrame(jpeg: [first, 80], width: 4, height: 2, sequence: frame.sequence, timestamp: 0))
            }
        }
    }

    /// Hands a frame whose every byte is `fill` over as sequence `sequence`.
    private static func submit(_ handoff: FrameHandoff<Job>, fill: UInt8, sequence: UInt64, photos: [Int] = []) -> Bool {
        var bytes = [UInt8](repeating: fill, count: 16)
        let taken = bytes.withUnsafeBytes { b in
            handoff.submit(RawFrame(format: format, bytes: b, stride: 8, sequence: sequence, timestamp: Double(sequence)),
                           Job(photos: photos))
        }
        // The camera reuses its buffer at once: the hand-off must have taken a copy.
        for i in bytes.indices { bytes[i] = 0xEE }
        return taken
    }

    @Test func aWorkerThatFinishesLateDropsItsOlderFrameSoViewersOnlyMoveForward() async throws {
        let hub = FrameHub(), gates = Gates()
        let pool = Self.pool(gates, hub: hub, workers: 2)
        #expect(Self.submit(pool, fill: 1, sequence: 1))
        #expect(Self.submit(pool, fill: 2, sequence: 2))
        #expect(gates.waitStarted(1) && gates.waitStarted(2))
        gates.open(2)  // the newer frame finishes first
        let second = await hub.nextFrame(after: 0, timeout: TestTime.patience * TestTime.scale)
        #expect(second?.sequence == 2 && second?.jpeg == [2, 80])
        gates.open(1)
        pool.close()  // returns once frame 1 was handled: dropped as older
        #expect(hub.latestFrame?.sequence == 2)
        #expect(hub.encodedFrames == 1)
    }

    @Test func everyWorkerBusyLeavesTheNewestFrameWaitingForTheFirstThatFinishes() throws {
        let hub = FrameHub(), gates = Gates()
        let pool = Self.pool(gates, hub: hub, workers: 2)
        #expect(Self.submit(pool, fill: 1, sequence: 1))
        #expect(Self.submit(pool, fill: 2, sequence: 2))
        #expect(gates.waitStarted(1) && gates.waitStarted(2))  // both workers hold a frame
        let start = Clock.monotonic()
        #expect(Self.submit(pool, fill: 3, sequence: 3))  // frame 3 waits
        #expect(Self.submit(pool, fill: 4, sequence: 4))  // and is replaced by a newer one
        #expect(Clock.monotonic() - start < 1)  // the capture thread did not wait for a worker
        #expect(pool.figures.dropped == 1)
        gates.open(1)  // the worker that finishes takes frame 4 at once
        #expect(gates.waitStarted(4))
        gates.open(2)
        gates.open(4)
        pool.close()
        #expect(hub.latestFrame?.sequence == 4 && hub.latestFrame?.jpeg == [4, 80])  // a copy: the source was overwritten
        #expect(gates.waitStarted(3, timeout: 0.3) == false)  // frame 3 was never worked on
    }

    @Test func aReplacedFramesJobIsMergedIntoTheNewerOnes() async throws {
        let hub = FrameHub(), gates = Gates(), photos = Locked<[[UInt8]]>([])
        let pool = Self.pool(gates, hub: hub, workers: 1, photos: photos)
        #expect(Self.submit(pool, fill: 1, sequence: 1))
        #expect(gates.waitStarted(1))
        #expect(Self.submit(pool, fill: 2, sequence: 2, photos: [95]))  // waiting, with a photo
        #expect(Self.submit(pool, fill: 3, sequence: 3))  // replaces it
        gates.open(1)
        gates.open(3)
        pool.close()
        #expect(photos.withLock { $0 } == [[3, 95]])  // answered by the newer frame
        #expect(hub.latestFrame?.sequence == 3)
    }

    @Test func aFullQueueDropsAndCountsTheNewFrameAndKeepsTheOrder() throws {
        let gates = Gates(), written = Locked<[UInt8]>([])
        let queue = FrameHandoff<Job>(name: "q", policy: .queue(limit: 2), pool: EncodePool(threads: 1, name: "q")) {
            { frame, _ in
                let first = gates.pass(frame)
                written.withLock { $0.append(first) }
            }
        }
        #expect(Self.submit(queue, fill: 1, sequence: 1))
        #expect(gates.waitStarted(1))  // in hand
        #expect(Self.submit(queue, fill: 2, sequence: 2))
        #expect(Self.submit(queue, fill: 3, sequence: 3))  // two wait
        #expect(!Self.submit(queue, fill: 4, sequence: 4))  // full: not taken
        #expect(queue.figures.dropped == 1 && queue.backlog == 3)
        for s: UInt64 in 1...3 { gates.open(s) }
        queue.close()
        #expect(written.withLock { $0 } == [1, 2, 3])
        #expect(queue.backlog == 0)
    }

    @Test func closeWaitsForTheFramesInHandAndTakesNoMore() async throws {
        let hub = FrameHub(), gates = Gates()
        let pool = Self.pool(gates, hub: hub, workers: 1)
        #expect(Self.submit(pool, fill: 7, sequence: 5))
        #expect(gates.waitStarted(5))
        let closed = DispatchSemaphore(value: 0)
        Thread { pool.close(); closed.signal() }.start()
        #expect(closed.wait(timeout: .now() + 0.3) == .timedOut)  // frame 5 is still in hand
        gates.open(5)
        #expect(closed.wait(timeout: .now() + 5 * TestTime.scale) == .success)
        #expect(hub.latestFrame?.jpeg == [7, 80])  // published before close returned
        #expect(!Self.submit(pool, fill: 8, sequence: 6))  // closed: nothing taken
    }

    @Test func finishRunsItsCompletionOnceTheQueueIsWorkedOff() async throws {
        let gates = Gates(), order = Locked<[String]>([])
        let queue = FrameHandoff<Job>(name: "f", policy: .queue(limit: 3), pool: EncodePool(threads: 1, name: "f")) {
            { frame, _ in order.withLock { $0.append("frame \(gates.pass(frame))") } }
        }
        #expect(Self.submit(queue, fill: 1, sequence: 1))
        #expect(Self.submit(queue, fill: 2, sequence: 2))
        let done = DispatchSemaphore(value: 0)
        queue.finish { order.withLock { $0.append("done") }; done.signal() }  // returns at once
        #expect(!Self.submit(queue, fill: 3, sequence: 3))
        gates.open(1)
        gates.open(2)
        #expect(done.wait(timeout: .now() + 5 * TestTime.scale) == .success)
        #expect(order.withLock { $0 } == ["frame 1", "frame 2", "done"])
    }

    @Test func aOneSlotLaneHasOneWorkWhicheverPoolThreadServesIt() throws {
        // A live encoder or a movie's writer keeps its state from frame to frame: one work
        // for the lane, never two frames in it at once, in order, on a pool of three threads.
        let pool = EncodePool(threads: 3, name: "one-slot")
        let made = Locked(0), inWork = Locked(0), most = Locked(0), order = Locked<[UInt64]>([])
        let lane = FrameHandoff<Job>(name: "one", policy: .queue(limit: 8), pool: pool) {
            made.withLock { $0 += 1 }
            return { frame, _ in
                let n = inWork.withLock { n -> Int in n += 1; return n }
                most.withLock { $0 = max($0, n) }
                usleep(500)
                order.withLock { $0.append(frame.sequence) }
                inWork.withLock { $0 -= 1 }
            }
        }
        for s: UInt64 in 1...40 {
            _ = Self.submit(lane, fill: UInt8(s), sequence: s)
            if s % 4 == 0 { usleep(2000) }
        }
        lane.close()
        #expect(made.withLock { $0 } == 1)
        #expect(most.withLock { $0 } == 1)
        let done = order.withLock { $0 }
        #expect(done == done.sorted() && done.count == 40 - Int(lane.figures.dropped))
        #expect(lane.figures.worked == UInt64(done.count) && lane.figures.taken == UInt64(done.count))
    }

    @Test func finishRunsItsCompletionOnAPoolThreadNeverTheCallers() throws {
        let pool = EncodePool(threads: 1, name: "errand")
        let lane = FrameHandoff<Job>(name: "idle", policy: .queue(limit: 2), pool: pool) { { _, _ in } }
        let ranOn = Locked<String?>(nil), done = DispatchSemaphore(value: 0)
        lane.finish { ranOn.withLock { $0 = ThreadName.current }; done.signal() }  // idle: nothing to wait for
        #expect(done.wait(timeout: .now() + 5 * TestTime.scale) == .success)
        #expect(ranOn.withLock { $0 } == "errand-0")
    }

    @Test func aHandoffLetGoWithoutCloseLetsItsWorksGo() throws {
        // The lane leaves the pool once its frame is worked off, and its slot's work (an
        // encoder's handles) goes with it: nothing of it stays in the pool.
        final class Canary: Sendable {
            let gone: Locked<Bool>
            init(_ gone: Locked<Bool>) { self.gone = gone }
            deinit { gone.withLock { $0 = true } }
        }
        let gone = Locked(false), worked = DispatchSemaphore(value: 0)
        let pool = EncodePool(threads: 1, name: "letgo")
        do {
            let lane = FrameHandoff<Job>(name: "letgo", policy: .newestWins, pool: pool) {
                let canary = Canary(gone)
                return { _, _ in _ = canary; worked.signal() }
            }
            #expect(Self.submit(lane, fill: 1, sequence: 1))
            #expect(worked.wait(timeout: .now() + 5 * TestTime.scale) == .success)
        }
        let deadline = TestTime.deadline(5)
        while !gone.withLock({ $0 }) && Date() < deadline { usleep(1000) }
        #expect(gone.withLock { $0 })
    }
}
