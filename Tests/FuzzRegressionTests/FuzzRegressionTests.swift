import ACR122Simulator
import Dispatch
import Foundation
import ISO7816
import InProcessPCSC
import NFCTags
import PCSCSandbox
import PCSCCore
import PN53x
import SecbridgeCLI
import SecbridgeTesting
import SecureElementCredential
import Synchronization
import Testing
import Transcript
#if canImport(Glibc)
import Glibc
#endif

/// The inputs the fuzz targets (Fuzz/Sources/<target>, run by scripts/fuzz.sh) once failed on,
/// kept in Fuzz/Regressions/<target>/ and replayed here through the same entry point, so a fixed
/// crash stays fixed in every `swift test`. Each file must run without trapping; a file
/// `<name>.expected` beside it holds the outcome the replay must give exactly (`ok`, or `error`
/// and the error's code; for `control-line` the first word of each reply, one per line).
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    @Test("every fuzz target of scripts/fuzz.sh and Fuzz/Sources has a replay here")
    func everyTargetHasAReplay() throws {
        let script = try String(contentsOfFile: FuzzFiles.root + "/scripts/fuzz.sh", encoding: .utf8)
        let line = try #require(script.split(separator: "\n").first { $0.hasPrefix("TARGETS=\"") })
        let listed = Set(line.dropFirst("TARGETS=\"".count).dropLast().split(separator: " ").map(String.init))
        let sources = Set(try FileManager.default.contentsOfDirectory(atPath: FuzzFiles.root + "/Fuzz/Sources"))
            .subtracting(["FuzzSupport"])
        #expect(listed.count == 16)
        #expect(listed == sources)
        #expect(listed == Set(FuzzReplay.targets.keys))
    }

    @Test("every directory under Fuzz/Regressions names a fuzz target")
    func regressionDirectoriesNameTargets() throws {
        let directories = (try? FileManager.default.contentsOfDirectory(atPath: FuzzFiles.regressions)) ?? []
        for directory in directories where !directory.hasPrefix(".") {
            #expect(FuzzReplay.targets[directory] != nil, "Fuzz/Regressions/\(directory) is no fuzz target")
        }
    }

    @Test("the replay gives the spec seeds' real outcomes")
    func replayOfKnownInputs() throws {
        let select: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]
        #expect(try FuzzReplay.outcome("command-apdu", select) == "ok")
        // docs/cases.md P03: a 6-byte command whose byte 5 is 00.
        #expect(try FuzzReplay.outcome("command-apdu", [0x00, 0xB2, 0x01, 0x14, 0x00, 0x00]) == "error shortLcZero")
        #expect(try FuzzReplay.outcome("atr", [0x3B, 0x81, 0x80, 0x01, 0x80, 0x80, 0x90, 0x00]) == "ok")
        #expect(try FuzzReplay.outcome("ndef", Array("D1 01 08 54 02 65 6E 48 65 6C 6C 6F".split(separator: " ").map { UInt8($0, radix: 16)! })) == "ok")
        // ACR122U API v2.04 §6.1: the firmware version, FF 00 48 00 00 through libccid's escape code.
        // docs/pn532-uart.md §1: ACK, then a GetFirmwareVersion answer whose DCS is one off.
        #expect(try FuzzReplay.outcome("pn532-uart", [0x00] + [0x00, 0x00, 0xFF, 0x00, 0xFF, 0x00]
            + [0x00, 0x00, 0xFF, 0x06, 0xFA, 0xD5, 0x03, 0x32, 0x01, 0x06, 0x07, 0xE9, 0x00]) == "ACK\nerror badDataChecksum")
        #expect(try FuzzReplay.outcome("simulator", [0x00, 0x01, 0x05, 0xFF, 0x00, 0x48, 0x00, 0x00]) == "ok 41 43 52 31 32 32 55 32 30 37")
    }

    @Test("the control-line replay answers each line through a reader's control socket")
    func controlLineReplay() async throws {
        let outcome = try await onOwnThread("control-line-replay") { try FuzzReplay.outcome("control-line", Array("ping\nno-such-verb".utf8)) }
        #expect(outcome == "ok\nerror")
    }

    /// The `control-line` stall (docs/faults.md): libFuzzer's periodic SIGALRM, whose handler has no
    /// SA_RESTART, made the target's poll(2) return EINTR while the reply was on its way. Here a
    /// handler installed the same way runs every 10 ms on the thread waiting for a reply the server
    /// holds back for 300 ms (`terminal-result wait-ms=300` of a terminal no reader activates):
    /// the client must keep waiting and return the reply.
    @Test("a control-socket client keeps waiting for its reply while signals interrupt its poll")
    func controlClientWaitSurvivesSignals() async throws {
        let (reply, interrupted) = try await onOwnThread("control-signals") { () throws -> (String, Int) in
            try ControlLineReplay.withReader { control in
                _ = try control.exchange("place-terminal id=t")
                var action = Glibc.sigaction()
                action.__sigaction_handler.sa_sigaction = { _, _, _ in signalsHandled.add(1, ordering: .relaxed) }
                action.sa_flags = SA_SIGINFO  // no SA_RESTART, as libFuzzer's SIGALRM handler
                sigemptyset(&action.sa_mask)
                var previous = Glibc.sigaction()
                sigaction(SIGURG, &action, &previous)
                defer { sigaction(SIGURG, &previous, nil) }
                // This thread may have been started with signals blocked.
                var urgent = sigset_t()
                var mask = sigset_t()
                sigemptyset(&urgent)
                sigaddset(&urgent, SIGURG)
                pthread_sigmask(SIG_UNBLOCK, &urgent, &mask)
                defer { pthread_sigmask(SIG_SETMASK, &mask, nil) }
                let before = signalsHandled.load(ordering: .relaxed)
                let waiting = pthread_self()
                let stop = SignallerStop()
                let ended = DispatchSemaphore(value: 0)
                guard startThread(name: "test-signaller", {
                    while !stop.requested.load(ordering: .sequentiallyConsistent) {
                        pthread_kill(waiting, SIGURG)
                        var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
                        nanosleep(&pause, nil)
                    }
                    ended.signal()
                }) else { throw FuzzReplay.ReplayError(description: "pthread_create failed") }
                let reply = Result { try control.exchange("terminal-result peer=t wait-ms=300", timeout: .seconds(30)) }
                stop.requested.store(true, ordering: .sequentiallyConsistent)
                _ = ended.wait(timeout: .now() + 10)
                return (try reply.get(), signalsHandled.load(ordering: .relaxed) - before)
            }
        }
        #expect(reply.hasPrefix("ok result="), "\(reply)")
        #expect(interrupted >= 5, "the client's wait was interrupted \(interrupted) times")
    }

    /// On a thread of its own: a `control-line` replay waits (bounded) for a reader of the
    /// in-process pool, which must not hold one of Swift's shared pool threads meanwhile (the
    /// suites that would free a reader need them).
    @Test("a kept input replays without trapping, with its expected outcome", arguments: FuzzFiles.regressionFiles())
    func replays(_ file: String) async throws {
        let target = URL(fileURLWithPath: file).deletingLastPathComponent().lastPathComponent
        let input = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        let outcome = try await onOwnThread("fuzz-replay") { try FuzzReplay.outcome(target, input) }
        if let expected = try? String(contentsOfFile: file + ".expected", encoding: .utf8) {
            #expect(outcome == expected.trimmingCharacters(in: .newlines), "\(file)")
        }
    }
}

/// How often the SIGURG handler of `controlClientWaitSurvivesSignals` ran (lock-free: it is
/// touched from a signal handler).
private let signalsHandled = Atomic<Int>(0)

/// Tells the signalling thread of `controlClientWaitSurvivesSignals` to stop.
private final class SignallerStop: Sendable {
    let requested = Atomic<Bool>(false)
}

/// Paths in this checkout.
enum FuzzFiles {
    /// The repository: this file is Tests/FuzzRegressionTests/FuzzRegressionTests.swift.
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static let regressions = root + "/Fuzz/Regressions"

    /// Every kept input (not the `.expected` files), as absolute paths.
    static func regressionFiles() -> [String] {
        let manager = FileManager.default
        var files: [String] = []
        for target in ((try? manager.contentsOfDirectory(atPath: regressions)) ?? []).sorted() where !target.hasPrefix(".") {
            let directory = regressions + "/" + target
            for name in ((try? manager.contentsOfDirectory(atPath: directory)) ?? []).sorted()
            where !name.hasPrefix(".") && !name.hasSuffix(".expected") {
                files.append(directory + "/" + name)
            }
        }
        return files
    }
}

/// Each fuzz target's entry point, giving a comparable outcome instead of checking properties
/// (the fuzz targets check those).
enum FuzzReplay {
    typealias Replay = @Sendable ([UInt8]) throws -> String

    static func outcome(_ target: String, _ input: [UInt8]) throws -> String {
        guard let replay = targets[target] else { throw ReplayError(description: "no fuzz target '\(target)'") }
        return try replay(input)
    }

    struct ReplayError: Error, CustomStringConvertible { let description: String }

    /// `ok`, or `error <code>` of the error `body` throws.
    static func result(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "ok"
        } catch let error as any CodedError {
            return "error " + code(of: error)
        } catch {
            return "error \(error)"
        }
    }

    static func code<E: CodedError>(of error: E) -> String { error.code.rawValue }

    static func text(_ input: [UInt8]) -> String { String(decoding: input, as: UTF8.self) }

    static let targets: [String: Replay] = [
        "command-apdu": { input in result { _ = try CommandAPDU(parsing: input) } },
        "response-apdu": { input in result { _ = try ResponseAPDU(parsing: input).statusWord.meaning } },
        "atr": { input in result { _ = try ATR.readLeniently(input).atr.decodedHistoricalBytes() } },
        "historical-bytes": { input in result { _ = try HistoricalBytes(parsing: input) } },
        "ber-tlv": { input in result { _ = try BERTLV.parseAll(input) } },
        "fci": { input in
            result {
                let options = BERTLV.ReadingOptions(keepsMalformedContent: true)
                for object in try BERTLV.parseAll(input, options: options) {
                    _ = FileControlInformation.meaning(of: object, inside: nil)
                    for child in object.children { _ = FileControlInformation.meaning(of: child, inside: object.tag) }
                }
            }
        },
        "pn532-frame": { input in result { _ = try ACR122Command(parsing: input) } },
        "pn532-uart": { input in PN532UARTReplay.frames(input) },
        "acr122-reply": { input in result { _ = try ACR122Reply(parsing: input).checkedData() } },
        "transcript": { input in result { _ = try Transcript(parsing: text(input)) } },
        "spy-import": { input in result { _ = try SpyLogImporter.importLog(text(input)) } },
        "credential": { input in result { _ = try CredentialFile(json: input) } },
        "apdu-script": { input in result { _ = try APDUScript(parsing: text(input), fileName: "regression") } },
        "ndef": { input in result { _ = try NDEFMessage(parsing: input) } },
        "simulator": { input in
            // The last step's answer: `ok` and its bytes, or `error` and the device error.
            switch SimulatorByteScript.run(input).last?.answer {
            case .success(let answer): "ok" + (answer.isEmpty ? "" : " " + HexBytes.format(answer))
            case .failure(let error): "error \(error)"
            case nil: "ok"
            }
        },
        "control-line": { input in try ControlLineReplay.replies(input) },
    ]
}

/// The `pn532-uart` target's replay: the frames the parser finds with the target's chunking, one
/// line each, `error <case>` for a faulty one.
enum PN532UARTReplay {
    static func frames(_ input: [UInt8]) -> String {
        guard let first = input.first else { return "" }
        let chunk = Int(first % 32) + 1
        let body = Array(input.dropFirst())
        var parser = PN532UARTFrameParser(receiving: first & 0x80 != 0 ? PN532UARTFrame.chipTFI : nil)
        var lines: [String] = []
        var offset = 0
        while offset < body.count {
            parser.append(body[offset..<min(offset + chunk, body.count)])
            offset += chunk
            while lines.count <= body.count {
                do {
                    guard let frame = try parser.next() else { break }
                    lines.append(frame.description)
                } catch {
                    lines.append("error " + name(of: error))
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    static func name(of error: PN532UARTFrameError) -> String {
        switch error {
        case .badLengthChecksum: "badLengthChecksum"
        case .badDataChecksum: "badDataChecksum"
        case .wrongTFI: "wrongTFI"
        case .badPostamble: "badPostamble"
        case .emptyFrame: "emptyFrame"
        case .tooLong: "tooLong"
        }
    }
}

/// The `control-line` target's replay: one in-process reader (opened as pcscd opens it), its
/// control socket written one line at a time; the outcome is the first word of each reply. A line
/// whose typed request does not round-trip (`ControlLineRoundTrip`) fails the replay, as it fails
/// the fuzz target.
enum ControlLineReplay {
    static func replies(_ input: [UInt8]) throws -> String {
        try withReader { control in
            var words: [String] = []
            for line in input.split(separator: 0x0A, omittingEmptySubsequences: false) {
                if let failure = ControlLineRoundTrip.failure(String(decoding: line, as: UTF8.self)) {
                    throw FuzzReplay.ReplayError(description: failure)
                }
                let reply = try control.exchange(String(decoding: line, as: UTF8.self))
                words.append(String(reply.split(separator: " ").first ?? ""))
            }
            return words.joined(separator: "\n")
        }
    }

    /// Runs `body` with the control socket of a fresh in-process reader (waiting at most 60 s
    /// for a free one), closed and its directory removed afterwards.
    static func withReader<T>(_ body: (SimulatedReaderControl) throws -> T) throws -> T {
        let directory = NSTemporaryDirectory() + "secbridge-fuzz-replay.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let readers = InProcessReaders()
        defer {
            readers.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        _ = try readers.createChannel(deviceName: directory + ":timescale=0", waitingUpTo: .seconds(60))
        return try body(SimulatedReaderControl(socketPath: directory + "/control.sock"))
    }
}
