import Foundation
import PCSCSandbox
import Testing

/// The ATR of vicc's `iso7816` card (vsmartcard-vpicc 3.3, `Iso7816OS.makeATR(T=1,
/// directConvention=True, TA1=0x13, histChars=80 7x …)`), measured through pcscd 1.9.9:
///
///     3B           TS   direct convention
///     95           T0   TD1 follows; 5 historical bytes
///     13           TA1  Fi/Di
///     81           TD1  TD2 follows; T=1
///     01           TD2  T=1
///     80 73 FF 01 00    historical bytes (category 80, card capabilities 73: FF 01 00)
///     0B           TCK
private let viccISO7816ATR: [UInt8] = [0x3B, 0x95, 0x13, 0x81, 0x01, 0x80, 0x73, 0xFF, 0x01, 0x00, 0x0B]

/// The readers one vpcd reader.conf entry creates (slot 0 at PORT, slot 1 at PORT+1), measured.
private let vpcdReaderNames = ["Virtual PCD 00 00", "Virtual PCD 00 01"]

/// The end-to-end harness against a real pcscd, vpcd and vicc.
///
/// The shared environment is only looked at here (other suites use it); stopping vicc and
/// restarting pcscd happen on a second, private pcscd with its own port, watched through
/// `pcsc_scan` subprocesses, so this process's PC/SC client keeps its one socket.
@Suite("Harness: private pcscd, vpcd and vicc", .serialized, .needsPrivatePCSCD)
struct HarnessTests {
    /// The private pcscd's directory (whose socket pcscd makes 0666) and the simulated readers'
    /// control sockets and their directories are reachable by their owner only.
    @Test("Only the owner reaches the private pcscd and the simulated readers' control sockets")
    func privateDaemonAndControlSocketsAreOwnerOnly() async throws {
        let environment = try await blocking { try TestEnvironment.shared.start() }
        func mode(_ path: String) throws -> mode_t {
            var info = stat()
            guard stat(path, &info) == 0 else { throw HarnessError(code: .launchFailed, reason: "stat \(path): errno \(errno)") }
            return info.st_mode & 0o777
        }
        let daemonDirectory = URL(fileURLWithPath: environment.socketPath).deletingLastPathComponent().deletingLastPathComponent().path
        #expect(try mode(daemonDirectory) == 0o700)
        for directory in [SimulatedReaders.directoryA, SimulatedReaders.directoryB] {
            #expect(try mode(directory) & 0o077 == 0, "\(directory)")
            #expect(try mode(directory + "/control.sock") & 0o077 == 0, "\(directory)/control.sock")
        }
    }

    @Test("The shared environment lists the vpcd reader with vicc's card")
    func sharedEnvironmentHasCard() async throws {
        // Off Swift's shared pool: pcscd and vicc calls block for up to seconds.
        try await blocking {
            let environment = try TestEnvironment.shared.start()
            #expect(environment.vpcdReaderName == "Virtual PCD 00 00")
            #expect(vpcdReaderNames.allSatisfy(environment.readerNames.contains))
            #expect(ProcessInfo.processInfo.environment["PCSCLITE_CSOCK_NAME"] == environment.socketPath)
            #expect(environment.environmentForSubprocesses["PCSCLITE_CSOCK_NAME"] == environment.socketPath)

            let readers = try PCSCScan.status(environment: environment.environmentForSubprocesses)
            let reader = try #require(readers.first { $0.name == environment.vpcdReaderName })
            #expect(reader.isCardPresent)
            #expect(reader.atr == viccISO7816ATR)
            #expect(environment.card.atr == viccISO7816ATR)
        }
    }

    @Test("A second start returns the running environment")
    func startIsIdempotent() async throws {
        // Off Swift's shared pool: pcscd and vicc calls block for up to seconds.
        try await blocking {
            let first = try TestEnvironment.shared.start()
            let second = try TestEnvironment.shared.start()
            #expect(first === second)
            #expect(TestEnvironment.shared.current === first)
        }
    }

    @Test("Stopping vicc removes the card; starting it again brings it back")
    func viccStopAndStart() async throws {
        // Off Swift's shared pool: pcscd and vicc calls block for up to seconds.
        try await blocking {
            let (pcscd, card) = try privateInstance()
            defer { card.stopQuietly(); pcscd.stop() }

            #expect(try card.start() == viccISO7816ATR)
            #expect(try cardState(pcscd, card.readerName)?.isCardPresent == true)

            try card.stop()
            let removed = try #require(try cardState(pcscd, card.readerName))
            #expect(!removed.isCardPresent)
            #expect(removed.atr == nil)

            #expect(try card.start() == viccISO7816ATR)
            #expect(try cardState(pcscd, card.readerName)?.atr == viccISO7816ATR)
        }
    }

    @Test("Restarting pcscd keeps the socket path, and it answers again")
    func pcscdRestart() async throws {
        // Off Swift's shared pool: pcscd and vicc calls block for up to seconds.
        try await blocking {
            let (pcscd, card) = try privateInstance()
            defer { card.stopQuietly(); pcscd.stop() }
            let socket = pcscd.socketPath
            let firstPID = pcscd.processIdentifier

            #expect(try pcscd.restart() == vpcdReaderNames)
            #expect(pcscd.socketPath == socket)
            #expect(pcscd.processIdentifier != firstPID)
            #expect(try PCSCScan.readers(environment: pcscd.environment) == vpcdReaderNames)
            // vicc leaves with the old pcscd; a new one finds the new vpcd.
            #expect(try card.start() == viccISO7816ATR)
        }
    }

    @Test("After SIGKILL pcscd is gone, and a restart brings it back")
    func pcscdKillAndRestart() async throws {
        // Off Swift's shared pool: pcscd and vicc calls block for up to seconds.
        try await blocking {
            let (pcscd, _) = try privateInstance()
            defer { pcscd.stop() }

            #expect(pcscd.kill())
            #expect(!pcscd.isRunning)
            #expect(throws: HarnessError(code: .launchFailed, reason: "")) {
                try PCSCScan.readers(environment: pcscd.environment)
            }
            #expect(try pcscd.restart() == vpcdReaderNames)
        }
    }

    /// A pcscd of this test's own (a fresh directory and free port) with a vpcd reader, and a
    /// card for it that is not started yet.
    private func privateInstance() throws -> (PrivatePCSCD, VirtualCard) {
        _ = try TestEnvironment.shared.start()  // checks the dependencies and keeps its ports taken
        let port = try FreePort.pick()
        let pcscd = try PrivatePCSCD(readers: [.vpcd(port: port)])
        #expect(try pcscd.start() == vpcdReaderNames)
        let card = VirtualCard(port: port, readerName: vpcdReaderNames[0], pcscEnvironment: pcscd.environment,
                               logURL: pcscd.directory.appendingPathComponent("vicc.log"))
        return (pcscd, card)
    }

    private func cardState(_ pcscd: PrivatePCSCD, _ readerName: String) throws -> ReaderStatus? {
        try PCSCScan.status(environment: pcscd.environment).first { $0.name == readerName }
    }
}

extension VirtualCard {
    fileprivate func stopQuietly() { try? stop(timeout: .seconds(2)) }
}

/// `pcsc_scan` output parsing, against output captured from pcsc-tools 1.6.2 on Debian 12.
@Suite("Harness: pcsc_scan output")
struct PCSCScanParsingTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let id: String
        let source: String
        let text: String
        let expected: [ReaderStatus]
        var testDescription: String { id }
    }

    static let cardReports: [Vector] = [
        Vector(
            id: "inserted-and-removed",
            source: "pcsc_scan -c -n, vicc iso7816 in slot 0 (captured)",
            text: "  \r \r \nSun Nov 29 14:18:43 2026\n Reader 0: Virtual PCD 00 00\n  Event number: 1\n"
                + "  Card state: Card inserted, \n  ATR: 3B 95 13 81 01 80 73 FF 01 00 0B\n"
                + " Reader 1: Virtual PCD 00 01\n  Event number: 0\n  Card state: Card removed, \n",
            expected: [
                ReaderStatus(name: "Virtual PCD 00 00", state: "Card inserted", atr: viccISO7816ATR),
                ReaderStatus(name: "Virtual PCD 00 01", state: "Card removed"),
            ]),
        Vector(
            id: "no-reader",
            source: "pcsc_scan -c -n against a pcscd without readers (captured)",
            text: "No reader found.\n",
            expected: []),
        Vector(
            id: "bad-atr-hex",
            source: "constructed: an ATR token that is not one hex byte leaves the ATR unset",
            text: " Reader 0: R 00 00\n  Card state: Card inserted, Shared Mode, \n  ATR: 3B 9\n",
            expected: [ReaderStatus(name: "R 00 00", state: "Card inserted, Shared Mode")]),
    ]

    @Test(arguments: cardReports)
    func cardReport(_ vector: Vector) {
        #expect(PCSCScan.parseCardReport(vector.text) == vector.expected)
    }

    @Test func readerList() {
        // pcsc_scan -r (captured)
        #expect(PCSCScan.parseReaderList("0: Virtual PCD 00 00\n1: Virtual PCD 00 01\n") == vpcdReaderNames)
        #expect(PCSCScan.parseReaderList("No reader found.\n") == [])
    }

    @Test func vpcdEntryRendering() {
        // The reader.conf syntax vsmartcard's own /etc/reader.conf.d/vpcd uses (port 0x8C7B there).
        #expect(ReaderConfEntry.vpcd(port: 0x9A10).rendered == """
            FRIENDLYNAME "Virtual PCD"
            DEVICENAME   /dev/null:0x9A10
            LIBPATH      /usr/lib/pcsc/drivers/serial/libifdvpcd.so
            CHANNELID    0x9A10

            """)
    }

    @Test func rejectsRelativeLibraryPath() {
        let entry = ReaderConfEntry(friendlyName: "X", libraryPath: "libifdvpcd.so")
        #expect(throws: HarnessError(code: .invalidConfiguration, reason: "")) { try entry.validate() }
    }
}
