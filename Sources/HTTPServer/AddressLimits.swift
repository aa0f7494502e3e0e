// Open connections per client address, so that one client cannot take every slot.
//
// Counted in the connection-notify callback (started/closed). A request from an address
// over its limit is answered 503 like the total limit; but a client that never finishes its
// request (slowloris) would never be answered, so the accept policy also closes connections
// at once beyond the limit plus `answeredBeyondLimit`: those are never set up at all.

import SystemSupport

final class AddressLimits: Sendable {
    /// Connections beyond an address's limit still accepted, to be told 503.
    static let answeredBeyondLimit = 8

    private let open = Locked<[UInt32: Int]>([:])

    /// The accept policy: false closes the connection before MHD sets it up.
    func admits(_ address: UInt32, limit: Int) -> Bool {
        open.withLock { $0[address, default: 0] < limit + Self.answeredBeyondLimit }
    }

    func opened(_ address: UInt32) { open.withLock { $0[address, default: 0] += 1 } }

    func closed(_ address: UInt32) {
        open.withLock { open in
            let n = open[address, default: 0] - 1
            open[address] = n > 0 ? n : nil
        }
    }

    func count(_ address: UInt32) -> Int { open.withLock { $0[address, default: 0] } }
}
