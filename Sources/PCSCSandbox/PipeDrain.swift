import Foundation
import PCSCCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Reads a pipe to its end on a thread of its own, keeping every byte, so that a test can wait
/// for the end with a bound and still have what came when the bound passed.
///
/// One drain a pipe, each on its own thread: a child that fills one pipe while nobody reads it
/// blocks (a pipe holds 64 KiB on Linux), so the standard output and error of a child are read at
/// once, never one after the other. Foundation's `readabilityHandler` was measured to lose the
/// last 56 KiB of a 1 MiB output and never see its end (corelibs Foundation, Swift 6.3), so the
/// thread reads with read(2) itself.
///
/// A process the child started may hold the write end open after the child exited (a daemon that
/// inherited it): the end then never comes, ``waitForEnd(timeout:)`` returns false at its bound,
/// and the thread stays blocked in read(2) until that process closes it.
public final class PipeDrain: Sendable {
    private let handle: FileHandle
    private let shared = Shared()

    /// What the drain's thread and its waiters share.
    private final class Shared: Sendable {
        let bytes = Mutex(Data())
        let ended = DispatchSemaphore(value: 0)
        let endSeen = Atomic(false)

        func end() {
            endSeen.store(true, ordering: .sequentiallyConsistent)
            ended.signal()
        }
    }

    /// Starts reading `handle` (the read end of a pipe) until end of file; `onData` gets each
    /// chunk as it comes, on the drain's thread.
    /// - Parameters:
    ///   - handle: the read end of a pipe.
    ///   - name: the thread's name (at most 15 bytes are kept).
    ///   - onData: called with each chunk as it is read, on the drain's thread (every byte is kept either way).
    public init(_ handle: FileHandle, name: String = "pipe-drain", onData: (@Sendable (Data) -> Void)? = nil) {
        self.handle = handle
        let descriptor = handle.fileDescriptor
        let shared = shared
        let started = startThread(name: name) {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }  // end of file, or an error that ends the reading too
                let chunk = Data(buffer[0..<count])
                shared.bytes.withLock { $0 += chunk }
                onData?(chunk)
            }
            shared.end()
        }
        if !started { shared.end() }
    }

    /// Every byte read so far.
    public var data: Data { shared.bytes.withLock { $0 } }

    /// ``data`` as UTF-8 text (invalid sequences replaced).
    public var text: String { String(decoding: data, as: UTF8.self) }

    /// Waits at most `timeout` for the end of file; true once it came (later calls return at once).
    @discardableResult
    public func waitForEnd(timeout: Duration) -> Bool {
        if shared.endSeen.load(ordering: .sequentiallyConsistent) { return true }
        let (seconds, attoseconds) = timeout.components
        let deadline = DispatchTime.now() + Double(seconds) + Double(attoseconds) / 1e18
        guard shared.ended.wait(timeout: deadline) == .success else { return false }
        shared.ended.signal()  // for the next waiter
        return true
    }
}
