// What lasts (issue 57): the saved state's one owner. At start it reads state.json, and
// before any camera starts it replays each camera's saved parts (SavedCamera) through the API
// calls' own validation, so the first frame already has them; from then on it follows the
// sessions' state events and saves what differs from where the configuration started them:
//
//   {"main": "<camera id>"?, "mainRunning": false?, "cameras": {"<id>": {"zoom": {…}, …, "running": true?}},
//    "ptzPresets": {…}?}
//
// Whether cameras run is two things, as MultiCamSession has them: whether the main view runs
// (`mainRunning`, the configuration's `session.autostart`), and whether a camera runs in its own
// right (its `running`, `cameras[].autostart`). So a camera the main view left is not a camera
// a user stopped, and a saved main camera that is gone at the next start leaves the main view
// running on the one that stands in for it.
//
// Beside the cameras, sections other owners keep (ONVIF's PTZ presets): each owner hands in
// a way to read its section and says when it changed; the keeper reads it for each write.
//
// A part equal to the configuration's starting point is not saved (setting zoom back to 1
// removes it), so an edited config.json still decides everything nobody changed since. A
// camera absent now (unplugged while the server was down, removed from the configuration)
// keeps its saved parts, unapplied, for when it is back; a part today's camera refuses is
// dropped and said. Writes are StateWriter's: coalesced, at most one a second.

import CameraCore
import JSON
import Logging
import Session
import SystemSupport

final class StateKeeper: Sendable {
    typealias Parts = [String: JSONValue]

    /// What the state file held, where it came from, and what became of it.
    struct Report: Sendable {
        var loaded: StateFile.Loaded.Source
        /// Files set aside at start (unusable), each with why.
        var problems: [String]
        /// Saved parts not applied (refused by the camera or the configuration now), each with why.
        var dropped: [String]
    }

    private struct Held {
        /// Where each camera started (the configuration's values), by camera id.
        var baseline: [String: Parts] = [:]
        var baselineMain: String?
        /// The main camera as the last event found it.
        var mainNow: String?
        /// The saved main camera while it is not here and nobody has chosen another: kept.
        var keptMain: String?
        /// The main camera when the replay ended.
        var startMain: String?
        /// What the configuration starts: the main view, and cameras in their own right.
        var autostart: (main: Bool, own: Set<String>) = (false, [])
        /// Whether each camera's session runs (not idle: meant to), as its last event had it.
        var runs: [String: Bool] = [:]
        /// The cameras in their own right when a write was last considered.
        var ownNow: Set<String> = []
        /// Each camera's parts as its last state event had them.
        var current: [String: Parts] = [:]
        /// Saved parts of cameras not here now, kept as they were.
        var absent: [String: JSONValue] = [:]
        /// The last snapshot handed to the writer (at first, what was read).
        var last: JSONValue
        var report: Report
    }

    let file: StateFile
    private let held: Locked<Held>
    /// What was read at start: the main camera, each camera's parts, and the whole document.
    private let saved: (main: String?, cameras: [String: JSONValue], top: [String: JSONValue])
    /// The other sections' readers, by name.
    private let sections = Locked<[String: @Sendable () -> JSONValue?]>([:])
    /// The cameras followed, from `restore` on.
    private let followed = Locked<MultiCamSession?>(nil)
    private let subscription = Locked<EventSubscription?>(nil)
    private let writer = Locked<StateWriter?>(nil)
    private let logger: Logger

    init(file: StateFile, logger: Logger) {
        self.file = file
        self.logger = logger
        let leftovers = file.removeLeftovers()
        if leftovers > 0 { logger.notice("state: removed \(leftovers) temporary file(s) a killed write left") }
        let loaded = file.load()
        for p in loaded.problems { logger.error("state: \(p)") }
        if loaded.source == .previous { logger.warning("state: using the last good copy, \(file.previousPath)") }
        var main: String?
        var cameras: [String: JSONValue] = [:], whole: [String: JSONValue] = [:]
        if case .object(let top)? = loaded.state {
            whole = top
            if case .string(let m)? = top["main"] { main = m }
            if case .object(let c)? = top["cameras"] { cameras = c }
        }
        saved = (main, cameras, whole)
        held = Locked(Held(last: .object(whole), report: Report(loaded: loaded.source, problems: loaded.problems, dropped: [])))
    }

    /// The main camera the saved state names, for the application to start with.
    var savedMain: String? { saved.main }

    var report: Report { held.withLock { $0.report } }

    /// A section as it was saved (nil: none).
    func saved(section name: String) -> JSONValue? { saved.top[name] }

    /// Follows section `name`: `read` answers it as it is now (nil: nothing to save). Call
    /// `sectionChanged()` after each change; `dropped` is what of the saved one was not used.
    func follow(section name: String, dropped: [String] = [], read: @escaping @Sendable () -> JSONValue?) {
        sections.withLock { $0[name] = read }
        held.withLock { $0.report.dropped += dropped }
        for d in dropped { logger.warning("state: not applied: \(d)") }
    }

    /// A followed section changed: written within the writer's interval.
    func sectionChanged() {
        guard let cameras = followed.withLock({ $0 }) else { return }
        considerWriting(cameras)
    }
    var status: StateWriter.Status { writer.withLock { $0 }?.status ?? StateWriter.Status() }

    /// Before any camera starts: takes each camera's starting point and replays its saved
    /// parts. `configuredMain`: the camera the configuration makes main (the saved main
    /// differs from it, or is not saved); `autostart`: whether the configuration starts the main
    /// view, and the cameras it starts in their own right. Changes are followed from `follow`,
    /// once the cameras started.
    func restore(_ cameras: MultiCamSession, configuredMain: String, autostart: (main: Bool, own: Set<String>)) async {
        var baseline: [String: Parts] = [:], dropped: [String] = []
        for s in cameras.sessions { baseline[s.id] = SavedCamera.parts(of: await s.state(), s.camera.capabilities) }
        if let m = saved.main, !cameras.ids.contains(m) { dropped.append("main: camera '\(m)' is not here now (kept)") }
        for s in cameras.sessions {
            guard let entry = saved.cameras[s.id] else { continue }
            guard case .object(let parts) = entry else {
                dropped.append("cameras.\(s.id): not an object")
                continue
            }
            dropped += await SavedCamera.replay(parts, on: s).map { "cameras.\(s.id).\($0)" }
        }
        for d in dropped { logger.warning("state: not applied: \(d)") }
        let absent = saved.cameras.filter { !cameras.ids.contains($0.key) }
        for id in absent.keys.sorted() { logger.notice("state: camera '\(id)' is not here now: its saved settings are kept for when it is") }
        held.withLock {
            $0.baseline = baseline
            $0.baselineMain = configuredMain
            $0.autostart = autostart
            $0.absent = absent
            $0.startMain = cameras.mainID
            if let m = saved.main, !cameras.ids.contains(m) { $0.keptMain = m }
            $0.report.dropped += dropped
        }
    }

    /// What runs at start: the main view, or a camera in its own right.
    enum Runner: Sendable, Equatable {
        case mainView
        case camera(String)
    }

    /// Whether `runner` is to run now: as a user left it where that was saved, else as the
    /// configuration says (`configured`).
    func runs(_ runner: Runner, configured: Bool) -> Bool {
        let saved: JSONValue? = switch runner {
        case .mainView: self.saved.top["mainRunning"]
        case .camera(let id): self.saved.cameras[id]?[SavedCamera.running]
        }
        guard case .bool(let running)? = saved else { return configured }
        return running
    }

    /// Once the cameras the state and the configuration start have started: follows every
    /// change from now on (before, a camera not started yet would be saved as stopped).
    func follow(_ cameras: MultiCamSession, clock: any Timekeeper = SystemTimekeeper()) async {
        // The writer writes what was last found whole, never a snapshot taken mid-switch (the
        // held state, not the keeper: a write due as the keeper goes still has it).
        let writer = StateWriter(file: file, clock: clock, snapshot: { [held] in held.withLock { $0.last } },
                                 written: { [logger] status in
                                     if let e = status.error { logger.error("state: not saved: \(e)") }
                                 })
        self.writer.withLock { $0 = writer }
        followed.withLock { $0 = cameras }
        // Subscribed before the states are taken: a change in between is not missed.
        let subscription = cameras.events.subscription(initial: [], kind: "state")
        for s in cameras.sessions { take(cameras.marked(await s.state()), cameras) }
        subscription.attach { [weak self] in self?.drain(cameras) }
        self.subscription.withLock { $0 = subscription }
        drain(cameras)
        considerWriting(cameras)
    }

    /// Writes what is not written yet (the server stops) and follows no more.
    func close() {
        subscription.withLock { s in defer { s = nil }; return s }?.cancel()
        // What the last events changed is taken before the writer's last write.
        if let cameras = followed.withLock({ $0 }) { considerWriting(cameras) }
        writer.withLock { $0 }?.close()
        followed.withLock { $0 = nil }
        sections.withLock { $0 = [:] }
    }

    /// The state as it would be saved now.
    func snapshot() -> JSONValue {
        let extra = readSections()
        return held.withLock { h in Self.snapshot(h, main: h.mainNow, sections: extra) }
    }

    /// The followed sections as they are now, read off the keeper's lock (each owner takes its
    /// own); a saved section nobody follows now (ONVIF turned off) is kept as it was.
    private func readSections() -> [String: JSONValue] {
        let readers = sections.withLock { $0 }
        var out = saved.top.filter { !["cameras", "main", "mainRunning"].contains($0.key) && readers[$0.key] == nil }
        for (name, read) in readers { out[name] = read() }
        return out
    }

    private func drain(_ cameras: MultiCamSession) {
        guard let subscription = subscription.withLock({ $0 }) else { return }
        var any = false
        while case .item(let event) = subscription.next() {
            if case .state(let s) = event { take(s, cameras); any = true }
        }
        if any { considerWriting(cameras) }
    }

    private func take(_ s: SessionState, _ cameras: MultiCamSession) {
        guard let id = s.camera?.id, let session = try? cameras.session(id) else { return }
        let parts = SavedCamera.parts(of: s, session.camera.capabilities)
        held.withLock {
            $0.current[id] = parts  // the main camera is read when a write is considered
            $0.runs[id] = s.state != .idle
        }
    }

    /// A change worth a write: the snapshot differs from the last one handed over. Not while the
    /// main camera is being switched (one camera started, the other not yet stopped): the
    /// switch's last state event comes once it is whole.
    private func considerWriting(_ cameras: MultiCamSession) {
        guard !cameras.isSwitching else { return }
        let extra = readSections()
        let own = cameras.inTheirOwnRight
        let changed = held.withLock { h -> Bool in
            h.mainNow = cameras.mainID
            h.ownNow = own
            if h.mainNow != h.startMain { h.keptMain = nil }  // another main was chosen since
            let now = Self.snapshot(h, main: h.mainNow, sections: extra)
            guard now != h.last else { return false }
            h.last = now
            return true
        }
        if changed { writer.withLock { $0 }?.changed() }
    }

    private static func snapshot(_ h: Held, main: String?, sections: [String: JSONValue]) -> JSONValue {
        var cameras = h.absent
        for (id, parts) in h.current {
            let base = h.baseline[id] ?? [:]
            var differing = parts.filter { base[$0.key] != $0.value }
            if h.ownNow.contains(id) != h.autostart.own.contains(id) { differing[SavedCamera.running] = .bool(h.ownNow.contains(id)) }
            if !differing.isEmpty { cameras[id] = .object(differing) }
        }
        var top = sections
        if let main, let runs = h.runs[main], runs != h.autostart.main { top["mainRunning"] = .bool(runs) }
        top["cameras"] = .object(cameras)
        if let kept = h.keptMain {
            top["main"] = .string(kept)
        } else if let main, main != h.baselineMain {
            top["main"] = .string(main)
        }
        return .object(top)
    }
}
