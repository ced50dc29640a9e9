import Foundation
import PCSCCore
import PCSCSandbox
import SecbridgeTesting
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// SimulatedReaderControl's connect is bounded by the request's timeout: a control socket whose
/// server stopped accepting, its backlog full, fails the request with `timeout` instead of
/// blocking the caller for good.
@Suite struct ControlClientBoundTests {
    @Test func aServerThatAcceptsNoMoreFailsTheRequestWithinItsTimeout() async throws {
        let path = "/tmp/ctl-bound.\(getpid()).\(UUID().uuidString.prefix(8)).sock"
        let listener = try Self.listen(at: path)  // backlog 0, never accepted from
        let listenerOpen = Atomic(true)
        let closeListener: @Sendable () -> Void = {
            if listenerOpen.exchange(false, ordering: .sequentiallyConsistent) { close(listener) }
        }
        defer { closeListener(); unlink(path) }
        let first = try Self.connect(to: path)  // fills the backlog
        defer { close(first) }
        // Should the connect not be bounded, closing the listener after 10 s ends it (refused),
        // and the checks below fail instead of the test waiting for good.
        let rescue = Task {
            try await Task.sleep(for: .seconds(10))
            closeListener()
        }
        defer { rescue.cancel() }
        let control = SimulatedReaderControl(socketPath: path)
        let failure = try await onOwnThread { () -> SimulatedReaderError? in
            do {
                _ = try control.exchange("ping", timeout: .milliseconds(200))
                return nil
            } catch let error as SimulatedReaderError {
                return error
            } catch {
                return SimulatedReaderError(code: "other", reason: "\(error)")
            }
        }
        let error = try #require(failure, "the request got a reply from a server that accepts nothing")
        #expect(error.code == "timeout", "\(error)")
        #expect(error.reason == "\(path) accepted no connection within 0.2 seconds (its server takes no more) for 'ping'")
    }

    static func listen(at path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, bound == 0, Glibc.listen(descriptor, 0) == 0 else {
            throw SimulatedReaderError(code: "setup", reason: "cannot listen at \(path): errno \(errno)")
        }
        return descriptor
    }

    static func connect(to path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, connected == 0 else { throw SimulatedReaderError(code: "setup", reason: "cannot connect to \(path): errno \(errno)") }
        return descriptor
    }

    static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        return address
    }
}
