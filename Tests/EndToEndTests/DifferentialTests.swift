// InProcessPCSC reaches EndToEndTests through SecbridgeCLI; Package.swift should name it directly.
import Foundation
import InProcessPCSC
import ISO7816
import PCSC
import PCSCSandbox
import PN53x
import SecbridgeTesting
import Testing
import Transcript

/// A connection of the differential script: what it records, SCardStatus and SCardDisconnect.
protocol DifferentialConnection: AnyObject, CardChannel {
    var activeProtocolValue: UInt { get }
    /// State (flags | counter << 16), card protocol, ATR.
    func statusValues() throws -> (state: UInt, protocolValue: UInt, atr: [UInt8])
    func end() throws
}

extension CardHandle: DifferentialConnection {
    var activeProtocolValue: UInt { activeProtocol.rawValue }
    func statusValues() throws -> (state: UInt, protocolValue: UInt, atr: [UInt8]) {
        let status = try status()
        return (status.state.rawValue, status.activeProtocol.rawValue, status.atr)
    }
    func end() throws { try disconnect() }
}

extension InProcessCardHandle: DifferentialConnection {
    var activeProtocolValue: UInt { activeProtocol.rawValue }
    func statusValues() throws -> (state: UInt, protocolValue: UInt, atr: [UInt8]) {
        let status = try status()
        return (status.state.rawValue, status.activeProtocol.rawValue, status.atr)
    }
    func end() throws { try disconnect() }
}

/// One path to a simulated ACR122U for the differential script: connections, the control socket,
/// and a wait until the path's resource manager sees the card (pcscd polls every 400 ms; the
/// in-process layer polls at each call, so it has nothing to wait for).
protocol DifferentialPath: Sendable {
    func connect(_ share: ShareMode, _ protocols: ProtocolSet) throws -> any DifferentialConnection
    var control: SimulatedReaderControl { get }
    func waitForCard(_ present: Bool) throws
}

/// The shared private pcscd's reader A: the reference.
struct PcscdPath: DifferentialPath {
    var reader: String
    var control: SimulatedReaderControl { SimulatedReaders.controlA }
    func connect(_ share: ShareMode, _ protocols: ProtocolSet) throws -> any DifferentialConnection {
        try PCSCContext().connect(to: reader, share: share, protocols: protocols)
    }
    func waitForCard(_ present: Bool) throws { try waitForCardBlocking(in: reader, present: present) }
}

/// An in-process reader with a directory and a field of its own.
struct InProcessPath: DifferentialPath {
    var readers: InProcessReaders
    var reader: String
    var control: SimulatedReaderControl
    func connect(_ share: ShareMode, _ protocols: ProtocolSet) throws -> any DifferentialConnection {
        try readers.connect(to: reader, share: share, protocols: protocols)
    }
    func waitForCard(_ present: Bool) throws {}
}

/// A step the script could not take.
struct DifferentialScriptError: Error, CustomStringConvertible {
    var description: String
}

/// A SCARD_PROTOCOL_* value as transcripts write it: T=0, T=1, RAW, undefined (or the number).
func protocolName(_ value: UInt) -> String {
    switch value {
    case 0: "undefined"
    case 1: "T=0"
    case 2: "T=1"
    case 4: "RAW"
    default: String(value)
    }
}

/// A PCSCError's name and the function that failed, or the error's description.
func errorName(_ error: any Error) -> String {
    guard let error = error as? PCSCError else { return String(describing: error) }
    return error.name + " from " + (error.function ?? "?")
}

/// Uppercase hex with a space between bytes.
func hexText(_ bytes: [UInt8]) -> String {
    var parts: [String] = []
    for byte in bytes {
        let digits = String(byte, radix: 16, uppercase: true)
        parts.append(digits.count == 1 ? "0" + digits : digits)
    }
    return parts.joined(separator: " ")
}

extension SharedReader {
    @Suite struct DifferentialTests {
        /// The name both transcripts give the reader (pcscd's reader A may be `… 00 00` or `… 01 00`).
        static let readerName = "ACS ACR122U PICC Interface"

        /// Runs the script on `path`, recording every exchange with a clock that always says zero,
        /// and returns the transcript's lines.
        ///
        /// Steps: DIRECT connect; feature request and firmware version (ACR122Link.open);
        /// GetFirmwareVersion; PICC parameter get, set 00 (automatic polling off); LED; an ISO
        /// 14443-4 card placed; InListPassiveTarget, InDataExchange of a SELECT, InRelease; PICC
        /// parameter FF; a SHARED connect with the card: status, SELECT, Get UID, Direct Transmit
        /// GetFirmwareVersion through SCardTransmit; the card removed, the next transmit and status;
        /// a SHARED connect without a card; the target role answering an Android terminal (docs/cases.md P10).
        static func runScript(on path: DifferentialPath) throws -> [String] {
            let buffer = try TranscriptBuffer(header: TranscriptHeader(fields: [.init(key: "reader", value: readerName)]))
            let recorder = TranscriptRecorder(sink: buffer, clock: { .zero })
            func connect(_ share: ShareMode, _ protocols: ProtocolSet) throws -> (any DifferentialConnection)? {
                do {
                    let connection = try path.connect(share, protocols)
                    let attributes: [TranscriptAttribute] = [
                        TranscriptAttribute("share", String(describing: share)),
                        TranscriptAttribute("protocol", protocolName(connection.activeProtocolValue)),
                    ]
                    try recorder.recordEvent(.connected, attributes)
                    return connection
                } catch {
                    // A `!` line answers a command; a failed connect is an event with its error.
                    try recorder.recordEvent(.connected, [TranscriptAttribute("share", String(describing: share)),
                                                          TranscriptAttribute("error", errorName(error))])
                    return nil
                }
            }
            func mustConnect(_ share: ShareMode, _ protocols: ProtocolSet) throws -> any DifferentialConnection {
                guard let connection = try connect(share, protocols) else {
                    let last = buffer.transcript.lines.last?.record?.serialized() ?? "nothing recorded"
                    throw DifferentialScriptError(description: "the \(share) connection failed: \(last)")
                }
                return connection
            }
            func recordStatus(_ connection: any DifferentialConnection) throws {
                do {
                    let status = try connection.statusValues()
                    let attributes: [TranscriptAttribute] = [
                        TranscriptAttribute("state", String(status.state & 0xFFFF, radix: 16)),
                        TranscriptAttribute("protocol", protocolName(status.protocolValue)),
                        TranscriptAttribute("atr", hexText(status.atr)),
                    ]
                    try recorder.recordEvent(.stateChanged, attributes)
                } catch {
                    try recorder.recordEvent(.stateChanged, [TranscriptAttribute("error", errorName(error))])
                }
            }

            do {
                try runSteps()
            } catch {
                // A unit that refuses a step (escape commands disabled, say) ends the script on
                // both paths alike: the error is part of what is compared.
                try recorder.recordComment("script stopped: \(errorName(error))")
            }

            var lines: [String] = []
            for line in buffer.transcript.lines {
                switch line {
                case .record(let record): lines.append(record.serialized())
                case .comment(let text): lines.append("; " + text)
                case .blank: lines.append("")
                }
            }
            return lines

          func runSteps() throws {
            // The reader without a card, through escape commands.
            let direct = try mustConnect(.direct, [])
            let directChannel = RecordingChannel(wrapping: direct, recorder: recorder)
            _ = try directChannel.control(code: PCSCConstants.getFeatureRequest, [])
            let link = try ACR122Link.open(channel: directChannel, readerName: readerName)
            let chip = PN532(link: link)
            _ = try chip.send(PN532.GetFirmwareVersion())
            _ = try link.piccOperatingParameter()
            _ = try link.setPICCOperatingParameter([])
            _ = try directChannel.control(code: link.escapeCode, hex("FF 00 40 0F 04 00 00 00 00"))

            // The initiator role against a placed ISO 14443-4 card (no automatic polling: pcscd
            // sees no card, so nothing powers it behind the script's back).
            try path.control.send("place-card uid=\"04 A1 B2 C3\" ats=\"06 75 77 81 02 80\" applet=echo id=diff-card")
            try recorder.recordEvent(.cardInserted, [TranscriptAttribute("uid", "04 A1 B2 C3")])
            guard let target = try chip.pollISO14443A() else {
                throw DifferentialScriptError(description: "InListPassiveTarget found no card")
            }
            _ = try chip.exchangeAPDU(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), target: target.logicalNumber)
            try chip.release()
            _ = try link.setPICCOperatingParameter(.factoryDefault)
            try direct.end()
            try recorder.recordEvent(.disconnected)

            // The card through SCardTransmit.
            try path.waitForCard(true)
            let card = try mustConnect(.shared, .any)
            let cardChannel = RecordingChannel(wrapping: card, recorder: recorder)
            try recordStatus(card)
            _ = try cardChannel.transmit(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
            _ = try cardChannel.transmit(hex("FF CA 00 00 00"))
            _ = try cardChannel.transmit(hex("FF 00 00 00 02 D4 02"))
            try path.control.send("remove peer=diff-card")
            try recorder.recordEvent(.cardRemoved)
            try path.waitForCard(false)
            _ = try? cardChannel.transmit(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
            try recordStatus(card)
            try card.end()
            try recorder.recordEvent(.disconnected)
            _ = try connect(.shared, .any)

            // The target role answering an Android terminal (docs/cases.md P10).
            try path.control.send("place-terminal script=android-t4t-read id=diff-phone")
            let emulating = try mustConnect(.direct, [])
            let emulationChip = PN532(link: try ACR122Link.open(
                channel: RecordingChannel(wrapping: emulating, recorder: recorder), readerName: readerName))
            try emulationChip.prepareForCardEmulation()
            _ = try emulationChip.initAsTarget(uid: try EmulatedUID([0x08, 0x12, 0x34, 0x56]))
            for _ in 0..<16 {
                guard case .command(let apdu) = try emulationChip.receiveCommand() else { break }
                let answer: [UInt8] = type4FullURIRead.first(where: { $0.command == apdu })?.response ?? hex("6D 00")
                _ = try emulationChip.sendResponse(answer)
            }
            try emulationChip.release()
            try emulationChip.restoreReaderDefaults()
            try emulating.end()
            let result = try path.control.send("terminal-result peer=diff-phone wait-ms=5000")
            try recorder.recordComment("terminal \(result["result"] ?? "?") after \(result["exchanges"] ?? "?") exchanges")
          }
        }

        /// The script on pcscd's reader A and on an in-process reader, both as `personality`
        /// (the default when nil); the first line that differs is an issue.
        static func compare(personality: String?) async throws -> [String] {
            let environment = try await resetSimulatedReaders()
            // Reader B shares reader A's field: without automatic polling it neither takes the card
            // nor activates A's emulation.
            let (readerA, readerB) = (environment.simulatedReaderA, environment.simulatedReaderB)
            try await blocking { try stopAutomaticPolling(on: readerB) }
            if let personality { try SimulatedReaders.controlA.send("personality name=\(personality)") }
            let reference = try await blocking { try Self.runScript(on: PcscdPath(reader: readerA)) }
            _ = try await resetSimulatedReaders()

            let directory = "/tmp/secbridge-diff.\(getpid())"
            try? FileManager.default.removeItem(atPath: directory)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let readers = InProcessReaders()
            defer { readers.close() }
            let option = personality.map { ":personality=\($0)" } ?? ""
            let inProcess = try await blocking {
                let reader = try readers.createChannel(deviceName: directory + "/a:field=differential" + option, waitingUpTo: .seconds(300))
                return try Self.runScript(on: InProcessPath(readers: readers, reader: reader, control: SimulatedReaderControl(socketPath: directory + "/a/control.sock")))
            }
            for index in 0..<max(reference.count, inProcess.count) {
                let want = index < reference.count ? reference[index] : "(end)"
                let got = index < inProcess.count ? inProcess[index] : "(end)"
                guard want == got else {
                    Issue.record("\(personality ?? "default"): line \(index + 1) differs:\n pcscd:      \(want)\n in-process: \(got)")
                    break
                }
            }
            return reference
        }

        @Test func oneScriptGivesTheSameTranscriptThroughPcscdAndInProcess() async throws {
            let reference = try await Self.compare(personality: nil)
            #expect(reference.count > 40)  // the script ran to its end on the reference path
            #expect(reference.last == "; terminal passed after 6 exchanges")
        }

        // The unit personalities (issue 27 item 4: one differential test for the family): each
        // gives the same transcript on both paths, so that the in-process tests of a personality
        // stand for what pcscd shows. One test each, so that none runs for seconds. Left out: the
        // clone and the Touchatag, whose PC/SC side differs by design (the clone never reports the
        // card, the Touchatag always reports its pseudo-card), which the script's pcscd path could
        // only find out by waiting its 5 s bound; UnitVariantEndToEndTests covers both through pcscd.

        @Test func escapeCommandsDisabledGiveTheSameTranscriptOnBothPaths() async throws {
            let reference = try await Self.compare(personality: "ccid-escape-disabled")
            #expect(reference.contains { $0.hasPrefix("; script stopped: ") }, "\(reference)")
        }

        @Test func acsccidsEscapeCodeGivesTheSameTranscriptOnBothPaths() async throws {
            let reference = try await Self.compare(personality: "acs-driver")
            #expect(reference.last == "; terminal passed after 6 exchanges", "\(reference)")
        }

        @Test func aT0UnitGivesTheSameTranscriptOnBothPaths() async throws {
            let reference = try await Self.compare(personality: "legacy-t0")
            #expect(reference.contains { $0.contains("< 61 ") }, "the T=0 unit's 61 xx: \(reference)")
        }

        @Test func firmware215GivesTheSameTranscriptOnBothPaths() async throws {
            let reference = try await Self.compare(personality: "acr122u215")
            #expect(reference.last == "; terminal passed after 6 exchanges", "\(reference)")
        }
    }
}

/// Waits (at most 5 s, blocking) until pcscd reports a card in `reader` (or none).
func waitForCardBlocking(in reader: String, present: Bool) throws {
    let context = try PCSCContext()
    var states = [ReaderState(readerName: reader)]
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(5)
    _ = try context.getStatusChange(&states, timeout: .zero)
    while states[0].eventFlags.contains(.present) != present {
        let remaining = deadline - clock.now
        guard remaining > .zero else {
            throw SimulatedReaderError(code: "timeout", reason: "\(reader): card \(present ? "never appeared" : "never left") within 5 s")
        }
        states[0].acknowledge()
        // False when the timeout passed: the loop then ends at the deadline check.
        _ = try context.getStatusChange(&states, timeout: remaining)
    }
}
