// The WebRTC peers of one service — WHEP's viewers, WHIP's talkers — under the random ids of
// their `Location`s, and everything that is the same for both: the one table, the sweep (each
// second `PeerHealth` says who was abandoned: the tab closed, the network gone), ending a peer
// off the caller's thread (stopping a pipeline blocks), and the stop's `closeAll`, which waits
// for every thread the registry started. A service keeps only its answer (and WHEP its
// adaptation, read after each sweep).

import Foundation
import Logging
import Streaming
import SystemSupport

/// What the registry asks of a peer.
protocol RegisteredPeer: Sendable {
    /// webrtcbin's connection state, for the sweep.
    var state: WebRTCPeer.State { get }
    /// Seconds since the peer's last packet (nil: none yet), for the sweep.
    var silence: Double? { get }
    /// How the log names it: "WHEP session <id>", "camera rear: talk <id>".
    func named(_ id: String) -> String
    /// What its answer found amiss (a TURN server that refused or did not answer): said again
    /// when it ends unconnected.
    var notes: [String] { get }
    /// Stops it and gives back what it holds; may block. Called once, never on the caller's
    /// thread nor under the registry's lock.
    func end()
}

extension RegisteredPeer {
    var notes: [String] { [] }
}

final class PeerRegistry<Peer: RegisteredPeer>: Sendable {
    private struct Entry {
        let peer: Peer
        var health: PeerHealth
    }
    private let peers = Locked<[String: Entry]>([:])
    /// A thread's name prefix: "whep" ends peers on "whep-close".
    private let name: String
    private let logger: Logger
    private let alarm = Locked<Alarm?>(nil)
    /// The threads the registry started (ending swept peers, a service's warm-up): `closeAll`
    /// waits for them, so none is still in GStreamer or OpenSSL while the process exits.
    private let work = DispatchGroup()
    /// Seconds a peer may take to connect before it is taken for abandoned.
    let connectTimeout = Locked(15.0)
    /// After each sweep, the lock not held, with the sweep's monotonic time (WHEP reads its
    /// viewers' links there).
    private let sweptHandler = Locked<(@Sendable (_ now: Double) -> Void)?>(nil)

    init(name: String, logger: Logger) {
        self.name = name
        self.logger = logger
        let a = Alarm { [weak self] in self?.sweep() }
        alarm.withLock { $0 = a }
        a.set(after: 1, leeway: 0.1)
    }

    /// `body` runs after each sweep, with the sweep's monotonic time, no lock held.
    func afterSweep(_ body: @escaping @Sendable (_ now: Double) -> Void) { sweptHandler.withLock { $0 = body } }

    var count: Int { peers.withLock { $0.count } }

    /// Keeps `peer` under a new random id (its `Location`'s).
    func add(_ peer: Peer) -> String {
        let id = UUID().uuidString.lowercased()
        peers.withLock { $0[id] = Entry(peer: peer, health: PeerHealth(created: Clock.monotonic())) }
        return id
    }

    /// Peer `id`, nil when there is none (it ended, or never began).
    subscript(id: String) -> Peer? { peers.withLock { $0[id]?.peer } }

    /// Every peer kept now, with its id.
    var all: [(id: String, peer: Peer)] { peers.withLock { $0.map { ($0.key, $0.value.peer) } } }

    /// Ends peer `id` (off the caller's thread) and answers it; nil when there is none.
    func close(_ id: String) async -> Peer? {
        guard let e = peers.withLock({ $0.removeValue(forKey: id) }) else { return nil }
        await onOwnThread("\(name)-close") { e.peer.end() }
        return e.peer
    }

    /// Ends every peer, stops sweeping, and waits (ten seconds at most) for the registry's
    /// threads. False when one is still running (a warm-up making its key pair on a starved
    /// machine): the process must then leave without the libraries' exit handlers.
    func closeAll() async -> Bool {
        alarm.withLock { $0?.cancel(); $0 = nil }
        let ending = peers.withLock { p in defer { p.removeAll() }; return Array(p.values) }
        return await onOwnThread("\(name)-close") { [work] in
            for e in ending { e.peer.end() }
            return work.wait(timeout: .now() + 10) == .success
        }
    }

    /// Runs `body` on a thread of its own named `thread`, which `closeAll` waits for.
    func detach(_ thread: String, _ body: @escaping @Sendable () -> Void) {
        work.enter()
        Thread.detachNewThread { [work] in
            ThreadName.set(thread)
            body()
            work.leave()
        }
    }

    private func sweep() {
        let now = Clock.monotonic()
        let timeout = connectTimeout.withLock { $0 }
        var gone: [(String, Peer, WebRTCPeer.State, String)] = []
        peers.withLock { p in
            for (id, var e) in p {
                let state = e.peer.state
                if e.health.expired(state, silence: e.peer.silence, now: now, connectTimeout: timeout) {
                    p[id] = nil
                    gone.append((id, e.peer, state, e.health.reason(state, connectTimeout: timeout)))
                } else {
                    p[id] = e
                }
            }
        }
        sweptHandler.withLock { $0 }?(now)
        alarm.withLock { $0?.set(after: 1, leeway: 0.1) }
        guard !gone.isEmpty else { return }
        // Stopping a pipeline can take a while: not on the alarms' queue.
        detach("\(name)-close") { [logger, gone] in
            for (id, peer, state, why) in gone {
                let unconnected = state == .failed || state == .new || state == .connecting
                let notes = unconnected && !peer.notes.isEmpty ? " (\(peer.notes.joined(separator: "; ")))" : ""
                logger.log(level: unconnected ? .warning : .info, "\(peer.named(id)) ended: \(why)\(notes)")
                peer.end()
            }
        }
    }
}
