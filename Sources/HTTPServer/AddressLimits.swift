// Connections per client address, counted so that the limits stop attackers, not audiences.
//
// The slowloris attack is connections that never finish their request: each holds a slot and
// a timer while it trickles its head. A viewer is the opposite: its request is in, and it is
// being served. So the per-address limit counts a connection only while it has been *waiting
// for a request* longer than `stallAfter` — from accept until its head is in, and again
// between requests on a kept-alive connection — never while a request runs (a stream, a
// handler), and never in its first second (a browser's head arrives within milliseconds; 500
// viewers connecting at once from one NAT address are 500 fresh connections, not an attack).
// A hundred viewers behind one address count nothing; thirty-three connections from it that
// stall on their head are refused.
//
// Counted in MHD's callbacks: connection started/closed, the access handler's first call (the
// head is in) and request completed. The accept policy closes at once a connection from an
// address with `limit + answeredBeyondLimit` stalled connections (never set up at all), or,
// once the server is nearly full, from an address holding more than its share; between the
// limit and that, a request is answered 503 when its head arrives. Fair sharing: past seven
// eighths of the capacity, an address holding more than capacity ÷ (addresses + 1) gets no
// more, so the last slots stay for other addresses. Connections from trusted proxies (a
// reverse proxy) are counted in the total only: the proxy stands for many clients, and it
// buffers request heads itself.

import SystemSupport

final class AddressLimits: Sendable {
    /// Waiting connections beyond an address's limit still accepted, to be told 503.
    static let answeredBeyondLimit = 8

    /// Seconds a connection may wait for its request before it counts as stalled.
    static let stallAfter = 1.0

    private struct PerAddress {
        var open = 0
        /// Its connections waiting for a request, and since when (monotonic seconds).
        var waiting: [UInt: Double] = [:]

        func stalled(at now: Double) -> Int { waiting.values.reduce(0) { $0 + (now - $1 >= AddressLimits.stallAfter ? 1 : 0) } }
    }
    private struct Connection {
        var address: UInt32
        var waiting: Bool
        var exempt: Bool
    }
    private struct State {
        var addresses: [UInt32: PerAddress] = [:]
        var connections: [UInt: Connection] = [:]
        var open = 0
    }
    private let state = Locked(State())
    private let isTrusted: @Sendable (UInt32) -> Bool

    init(isTrusted: @escaping @Sendable (UInt32) -> Bool = { _ in false }) { self.isTrusted = isTrusted }

    /// The accept policy: false closes the connection before MHD sets it up.
    func admits(_ address: UInt32, limit: Int, capacity: Int) -> Bool {
        if isTrusted(address) { return true }
        let now = Clock.monotonic()
        return state.withLock { s in
            guard let a = s.addresses[address] else { return true }
            if a.stalled(at: now) >= limit + Self.answeredBeyondLimit { return false }
            return !(s.open >= capacity - capacity / 8 && a.open >= capacity / (s.addresses.count + 1))
        }
    }

    func opened(_ connection: OpaquePointer, address: UInt32) {
        let exempt = isTrusted(address), key = UInt(bitPattern: connection), now = Clock.monotonic()
        state.withLock { s in
            s.open += 1
            s.connections[key] = Connection(address: address, waiting: true, exempt: exempt)
            guard !exempt else { return }
            s.addresses[address, default: PerAddress()].open += 1
            s.addresses[address, default: PerAddress()].waiting[key] = now
        }
    }

    func closed(_ connection: OpaquePointer) {
        let key = UInt(bitPattern: connection)
        state.withLock { s in
            guard let c = s.connections.removeValue(forKey: key) else { return }
            s.open -= 1
            guard !c.exempt, var a = s.addresses[c.address] else { return }
            a.open -= 1
            a.waiting[key] = nil
            s.addresses[c.address] = a.open > 0 ? a : nil
        }
    }

    /// Why a request whose head just arrived may not be served, if it may not.
    enum Refusal: Equatable {
        /// The address has more connections stalled before their request than its limit.
        case tooManyWaiting(limit: Int)
        /// The server is nearly full and this address holds more than its share.
        case overFairShare(holds: Int, share: Int)
    }

    /// The head of a request on `connection` is in: it no longer waits. Returns a refusal when
    /// the address was over its waiting limit with this one, or holds more than its fair share
    /// of a nearly full server (`capacity` connections; the last eighth is kept for addresses
    /// under their share).
    func requestArrived(_ connection: OpaquePointer, limit: Int, capacity: Int) -> Refusal? {
        let now = Clock.monotonic()
        return state.withLock { s -> Refusal? in
            let key = UInt(bitPattern: connection)
            guard var c = s.connections[key], !c.exempt else { return nil }
            var a = s.addresses[c.address, default: PerAddress()]
            if c.waiting {
                c.waiting = false
                a.waiting[key] = nil
                s.connections[key] = c
                s.addresses[c.address] = a
            }
            if a.stalled(at: now) >= limit { return .tooManyWaiting(limit: limit) }
            // Room for one more address than are here: a newcomer always finds its share free.
            let share = capacity / (s.addresses.count + 1)
            if s.open > capacity - capacity / 8, a.open > share { return .overFairShare(holds: a.open, share: share) }
            return nil
        }
    }

    /// The request on `connection` was answered: the connection waits for the next one (or closes).
    func requestEnded(_ connection: OpaquePointer) {
        state.withLock { s in
            let key = UInt(bitPattern: connection)
            guard var c = s.connections[key], !c.waiting else { return }
            c.waiting = true
            s.connections[key] = c
            if !c.exempt { s.addresses[c.address, default: PerAddress()].waiting[key] = Clock.monotonic() }
        }
    }
}
