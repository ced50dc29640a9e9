import PCSCCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The control endpoint of one simulated reader: a Unix-domain stream socket serving
/// ``ControlRequest`` lines, one ``ControlReply`` or ``ControlError`` line per request.
///
/// One thread accepts; each connection gets a thread of its own (at most ``maximumConnections``;
/// one more is answered `error busy …` and closed). Every wait is bounded: `accept` and `read` poll
/// the socket together with a wake pipe that ``stop()`` writes to, so they sleep until there is
/// something to do (the accept thread with no timeout, a connection until its idle bound) and
/// stopping takes no poll step; only when the pipe could not be made do they wake every
/// ``pollStep`` to look at the stop flag. A connection idle for ``idleTimeout`` is closed, and a reply that cannot be written within ``writeTimeout`` drops the
/// connection. Writes use MSG_NOSIGNAL: a client that went away never raises SIGPIPE in pcscd.
/// A malformed or over-long line gets an error line, never a crash.
final class ControlServer: Sendable {
    typealias Handler = @Sendable (ControlRequest) throws(ControlError) -> ControlReply

    static let maximumConnections = 8
    static let pollStep: Int32 = 200  // milliseconds; only without a wake pipe
    static let idleTimeout: Duration = .seconds(300)
    static let writeTimeout: Duration = .seconds(5)

    let socketPath: String
    private let handler: Handler
    private let stopping = Atomic<Bool>(false)
    private let acceptLoopEnded = Atomic<Bool>(false)
    private let ended = ConditionLock()
    private let connections = Atomic<Int>(0)
    /// The wake pipe: ``stop()`` writes one byte that is never read, so every `poll` on the read end
    /// returns at once from then on. -1 when the pipe could not be made (then `pollStep` bounds it).
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// How often a poll(2) of the accept loop returned (tests read it: one per connection or stop).
    private let acceptWakes = Atomic<Int>(0)
    var acceptWakeCount: Int { acceptWakes.load(ordering: .sequentiallyConsistent) }

    init(socketPath: String, handler: @escaping Handler) {
        self.socketPath = socketPath
        self.handler = handler
        var ends: [Int32] = [-1, -1]
        // pipe2 needs _GNU_SOURCE, which Glibc's Swift module does not define: pipe, then fcntl.
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            }
            (wakeRead, wakeWrite) = (ends[0], ends[1])
        } else {
            (wakeRead, wakeWrite) = (-1, -1)
        }
    }

    deinit {
        if wakeRead >= 0 { close(wakeRead) }
        if wakeWrite >= 0 { close(wakeWrite) }
    }

    /// Polls `descriptor` and the wake pipe for input, at most `bound` (nil: until one is ready);
    /// without a wake pipe at most ``pollStep``, so that the stop flag is seen.
    /// - Returns: poll's result for `descriptor`: > 0 readable, 0 nothing (or stopping), < 0 error.
    private func pollReadable(_ descriptor: Int32, bound: Duration?) -> Int32 {
        var pollers = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        var timeout: Int32 = -1
        if let bound {
            let (seconds, attoseconds) = max(bound, .zero).components
            timeout = Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
        }
        if wakeRead < 0 { timeout = timeout < 0 ? Self.pollStep : min(timeout, Self.pollStep) }
        let ready = poll(&pollers, wakeRead >= 0 ? 2 : 1, timeout)
        guard ready > 0 else { return ready }
        return pollers[0].revents != 0 ? 1 : 0
    }

    /// Creates the directory (mode 0700) if needed, binds the socket (replacing a stale one) and
    /// starts the accept thread.
    /// - Throws: ``ControlServerError`` naming the failing call and errno.
    func start(directory: String) throws(ControlServerError) {
        try Self.makeDirectories(directory)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else {
            throw ControlServerError("bind", ENAMETOOLONG, socketPath)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in pathBytes.enumerated() { raw[index] = byte }
            raw[pathBytes.count] = 0
        }
        // A socket someone still serves (another pcscd given the same DEVICENAME) is not taken
        // over; one left by a pcscd that exited is replaced.
        if Self.isServed(address) { throw ControlServerError("bind", EADDRINUSE, socketPath) }
        unlink(socketPath)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ControlServerError("socket", errno, socketPath) }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            throw ControlServerError("bind", code, socketPath)
        }
        chmod(socketPath, 0o600)
        guard listen(descriptor, 8) == 0 else {
            let code = errno
            close(descriptor)
            unlink(socketPath)
            throw ControlServerError("listen", code, socketPath)
        }
        let started = startThread(name: "acr122-accept") { [self] in acceptLoop(listening: descriptor) }
        guard started else {
            close(descriptor)
            unlink(socketPath)
            throw ControlServerError("pthread_create", errno, socketPath)
        }
    }

    /// Stops accepting: wakes the accept and connection threads (the wake pipe) and waits (at most
    /// 1 s) until the accept thread has closed the socket and removed its file, so the path can be
    /// served again at once. Connection threads close their connections as they wake.
    func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        if wakeWrite >= 0 {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        let deadline = ContinuousClock.now + .seconds(1)
        ended.lock()
        while !acceptLoopEnded.load(ordering: .sequentiallyConsistent) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            _ = ended.wait(timeout: left)
        }
        ended.unlock()
    }

    private var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) }

    private func acceptLoop(listening: Int32) {
        defer {
            close(listening)
            unlink(socketPath)
            ended.lock()
            acceptLoopEnded.store(true, ordering: .sequentiallyConsistent)
            ended.broadcast()
            ended.unlock()
        }
        while !isStopping {
            let ready = pollReadable(listening, bound: nil)
            acceptWakes.add(1, ordering: .sequentiallyConsistent)
            if ready < 0 && errno != EINTR { DriverLog.write("control socket \(socketPath): poll failed (errno \(errno))"); return }
            guard ready > 0 else { continue }
            let client = accept(listening, nil, nil)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            if connections.add(1, ordering: .sequentiallyConsistent).newValue > Self.maximumConnections {
                connections.subtract(1, ordering: .sequentiallyConsistent)
                _ = Self.writeLine(client, ControlError(.busy, "more than \(Self.maximumConnections) control connections at once").serialized)
                close(client)
                continue
            }
            let started = startThread(name: "acr122-control") { [self] in
                serve(client)
                close(client)
                connections.subtract(1, ordering: .sequentiallyConsistent)
            }
            if !started {
                connections.subtract(1, ordering: .sequentiallyConsistent)
                close(client)
            }
        }
    }

    /// Reads lines until the client closes, the server stops, or the connection is idle too long.
    private func serve(_ client: Int32) {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        let clock = ContinuousClock()
        var idleSince = clock.now
        while !isStopping {
            while let newline = pending.firstIndex(of: 0x0A) {
                let reply: String
                if newline > ControlRequest.maximumLength {
                    reply = ControlError(.tooLong, "a request line holds at most \(ControlRequest.maximumLength) bytes").serialized
                } else {
                    reply = respond(to: String(decoding: pending[..<newline], as: UTF8.self))
                }
                pending.removeSubrange(...newline)
                guard Self.writeLine(client, reply) else { return }
                idleSince = clock.now
            }
            if pending.count > ControlRequest.maximumLength {
                _ = Self.writeLine(client, ControlError(.tooLong, "a request line holds at most \(ControlRequest.maximumLength) bytes").serialized)
                return
            }
            let idle = clock.now - idleSince
            if idle > Self.idleTimeout { return }
            let ready = pollReadable(client, bound: Self.idleTimeout - idle)
            if ready < 0 && errno != EINTR { return }
            guard ready > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            pending.append(contentsOf: chunk[0..<count])
        }
    }

    /// The reply line for one request line; never throws, never traps.
    func respond(to line: String) -> String {
        do throws(ControlError) {
            let request = try ControlRequest(parsing: line)
            return try handler(request).serialized
        } catch {
            return error.serialized
        }
    }

    /// Writes `line` + `\n`, waiting at most ``writeTimeout`` in total.
    /// - Returns: false when the peer is gone or too slow.
    static func writeLine(_ descriptor: Int32, _ line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        let clock = ContinuousClock()
        let deadline = clock.now + writeTimeout
        while offset < bytes.count {
            guard clock.now < deadline else { return false }
            var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&poller, 1, pollStep)
            if ready < 0 && errno != EINTR { return false }
            guard ready > 0 else { continue }
            let written = bytes[offset...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Whether a process accepts connections on `address` now.
    private static func isServed(_ address: sockaddr_un) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        var address = address
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }

    /// `mkdir -p` with mode 0700 for the created components.
    private static func makeDirectories(_ path: String) throws(ControlServerError) {
        var prefix = ""
        for component in path.split(separator: "/") {
            // String + String: appending the Substring itself is the generic
            // append(contentsOf:), whose first call makes the runtime look up Substring's
            // associated types by scanning every conformance record (about 0.25 M instructions).
            prefix += "/" + String(component)
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw ControlServerError("mkdir", errno, prefix)
            }
        }
    }
}

/// The control socket could not be set up.
struct ControlServerError: Error, Sendable, CustomStringConvertible {
    var call: String
    var errorNumber: Int32
    var path: String

    init(_ call: String, _ errorNumber: Int32, _ path: String) {
        self.call = call
        self.errorNumber = errorNumber
        self.path = path
    }

    var description: String {
        let text = strerror(errorNumber).map { String(cString: $0) } ?? "errno \(errorNumber)"
        let hint = errorNumber == EADDRINUSE ? " (another process serves it: is a second pcscd using the same DEVICENAME?)" : ""
        return "\(call) \(path): \(text)\(hint)"
    }
}
