// The session's serial executor. AVCam runs its capture actor on a DispatchSerialQueue,
// which Linux's Dispatch lacks; this SerialExecutor over a DispatchQueue does the same job
// (as GRDB's DispatchQueueActor does).

import Dispatch

public final class DispatchQueueExecutor: SerialExecutor {
    public let queue: DispatchQueue

    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
