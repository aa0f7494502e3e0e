// An MQTT 5 client that stays connected: libmosquitto's protocol, our own thread and poll().
//
// Why not mosquitto_loop_start: its loop uses select(), which cannot watch a socket numbered
// 1024 or more (the loop ends, silently; a server holding a thousand viewers reaches that on
// its next reconnect), and a broker that refuses the login ends that thread for good. Here
// one thread owns the `struct mosquitto` from birth to destroy — every libmosquitto call is
// made on it — and drives it with mosquitto_loop_read/_write/_misc on poll(), reconnecting
// with its own backoff whatever the reason. Other threads only queue (publish, subscribe) and
// wake it through a pipe. Callbacks (connected, a message) run on that thread: they must
// queue or hand off, never block.

import CMosquitto
import Glibc
import Logging
import SystemSupport

public final class MQTTClient: Sendable {
    public enum Status: Sendable, Equatable {
        case connecting
        case connected
        /// Not connected, and why (the last failure), until the next attempt.
        case disconnected(String)
    }

    /// Called on the client's thread: `connected` after every CONNACK (subscribe and
    /// republish there: a reconnect starts from nothing), `message` for each one in.
    public struct Handlers: Sendable {
        public var connected: @Sendable () -> Void
        public var message: @Sendable (MQTTMessage) -> Void
        public init(connected: @escaping @Sendable () -> Void, message: @escaping @Sendable (MQTTMessage) -> Void) {
            self.connected = connected
            self.message = message
        }
    }

    public let options: MQTTOptions
    let handlers: Handlers
    let logger: Logger
    /// A pipe: written to wake the client's thread, read by it.
    private let wakeFD: Int32
    private let wakeWriteFD: Int32
    /// What other threads hand the client's thread.
    let shared = Locked(Shared())
    static let outboxLimit = 2000

    struct Shared {
        var status = Status.disconnected("not started")
        var outbox: [MQTTMessage] = []
        var subscriptions: [String] = []
        var newSubscriptions: [String] = []
        var stopping = false
        var connects = 0
        var dropped = 0
        var published = 0
        var received = 0
    }

    public init(options: MQTTOptions, logger: Logger, handlers: Handlers) throws(SystemError) {
        self.options = options
        self.logger = logger
        self.handlers = handlers
        let fds = try Sys.pipe()
        for fd in [fds.read, fds.write] {
            _ = try? Sys.fcntl(fd, F_SETFD, FD_CLOEXEC, "the wake pipe")
            _ = try? Sys.fcntl(fd, F_SETFL, O_NONBLOCK, "the wake pipe")
        }
        wakeFD = fds.read
        wakeWriteFD = fds.write
    }

    deinit {
        try? Sys.close(wakeFD)
        try? Sys.close(wakeWriteFD)
    }

    public var status: Status { shared.withLock { $0.status } }
    /// CONNACKs received since start (1 after the first connect; each reconnect adds one).
    public var connects: Int { shared.withLock { $0.connects } }
    public var counts: (published: Int, received: Int, dropped: Int) {
        shared.withLock { ($0.published, $0.received, $0.dropped) }
    }

    /// The client's thread (SystemSupport's one shape): its one step is the whole loop of
    /// `run`, which polls at most half a second at a time and ends once `stop` set `stopping`.
    private let thread = Locked<SteppingThread?>(nil)

    /// Starts the client's thread; it connects, and reconnects, until `stop`.
    public func start() {
        let t = SteppingThread(name: "mqtt", step: { [self] in
            run()
            return false
        })
        thread.withLock { $0 = t }
    }

    /// Queues a message for the broker. While disconnected it waits in a bounded queue (the
    /// oldest go first, counted) and goes out once connected.
    public func publish(_ message: MQTTMessage) {
        shared.withLock { s in
            s.outbox.append(message)
            if s.outbox.count > Self.outboxLimit {
                s.outbox.removeFirst(s.outbox.count - Self.outboxLimit)
                s.dropped += 1
            }
        }
        wake()
    }

    /// Subscribes now (when connected) and after every reconnect.
    public func subscribe(_ filter: String) {
        shared.withLock { s in
            s.subscriptions.append(filter)
            s.newSubscriptions.append(filter)
        }
        wake()
    }

    /// Sends what is queued (for up to a second), disconnects cleanly (the broker does not
    /// publish the will) and ends the thread; returns when it has ended (joined).
    public func stop() {
        shared.withLock { $0.stopping = true }
        guard let t = thread.withLock({ t in defer { t = nil }; return t }) else { return }
        wake()
        t.stop()
    }

    func wake() {
        let one: UInt8 = 1
        _ = withUnsafeBytes(of: one) { try? Sys.write(wakeWriteFD, $0, "the wake pipe") }  // a full pipe (EAGAIN) is already a wake-up
    }

    func drainWake() {
        var bytes = [UInt8](repeating: 0, count: 256)
        while bytes.withUnsafeMutableBufferPointer({ (try? Sys.read(wakeFD, into: UnsafeMutableRawBufferPointer($0), "the wake pipe")) ?? 0 }) > 0 {}
    }

    /// Waits on the socket (when there is one) and the wake fd for up to `timeout` seconds.
    func wait(socket: Int32, wantWrite: Bool, timeout: Double) -> (readable: Bool, writable: Bool) {
        var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        if socket >= 0 {
            fds.append(pollfd(fd: socket, events: Int16(POLLIN) | (wantWrite ? Int16(POLLOUT) : 0), revents: 0))
        }
        let ms = Int32(max(0, min(timeout, 60)) * 1000)
        guard let n = try? Sys.poll(&fds, timeout: ms, "mqtt"), n > 0 else { return (false, false) }
        if fds[0].revents != 0 { drainWake() }
        guard fds.count > 1 else { return (false, false) }
        let r = fds[1].revents
        return (r & Int16(POLLIN | POLLERR | POLLHUP) != 0, r & Int16(POLLOUT) != 0)
    }
}
