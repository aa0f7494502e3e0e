import CameraCore
import Foundation
import Movie
import Testing

/// A movie cut off anywhere — SIGKILL, power loss, a full disk — is cut back to its last
/// whole fragment at start-up and listed; one with nothing whole in it is removed.
@Suite struct RepairTests {
    let format = VideoFormat(pixelFormat: .yuyv, width: 320, height: 240, fps: 30)

    /// A finished 3-second movie (fragments of a second): its bytes and frame count.
    func finishedMovie() async throws -> (bytes: [UInt8], frames: Int) {
        let store = MovieStore(directory: temporaryDirectory("movies"))
        let r = try MovieRecorder(.init(id: "1-cam", camera: "cam", format: format, orientation: .identity,
                                        options: RecordingOptions(), preset: "ultrafast", jpegQuality: 90),
                                  store: store, pool: EncodePool(threads: 1, name: "movie"), onEnd: { _ in })
        for i in 0..<90 {
            try await r.offerAndWait(yuyvFrame(width: 320, height: 240, index: i), format: format, at: 1_700_000_000 + Double(i) / 30)
        }
        r.finish(.stopped)
        let movie = try #require(await r.outcome().movie)
        return ([UInt8](try #require(FileManager.default.contents(atPath: store.path(movie.id)))), movie.frames)
    }

    /// Leaves `bytes` as an unfinished recording `id` in a fresh directory.
    func leftUnfinished(_ bytes: ArraySlice<UInt8>, id: String) -> MovieStore {
        let dir = temporaryDirectory("crashed")
        FileManager.default.createFile(atPath: "\(dir)/.\(id).mp4.part", contents: Data(bytes))
        return MovieStore(directory: dir)
    }

    @Test func aCutAnywhereKeepsEveryWholeFragment() async throws {
        let (bytes, frames) = try await finishedMovie()
        var kept: [Int] = []
        for fraction in [0.55, 0.7, 0.9, 0.999] {
            let cut = Int(Double(bytes.count) * fraction)
            let store = leftUnfinished(bytes[..<cut], id: "1700000000000000-cam")
            let recovered = store.recoverUnfinished()
            let movie = try #require(recovered.first, "cut at \(cut) of \(bytes.count)")
            #expect(movie.reason == .recovered && movie.camera == "cam" && movie.startedAt == "2023-11-14T22:13:20.000Z")
            #expect(movie.frames > 0 && movie.frames <= frames)
            #expect(movie.frames % 30 == 0, "whole one-second fragments only: \(movie.frames)")
            let p = try await Probe.of(store.path(movie.id))
            #expect(p.frames == movie.frames && abs(p.duration - Double(movie.frames) / 30) < 0.05)
            #expect(store.list().map(\.id) == ["1700000000000000-cam"])
            #expect(!FileManager.default.fileExists(atPath: "\(store.directory)/.1700000000000000-cam.mp4.part"))
            kept.append(movie.frames)
        }
        #expect(kept == kept.sorted(), "a later cut keeps at least as much: \(kept)")
        #expect(kept.last! >= frames - 30, "cut in the last fragment: at most a second is lost")
    }

    @Test func aCutInsideTheHeaderLeavesNothingToList() async throws {
        let (bytes, _) = try await finishedMovie()
        let store = leftUnfinished(bytes[..<200], id: "1700000000000000-cam")
        #expect(store.recoverUnfinished().isEmpty)
        #expect(store.list().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).isEmpty)
    }

    @Test func aFileTakenMidRecordingIsRecoverable() async throws {
        // What SIGKILL leaves: the file as it is on disk while the recorder is running.
        let dir = temporaryDirectory("movies")
        let store = MovieStore(directory: dir)
        let r = try MovieRecorder(.init(id: "1700000000000000-cam", camera: "cam", format: format, orientation: .identity,
                                        options: RecordingOptions(), preset: "ultrafast", jpegQuality: 90),
                                  store: store, pool: EncodePool(threads: 1, name: "movie"), onEnd: { _ in })
        for i in 0..<75 {
            try await r.offerAndWait(yuyvFrame(width: 320, height: 240, index: i), format: format, at: 1_700_000_000 + Double(i) / 30)
        }
        let snapshot = try #require(FileManager.default.contents(atPath: "\(dir)/.1700000000000000-cam.mp4.part"))
        r.finish(.stopped)
        _ = await r.outcome()
        let crashed = leftUnfinished([UInt8](snapshot)[...], id: "1700000000000000-cam")
        let movie = try #require(crashed.recoverUnfinished().first)
        #expect(movie.frames == 60, "2 whole fragments of the 2.5 s written: \(movie.frames)")
        #expect(try await Probe.of(crashed.path(movie.id)).frames == 60)
    }

    @Test(arguments: ["../x", "1-..", "1-.hidden", "abc", "", "1/2", "1-a/b", "123456789012345678901-cam"])
    func idsCannotNameAPathOutsideTheStore(_ id: String) {
        #expect(!MovieStore.isValid(id: id))
        let store = MovieStore(directory: temporaryDirectory("movies"))
        #expect(store.info(id) == nil && store.openFile(id) == nil && !store.delete(id))
    }
}
