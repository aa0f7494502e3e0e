// Retention of movies and photos (issue 28, `storage`): oldest first, until the directory
// holds at most `maxBytes`, nothing is older than `maxAge`, and `minFreeBytes` are free on
// the file system (statvfs). Never a recording being written (its `.part` counts toward the
// total but is not a candidate), never one marked `keep`. Each deletion is a `deleted` event
// and counted in /metrics. It runs after every movie or photo is stored and every
// `interval` seconds (a long recording grows between).

import CameraCore
import Foundation
import Logging
import Movie
import Session
import Subscriptions
import SystemSupport

final class StorageRetention: Sendable {
    static let interval = 10.0

    private struct Candidate {
        var kind: DeletionEvent.Kind
        var entry: StoredEntry
        var device: UInt64
    }

    private let settings: Configuration.StorageSettings
    private let movies: MovieStore
    private let photos: PhotoStore
    private let events: EventHub
    private let logger: Logger
    /// One pass at a time; the counts by kind and reason.
    private let counts = Locked([String: (files: Int, bytes: Int64)]())
    private let turn = Locked(())
    private let alarm: Alarm
    /// Its subscription to the events, while started.
    private let watched = Locked<EventSubscription?>(nil)

    init(settings: Configuration.StorageSettings, movies: MovieStore, photos: PhotoStore, events: EventHub, logger: Logger) {
        self.settings = settings
        self.movies = movies
        self.photos = photos
        self.events = events
        self.logger = logger
        let pass = Locked<(@Sendable () -> Void)?>(nil)
        alarm = Alarm { pass.withLock { $0 }?() }
        pass.withLock { $0 = { [weak self] in self?.enforce(); self?.alarm.set(after: Self.interval) } }
    }

    /// Passes now, every `interval`, and soon after each photo stored or movie finished.
    func start() {
        alarm.set(after: 0)
        let subscription = events.subscription(initial: [], kind: "retention")
        subscription.attach { [weak self] in self?.watch() }
        watched.withLock { $0 = subscription }
        watch()
    }

    func stop() {
        watched.withLock { w in defer { w = nil }; return w }?.cancel()
        alarm.cancel()
    }

    /// Takes the hub's events as they come; a stored photo or a finished movie brings the next
    /// pass forward (on the alarm's queue: never inside the publisher's call).
    private func watch() {
        guard let subscription = watched.withLock({ $0 }) else { return }
        while case .item(let event) = subscription.next() {
            switch event {
            case .photo: alarm.set(after: 0.05)
            case .recording(let r) where r.event == .finished: alarm.set(after: 0.05)
            default: break
            }
        }
    }

    /// One pass: deletes what the limits ask for, oldest first; the deletions made.
    @discardableResult
    func enforce(now: Double = Clock.now()) -> [DeletionEvent] {
        turn.withLock { _ in pass(now: now) }
    }

    private func pass(now: Double) -> [DeletionEvent] {
        let (movieEntries, writing) = movies.retentionEntries()
        let movieDevice = Self.device(movies.directory), photoDevice = Self.device(photos.directory)
        var candidates = movieEntries.map { Candidate(kind: .movie, entry: $0, device: movieDevice) }
            + photos.retentionEntries().map { Candidate(kind: .photo, entry: $0, device: photoDevice) }
        candidates.sort { ($0.entry.time, $0.entry.id) < ($1.entry.time, $1.entry.id) }
        var deleted: [DeletionEvent] = []
        func remove(_ i: Int, _ reason: DeletionEvent.Reason) -> Bool {
            let c = candidates[i]
            let gone = c.kind == .movie ? movies.delete(c.entry.id) : photos.delete(c.entry.id)
            candidates.remove(at: i)
            guard gone else { return false }
            deleted.append(DeletionEvent(kind: c.kind, id: c.entry.id, camera: c.entry.camera, reason: reason, bytes: c.entry.bytes))
            return true
        }
        if let maxAge = settings.maxAge {
            var i = 0
            while i < candidates.count {
                if !candidates[i].entry.keep && candidates[i].entry.time < now - maxAge { _ = remove(i, .maxAge) } else { i += 1 }
            }
        }
        if let maxBytes = settings.maxBytes {
            var total = writing + candidates.reduce(0) { $0 + $1.entry.bytes }
            while total > maxBytes, let i = candidates.firstIndex(where: { !$0.entry.keep }) {
                total -= candidates[i].entry.bytes
                _ = remove(i, .maxBytes)
            }
        }
        if let minFree = settings.minFreeBytes {
            for (directory, device) in [(movies.directory, movieDevice), (photos.directory, photoDevice)] {
                var free = Self.freeBytes(directory)
                while let f = free, f < minFree, let i = candidates.firstIndex(where: { !$0.entry.keep && $0.device == device }) {
                    let bytes = candidates[i].entry.bytes
                    if remove(i, .minFreeBytes) { free = Self.freeBytes(directory) ?? f + bytes }
                }
            }
        }
        for d in deleted {
            logger.info("storage: deleted \(d.kind.rawValue) \(d.id) (\(d.bytes) bytes, \(d.reason.rawValue))")
            counts.withLock { c in
                let key = "kind=\"\(d.kind.rawValue)\",reason=\"\(d.reason.rawValue)\""
                c[key, default: (0, 0)].files += 1
                c[key, default: (0, 0)].bytes += d.bytes
            }
            events.publish(.deleted(d))
        }
        return deleted
    }

    /// The /metrics series.
    var metrics: String {
        counts.withLock { c in
            c.keys.sorted().map { k in
                "viewfinder_storage_deleted_total{\(k)} \(c[k]!.files)\nviewfinder_storage_deleted_bytes_total{\(k)} \(c[k]!.bytes)\n"
            }.joined()
        }
    }

    private static func device(_ path: String) -> UInt64 {
        (try? Sys.stat(path)).map { UInt64($0.st_dev) } ?? 0
    }

    /// Bytes an unprivileged writer may still use on `path`'s file system (nil: unknown, e.g. not there yet).
    static func freeBytes(_ path: String) -> Int64? {
        guard let s = try? Sys.statvfs(path) else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }
}
