import CaptureTestSupport
import Foundation
import JSON
import SystemSupport
import Testing
import ViewfinderApp

/// The saved state's file and its writer (issue 57): whole or none, the last good copy, what
/// cannot be used set aside, at most one write an interval with the last change in it.
@Suite struct StateFileTests {
    let dir = NSTemporaryDirectory() + "vf-state-\(UUID().uuidString)"
    var file: StateFile { StateFile(path: dir + "/state.json") }

    init() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    func state(_ n: Int) -> JSONValue { .object(["cameras": .object(["rear": .object(["zoom": .number(Double(n))])])]) }
    func names() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted() }
    func put(_ text: String, _ name: String = "state.json") throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: dir + "/" + name))
    }

    @Test func whatIsSavedIsReadBackAndTheCopyBeforeItKept() throws {
        #expect(file.load() == StateFile.Loaded(state: nil, source: .none))
        try file.save(state(1))
        try file.save(state(2))
        #expect(file.load() == StateFile.Loaded(state: state(2), source: .current))
        #expect(names() == ["state.json", "state.prev.json"], "no temporary file left")
        let st = try Sys.stat(file.path)
        #expect(st.st_mode & 0o777 == 0o600)
        // The previous copy is a second name of the file it was (a hard link), so state.json is
        // there at every moment; the two are two files, not one.
        #expect(try Sys.stat(file.previousPath).st_nlink == 1 && (try Sys.stat(file.path)).st_ino != (try Sys.stat(file.previousPath)).st_ino)
        // Where state.json is gone all the same (a file system without hard links, a crash
        // between its two renames), the previous write is what is read.
        try Sys.unlink(file.path)
        #expect(file.load() == StateFile.Loaded(state: state(1), source: .previous))
    }

    @Test(arguments: [
        ("", "empty"),
        (#"{"version": 1, "state": {"cameras": {"rear": {"zo"#, "not a JSON object"),
        (#"{"version": 2, "state": {}}"#, "version 2, this build reads 1"),
        (#"{"state": {}}"#, "no version"),
        (#"[1, 2]"#, "not a JSON object"),
        (#"{"version": 1, "state": 3}"#, "no state object"),
    ])
    func aFileThatCannotBeUsedIsSetAsideAndTheLastGoodCopyUsed(text: String, why: String) throws {
        try file.save(state(1))
        try file.save(state(2))
        try put(text)
        let loaded = file.load(now: 1_800_000_000)
        #expect(loaded.state == state(1) && loaded.source == .previous)
        #expect(loaded.problems.count == 1 && loaded.problems[0].contains(why), "\(loaded.problems)")
        #expect(loaded.problems[0].contains("set aside as \(file.path).unusable-1800000000"))
        #expect(names() == ["state.json.unusable-1800000000", "state.prev.json"], "set aside, not deleted")
        let aside = try Sys.readFile(file.path + ".unusable-1800000000")
        #expect(aside == Array(text.utf8), "kept as it was")
        // Written again, the good copy stays the previous one.
        try file.save(state(3))
        #expect(file.load().state == state(3))
        #expect(file.load().source == .current)
    }

    /// A write killed mid-way leaves its temporary files: removed at the next start, those of a
    /// process still running (a server writing while `viewfinder state show` reads) kept.
    @Test func aKilledWritersTemporaryFilesAreRemovedAndALiveOnesKept() throws {
        try file.save(state(1))
        let dead = try deadPID()
        try put("{\"vers", "state.json.tmp-\(dead)")
        try put("x", "state.prev.json.tmp-\(dead)")
        try put("y", "state.json.tmp-\(getpid())")
        #expect(file.removeLeftovers() == 2)
        #expect(names() == ["state.json", "state.json.tmp-\(getpid())"], "\(names())")
        #expect(file.load() == StateFile.Loaded(state: state(1), source: .current))
    }

    /// A process id nobody has now: a child's, once it was waited for.
    func deadPID() throws -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/true")
        try p.run()
        p.waitUntilExit()
        return p.processIdentifier
    }

    @Test func bothUnusableIsTheConfigurationsValuesAndTwoProblems() throws {
        try put("{", "state.json")
        try put(#"{"version": 9, "state": {}}"#, "state.prev.json")
        let loaded = file.load(now: 7)
        #expect(loaded.state == nil && loaded.source == .none && loaded.problems.count == 2)
        #expect(names() == ["state.json.unusable-7", "state.prev.json.unusable-7"])
    }

    @Test func removeIsAFactoryResetOfWhatWasSaved() throws {
        try file.save(state(1))
        try file.save(state(2))
        try file.remove()
        #expect(names().isEmpty && file.load().source == .none)
        try file.remove()  // nothing to remove is no error
    }

    /// The writer, on a clock the test moves: a change with nothing written in the last
    /// second is written at once; those that come within the second go together at its end,
    /// the last of them in it.
    @Test func changesAreCoalescedToOneWriteAnIntervalTheLastOneWritten() async throws {
        let clock = ManualTimekeeper()
        let value = Locked(0)
        let (outcomes, sink) = AsyncStream.makeStream(of: StateWriter.Status.self)
        let writer = StateWriter(file: file, clock: clock, snapshot: { [self] in state(value.withLock { $0 }) },
                                 written: { sink.yield($0) })
        var heard = outcomes.makeAsyncIterator()
        value.withLock { $0 = 1 }
        writer.changed()
        #expect(await heard.next()?.writes == 1)
        #expect(file.load().state == state(1))
        // A slider: 50 changes within the second after that write.
        for n in 2...51 {
            value.withLock { $0 = n }
            writer.changed()
        }
        #expect(writer.status.saved == false)
        #expect(await clock.waitForSleepers(1))
        #expect(clock.requested == [1], "one write due, at the interval's end")
        #expect(file.load().state == state(1), "nothing written before it")
        clock.advance(by: 1)
        let second = await heard.next()
        #expect(second?.writes == 2 && second?.saved == true)
        #expect(file.load().state == state(51), "the last change written")
        #expect(clock.requested == [1])
        writer.close()
    }

    @Test func aFailedWriteKeepsTheChangeSaysWhyAndIsTriedAgain() async throws {
        let clock = ManualTimekeeper()
        // A file stands where the state's directory should be (a missing directory is made):
        // the write fails, whoever runs the test, and works once the directory is there.
        let away = StateFile(path: dir + "/data/state.json")
        try put("not a directory", "data")
        let (outcomes, sink) = AsyncStream.makeStream(of: StateWriter.Status.self)
        let writer = StateWriter(file: away, clock: clock, retry: 10, snapshot: { [self] in state(5) }, written: { sink.yield($0) })
        var heard = outcomes.makeAsyncIterator()
        writer.changed()
        let failed = await heard.next()
        #expect(failed?.saved == false && failed?.writes == 0 && writer.status.saved == false)
        #expect(failed?.error?.contains("open \(dir)/data/state.json.tmp-") == true, "\(failed?.error ?? "")")
        #expect(await clock.waitForSleepers(1))
        #expect(clock.requested == [10], "tried again 10 s on")
        try FileManager.default.removeItem(atPath: dir + "/data")
        try FileManager.default.createDirectory(atPath: dir + "/data", withIntermediateDirectories: true)
        clock.advance(by: 10)
        let again = await heard.next()
        #expect(again?.saved == true && again?.writes == 1 && again?.error == nil)
        #expect(away.load().state == state(5))
        writer.close()
    }

    @Test func closeWritesWhatIsDueAtOnceAndNothingAfter() async throws {
        let clock = ManualTimekeeper()
        let (outcomes, sink) = AsyncStream.makeStream(of: StateWriter.Status.self)
        let value = Locked(1)
        let writer = StateWriter(file: file, clock: clock, snapshot: { [self] in state(value.withLock { $0 }) }, written: { sink.yield($0) })
        var heard = outcomes.makeAsyncIterator()
        writer.changed()
        _ = await heard.next()
        value.withLock { $0 = 2 }
        writer.changed()  // due in a second
        #expect(await clock.waitForSleepers(1))
        writer.close()
        #expect(await heard.next()?.writes == 2)
        #expect(file.load().state == state(2))
        value.withLock { $0 = 3 }
        writer.changed()
        #expect(writer.status == StateWriter.Status(saved: true, error: nil, writes: 2), "closed: a change is not taken")
        clock.advance(by: 1)  // the task that was due wakes and finds the writer closed
    }
}
