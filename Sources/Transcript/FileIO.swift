#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX file calls the transcript layer makes, in one place.
///
/// Writes go straight to the kernel with write(2) (no user-space buffer), so a line is in the
/// file as soon as ``writeAll(_:_:)`` returns: a crash of the process afterwards keeps it.
package enum FileIO {
    struct Failure: Error {
        var errorNumber: Int32
        var reason: String
    }

    static func closeDescriptor(_ fd: Int32) -> Int32 { close(fd) }

    /// Cuts an open file back to `length` bytes (and moves the write offset there).
    static func truncate(_ fd: Int32, to length: Int) -> Bool {
        ftruncate(fd, off_t(length)) == 0 && lseek(fd, off_t(length), SEEK_SET) >= 0
    }

    static func lastError() -> Int32 { errno }

    static func describe(_ e: Int32) -> String {
        guard let s = strerror(e) else { return "errno \(e)" }
        return String(cString: s) + " (errno \(e))"
    }

    /// Reads a whole file, refusing more than `limit` bytes.
    static func readFile(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        // O_NONBLOCK: a FIFO or device must not block the open; only regular files are read.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let e = errno
            throw Failure(errorNumber: e, reason: "cannot open \(path): \(describe(e))")
        }
        defer { _ = close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw Failure(errorNumber: EINVAL, reason: "\(path) is not a regular file: give the path of a transcript file")
        }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                throw Failure(errorNumber: e, reason: "cannot read \(path): \(describe(e))")
            }
            if n == 0 { return result }
            guard result.count + n <= limit else {
                throw Failure(errorNumber: EFBIG, reason: "\(path) is larger than \(limit) bytes: not a transcript this tool reads")
            }
            result.append(contentsOf: chunk[0..<n])
        }
    }

    /// Creates a new file for writing (mode 0644). With `exclusive`, an existing file is an error.
    static func create(_ path: String, exclusive: Bool) throws(Failure) -> Int32 {
        // O_NONBLOCK: opening a FIFO with no reader fails (ENXIO) instead of waiting forever.
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | (exclusive ? O_EXCL : O_TRUNC)
        let fd = open(path, flags, mode_t(0o644))
        guard fd >= 0 else {
            let e = errno
            let hint = e == EEXIST ? ": the file exists (a recording is never overwritten); choose another name" : ""
            throw Failure(errorNumber: e, reason: "cannot create \(path): \(describe(e))\(hint)")
        }
        return fd
    }

    /// Writes every byte, retrying after EINTR and short writes.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(Failure) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                throw Failure(errorNumber: e, reason: describe(e))
            }
            if n == 0 { throw Failure(errorNumber: EIO, reason: "write(2) wrote nothing") }
            done += n
        }
    }

    /// Writes `bytes` to a temporary file next to `path`, flushes it to disk, then renames it over
    /// `path`. On any failure the descriptor is closed, the temporary file is removed and `path` is
    /// untouched. The package's one atomic writer (transcripts, HTML timelines, captures).
    package static func atomicWrite(_ bytes: [UInt8], to path: String) throws(TranscriptWriteError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !base.isEmpty else {
            throw TranscriptWriteError(code: .cannotCreate, path: path, errorNumber: EISDIR,
                                       reason: "'\(path)' names a directory: give a file name")
        }
        let temporary = "\(directory.isEmpty ? "" : directory)/.\(base).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd: Int32
        do {
            fd = try create(temporary, exclusive: true)
        } catch {
            throw TranscriptWriteError(code: .cannotCreate, path: path, errorNumber: error.errorNumber,
                                       reason: "cannot write \(path): a temporary file in \(directory.isEmpty ? "/" : directory) could not be created: \(describe(error.errorNumber))")
        }
        do {
            try writeAll(fd, bytes)
        } catch {
            _ = close(fd)
            _ = unlink(temporary)
            throw TranscriptWriteError(code: .writeFailed, path: path, errorNumber: error.errorNumber,
                                       reason: "cannot write \(path): \(error.reason); nothing was written")
        }
        if fsync(fd) != 0 {
            let e = errno
            _ = close(fd)
            _ = unlink(temporary)
            throw TranscriptWriteError(code: .writeFailed, path: path, errorNumber: e,
                                       reason: "cannot flush \(path) to disk: \(describe(e)); nothing was written")
        }
        _ = close(fd)
        if rename(temporary, path) != 0 {
            let e = errno
            _ = unlink(temporary)
            let hint = e == EISDIR ? ": a directory has that name; choose another path" : ""
            throw TranscriptWriteError(code: .cannotRename, path: path, errorNumber: e,
                                       reason: "cannot replace \(path): \(describe(e))\(hint); nothing was written")
        }
    }
}

/// A file that could not be read: its path and why, in words that say what to do.
public struct FileReadError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { reason }
}

/// Reads a whole regular file (never a FIFO or device, which could block), refusing more than
/// `limit` bytes. Used for transcripts and APDU scripts.
/// - Throws: ``FileReadError`` naming the path and the cause (errno text).
public func readRegularFile(_ path: String, limit: Int) throws(FileReadError) -> [UInt8] {
    do {
        return try FileIO.readFile(path, limit: limit)
    } catch {
        throw FileReadError(path: path, reason: error.reason)
    }
}
