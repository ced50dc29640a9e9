#if canImport(Glibc)
import Glibc
#endif

/// Detached POSIX threads for the control server, without Foundation (the library is loaded into
/// pcscd; it stays lean).
enum PosixThread {
    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new detached thread.
    /// - Returns: false when the thread could not be created (`pthread_create` failed); `body` does
    ///   not run then.
    @discardableResult
    static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let box = Unmanaged<Box>.fromOpaque(argument).takeRetainedValue()
            box.body()
            return nil
        }, box)
        guard result == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}

/// The driver's log: one line to standard error, which pcscd (in the foreground) leaves in its log.
enum DriverLog {
    static func write(_ message: String) {
        let line = "secbridge-acr122: " + message + "\n"
        var bytes = Array(line.utf8)
        let count = bytes.count
        bytes.withUnsafeMutableBytes { raw in
            _ = Glibc.write(2, raw.baseAddress, count)
        }
    }
}
