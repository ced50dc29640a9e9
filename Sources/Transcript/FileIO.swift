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

    /// Linux's fallocate(2), which Glibc's module map does not export (it is a _GNU_SOURCE
    /// declaration): looked up in the C library once.
    private typealias FallocateFunction = @convention(c) (Int32, Int32, off_t, off_t) -> Int32
    private static let fallocateFunction: FallocateFunction? = {
        #if os(Linux)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate") else { return nil }  // RTLD_DEFAULT
        return unsafeBitCast(symbol, to: FallocateFunction.self)
        #else
        return nil
        #endif
    }()

    /// Allocates `count` bytes of the file from `offset` without changing its length (fallocate(2)
    /// with FALLOC_FL_KEEP_SIZE, linux/falloc.h): later writes there need no new room from the
    /// disk. Returns 0, or the errno (ENOSPC when the disk has no room; EOPNOTSUPP where the file
    /// system cannot).
    static func reserve(_ fd: Int32, from offset: Int, count: Int) -> Int32 {
        guard let fallocate = fallocateFunction else { return EOPNOTSUPP }
        while true {
            if fallocate(fd, 0x01 /* FALLOC_FL_KEEP_SIZE */, off_t(offset), off_t(count)) == 0 { return 0 }
            if errno != EINTR { return errno }
        }
    }

    /// Gives back what ``reserve(_:from:count:)`` allocated past the file's end, `offset` being
    /// the file's length: ftruncate(2) to that length frees the blocks past it (ext4, tmpfs).
    static func unreserve(_ fd: Int32, from offset: Int, count: Int) {
        _ = ftruncate(fd, off_t(offset))
    }

    /// Whether `e` says the disk (or the user's quota, or the file-size limit) has no more room.
    static func meansNoSpace(_ e: Int32) -> Bool { e == ENOSPC || e == EDQUOT || e == EFBIG }

    /// A descriptor of `/dev/full` (every write fails with ENOSPC), for staged full disks; -1 if absent.
    static func openFullDevice() -> Int32 { open("/dev/full", O_WRONLY | O_CLOEXEC) }

    /// `strerror(e) (errno e)`, e.g. `No space left on device (errno 28)`.
    package static func describeError(_ e: Int32) -> String { describe(e) }

    static func describe(_ e: Int32) -> String {
        guard let s = strerror(e) else { return "errno \(e)" }
        return String(cString: s) + " (errno \(e))"
    }

    /// Reads a whole file, refusing more than `limit` bytes.
    static func readFile(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        let fd = try openRegular(path)
        defer { _ = close(fd) }
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

    /// A regular file read one LF-terminated line at a time through one buffer (1 MiB, doubled
    /// for a longer line up to `maximumLineLength`): memory does not grow with the file. Lines are
    /// handed out in place, as views of the buffer.
    final class LineInput {
        let path: String
        private let fd: Int32
        private let maximumLineLength: Int
        /// What the file should be, for the error about an overlong line ("transcript").
        private let kind: String
        private var buffer: UnsafeMutablePointer<UInt8>
        private var capacity: Int
        private var start = 0
        private var end = 0
        private var atEnd = false

        init(path: String, maximumLineLength: Int, kind: String = "transcript") throws(Failure) {
            self.path = path
            self.maximumLineLength = maximumLineLength
            self.kind = kind
            fd = try openRegular(path)
            capacity = min(1 << 20, maximumLineLength + 1)
            buffer = .allocate(capacity: capacity)
        }

        deinit {
            _ = close(fd)
            buffer.deallocate()
        }

        /// The bytes after the last LF once ``nextLine()`` returned nil (empty for a complete file).
        var unterminated: ArraySlice<UInt8> { ArraySlice(UnsafeBufferPointer(start: buffer + start, count: end - start)) }

        /// The next line without its LF, or nil at the end of the file. The bytes are the reader's
        /// own: valid until the next call, and never to be kept.
        /// - Throws: `Failure` when read(2) fails, or EFBIG for a line over the maximum length.
        func nextLine() throws(Failure) -> UnsafeBufferPointer<UInt8>? {
            while true {
                if end > start, let hit = memchr(buffer + start, 0x0A, end - start) {
                    let lf = buffer.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    defer { start = lf + 1 }
                    return UnsafeBufferPointer(start: buffer + start, count: lf - start)
                }
                if atEnd { return nil }
                if start > 0 {
                    _ = memmove(buffer, buffer + start, end - start)
                    end -= start
                    start = 0
                }
                if end == capacity {
                    guard capacity <= maximumLineLength else {  // a full buffer holds maximum + 1 bytes
                        throw Failure(errorNumber: EFBIG, reason: "\(path): a line longer than \(maximumLineLength) bytes: no \(kind) line is that long; check that this is a \(kind)")
                    }
                    let grown = min(2 * capacity, maximumLineLength + 1)
                    let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
                    larger.update(from: buffer, count: end)
                    buffer.deallocate()
                    buffer = larger
                    capacity = grown
                }
                let n = read(fd, buffer + end, capacity - end)
                if n < 0 {
                    let e = errno
                    if e == EINTR { continue }
                    throw Failure(errorNumber: e, reason: "cannot read \(path): \(describe(e))")
                }
                if n == 0 { atEnd = true } else { end += n }
            }
        }
    }

    /// Opens a regular file for reading (never a FIFO or device, whose open or read could block).
    static func openRegular(_ path: String) throws(Failure) -> Int32 {
        // O_NONBLOCK: a FIFO or device must not block the open; only regular files are read.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let e = errno
            throw Failure(errorNumber: e, reason: "cannot open \(path): \(describe(e))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            _ = close(fd)
            let kind = (info.st_mode & S_IFMT) == S_IFIFO ? "a FIFO (named pipe), not a regular file" : "not a regular file"
            throw Failure(errorNumber: EINVAL, reason: "\(path) is \(kind): give the path of a transcript file")
        }
        return fd
    }

    /// Creates a new file for writing, mode `mode` (0644 by default; 0600 for a file that holds
    /// keys or PINs by design, set by open(2) itself so that the file is never readable by others,
    /// even for a moment). With `exclusive`, an existing file is an error.
    static func create(_ path: String, exclusive: Bool, mode: mode_t = 0o644) throws(Failure) -> Int32 {
        // O_NONBLOCK: opening a FIFO with no reader fails (ENXIO) instead of waiting forever.
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | (exclusive ? O_EXCL : O_TRUNC)
        guard !path.isEmpty else {
            throw Failure(errorNumber: ENOENT, reason: "cannot create a file with an empty name: give the path of a new file")
        }
        let fd = open(path, flags, mode)
        guard fd >= 0 else {
            let e = errno
            var hint = ""
            if e == EEXIST {
                // O_EXCL refuses whatever has the name; say what it is (a directory is no recording).
                var info = stat()
                let type = stat(path, &info) == 0 ? info.st_mode & S_IFMT : S_IFREG
                hint = type == S_IFDIR ? ": a directory has that name; give the path of a new file (e.g. \(path)/session.trn)"
                    : type == S_IFREG ? ": the file exists (a recording is never overwritten); choose another name"
                    : ": something that is not a regular file (a FIFO, a device or a socket) has that name; choose another name"
            } else if e == EISDIR {
                hint = ": a directory has that name; give the path of a new file"
            }
            throw Failure(errorNumber: e, reason: "cannot create \(path): \(describe(e))\(hint)")
        }
        return fd
    }

    /// Writes every byte, retrying after EINTR and short writes.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(Failure) {
        try bytes.withUnsafeBufferPointer { (buffer) throws(Failure) in try writeAll(fd, buffer) }
    }

    /// ``writeAll(_:_:)`` of the bytes in `bytes`.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) {
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
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
        let file = try AtomicFile(replacing: path)
        try file.write(bytes)
        try file.commit()
    }

    /// A file that replaces `path` only when complete: written to a temporary file in the same
    /// directory (through a 256 KiB buffer), flushed to disk (fsync), then renamed over `path`.
    /// Dropped without ``commit()``, or after a failure, the temporary file is removed and `path`
    /// is untouched.
    package final class AtomicFile {
        let path: String
        private let temporary: String
        private var fd: Int32
        private var buffer: [UInt8] = []
        private static let bufferSize = 256 * 1024

        /// A file of mode 0644 that replaces `path` on ``commit()``.
        package convenience init(replacing path: String) throws(TranscriptWriteError) {
            try self.init(replacing: path, mode: 0o644)
        }

        /// - Parameters:
        ///   - path: the file replaced on ``commit()``.
        ///   - mode: the new file's mode (0600 for keys or PINs), given to open(2).
        package init(replacing path: String, mode: mode_t) throws(TranscriptWriteError) {
            let slash = path.lastIndex(of: "/")
            let directory = slash.map { String(path[..<$0]) } ?? "."
            let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
            guard !base.isEmpty else {
                throw TranscriptWriteError(code: .cannotCreate, path: path, errorNumber: EISDIR,
                                           reason: "'\(path)' names a directory: give a file name")
            }
            self.path = path
            temporary = "\(directory.isEmpty ? "" : directory)/.\(base).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            do {
                fd = try create(temporary, exclusive: true, mode: mode)
            } catch {
                throw TranscriptWriteError(code: .cannotCreate, path: path, errorNumber: error.errorNumber,
                                           reason: "cannot write \(path): a temporary file in \(directory.isEmpty ? "/" : directory) could not be created: \(describe(error.errorNumber))")
            }
            buffer.reserveCapacity(Self.bufferSize)
        }

        deinit { abandon() }

        private func abandon() {
            guard fd >= 0 else { return }
            _ = close(fd)
            fd = -1
            _ = unlink(temporary)
        }

        /// Appends bytes (kept in the buffer until it fills).
        package func write(_ bytes: [UInt8]) throws(TranscriptWriteError) {
            buffer += bytes
            if buffer.count >= Self.bufferSize { try flush() }
        }

        private func flush() throws(TranscriptWriteError) {
            guard fd >= 0 else {
                throw TranscriptWriteError(code: .closed, path: path, reason: "\(path) was already written or abandoned")
            }
            do {
                try writeAll(fd, buffer)
            } catch {
                abandon()
                throw TranscriptWriteError(code: .writeFailed, path: path, errorNumber: error.errorNumber,
                                           reason: "cannot write \(path): \(error.reason); nothing was written")
            }
            buffer.removeAll(keepingCapacity: true)
        }

        /// Writes what is buffered, flushes the file to disk and renames it over `path`.
        package func commit() throws(TranscriptWriteError) {
            try flush()
            if fsync(fd) != 0 {
                let e = errno
                abandon()
                throw TranscriptWriteError(code: .writeFailed, path: path, errorNumber: e,
                                           reason: "cannot flush \(path) to disk: \(describe(e)); nothing was written")
            }
            _ = close(fd)
            fd = -1
            if rename(temporary, path) != 0 {
                let e = errno
                _ = unlink(temporary)
                let hint = e == EISDIR ? ": a directory has that name; choose another path" : ""
                throw TranscriptWriteError(code: .cannotRename, path: path, errorNumber: e,
                                           reason: "cannot replace \(path): \(describe(e))\(hint); nothing was written")
            }
        }
    }
}

/// A file that could not be read: its path and why, in words that say what to do.
public struct FileReadError: Error, Sendable, CustomStringConvertible {
    /// The path as given.
    public var path: String
    /// Why the file could not be read (it does not exist, is not a regular file, is larger than the
    /// limit, is not UTF-8), and what to do.
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
