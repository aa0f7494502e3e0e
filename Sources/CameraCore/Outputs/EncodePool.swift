// The encode threads every camera's preview shares: one per core for the whole process,
// where each running camera used to start `stream.workers` of its own (four cameras, eight
// threads idling while nobody watched). A hand-off on the pool is a *lane*: its frames wait
// in the lane (newest wins, as before), and a free pool thread takes the next frame from the
// lanes in turn, round robin, so a 4K camera's frames cannot starve a 720p camera's: after
// each frame a thread serves, the next lane with a frame waiting goes first. A lane never has
// more frames in hand than its own `workers` (and never more than the pool has threads).
// Nobody watching, no lane has a frame, and the threads sleep.
//
// Each thread keeps the lane's per-thread work (an encoder's libjpeg-turbo handles) while the
// lane lives, made on that thread the first time it serves the lane.

import Foundation
import SystemSupport

public final class EncodePool: @unchecked Sendable {  // every field under `condition`
    /// One per core, for every camera of the process.
    public static let shared = EncodePool(threads: ProcessInfo.processInfo.activeProcessorCount, name: "encode")

    public let threads: Int
    private let name: String
    private let condition = NSCondition()
    private var lanes: [Lane] = []
    /// Where the next scan starts: the lane after the one served last.
    private var cursor = 0
    private var started = false
    /// Bumped when a lane leaves, so threads drop the work they kept for it.
    private var epoch = 0
    private var poolThreads: [pthread_t] = []

    /// A hand-off's side of the pool: it has a frame to give, or not.
    final class Lane: @unchecked Sendable {
        let id: UInt64
        /// Takes the lane's next frame and marks it in hand (nil: none, or at its limit).
        let take: () -> ((PoolThread) -> Void)?
        init(id: UInt64, take: @escaping () -> ((PoolThread) -> Void)?) {
            self.id = id
            self.take = take
        }
    }

    private var nextLaneID: UInt64 = 0

    public init(threads: Int, name: String) {
        self.threads = max(1, threads)
        self.name = name
    }

    /// Adds a lane whose `take` hands out its next frame's work (run on a pool thread).
    func join(take: @escaping () -> ((PoolThread) -> Void)?) -> Lane {
        condition.lock()
        defer { condition.unlock() }
        nextLaneID += 1
        let lane = Lane(id: nextLaneID, take: take)
        lanes.append(lane)
        if !started { start() }
        return lane
    }

    func leave(_ lane: Lane) {
        condition.lock()
        defer { condition.unlock() }
        lanes.removeAll { $0 === lane }
        epoch += 1
    }

    /// A lane may have a frame for a thread (one was queued, or one finished and freed a slot).
    func signal() {
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    /// True on one of the pool's threads (a lane closing from its own work cannot wait for itself).
    var isPoolThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        let me = pthread_self()
        return poolThreads.contains { pthread_equal($0, me) != 0 }
    }

    private func start() {
        started = true
        for i in 0..<threads {
            let threadName = "\(name)-\(i)"
            let t = Thread { [self] in
                ThreadName.set(threadName)
                run()
            }
            t.name = "viewfinder.\(threadName)"
            t.start()
        }
    }

    /// One thread's life: the next frame from the lanes in turn, worked outside the lock.
    private func run() {
        let me = PoolThread()
        var seenEpoch = 0
        condition.lock()
        poolThreads.append(pthread_self())
        while true {
            if seenEpoch != epoch {  // a lane left: its per-thread work (encoder handles) goes
                seenEpoch = epoch
                let live = Set(lanes.map(\.id))
                me.kept = me.kept.filter { live.contains($0.key) }
            }
            var work: ((PoolThread) -> Void)?
            for i in 0..<lanes.count {
                let lane = lanes[(cursor + i) % lanes.count]
                if let w = lane.take() {
                    work = w
                    cursor = (cursor + i + 1) % lanes.count
                    break
                }
            }
            guard let work else {
                condition.wait()
                continue
            }
            condition.unlock()
            work(me)
            condition.lock()
        }
    }
}

/// What one pool thread keeps per lane: the lane's work as made on this thread.
final class PoolThread {
    var kept: [UInt64: AnyObject] = [:]

    func kept<T: AnyObject>(_ lane: UInt64, make: () -> T) -> T {
        if let k = kept[lane] as? T { return k }
        let k = make()
        kept[lane] = k
        return k
    }
}
