// This host as an MQTT citizen: `online`/`offline` (the will) on the status topic, each
// camera's state (retained, at most every `stateInterval`, only when the session says it
// changed), its events, a JPEG snapshot after each stored photo and every `snapshotInterval`,
// Home Assistant discovery, and the commands (MQTTCommands) and fleet captures that come in.
// Everything is published again after a reconnect: the broker may have forgotten it all.

import CameraCore
import Foundation
import HTTPServer
import JSON
import Logging
import MQTT
import Session
import Subscriptions
import SystemSupport

final class MQTTBridge: Sendable {
    let client: MQTTClient
    let topics: MQTTTopics
    let settings: Configuration.MQTTSettings
    let commands: MQTTCommands
    let discovery: HomeAssistantDiscovery?
    let cameras: MultiCamSession
    let events: EventHub
    /// Its subscription to the events, while started.
    private let watched = Locked<EventSubscription?>(nil)
    let photos: PhotoStore
    let logger: Logger
    let fleet: FleetCapture?
    /// The discovery configs this host offers now: anything else under its node id goes.
    private let offered: Set<String>
    private let cameraList: [HomeAssistantDiscovery.Camera]
    /// Per camera level: the newest state not yet sent, and when the last went out.
    private let pendingStates = Locked([String: (state: SessionState?, sent: Double)]())
    /// When each camera's level was last published (once a second: a sensor, not a meter).
    private let levelsSent = Locked([String: Double]())
    private let flushAlarm: Alarm
    /// Commands running now.
    private let inFlight = Locked(0)
    static let maxInFlight = 64
    private let snapshotAlarm: Alarm

    init(settings: Configuration.MQTTSettings, options: MQTTOptions, router: Router, access: AccessControl,
         cameras: MultiCamSession, events: EventHub, photos: PhotoStore, pageURL: String, maxBodyBytes: Int,
         logger: Logger) throws(SystemError) {
        let topics = MQTTTopics(prefix: settings.topicPrefix, node: settings.node)
        self.topics = topics
        self.settings = settings
        self.cameras = cameras
        self.events = events
        self.photos = photos
        self.logger = logger
        let list = cameras.sessions.map { s in
            let d = s.camera
            return HomeAssistantDiscovery.Camera(id: s.id, level: MQTTTopics.level(s.id), name: d.descriptor.name,
                                                 kind: d.descriptor.kind.rawValue, capabilities: d.capabilities,
                                                 hasMicrophone: s.audioData != nil)
        }
        cameraList = list
        commands = MQTTCommands(topics: topics, router: router, access: access, role: settings.role,
                                cameras: Dictionary(list.map { ($0.level, $0.id) }) { first, _ in first }, maxBodyBytes: maxBodyBytes)
        let disco = settings.discovery
            ? HomeAssistantDiscovery(topics: topics, discoveryPrefix: settings.discoveryPrefix, version: viewfinderVersion, pageURL: pageURL) : nil
        discovery = disco
        offered = Set(list.flatMap { c in disco?.configs(for: c).map(\.topic) ?? [] })
        fleet = settings.fleet ? FleetCapture(topics: topics, cameras: cameras, photos: photos, logger: logger) : nil
        let box = Locked<MQTTBridge?>(nil)  // the handlers reach the bridge once it exists
        client = try MQTTClient(options: options, logger: logger, handlers: .init(
            connected: { box.withLock { $0 }?.connected() },
            message: { m in box.withLock { $0 }?.received(m) }))
        flushAlarm = Alarm { box.withLock { $0 }?.flushStates() }
        snapshotAlarm = Alarm { box.withLock { $0 }?.periodicSnapshots() }
        box.withLock { $0 = self }
        fleet?.publish = { [client] m in client.publish(m) }
    }

    func start() {
        client.subscribe(topics.commands)
        if let discovery { client.subscribe(discovery.ownConfigs) }
        if fleet != nil { client.subscribe(topics.fleetCapture) }
        let subscription = events.subscription(initial: [], kind: "mqtt", levels: true)
        subscription.attach { [weak self] in self?.watch() }
        watched.withLock { $0 = subscription }
        watch()
        client.start()
        if let every = settings.snapshotInterval { snapshotAlarm.set(after: every) }
    }

    /// `offline` (retained) before a clean disconnect: the broker does not publish the will then.
    func stop() {
        watched.withLock { w in defer { w = nil }; return w }?.cancel()
        flushAlarm.cancel()
        snapshotAlarm.cancel()
        client.publish(MQTTMessage(topic: topics.status, text: "offline", qos: 1, retain: true))
        client.stop()
    }

    /// On the client's thread, after every CONNACK.
    private func connected() {
        client.publish(MQTTMessage(topic: topics.status, text: "online", qos: 1, retain: true))
        if let discovery {
            for camera in cameraList {
                for c in discovery.configs(for: camera) {
                    client.publish(MQTTMessage(topic: c.topic, payload: c.payload.encoded(), qos: 1, retain: true))
                }
            }
        }
        Task { [self] in
            for s in cameras.sessions { publishState(cameras.marked(await s.state()), force: true) }
        }
    }

    /// On the client's thread: queue or hand off, never wait.
    private func received(_ m: MQTTMessage) {
        if let discovery, let object = discovery.objectID(ofConfig: m.topic) {
            // A config this host published once and offers no more (a camera gone from config).
            if !m.payload.isEmpty && !offered.contains(m.topic) {
                logger.info("mqtt: removing the discovery config \(object) (no such camera or entity now)")
                client.publish(MQTTMessage(topic: m.topic, payload: [], qos: 1, retain: true))
            }
            return
        }
        if m.topic == topics.fleetCapture {
            fleet?.received(m)
            return
        }
        guard let request = commands.request(for: m) else { return }
        // A flood of commands waits for no one: beyond `maxInFlight` running, the next is
        // answered 503 at once (as a full HTTP server answers), nothing queued behind it.
        let admitted = inFlight.withLock { n -> Bool in
            guard n < Self.maxInFlight else { return false }
            n += 1
            return true
        }
        guard admitted else {
            let (status, body) = MQTTCommands.decode(errorBody(ServerRefusal.unavailable("Too many MQTT commands at once; try again.")))
            if let answer = MQTTCommands.answer(to: m, status: status, body: body) { client.publish(answer) }
            return
        }
        Task { [commands, client, logger, inFlight] in
            let (status, body) = await commands.run(request)
            inFlight.withLock { $0 -= 1 }
            if status >= 400 { logger.info("mqtt: \(request.path): \(status)") }
            if let answer = MQTTCommands.answer(to: m, status: status, body: body) { client.publish(answer) }
        }
    }

    // MARK: - Out

    private func watch() {
        guard let subscription = watched.withLock({ $0 }) else { return }
        while case .item(let event) = subscription.next() {
            guard let camera = event.camera else { continue }
            let level = MQTTTopics.level(camera)
            switch event {
            case .state(let s): publishState(s, force: false)
            case .photo(let p):
                publishEvent(event, level)
                if let jpeg = photos.read(p.id) { publishSnapshot(jpeg, level) }
            case .metadata(let m):
                publishEvent(event, level)
                if let first = m.objects.first {
                    client.publish(MQTTMessage(topic: topics.code(level), text: first.value, qos: 0, retain: true))
                }
            case .level(let l): publishLevel(l, level)
            default: publishEvent(event, level)
            }
        }
    }

    /// A microphone's level on `<camera>/level`, at most once a second (the events come ten a second).
    private func publishLevel(_ l: LevelEvent, _ level: String) {
        let now = Clock.monotonic()
        let due = levelsSent.withLock { sent -> Bool in
            guard now - (sent[level] ?? -1e9) >= 1 else { return false }
            sent[level] = now
            return true
        }
        guard due else { return }
        client.publish(MQTTMessage(topic: topics.soundLevel(level), text: SessionEvent.level(l).json, qos: 0))
    }

    private func publishEvent(_ event: SessionEvent, _ level: String) {
        let text = "{\"type\": \"\(event.name)\", \"data\": \(event.json)}"
        client.publish(MQTTMessage(topic: topics.event(level), text: text, qos: 0))
    }

    private func publishSnapshot(_ jpeg: [UInt8], _ level: String) {
        client.publish(MQTTMessage(topic: topics.snapshot(level), payload: jpeg, qos: 0, retain: true))
    }

    /// Now, or when `stateInterval` has passed since the last one (the newest then).
    private func publishState(_ state: SessionState, force: Bool) {
        guard let camera = state.camera?.id else { return }
        let level = MQTTTopics.level(camera)
        let now = Clock.monotonic()
        let due = pendingStates.withLock { p -> Bool in
            let last = p[level]?.sent ?? -1e9
            if force || now - last >= settings.stateInterval {
                p[level] = (nil, now)
                return true
            }
            p[level] = (state, last)
            return false
        }
        if due {
            send(state)
        } else {
            flushAlarm.set(after: settings.stateInterval / 2)
        }
    }

    /// A camera's state, retained on its state topic.
    private func send(_ state: SessionState) {
        guard let camera = state.camera?.id else { return }
        client.publish(MQTTMessage(topic: topics.state(MQTTTopics.level(camera)), text: SessionEvent.state(state).json, qos: 0, retain: true))
    }

    private func flushStates() {
        let now = Clock.monotonic()
        let (due, waiting) = pendingStates.withLock { p -> ([SessionState], Bool) in
            var due: [SessionState] = [], waiting = false
            for (level, entry) in p {
                guard let s = entry.state else { continue }
                if now - entry.sent >= settings.stateInterval { due.append(s); p[level] = (nil, now) } else { waiting = true }
            }
            return (due, waiting)
        }
        for s in due { send(s) }
        if waiting { flushAlarm.set(after: settings.stateInterval / 2) }
    }

    /// A JPEG of each running camera's current frame, every `snapshotInterval`.
    private func periodicSnapshots() {
        guard let every = settings.snapshotInterval else { return }
        snapshotAlarm.set(after: every)
        Task { [self] in
            for s in cameras.sessions where await s.state().state == .running {
                guard let ticket = try? await s.capture(quality: nil), let frame = await ticket.frame(timeout: 2) else { continue }
                publishSnapshot(frame.jpeg, MQTTTopics.level(s.id))
            }
        }
    }
}
