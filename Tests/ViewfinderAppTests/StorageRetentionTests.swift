// Retention's age limit (`storage.maxAge`) with the time as an input (issue 45): a pass takes
// `now`, so the test says what "an hour old" is instead of waiting for it. Real stores on a
// temporary directory; photos named by their capture time, as the server stores them.

import CameraCore
import Foundation
import Logging
import Movie
import Session
import Testing
@testable import ViewfinderApp

@Suite struct StorageRetentionTests {
    @Test func maxAgeDeletesWhatIsOlderOldestFirstNeverAKeptOneAndFollowsTheClock() throws {
        let root = NSTemporaryDirectory() + "vf-retention-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let photos = PhotoStore(directory: root + "/photos"), movies = MovieStore(directory: root + "/movies")
        let now = 1_800_000_000.0
        func photo(_ age: Double, _ n: UInt64) throws -> String {
            try photos.save(EncodedFrame(jpeg: [0xFF, 0xD8, 0xFF, 0xD9], width: 1, height: 1, sequence: n, timestamp: now - age)).id
        }
        let oldest = try photo(7200, 1), kept = try photo(5000, 2), old = try photo(3601, 3)
        let young = try photo(3599, 4), newest = try photo(10, 5)
        #expect(photos.setKeep(kept, true) != nil)
        let events = EventHub()
        let retention = StorageRetention(settings: .init(maxAge: 3600), movies: movies, photos: photos, events: events,
                                         logger: Logger(label: "test"))

        let first = retention.enforce(now: now)
        #expect(first.map(\.id) == [oldest, old], "older than an hour, oldest first, the kept one left: \(first.map(\.id))")
        #expect(first.allSatisfy { $0.reason == .maxAge && $0.kind == .photo })
        #expect(Set(photos.list().map(\.id)) == [kept, young, newest])
        #expect(retention.enforce(now: now).isEmpty, "a second pass at the same moment deletes nothing")
        #expect(retention.enforce(now: now + 2).map(\.id) == [young], "two seconds on, the next one is over the hour")
        #expect(retention.metrics.contains(#"viewfinder_storage_deleted_total{kind="photo",reason="maxAge"} 3"#), "\(retention.metrics)")
    }
}
