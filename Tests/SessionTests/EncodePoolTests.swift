// The encode threads every camera shares: a lane per camera, served in turn, so a camera
// whose frames take long cannot starve another; and a lane that lends keeps the camera's
// buffer (no copy) until its work is done, or a newer frame replaced it.

import CameraCore
import CaptureTestSupport
import Foundation
import SystemSupport
import Testing

@Suite struct EncodePoolTests {
    static let format = VideoFormat(pixelFormat: .yuyv, width: 4, height: 2, fps: 30)

    private static func submit(_ h: FrameHandoff<Int>, _ sequence: UInt64, lease: FrameLease? = nil,
                               bytes: UnsafeRawBufferPointer? = nil) -> Bool {
        let storage = [UInt8](repeating: UInt8(truncatingIfNeeded: sequence), count: 16)
        return storage.withUnsafeBytes { b in
            h.submit(RawFrame(format: format, bytes: bytes ?? b, stride: 8, sequence: sequence, timestamp: 0, lease: lease), 0)
        }
    }

    /// One pool thread, two lanes, both always with a frame waiting: a "4K" lane whose work
    /// takes 20 ms and a "720p" lane whose work takes 1 ms. Served in turn, the quick lane
    /// gets a frame through after every slow one, not after all of them.
    @Test func lanesAreServedInTurn() async throws {
        let pool = EncodePool(threads: 1, name: "fair")
        let order = Locked<[String]>([])
        func lane(_ name: String, ms: UInt32) -> FrameHandoff<Int> {
            FrameHandoff(name: name, policy: .newestWins, pool: pool) {
                { _, _ in usleep(ms * 1000); order.withLock { $0.append(name) } }
            }
        }
        let slow = lane("slow", ms: 20), quick = lane("quick", ms: 1)
        let deadline = TestTime.deadline(5)
        var sequence: UInt64 = 0
        while order.withLock({ $0.count }) < 20 && Date() < deadline {
            sequence += 1
            _ = Self.submit(slow, sequence)
            _ = Self.submit(quick, sequence)
            usleep(2000)
        }
        slow.close()
        quick.close()
        let served = order.withLock { $0 }
        #expect(served.count >= 20)
        // Never two slow frames in a row while a quick one waited: the quick lane's turn comes between.
        let slowRuns = zip(served, served.dropFirst()).filter { $0 == "slow" && $1 == "slow" }.count
        #expect(slowRuns <= 1, "\(served)")
        #expect(served.filter { $0 == "quick" }.count >= served.filter { $0 == "slow" }.count - 1, "\(served)")
    }

    /// A lent frame is read in place (no copy) and goes back to the camera once worked on;
    /// one replaced by a newer frame goes back at once; a frame without a lease is copied.
    @Test func aLaneThatLendsKeepsTheCamerasBufferUntilDone() async throws {
        let pool = EncodePool(threads: 1, name: "lend")
        let gate = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        let seen = Locked<[UInt8]>([])
        let h = FrameHandoff<Int>(name: "lend", policy: .newestWins, lends: true, pool: pool) {
            { frame, _ in
                started.signal()
                gate.wait()
                seen.withLock { $0.append(frame.bytes[0]) }
            }
        }
        let returned = Locked<[UInt64]>([])
        let cameraBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 8)
        defer { cameraBuffer.deallocate() }
        cameraBuffer.initializeMemory(as: UInt8.self, repeating: 7)
        func lease(_ n: UInt64) -> FrameLease { FrameLease { returned.withLock { $0.append(n) } } }

        #expect(Self.submit(h, 1, lease: lease(1), bytes: UnsafeRawBufferPointer(cameraBuffer)))
        #expect(started.wait(timeout: .now() + 5 * TestTime.scale) == .success)
        #expect(returned.withLock { $0 }.isEmpty, "frame 1 is in hand: its buffer stays lent")
        #expect(Self.submit(h, 2, lease: lease(2), bytes: UnsafeRawBufferPointer(cameraBuffer)))
        #expect(Self.submit(h, 3, lease: lease(3), bytes: UnsafeRawBufferPointer(cameraBuffer)))
        #expect(returned.withLock { $0 } == [2], "frame 2, replaced while it waited, went back at once")
        cameraBuffer[0] = 9  // the camera's bytes as they are now are what the worker reads: no copy was made
        gate.signal()
        #expect(started.wait(timeout: .now() + 5 * TestTime.scale) == .success)
        gate.signal()
        h.close()
        #expect(returned.withLock { $0 }.sorted() == [1, 2, 3])
        #expect(seen.withLock { $0 } == [9, 9])
        #expect(h.lent == 3 && h.copied == 0)

        let copying = FrameHandoff<Int>(name: "copy", policy: .newestWins, lends: true, pool: pool) { { _, _ in } }
        #expect(Self.submit(copying, 1))  // no lease: the synthetic camera's frames are copied
        copying.close()
        #expect(copying.copied == 1 && copying.lent == 0)
    }
}
