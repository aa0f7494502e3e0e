// The soft limit on open files, raised to the hard one. systemd gives services a soft limit
// of 1024 (DefaultLimitNOFILE=1024:524288) so that old select() code cannot overflow its
// sets; Viewfinder polls with epoll, and 1024 descriptors would stop it well before
// `server.maxConnections` viewers. nginx (worker_rlimit_nofile) and Go's runtime do the same.

import Glibc

public enum OpenFileLimit {
    /// Raises the soft limit to the hard limit; returns the soft limit now in force.
    @discardableResult
    public static func raise() -> Int {
        let resource = Int32(RLIMIT_NOFILE.rawValue)
        guard let limit = try? Sys.getrlimit(resource, "RLIMIT_NOFILE") else { return -1 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if (try? Sys.setrlimit(resource, raised, "RLIMIT_NOFILE")) != nil { return Int(clamping: raised.rlim_cur) }
        }
        return Int(clamping: limit.rlim_cur)
    }
}
