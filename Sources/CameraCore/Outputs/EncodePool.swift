// The threads every output of every camera shares: one per core, made once by the
// application (SessionConfiguration.pool) for all its cameras. An output's FrameHandoff is a
// *lane* of the pool: its frames wait in the lane (newest wins, or a bounded queue), and a
// free pool thread takes the next frame from the lanes in turn, round robin, so a 4K camera's
// frames cannot starve a 720p camera's, nor a movie's encode a preview's: after each frame a
// thread serves, the next lane with a frame waiting goes first. A lane never has more frames
// in hand than its own slots (and never more than the pool has threads). Nobody watching, no
// lane has a frame, and the threads sleep.
//
// Besides frames the pool runs errands: one-off work an output hands over so that it never
// runs on the caller's thread (a movie's completion — its trailer and fsync — is one: the
// session's queue must not wait for a disk). Errands go before the lanes' next frames.
//
// Every lane holds its pool, so the pool lives while any output uses it; once the last one
// and the owner let go, its threads end (a test process that makes a server per test does
// not keep every server's threads).
//
// Before issue 36 only the preview's lanes were on a pool; the photo, live, ring, metadata,
// motion snapshot and movie outputs each started a thread per camera, idle most of the time.

import Foundation
import SystemSupport

public final class EncodePool: Sendable {
    public let threads: Int
    private let core: PoolCore

    public init(threads: Int, name: String) {
        self.threads = max(1, threads)
        core = PoolCore(threads: self.threads, name: name)
    }

    /// The last reference may go on one of the pool's own threads, inside the pool's lock (a
    /// lane's frame let go there, which held its hand-off, which held the pool): the threads
    /// are told from elsewhere, never here.
    deinit {
        let core = core
        DispatchQueue.global().async { core.shutDown() }
    }

    /// What a lane gives a pool thread that asks.
    enum Take {
        /// The next frame's work, now in hand.
        case work(() -> Void)
        /// Nothing now (no frame waits, or every slot is busy).
        case none
        /// The hand-off is gone: the lane leaves the pool.
        case gone
    }

    /// A hand-off's side of the pool: it has a frame to give, or not.
    final class Lane: Sendable {
        let take: @Sendable () -> Take
        init(take: @escaping @Sendable () -> Take) { self.take = take }
    }

    /// Adds a lane whose `take` hands out its next frame's work (run on a pool thread).
    func join(take: @escaping @Sendable () -> Take) -> Lane { core.join(Lane(take: take)) }

    func leave(_ lane: Lane) { core.leave(lane) }

    /// A lane may have a frame for a thread (one was queued, or one finished and freed a slot).
    func signal() { core.signal() }

    /// Runs `errand` on a pool thread, before the lanes' next frames.
    public func perform(_ errand: @escaping @Sendable () -> Void) { core.perform(errand) }

    /// True on one of the pool's threads (a lane closing from the pool's own work cannot wait
    /// for it: the thread it would wait for may be itself).
    var isPoolThread: Bool { core.isPoolThread }
}

/// The pool's lanes, errands and threads. Every field is under `condition`.
private final class PoolCore: @unchecked Sendable {
    private let threads: Int
    private let name: String
    private let condition = NSCondition()
    private var lanes: [EncodePool.Lane] = []
    private var errands: [@Sendable () -> Void] = []
    /// Where the next scan starts: the lane after the one served last.
    private var cursor = 0
    private var started = false
    private var ending = false
    private var poolThreads: [pthread_t] = []

    init(threads: Int, name: String) {
        self.threads = threads
        self.name = name
    }

    func join(_ lane: EncodePool.Lane) -> EncodePool.Lane {
        condition.lock()
        defer { condition.unlock() }
        lanes.append(lane)
        if !started { start() }
        return lane
    }

    func leave(_ lane: EncodePool.Lane) {
        condition.lock()
        defer { condition.unlock() }
        lanes.removeAll { $0 === lane }
    }

    func signal() {
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    func perform(_ errand: @escaping @Sendable () -> Void) {
        condition.lock()
        errands.append(errand)
        if !started { start() }
        condition.signal()
        condition.unlock()
    }

    var isPoolThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        let me = pthread_self()
        return poolThreads.contains { pthread_equal($0, me) != 0 }
    }

    /// The pool's owner let go (and with it every lane): the threads end once idle.
    func shutDown() {
        condition.lock()
        ending = true
        condition.broadcast()
        condition.unlock()
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

    /// One thread's life: an errand, else the next frame from the lanes in turn, worked
    /// outside the lock; it ends once the pool is let go and nothing is left.
    private func run() {
        condition.lock()
        poolThreads.append(pthread_self())
        while true {
            // The work is let go before the lock is taken again: it may hold the last reference
            // to a hand-off, and what that frees must not run inside the pool's lock.
            var work: (() -> Void)?
            if !errands.isEmpty {
                work = errands.removeFirst()
            } else {
                var i = 0
                while i < lanes.count {
                    let index = (cursor + i) % lanes.count
                    switch lanes[index].take() {
                    case .work(let w):
                        work = w
                        cursor = (index + 1) % lanes.count
                    case .none:
                        i += 1
                        continue
                    case .gone:  // let go with frames it never handed out: nothing will ask it to leave
                        lanes.remove(at: index)
                        if index < cursor { cursor -= 1 }
                        if cursor >= lanes.count { cursor = 0 }
                        continue
                    }
                    break
                }
            }
            if work == nil {
                if ending { break }
                condition.wait()
                continue
            }
            condition.unlock()
            work!()
            work = nil
            condition.lock()
        }
        let me = pthread_self()
        poolThreads.removeAll { pthread_equal($0, me) != 0 }
        condition.unlock()
    }
}
