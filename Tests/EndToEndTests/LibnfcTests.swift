import Foundation
import ISO7816
import PCSC
import PCSCSandbox
import PN53x
import SecbridgeTesting
import Synchronization
import Testing

// libnfc 1.8.0 (built by scripts/build-libnfc.sh from Debian's source package with its PC/SC
// drivers) as an independent ACR122 client of the simulated readers: third-party code that drives
// an ACR122 through pcscd as on a desk (docs/test-infrastructure.md, "An independent ACR122 client").

/// Where scripts/build-libnfc.sh installs the tools: `$LIBNFC_CACHE/install/bin`, else
/// `<repo>/.build-libnfc/install/bin`.
enum Libnfc {
    static let binDirectory: String? = {
        let cache = ProcessInfo.processInfo.environment["LIBNFC_CACHE"].flatMap { $0.isEmpty ? nil : $0 }
            ?? HarnessPaths.repositoryRoot?.appendingPathComponent(".build-libnfc").path
        return cache.map { $0 + "/install/bin" }
    }()

    static func tool(_ name: String) -> String? {
        guard let directory = binDirectory else { return nil }
        let path = directory + "/" + name
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// True when nfc-list and nfc-emulate-forum-tag4 are built.
    static var isBuilt: Bool { tool("nfc-list") != nil && tool("nfc-emulate-forum-tag4") != nil }

    /// The environment a libnfc tool needs to open `reader` through pcscd: the connstring
    /// `acr122_pcsc:<reader name>`, no automatic scan, and the private pcscd's socket.
    static func environment(reader: String, base: [String: String]) -> [String: String] {
        var environment = base
        environment["LIBNFC_DEVICE"] = "acr122_pcsc:" + reader
        environment["LIBNFC_AUTO_SCAN"] = "false"
        environment["LIBNFC_LOG_LEVEL"] = "1"
        return environment
    }

    /// A running libnfc tool whose output goes to a file (no pipe can fill up and block it).
    final class RunningTool: @unchecked Sendable {
        let process = Process()
        let outputURL: URL

        /// - Parameter input: what the tool reads on standard input (answers to its prompts); nil: none.
        convenience init(_ name: String, _ arguments: [String], environment: [String: String], input: String? = nil) throws {
            guard let path = Libnfc.tool(name) else {
                throw HarnessError(code: .missingDependency, reason: "\(name) is not built: run scripts/build-libnfc.sh")
            }
            try self.init(executable: path, arguments, environment: environment, input: input)
        }

        /// Runs the program at `path` (nfcpy's Python, say) the same way.
        init(executable path: String, _ arguments: [String], environment: [String: String], input: String? = nil) throws {
            outputURL = FileManager.default.temporaryDirectory
                .appendingPathComponent("secbridge-tool.\(getpid()).\(UUID().uuidString.prefix(8)).out")
            _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
            let handle = try FileHandle(forWritingTo: outputURL)
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
            process.environment = environment
            process.standardOutput = handle
            process.standardError = handle
            if let input {
                let pipe = Pipe()
                process.standardInput = pipe
                _ = ignoringSIGPIPE
                try process.run()
                try? pipe.fileHandleForWriting.write(contentsOf: Data(input.utf8))  // EPIPE: the tool ended first
                try pipe.fileHandleForWriting.close()
                return
            }
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        /// Waits at most `timeout` for the tool to exit, then SIGTERM, then SIGKILL; returns its
        /// status and output.
        func finish(timeout: Duration) -> (status: Int32, output: String) {
            let clock = ContinuousClock()
            let deadline = clock.now + timeout
            while process.isRunning && clock.now < deadline { usleep(10_000) }
            if process.isRunning {
                process.terminate()
                let grace = clock.now + .seconds(2)
                while process.isRunning && clock.now < grace { usleep(10_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
            process.waitUntilExit()
            let output = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: outputURL)
            return (process.terminationStatus, output)
        }
    }

    /// Runs a tool to its end (at most `timeout`).
    static func run(_ name: String, _ arguments: [String], environment: [String: String],
                    timeout: Duration = .seconds(20), input: String? = nil) throws -> (status: Int32, output: String) {
        try RunningTool(name, arguments, environment: environment, input: input).finish(timeout: timeout)
    }
}

/// Sets `reader`'s PICC operating parameter to 00 (no automatic polling), as an initiator must
/// before another reader in the same field emulates: an auto-polling ACR122U activates any card it
/// finds, an emulating PN532 included (docs/acr122-pn532.md §2 PICC parameter bit 7).
func stopAutomaticPolling(on reader: String) throws {
    let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
    let link = try ACR122Link.open(channel: direct, readerName: reader)
    try link.setPICCOperatingParameter([])
}

/// nfc-emulate-forum-tag4 started on reader A, after B's automatic polling was turned off (an
/// auto-polling B would activate A's target itself, docs/acr122-pn532.md §2) and `before` ran.
/// Starts nfc-emulate-forum-tag4 on reader A, and (unless a peer placed by `before` may take the
/// target at once) waits until its TgInitAsTarget has reached the simulated reader: libnfc's
/// set-up takes a time of its own, longer on a loaded machine. The target is in the field a
/// moment after that, so a reader still polls for it with a bound of time, not of polls.
func startNfcEmulateForumTag4(
    waitForTarget: Bool = true, before: () throws -> Void = {}
) async throws -> (environment: TestEnvironment, emulator: Libnfc.RunningTool) {
    let environment = try await resetSimulatedReaders()
    let readerB = environment.simulatedReaderB
    try await blocking { try stopAutomaticPolling(on: readerB) }
    try before()
    let emulator = try Libnfc.RunningTool(
        "nfc-emulate-forum-tag4", [],
        environment: Libnfc.environment(reader: environment.simulatedReaderA, base: environment.environmentForSubprocesses))
    if waitForTarget { try await waitUntilBusy(SimulatedReaders.controlA, with: "D4 8C") }
    return (environment, emulator)
}

extension SharedReader {
    @Suite(.enabled(if: Libnfc.isBuilt, "libnfc is not built: run scripts/build-libnfc.sh (as root the first time)"))
    struct LibnfcTests {
        @Test func nfcListShowsUIDATQAAndSAKOfAPlacedTag() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            try SimulatedReaders.controlA.send("place-tag uid=\"04 A1 B2 C3\" atqa=\"00 04\" sak=08 id=classic")
            let toolEnvironment = Libnfc.environment(reader: reader, base: environment.environmentForSubprocesses)
            let result = try await blocking { try Libnfc.run("nfc-list", ["-t", "1"], environment: toolEnvironment) }
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("1 ISO14443A passive target(s) found"), "\(result.output)")
            #expect(result.output.contains("UID (NFCID1): 04  a1  b2  c3"), "\(result.output)")
            #expect(result.output.contains("ATQA (SENS_RES): 00  04"), "\(result.output)")
            #expect(result.output.contains("SAK (SEL_RES): 08"), "\(result.output)")
            try SimulatedReaders.controlA.send("remove peer=classic")
        }

        @Test func nfcListShowsTheATSOfAPlacedISO14443_4Card() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            try SimulatedReaders.controlA.send("place-card uid=\"04 11 22 33 44 55 66\" atqa=\"03 44\" sak=20 ats=\"06 75 77 81 02 80\" id=desfire")
            let toolEnvironment = Libnfc.environment(reader: reader, base: environment.environmentForSubprocesses)
            let result = try await blocking { try Libnfc.run("nfc-list", ["-t", "1"], environment: toolEnvironment) }
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("UID (NFCID1): 04  11  22  33  44  55  66"), "\(result.output)")
            #expect(result.output.contains("ATQA (SENS_RES): 03  44"), "\(result.output)")
            #expect(result.output.contains("SAK (SEL_RES): 20"), "\(result.output)")
            // libnfc prints the ATS without its TL byte.
            #expect(result.output.contains("ATS: 75  77  81  02  80"), "\(result.output)")
            try SimulatedReaders.controlA.send("remove peer=desfire")
        }

        /// nfc-emulate-forum-tag4's CC declares a maximum NDEF size of FFFE: the model of Android
        /// 12–15 (android-15.0.0_r23) refuses it at the CC check, the model of Android 8–11
        /// (android-11.0.0_r1) reads its Smart Poster (docs/terminal-models.md §1).
        @Test(arguments: [("android-t4t-read", "failed"), ("android11-t4t-read", "passed")])
        func androidModelReadsNfcEmulateForumTag4OnA(_ script: String, _ expected: String) async throws {
            let (_, emulator) = try await startNfcEmulateForumTag4(waitForTarget: false) {
                try SimulatedReaders.controlA.send("place-terminal script=\(script) id=phone")
            }
            let reply = try await blocking { try SimulatedReaders.controlA.send("terminal-result peer=phone wait-ms=20000", timeout: .seconds(25)) }
            let emulatorResult = try await onOwnThread("e2e-tool-wait") { emulator.finish(timeout: .seconds(10)) }
            #expect(reply["result"] == expected, "\(reply)\n\(emulatorResult.output)")
            if expected == "failed" {
                #expect(reply["stage"] == "capability container check", "\(reply)")
                #expect(reply["reason"]?.hasPrefix("maximum NDEF size FFFE is outside 0005…7FFF") == true, "\(reply)")
                #expect(reply["exchanges"] == "3", "\(reply)")
            } else {
                // libnfc's example message: one Smart Poster record (type "Sp"), 33 bytes.
                #expect(reply["ndef"]?.hasPrefix("D1 02 1C 53 70") == true, "\(reply)")
            }
        }

        @Test func ourReaderRoleOnBReadsNfcEmulateForumTag4OnA() async throws {
            let (environment, emulator) = try await startNfcEmulateForumTag4()
            let readerB = environment.simulatedReaderB
            let reading = try await blocking { () throws -> (ISO14443ATarget?, [[UInt8]]) in
                let direct = try PCSCContext().connect(to: readerB, share: .direct, protocols: [])
                let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: readerB))
                // Polled until the target answers, at most 20 s (startNfcEmulateForumTag4).
                let deadline = ContinuousClock.now + .seconds(20)
                var target: ISO14443ATarget?
                repeat {
                    target = try chip.pollISO14443A(passiveActivationRetries: 0x10)
                } while target == nil && ContinuousClock.now < deadline
                guard let target else { return (nil, []) }
                let commands = [
                    hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"),  // SELECT NDEF Tag Application
                    hex("00 A4 00 0C 02 E1 03"),  // SELECT capability container
                    hex("00 B0 00 00 0F"),  // READ BINARY CC
                    hex("00 A4 00 0C 02 E1 04"),  // SELECT NDEF file
                    hex("00 B0 00 00 02"),  // READ BINARY NLEN
                    hex("00 B0 00 02 21"),  // READ BINARY the message (NLEN 0x21)
                ]
                let answers = try commands.map { try chip.exchangeAPDU($0, target: target.logicalNumber) }
                try chip.release()
                try chip.restoreReaderDefaults()
                return (target, answers)
            }
            let emulatorResult = try await onOwnThread("e2e-tool-wait") { emulator.finish(timeout: .seconds(10)) }
            let target = try #require(reading.0, "no target found; nfc-emulate-forum-tag4 said: \(emulatorResult.output)")
            // nfc-emulate-forum-tag4's target: UID 08 00 B0 0B, ATQA 00 04, SAK 20 (libnfc
            // utils/nfc-emulate-forum-tag4.c); the PN532 answers RATS with ATS 05 75 33 92 03.
            #expect(target.uid == hex("08 00 B0 0B"))
            #expect(target.atqa.rawValue == 0x0004)
            #expect(target.sak == 0x20)
            #expect(target.ats.map { Array($0.prefix(5)) } == hex("05 75 33 92 03"))
            let answers = reading.1
            try #require(answers.count == 6)
            #expect(answers[0] == hex("90 00"))
            #expect(answers[1] == hex("90 00"))
            // Its CC: mapping 2.0, MLe 0054, MLc 00FF, NDEF file E104 of at most FFFE bytes, open access.
            #expect(answers[2] == hex("00 0F 20 00 54 00 FF 04 06 E1 04 FF FE 00 00 90 00"))
            #expect(answers[3] == hex("90 00"))
            #expect(answers[4] == hex("00 21 90 00"))  // NLEN 33
            #expect(answers[5].count == 0x21 + 2)
            #expect(answers[5].prefix(3) == [0xD1, 0x02, 0x1C])  // a Smart Poster record, "Sp"
            #expect(answers[5].suffix(2) == [0x90, 0x00])
        }

        @Test func nfcListOnBListsOurEmulationOnA() async throws {
            let environment = try await resetSimulatedReaders()
            let (readerA, readerB) = (environment.simulatedReaderA, environment.simulatedReaderB)
            try await blocking { try stopAutomaticPolling(on: readerB) }
            // Our card emulation on A, on its own thread: TgInitAsTarget blocks until B polls. Each
            // try lasts the MCU timeout (5 s simulated, 50 ms at the test time scale), and nfc-list
            // is a process of its own that runs in real time: up to 200 tries, 10 s in all.
            // Whether A saw an activation. nfc-list runs in real time and the MCU timeout is 50 ms:
            // an nfc-list that selects the target just as a TgInitAsTarget times out lists it while
            // A's call ends with the timeout (1 run in 4 of this suite), so nfc-list runs until A
            // has been activated too, not only until it listed the target once.
            let activated = AtomicFlag()
            let emulation = Task.detached { () throws -> PN532TargetActivation? in
                let executor = BlockingExecutor(name: "e2e-libnfc-emulation")
                defer { executor.shutdown() }
                return try await executor.run {
                    let direct = try PCSCContext().connect(to: readerA, share: .direct, protocols: [])
                    let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: readerA))
                    try chip.prepareForCardEmulation()
                    defer { _ = try? chip.restoreReaderDefaults() }
                    for _ in 0..<200 {
                        do {
                            let activation = try chip.initAsTarget(
                                uid: try EmulatedUID([0x08, 0x12, 0x34, 0x56]), historicalBytes: [0x80])
                            activated.set()
                            // Until nfc-list lets go: the PN532 then ends TgGetData with an error
                            // status (29, released), which is this wait's normal end.
                            _ = try? chip.receiveCommand()
                            return activation
                        } catch ACR122Error.operationFailed {
                            continue  // the MCU timeout passed with no initiator
                        }
                    }
                    return nil
                }
            }
            let toolEnvironment = Libnfc.environment(reader: readerB, base: environment.environmentForSubprocesses)
            let listing = try await blocking { () throws -> String in
                var last = ""
                var listed: String?
                for _ in 0..<40 {  // until A has reached TgInitAsTarget and was activated
                    let result = try Libnfc.run("nfc-list", ["-t", "1"], environment: toolEnvironment)
                    last = result.output
                    if result.output.contains("1 ISO14443A passive target(s) found") { listed = result.output }
                    if listed != nil && activated.isSet { break }
                }
                return listed ?? last
            }
            let activation = try await emulation.value
            #expect(listing.contains("1 ISO14443A passive target(s) found"), "\(listing)")
            // libnfc labels a 4-byte UID whose first byte is 08 (a random UID, ISO/IEC 14443-3
            // §6.5.4; the PN532 forces it in emulation) as NFCID3.
            #expect(listing.contains("UID (NFCID3): 08  12  34  56"), "\(listing)")
            #expect(listing.contains("ATQA (SENS_RES): 00  04"), "\(listing)")
            #expect(listing.contains("SAK (SEL_RES): 20"), "\(listing)")
            // The PN532's own ATS (FSCI 5, TA 33, TB 92, TC 03) plus our historical byte 80.
            #expect(listing.contains("ATS: 75  33  92  03  80"), "\(listing)")
            #expect(activation?.mode.rawValue == 0x08)
        }
    }
}

/// A flag two threads share (the emulation thread sets it, the test's loop reads it).
private final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}
