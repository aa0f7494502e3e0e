// Whole files and directory listings through the funnel: what Foundation's
// `FileManager.contents(atPath:)` and `contentsOfDirectory(atPath:)` answer, but a failure is
// the call and its errno (a config.json that is there but unreadable says EACCES, where
// Foundation's answer was nil and ours "cannot read the file").

#if canImport(Glibc)
import Glibc
#endif

extension Sys {
    /// The whole file at `path` — a regular file or a sysfs attribute (whose size says 4096
    /// whatever it holds: it is read to its end, not to its size).
    public static func readFile(_ path: String) throws(SystemError) -> [UInt8] {
        let fd = try open(path, O_RDONLY | O_CLOEXEC)
        defer { try? close(fd, path) }
        var bytes: [UInt8] = []
        if let size = try? fstat(fd, path).st_size, size > 0 { bytes.reserveCapacity(Int(size)) }
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let n = try read(fd, into: chunk, path)
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    /// The file's text, as UTF-8 (`readFile`).
    public static func readText(_ path: String) throws(SystemError) -> String {
        String(decoding: try readFile(path), as: UTF8.self)
    }

    /// The names in the directory `path`, without `.` and `..`, in the directory's order.
    public static func directoryEntries(_ path: String) throws(SystemError) -> [String] {
        guard let dir = try valueOrErrno("opendir \(path)", failed: { $0 == nil }, { opendir(path) }) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while true {
            Glibc.errno = 0
            guard let entry = readdir(dir) else {
                let e = Glibc.errno
                if e != 0 { throw SystemError(call: "readdir \(path)", errno: e) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// Whether `path` is a directory (false when it is not there).
    public static func isDirectory(_ path: String) -> Bool {
        guard let st = try? stat(path) else { return false }
        return st.st_mode & S_IFMT == S_IFDIR
    }
}
