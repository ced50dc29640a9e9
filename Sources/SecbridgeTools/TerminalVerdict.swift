import ACR122Simulator
import ISO7816
import NFCTags
import Foundation
import PCSCCore
import PCSCSandbox
import PN53x
import SecbridgeCLI
import SecureElementCredential

/// What a terminal did with an emulated credential, as the emulating host sees it — on real
/// hardware as on the simulator: how many APDUs, and for an NFC Forum Type 4 Tag whether the NDEF
/// file was read to the end (every byte of NLEN + message answered 90 00 to a READ BINARY while
/// the NDEF file was selected).
///
/// When the NDEF file was not read to the end, the tag is also run, offline, through the model of
/// Android's reader (``AndroidType4Reader``, docs/terminal-models.md §1) to say whether and where
/// Android would refuse it.
struct TerminalVerdict: Sendable {
    /// One line for `emulate`'s output and the transcript, starting "terminal: ".
    var line: String
    /// Further lines (the Android model's verdict), each indented by two spaces.
    var details: [String]
    /// False when a tag was not read to the end, or no terminal sent anything.
    var succeeded: Bool
    /// How many C-APDUs terminals sent.
    var exchangeCount = 0

    /// - Parameter activationStarts: the index in `exchanges` where each activation's C-APDUs
    ///   begin (ascending); with more than one, a detail line per activation says what it did.
    static func evaluate(
        _ exchanges: [(command: [UInt8], response: [UInt8])], credential: Credential, activationStarts: [Int] = [0]
    ) async -> TerminalVerdict {
        var verdict = await judge(exchanges, credential: credential)
        verdict.exchangeCount = exchanges.count
        let starts = activationStarts.filter { $0 < exchanges.count }
        if starts.count > 1 {
            let ends = Array(starts.dropFirst()) + [exchanges.count]
            let lines = zip(starts, ends).enumerated().map { index, range in
                "  activation \(index + 1): " + activationSummary(Array(exchanges[range.0..<range.1]), credential: credential)
            }
            verdict.details = lines + verdict.details
        }
        return verdict
    }

    /// One activation's C-APDUs in a few words: how many, and for a Type 4 Tag whether the NDEF
    /// file was read to the end in it, or where it stopped.
    private static func activationSummary(_ exchanges: [(command: [UInt8], response: [UInt8])], credential: Credential) -> String {
        let count = "\(exchanges.count) APDU\(exchanges.count == 1 ? "" : "s")"
        guard let tag = type4Tag(credential), let last = exchanges.last else { return count }
        let (covered, wrote) = coverage(exchanges, ndefFileID: tag.capabilityContainer.ndefFileID, size: ndefSize(tag))
        if wrote { return count + "; the NDEF file was written" }
        if covered.allSatisfy({ $0 }) { return count + "; the NDEF file was read to the end" }
        return count + "; stopped after \(last.command.hexString) → \(last.response.hexString)"
    }

    /// Whether the C-APDUs so far stopped in the middle of reading the NDEF message: part of the
    /// message after NLEN was read, not all of it (in any activation), nothing was written, and
    /// the last answer was 90 00 — the reader refused nothing, it went away (field loss). A phone
    /// that does so usually comes back while it is still held near (docs/terminal-models.md §6.1).
    /// A reader that stops right after NLEN is not counted: a writer refusing a read-only tag
    /// stops there too.
    static func stoppedMidRead(_ exchanges: [(command: [UInt8], response: [UInt8])], credential: Credential) -> Bool {
        guard let tag = type4Tag(credential), let last = exchanges.last, last.response.suffix(2) == [0x90, 0x00] else { return false }
        let (covered, wrote) = coverage(exchanges, ndefFileID: tag.capabilityContainer.ndefFileID, size: ndefSize(tag))
        return !wrote && covered.count > 2 && covered[2...].contains(true) && !covered.allSatisfy { $0 }
    }

    /// Whether the C-APDUs so far (any activations) read the NDEF file to the end (NLEN and the
    /// whole message answered 90 00 while the file was selected) or wrote it: the terminal is done
    /// with the tag. False for a credential that is no Type 4 Tag.
    static func readToTheEndOrWritten(_ exchanges: [(command: [UInt8], response: [UInt8])], credential: Credential) -> Bool {
        guard let tag = type4Tag(credential) else { return false }
        let (covered, wrote) = coverage(exchanges, ndefFileID: tag.capabilityContainer.ndefFileID, size: ndefSize(tag))
        return wrote || covered.allSatisfy { $0 }
    }

    /// Whether the credential presents an NFC Forum Type 4 Tag.
    static func isType4Tag(_ credential: Credential) -> Bool { type4Tag(credential) != nil }

    private static func type4Tag(_ credential: Credential) -> Type4TagApplet? {
        (credential.secureElement as? HostSecureElement)?.applets.lazy.compactMap { $0 as? Type4TagApplet }.first
    }

    /// NLEN + the message: the bytes a complete read returns.
    private static func ndefSize(_ tag: Type4TagApplet) -> Int {
        let file = tag.ndefFileContents
        let nlen = file.count >= 2 ? Int(file[0]) << 8 | Int(file[1]) : 0
        return min(file.count, 2 + nlen)
    }

    private static func judge(_ exchanges: [(command: [UInt8], response: [UInt8])], credential: Credential) async -> TerminalVerdict {
        let count = "\(exchanges.count) APDU\(exchanges.count == 1 ? "" : "s")"
        guard !exchanges.isEmpty else {
            return TerminalVerdict(line: "terminal: no APDUs (no terminal read the credential)", details: [], succeeded: false)
        }
        let tag = (credential.secureElement as? HostSecureElement)?.applets.lazy.compactMap { $0 as? Type4TagApplet }.first
        guard let tag else { return judgeLastAnswer(exchanges, count: count) }
        let file = tag.ndefFileContents
        let nlen = file.count >= 2 ? Int(file[0]) << 8 | Int(file[1]) : 0
        let wanted = min(file.count, 2 + nlen)
        let (covered, wroteNLEN) = coverage(exchanges, ndefFileID: tag.capabilityContainer.ndefFileID, size: wanted)
        if wroteNLEN {
            return TerminalVerdict(
                line: "terminal: \(count); the terminal wrote the NDEF file (NLEN now \(nlen))", details: [], succeeded: true)
        }
        if covered.allSatisfy({ $0 }) {
            return TerminalVerdict(
                line: "terminal: \(count); the NDEF file was read to the end (NLEN \(nlen), \(wanted) bytes)", details: [], succeeded: true)
        }
        let last = exchanges[exchanges.count - 1]
        let line = "terminal: \(count); the NDEF file was NOT read to the end: the terminal stopped after \(SecretDisplay.masked.text(last.command)) → \(SecretDisplay.masked.text(response: last.response, answering: last.command))"
        return TerminalVerdict(line: line, details: await androidVerdict(tag), succeeded: false)
    }

    /// A credential that is no Type 4 Tag (declarative applets, a transcript, a relayed card): the
    /// host cannot see what the terminal concluded, only where it stopped. It succeeded when its
    /// last command got a normal-processing answer (90 00 or 61 XX, ISO/IEC 7816-4 §5.1.3); a
    /// last answer that is a warning or an error (63 00 to EXTERNAL AUTHENTICATE, 6A 82 to a
    /// SELECT) is the step the terminal failed at.
    private static func judgeLastAnswer(_ exchanges: [(command: [UInt8], response: [UInt8])], count: String) -> TerminalVerdict {
        let last = exchanges[exchanges.count - 1]
        let status = last.response.count >= 2
            ? StatusWord(sw1: last.response[last.response.count - 2], sw2: last.response[last.response.count - 1]) : nil
        if status?.category == .normal {
            return TerminalVerdict(line: "terminal: \(count)", details: [], succeeded: true)
        }
        let why = status.map { "\($0.category.rawValue): \($0.meaning)" } ?? "no status word"
        let line = "terminal: \(count); the terminal stopped after \(SecretDisplay.masked.text(last.command)) → \(SecretDisplay.masked.text(response: last.response, answering: last.command)) (\(why))"
        return TerminalVerdict(line: line, details: [], succeeded: false)
    }

    /// Which bytes of the NDEF file's first `size` bytes a successful READ BINARY returned while
    /// that file was selected, and whether the last successful UPDATE BINARY of the file set a
    /// non-zero NLEN (a completed NDEF write: NLEN 0000, the message, NLEN).
    ///
    /// A READ BINARY answered `61 XX` (data + "XX more bytes", ISO/IEC 7816-4 §5.1.3: the
    /// emulation's split of an answer longer than one TgSetData frame) succeeds when the terminal
    /// follows it with GET RESPONSE (`00 C0 00 00 Le`) to a final 90 00: the bytes of the whole
    /// chain count from the READ BINARY's offset. A chain the terminal leaves, or that ends in an
    /// error, counts for nothing, as the phone gives up the read.
    private static func coverage(_ exchanges: [(command: [UInt8], response: [UInt8])], ndefFileID: UInt16, size: Int) -> ([Bool], Bool) {
        var covered = [Bool](repeating: false, count: size)
        var wroteNLEN = false
        var selected: UInt16?
        // A READ BINARY of the NDEF file answered 61 XX: its offset and the data bytes so far.
        var chain: (offset: Int, count: Int)?
        func cover(_ offset: Int, _ count: Int) {
            for i in offset..<offset + count where i < size { covered[i] = true }
        }
        for (command, response) in exchanges where command.count >= 4 && response.count >= 2 {
            let ok = response.suffix(2) == [0x90, 0x00]
            let more = response[response.count - 2] == 0x61
            let data = response.count - 2
            if command[1] == 0xC0, let pending = chain {
                chain = more ? (pending.offset, pending.count + data) : nil
                if ok { cover(pending.offset, pending.count + data) }
                continue
            }
            chain = nil
            if command[1] == 0xB0, selected == ndefFileID, ok || more {
                let offset = Int(command[2] & 0x7F) << 8 | Int(command[3])
                if ok { cover(offset, data) } else { chain = (offset, data) }
                continue
            }
            guard ok else { continue }
            if command[1] == 0xA4, command[2] == 0x00, command.count >= 7, command[4] == 0x02 {
                selected = UInt16(command[5]) << 8 | UInt16(command[6])
            } else if command[1] == 0xA4 {
                selected = nil
            } else if command[1] == 0xD6, selected == ndefFileID, command.count >= 5 {
                wroteNLEN = command[2] == 0 && command[3] == 0 && command[4] == 2 && command.count == 7 && command[5...6] != [0, 0]
            }
        }
        return (covered, wroteNLEN)
    }

    /// An R-APDU as a PN532 target sends it: whole when it fits one TgSetData frame (252 bytes,
    /// docs/acr122-pn532.md §4), else its first 250 bytes + `61 XX` (the emulation's GET RESPONSE
    /// split, ISO/IEC 7816-4 §5.1.3). The offline check sees what a phone would see.
    static func throughOneFrame(_ response: [UInt8]) -> [UInt8] {
        let limit = PN532HostFrame.maximumParameterLength
        guard response.count > limit else { return response }
        let first = limit - 2
        let rest = response.count - 2 - first
        return Array(response[..<first]) + [0x61, rest >= 256 ? 0x00 : UInt8(rest)]
    }

    /// Runs the Android model against a fresh copy of the tag, through the PN532's frame limit.
    private static func androidVerdict(_ tag: Type4TagApplet) async -> [String] {
        guard let message = try? tag.currentMessage(),
              let copy = try? Type4TagApplet(name: tag.name, message: message, capabilityContainer: tag.capabilityContainer,
                                             readOnly: tag.capabilityContainer.isReadOnly)
        else { return [] }
        let element = HostSecureElement(applets: [copy])
        var lines: [String] = []
        for release in AndroidType4Reader.Release.allCases {
            var program = AndroidType4Reader(release: release)
            var action = program.start()
            var outcome: TerminalOutcome?
            for _ in 0..<512 {  // bounded: a read of 32767 bytes in chunks of 64+ takes fewer
                switch action {
                case .finish(let end): outcome = end
                case .send(let command):
                    let response = Self.throughOneFrame((try? await element.transceive(command)) ?? [0x6F, 0x00])
                    action = program.receive(response)
                    continue
                }
                break
            }
            switch outcome {
            case .failed(let stage, let reason, _)?:
                lines.append("  Android (\(release.sourceTag) rules) refuses this tag at \(stage): \(reason)")
            case .completed?:
                lines.append("  Android (\(release.sourceTag) rules) reads this tag")
            default:
                continue
            }
        }
        return lines
    }
}

/// The simulated terminals' own verdicts, when the reader is a secbridge simulated ACR122U: its
/// driver names its control socket (``PCSCAttribute/simulatorControlSocket``), whose
/// `terminal-result` says how each terminal in the field that activated a target ended
/// (docs/terminal-models.md). A real reader refuses the attribute: nil.
enum SimulatedTerminals {
    /// One line per terminal that ran ("simulated terminal phone (…): failed at capability
    /// container check: …"), and whether any failed; nil when the reader is not simulated.
    static func verdicts(reader: String, client: any PCSCClient) -> (lines: [String], failed: Bool)? {
        guard let socket = controlSocket(reader: reader, client: client) else { return nil }
        let control = SimulatedReaderControl(socketPath: socket)
        guard let peers = try? control.send("peers", timeout: .seconds(2)), let list = peers["list"] else { return nil }
        var lines: [String] = []
        var failed = false
        for entry in list.components(separatedBy: "; ") {
            guard let colon = entry.firstIndex(of: ":"), entry[colon...].contains("external terminal") else { continue }
            let id = String(entry[..<colon])
            let name = entry[entry.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard let reply = try? control.send("terminal-result peer=\(id) wait-ms=2000", timeout: .seconds(4)),
                  let result = reply["result"], reply["activations"] != "0" || result == "ignored"
            else { continue }
            var line = "simulated \(name) [\(id)]: \(result)"
            switch result {
            case "passed": line += reply["read"].map { ": \($0)" } ?? ""
            case "failed":
                failed = true
                line += " at \(reply["stage"] ?? "?"), exchange \(reply["step"] ?? "?"): \(reply["reason"] ?? "")"
            case "mismatch":
                failed = true
                line += " at step \(reply["step"] ?? "?"): expected \(reply["expected"] ?? ""), got \(reply["actual"] ?? "")"
            case "target-left", "left-field":
                failed = true
                line += " at step \(reply["step"] ?? "?")"
            case "ignored":
                // A peer-to-peer initiator that found no NFC-DEP target: no failure of the emulation.
                line += ": \(reply["reason"] ?? "")"
            default:
                break
            }
            lines.append(line)
            // A phone that left and came back, or tapped again: what each activation did.
            if let results = reply["activation-results"], (Int(reply["activations"] ?? "") ?? 0) > 1 {
                lines += results.components(separatedBy: "; ").map { "  activation " + $0 }
            }
        }
        return (lines, failed)
    }

    private static func controlSocket(reader: String, client: any PCSCClient) -> String? {
        guard let context = try? client.establishContext() else { return nil }
        defer { try? context.release() }
        guard let handle = try? context.connect(to: reader, share: .direct, protocols: .undefined) else { return nil }
        defer { try? handle.disconnect(.leave) }
        guard let bytes = try? handle.attribute(.simulatorControlSocket), !bytes.isEmpty else { return nil }
        let path = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        return path.hasPrefix("/") ? path : nil
    }
}
