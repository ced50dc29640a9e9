// The temporary directories of `secbridge capture` that a SIGKILL left behind (docs/secrets.md §3).
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A capture's temporary directory holds the raw, unredacted spy log. capture removes it on every
/// way out it has; SIGKILL leaves it, so each directory names its owner's process (file `owner`,
/// the decimal pid) and the next capture removes those of this user whose owner is gone.
enum CaptureLeftovers {
    /// The directory pattern for mkdtemp(3), and the prefix the sweep looks for.
    static let template = "/tmp/secbridge-capture-XXXXXX"
    static let prefix = "secbridge-capture-"

    /// Writes this process's pid into `directory/owner` (mode 0600).
    static func markOwner(of directory: String) {
        let fd = open(directory + "/owner", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let text = Array("\(getpid())\n".utf8)
        _ = text.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
    }

    /// Removes the capture directories in /tmp that belong to this user and whose `owner` names a
    /// process that no longer exists (kill(2) with signal 0 answers ESRCH). A directory without an
    /// `owner` file, another user's, or one whose owner runs, is left alone.
    static func sweep(in parent: String = "/tmp") {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return }
        for name in names where name.hasPrefix(prefix) && name.count == prefix.count + 6 {
            let path = parent + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else { continue }
            guard let text = try? String(contentsOfFile: path + "/owner", encoding: .utf8),
                  let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0
            else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
    }
}
