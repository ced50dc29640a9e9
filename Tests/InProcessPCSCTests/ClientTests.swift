import Foundation
import InProcessPCSC
import ISO7816
import PCSC
import PCSCCore
import PN53x
import Synchronization
import SecbridgeTesting
import Testing
import Transcript

/// A value that crosses to an executor thread; the test uses it from one thread at a time.
final class Handed<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Lines appended from several threads.
final class Log: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// Waits on a thread of its own (no spin on Swift's pool) until `count` calls hold or wait for
/// `reader`'s lock: a call blocked on a held virtual clock, and those queued behind it. Bounded
/// by 60 s of real time as a safety net only.
func untilPendingDriverCalls(_ count: Int, on reader: String, of readers: InProcessReaders, _ what: String) async -> Bool {
    let reached = (try? await blocking("pending-calls") { readers.waitUntilPendingDriverCalls(on: reader, reach: count) }) ?? false
    if !reached { Issue.record("never happened: \(what)") }
    return reached
}

@Suite struct PN53xClientTests {
    @Test func theInitiatorFindsAPlacedCardThroughEscapeCommandsOnADirectHandle() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        try bench.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], ats: [0x06, 0x75, 0x77, 0x81, 0x02, 0x80], applet: .echo))
        let (firmware, chipVersion, target, answer) = try await blocking {
            let direct = try bench.readers.connect(to: name, share: .direct, protocols: [])
            let link = try ACR122Link.open(channel: direct, readerName: name)
            let chip = PN532(link: link)
            let version = try chip.send(PN532.GetFirmwareVersion())
            let target = try #require(try chip.pollISO14443A())
            let answer = try chip.exchangeAPDU(selectT4T, target: target.logicalNumber)
            try chip.release()
            return (link.firmware?.text, version, target, answer)
        }
        #expect(firmware == "ACR122U207")
        #expect(chipVersion == PN532FirmwareVersion(ic: 0x32, version: 0x01, revision: 0x06, support: 0x07))
        #expect(target.uid == hex("04 A1 B2 C3"))
        #expect(target.sak == 0x20)
        #expect(target.ats == hex("06 75 77 81 02 80"))
        #expect(answer == selectT4T + hex("90 00"))
    }

    @Test func theLinkWorksThroughTransmitOnASharedHandle() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        try bench.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo))
        let (usesEscape, firmware, uid) = try await blocking {
            let card = try bench.readers.connect(to: name, share: .shared, protocols: .any)
            let link = try ACR122Link.open(channel: card, readerName: name)
            return (link.usesEscapeCommands, link.firmware?.text, try link.uid())
        }
        #expect(!usesEscape)  // T=1: pseudo-APDUs go through SCardTransmit (docs/acr122-pn532.md §1)
        #expect(firmware == "ACR122U207")
        #expect(uid == hex("04 A1 B2 C3"))
    }

    @Test func P09_escapeDisabledGivesNotTransactedAndTheLinkNamesIfdDriverOptions() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader("a", options: ":personality=ccid-escape-disabled")
        let (escapeError, features, linkError) = try await blocking {
            let direct = try bench.readers.connect(to: name, share: .direct, protocols: [])
            let escapeError = pcscError { try direct.control(code: ccidEscape, firmwareRequest) }
            let features = try direct.features()
            var linkError = "no error"
            do {
                _ = try ACR122Link.open(channel: direct, readerName: name)
            } catch {
                linkError = "\(error)"
            }
            return (escapeError, features, linkError)
        }
        #expect(escapeError == .notTransacted)  // libccid refuses: IFD_COMMUNICATION_ERROR → 0x80100016
        #expect(escapeError?.code == 0x8010_0016)
        // libccid lists FEATURE_GET_TLV_PROPERTIES alone without ifdDriverOptions 0x0001 (docs/acr122-units.md §1).
        #expect(features == [PCSCFeature(tag: 0x12, controlCode: 0x4233_0012)])
        #expect(linkError.contains("ifdDriverOptions"))
        #expect(linkError.contains("0x0001"))
    }

    @Test func P10_targetRoleServesATerminalPlacedThroughTheControlSocket() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        try bench.control(.placeTerminal(id: "phone"))
        let (activation, served, deliveries, end) = try await blocking {
            let direct = try bench.readers.connect(to: name, share: .direct, protocols: [])
            let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: name))
            try chip.prepareForCardEmulation()
            defer { _ = try? chip.restoreReaderDefaults() }
            let activation = try chip.initAsTarget(uid: try EmulatedUID([0x08, 0x12, 0x34, 0x56]))
            let terminal = try serveTerminal(on: chip, answers: type4FullURIRead)
            try chip.release()
            return (activation, terminal.commands, terminal.deliveries, terminal.end)
        }
        #expect(activation.mode.rawValue == 0x08)  // 106 kbit/s, ISO 14443-4 PICC, Type A (docs/cases.md P10)
        #expect(activation.initiatorCommand == hex("E0 80"))  // RATS, FSD 256, CID 0
        #expect(served == type4FullURIRead.map(\.command))
        #expect(deliveries == Array(repeating: .delivered, count: type4FullURIRead.count))
        #expect(end.map { if case .released(let code) = $0 { code.rawValue == 0x29 } else { false } } == true)
        let result = try bench.control(.terminalResult(peer: "phone", waitMilliseconds: 5000))
        #expect(result["result"] == "passed")
        #expect(result["exchanges"] == "6")
    }

    /// The reader on a virtual clock held still: TgInitAsTarget blocks (its 5 s MCU timeout never
    /// comes) until the terminal placed below activates it, however long the threads take to start.
    @Test func oneCallAtATimeReachesAReaderWhileTgInitAsTargetBlocks() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let time = VirtualTime()
        defer { time.close() }
        time.hold()
        defer { time.release() }
        let name = try await bench.addReader(options: ":clock=\(time.name)")
        let (chip, other) = try await blocking {
            let direct = try bench.readers.connect(to: name, share: .direct, protocols: [])
            let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: name))
            try chip.prepareForCardEmulation()
            return (Handed(chip), Handed(try bench.readers.connect(to: name, share: .direct, protocols: [])))
        }
        let order = Log()
        // TgInitAsTarget blocks in the driver until a terminal comes, holding the reader's lock.
        let target = Task {
            try await blocking("target") {
                let activation = try chip.value.initAsTarget(uid: try EmulatedUID([0x08, 0x12, 0x34, 0x56]))
                order.append("target")
                return activation.initiatorCommand
            }
        }
        guard await untilPendingDriverCalls(1, on: name, of: bench.readers, "TgInitAsTarget holds the reader") else { return }
        let second = Task {
            try await blocking("second") {
                let firmware = try other.value.control(code: ccidEscape, firmwareRequest)
                order.append("second")
                return firmware
            }
        }
        guard await untilPendingDriverCalls(2, on: name, of: bench.readers, "the second call waits") else { return }
        #expect(order.all.isEmpty)  // neither has reached past the lock's holder
        try bench.control(.placeTerminal(id: "phone"))
        let rats = try await target.value
        let firmware = try await second.value
        // pcscd's per-reader mutex: the second call stayed blocked (order empty above) until the
        // terminal released TgInitAsTarget; after that both finish, in either order (their appends
        // race once the lock is free).
        #expect(Set(order.all) == ["target", "second"])
        #expect(rats == hex("E0 80"))
        #expect(firmware == Array("ACR122U207".utf8))
        _ = try await blocking { try chip.value.restoreReaderDefaults() }
    }

    /// Reader A on a virtual clock held still, as above: its TgInitAsTarget blocks until the
    /// terminal placed below comes.
    @Test func anotherReaderIsNotHeldUpByABlockedOne() async throws {
        let bench = try await Bench.make(readers: 2)
        defer { bench.close() }
        let time = VirtualTime()
        defer { time.close() }
        time.hold()
        defer { time.release() }
        let blockedName = try await bench.addReader("a", options: ":clock=\(time.name)")
        let freeName = try await bench.addReader("b")
        let chip = try await blocking {
            let direct = try bench.readers.connect(to: blockedName, share: .direct, protocols: [])
            let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: blockedName))
            try chip.prepareForCardEmulation()
            return Handed(chip)
        }
        let target = Task {
            try await blocking("target") { try chip.value.initAsTarget(uid: try EmulatedUID([0x08, 0x12, 0x34, 0x56])).mode.rawValue }
        }
        guard await untilPendingDriverCalls(1, on: blockedName, of: bench.readers, "TgInitAsTarget holds reader A") else { return }
        let firmware = try await blocking {
            try bench.readers.connect(to: freeName, share: .direct, protocols: []).control(code: ccidEscape, firmwareRequest)
        }
        #expect(firmware == Array("ACR122U207".utf8))  // TAG_IFD_THREAD_SAFE = 1: a lock per reader
        #expect(bench.readers.pendingDriverCalls(on: blockedName) == 1)  // still blocked
        try bench.control(.placeTerminal(id: "phone"))
        #expect(try await target.value == 0x08)
    }
}

/// How SecbridgeCLI writes a PCSCError on a `!` line (its TranscriptDescribableError conformance).
let pcscFailureLine: @Sendable (any Error) -> TranscriptFailure = { error in
    guard let error = error as? PCSCError else { return TranscriptRecorder.defaultFailureDescription(error) }
    return TranscriptFailure(name: error.name, code: error.code, message: error.function.map { "\($0) failed" })
}

@Suite struct RecordingTests {
    @Test func anInProcessHandleRecordsLikeAPCSCHandle() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        let buffer = try TranscriptBuffer()
        let recorder = TranscriptRecorder(sink: buffer, clock: { .zero }, describeFailure: pcscFailureLine)
        try await blocking {
            let direct = try bench.readers.connect(to: name, share: .direct, protocols: [])
            let channel = RecordingChannel(wrapping: direct, recorder: recorder)
            _ = try channel.control(code: ccidEscape, firmwareRequest)
            _ = try? channel.transmit(selectT4T)
        }
        let lines = buffer.transcript.lines.map { line -> String in
            if case .record(let record) = line { return record.serialized() }
            return "\(line)"
        }
        #expect(lines == [
            "+0.000ms ctl 0x42000001 > FF 00 48 00 00",
            "+0.000ms ctl 0x42000001 < 41 43 52 31 32 32 55 32 30 37",
            "+0.000ms > 00 A4 04 00 07 D2 76 00 00 85 01 01 00",
            "+0.000ms ! SCARD_E_NO_SMARTCARD 0x8010000C \"SCardTransmit failed\"",
        ])
    }
}
