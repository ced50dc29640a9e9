// The benchmark's pcscd: a private pcscd (PCSCSandbox's PrivatePCSCD, its own mount namespace)
// serving only the two simulated ACR122U readers (Sources/SimulatedACR122IFD), as `secbridge
// simulate` runs them, and a vpcd reader only when the serve part runs (ServeThroughVpcd.swift):
// vicc's start is the slowest and least reliable step on a loaded machine.

import Foundation
import PCSCSandbox

/// The running private pcscd and the names of reader A and reader B.
struct SimulatedPCSCD {
    let pcscd: PrivatePCSCD
    let readerA: String
    let readerB: String
    /// The vpcd reader, when asked for.
    let vpcd: VpcdReader?

    /// This process's environment with `PCSCLITE_CSOCK_NAME` naming the private socket.
    var environment: [String: String] { pcscd.environment }

    /// pcscd's own pid (from its pcscd.pid file; the child PrivatePCSCD started is `unshare`,
    /// which execs into pcscd).
    var daemonPID: Int32? { PrivatePCSCD.daemonPID(socketPath: pcscd.socketPath) ?? pcscd.processIdentifier }

    /// Starts pcscd with readers A and B (on ``SimulatedReaders/testTimeScale``, as the tests run
    /// them), exports `PCSCLITE_CSOCK_NAME` in this process, and names the readers in the order
    /// the driver opened them (its `open-order` ping field, as PCSCSandbox's `simulatedReaderA`).
    /// - Throws: ``HarnessError`` from PrivatePCSCD, or when pcscd lists fewer than two readers.
    /// With `vpcd`, a vpcd reader on a free port pair joins them.
    static func start(vpcd: Bool = false) throws -> SimulatedPCSCD {
        PrivatePCSCD.reapLeftovers()
        let vpcdReader = vpcd ? VpcdReader(port: try FreePort.pick()) : nil
        let pcscd = try PrivatePCSCD(readers: SimulatedReaders.readerConfEntries(timeScale: SimulatedReaders.testTimeScale)
                                     + (vpcdReader.map { [ReaderConfEntry.vpcd(port: $0.port)] } ?? []))
        let names = try pcscd.start().filter { $0.hasPrefix(SimulatedReaders.friendlyName + " ") }.sorted()
        guard names.count == 2 else {
            pcscd.stop()
            throw HarnessError(code: .launchFailed, reason: "pcscd lists \(names) instead of two simulated ACR122U readers",
                               logTail: pcscd.logTail())
        }
        setenv(PrivatePCSCD.socketVariable, pcscd.socketPath, 1)
        let orderA = (try? SimulatedReaders.controlA.send("ping", timeout: .seconds(2)))?["open-order"].flatMap { Int($0) }
        let orderB = (try? SimulatedReaders.controlB.send("ping", timeout: .seconds(2)))?["open-order"].flatMap { Int($0) }
        if let orderA, let orderB, orderB < orderA {
            return SimulatedPCSCD(pcscd: pcscd, readerA: names[1], readerB: names[0], vpcd: vpcdReader)
        }
        return SimulatedPCSCD(pcscd: pcscd, readerA: names[0], readerB: names[1], vpcd: vpcdReader)
    }
}
