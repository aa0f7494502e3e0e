// One synchronized photo from every camera of a fleet. `{"at": <Unix seconds>, "set": "<id>"}`
// on `<prefix>/fleet/capture` (or `POST /api/fleet/capture` on any host, which publishes it
// with `at` = now + delay) makes every camera of every host subscribed store the frame whose
// capture time is nearest `at`, from its FrameRing: a command up to `ringSpan` late still gets
// that frame, one that arrives early waits for it. Each host answers on
// `<prefix>/fleet/sets/<set>` with its photos (URL, capture time, offset from `at`). The rings
// start with a host's first set (a host that never takes part encodes nothing more): that
// first set must not be late.

import Foundation
import JSON
import Logging
import MQTT
import Session
import SystemSupport

final class FleetCapture: Sendable {
    /// A command may arrive this late and still get its frame.
    static let ringSpan = 1.5

    let topics: MQTTTopics
    let cameras: MultiCamSession
    let photos: PhotoStore
    let logger: Logger
    private let sink = Locked<(@Sendable (MQTTMessage) -> Void)?>(nil)

    init(topics: MQTTTopics, cameras: MultiCamSession, photos: PhotoStore, logger: Logger) {
        self.topics = topics
        self.cameras = cameras
        self.photos = photos
        self.logger = logger
    }

    var publish: (@Sendable (MQTTMessage) -> Void)? {
        get { sink.withLock { $0 } }
        set { sink.withLock { $0 = newValue } }
    }

    struct Command: Equatable {
        var at: Double
        var set: String
    }

    /// A set named by its moment, in microseconds.
    static func defaultSet(_ at: Double) -> String { String(Int64((at * 1e6).rounded())) }

    /// `{"at", "set"?}`: `at` within a day of now, `set` a safe name (default: `at` in µs).
    static func parse(_ payload: [UInt8], now: Double) -> Result<Command, JSONFieldError> {
        guard let value = try? JSONValue.parse(payload) else { return .failure(JSONFieldError(path: "", problem: "expected a JSON object {\"at\", \"set\"?}")) }
        do throws(JSONFieldError) {
            let o = try JSONObjectReader(value, nullIsAbsent: false)
            guard let at = try o.double("at", in: (now - 86400)...(now + 86400)) else {
                throw JSONFieldError(path: "at", problem: "required: the moment, in Unix seconds")
            }
            let set = try o.string("set") ?? defaultSet(at)
            guard Configuration.MQTTSettings.isSafeName(set) else {
                throw JSONFieldError(path: "set", problem: "letters, digits, '_' and '-' only, at most 64")
            }
            try o.finish()
            return .success(Command(at: at, set: set))
        } catch { return .failure(error) }
    }

    /// A command from the broker, on the client's thread: run on a task.
    func received(_ m: MQTTMessage) {
        switch Self.parse(m.payload, now: Clock.now()) {
        case .failure(let e): logger.warning("mqtt: a fleet capture that is not one: \(e.description)")
        case .success(let command): Task { await run(command) }
        }
    }

    /// `POST /api/fleet/capture`: published to the fleet, and taken here (our own message
    /// does not come back to us).
    func start(delay: Double, set: String?) -> Command {
        let at = Clock.now() + delay
        let command = Command(at: at, set: set ?? Self.defaultSet(at))
        let body = JSONValue.object(["at": .number(at), "set": .string(command.set)]).encoded()
        publish?(MQTTMessage(topic: topics.fleetCapture, payload: body, qos: 1))
        Task { await run(command) }
        return command
    }

    /// Every running camera's frame nearest `at`, stored with the set; the host's answer published.
    func run(_ command: Command) async {
        var taken: [JSONValue] = [], errors: [JSONValue] = []
        await withTaskGroup(of: JSONValue.self) { group in
            for session in cameras.sessions {
                group.addTask { [photos] in
                    do {
                        let ring = try await session.frameRing()
                        ring.activate()  // from this host's first set on: every frame kept
                        let wait = max(0, command.at - Clock.now()) + 2
                        let frame = try await ring.frame(nearest: command.at, timeout: wait)
                        let info = try photos.save(frame, camera: session.id, mark: PhotoSetMark(set: command.set, at: command.at))
                        await session.announcePhoto(info)
                        return ["camera": .string(session.id), "id": .string(info.id), "url": .string("/api/photos/\(info.id)"),
                                "capturedAt": .string(info.capturedAt), "timestamp": .number(info.timestamp),
                                "offset": .number(info.timestamp - command.at)]
                    } catch let miss as FrameRing.Miss {
                        return ["camera": .string(session.id), "error": .string(miss.description), "reason": .string(miss.reason)]
                    } catch {
                        return ["camera": .string(session.id), "error": .string("\(error)")]
                    }
                }
            }
            for await entry in group {
                if entry["error"] != nil { errors.append(entry) } else { taken.append(entry) }
            }
        }
        let answer: JSONValue = ["node": .string(topics.node), "set": .string(command.set), "at": .number(command.at),
                                 "photos": .array(taken), "errors": .array(errors)]
        publish?(MQTTMessage(topic: topics.fleetReplies(command.set), payload: answer.encoded(), qos: 1, contentType: "application/json"))
        logger.info("fleet: set \(command.set): \(taken.count) photo(s), \(errors.count) error(s)")
    }
}
