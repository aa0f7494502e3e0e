import CMalloc
import SystemSupport

/// Gives malloc's free pages back to the system every two seconds.
///
/// malloc keeps what is freed (CMalloc.c turns its eager trimming off: the frame path would fault
/// its buffers in again every frame), so without this RSS would hold whatever the largest recent
/// work left behind: a 720p H.264 movie's encoder, a 1280x720 prepare, twenty viewers. With one
/// arena, malloc_trim(0) returns every free page, and RSS follows what is in use within two
/// seconds; the frame path faults its buffers in once per trim (a few MiB at 720p: about a
/// millisecond of CPU every two seconds).
enum MemoryTrimmer {
    static let period: Duration = .seconds(2)

    static func start() -> Task<Void, Never> {
        Task.detached(priority: .background) {
            while !Task.isCancelled {
                try? await Alarm.sleep(for: period)
                malloc_trim(0)
            }
        }
    }
}
