import ISO7816
import PCSC
import NFCTags
import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// An NTAG213 or a MIFARE Classic 1K behind PC/SC part 3 pseudo-APDUs, in memory (enough for
/// `read` and `write-ndef`; the full fake is in SecureElementCredentialTests).
final class PseudoAPDUCard: CardChannel {
    var pages: [UInt8]
    var classicKey: [UInt8]?
    var log: [[UInt8]] = []
    /// The GET_VERSION answer (NTAG213 unless set); nil: the tag stays silent (D5 43 01).
    var version: [UInt8]? = [0x00, 0x04, 0x04, 0x02, 0x01, 0x00, 0x0F, 0x03]
    /// After this many commands, every transmit throws `PCSCError.unresponsiveCard` (the card taken away).
    var failAfter: Int?
    /// A MIFARE Ultralight goes back to IDLE after a command it does not know (GET_VERSION) and
    /// ignores everything until it is selected again: the reader then answers 63 00.
    var haltsAfterUnknownCommand = false
    var halted = false
    private var loaded: [UInt8]?
    private var sector: Int?
    init(pages: [UInt8], classicKey: [UInt8]? = nil) {
        self.pages = pages
        self.classicKey = classicKey
    }
    var transmissionProtocol: TransmissionProtocol { .t1 }
    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] { [0x6A, 0x81] }
    func transmit(_ c: [UInt8]) throws -> [UInt8] {
        if let failAfter, log.count >= failAfter { throw PCSCError.unresponsiveCard }
        log.append(c)
        if halted { return [0x63, 0x00] }
        switch c[1] {
        case 0x00 where classicKey == nil && c == [0xFF, 0x00, 0x00, 0x00, 0x03, 0xD4, 0x42, 0x60]:
            if version == nil && haltsAfterUnknownCommand { halted = true }
            return version.map { [0xD5, 0x43, 0x00] + $0 + [0x90, 0x00] } ?? [0xD5, 0x43, 0x01, 0x90, 0x00]
        case 0xCA: return [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x90, 0x00]
        case 0x82:
            loaded = Array(c[5...])
            return [0x90, 0x00]
        case 0x86:
            guard loaded == classicKey else { return [0x63, 0x00] }
            sector = Int(c[7]) / 4
            return [0x90, 0x00]
        case 0xB0:
            if classicKey != nil {
                guard sector == Int(c[3]) / 4 else { return [0x63, 0x00] }
                return Array(pages[Int(c[3]) * 16..<Int(c[3]) * 16 + 16]) + [0x90, 0x00]
            }
            guard Int(c[3]) * 4 + Int(c[4]) <= pages.count else { return [0x63, 0x00] }  // beyond the memory: NAK
            return Array(pages[Int(c[3]) * 4..<Int(c[3]) * 4 + Int(c[4])]) + [0x90, 0x00]
        case 0xD6:
            guard Int(c[3]) * 4 + 4 <= pages.count else { return [0x63, 0x00] }
            for k in 0..<4 { pages[Int(c[3]) * 4 + k] = c[5 + k] }
            return [0x90, 0x00]
        default: return [0x6A, 0x81]
        }
    }
}

private func bytes(_ text: String) -> [UInt8] { text.split(separator: " ").map { UInt8($0, radix: 16)! } }

private let ultralightATR = bytes("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68")
private let classic1KATR = bytes("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A")

private func ntag213(_ data: String, cc: String = "E1 10 12 00", lock: String = "00 00") -> [UInt8] {
    var memory = bytes("04 A1 B2 9F C3 D4 E5 F6 A4 48 \(lock) \(cc)") + bytes(data)
    memory += [UInt8](repeating: 0, count: 45 * 4 - memory.count)
    return memory
}

/// A MIFARE Ultralight (16 pages, CC E1 10 06 00: 48 data bytes; NXP MF0ICU1 data sheet).
private func ultralight(_ data: String, cc: String = "E1 10 06 00") -> [UInt8] {
    var memory = bytes("04 A1 B2 9F C3 D4 E5 F6 A4 48 00 00 \(cc)") + bytes(data)
    memory += [UInt8](repeating: 0, count: 16 * 4 - memory.count)
    return memory
}

@Suite struct UltralightWriteTests {
    /// https://example.com as TLV: 03 10 D1 01 0C 55 04 "example.com" FE (docs/iso14443-t4t-ndef.md §5–§6).
    static let exampleTLV = bytes("03 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D FE")

    func write(_ card: PseudoAPDUCard, _ uri: String, reactivate: @escaping () throws -> Void) throws -> [String] {
        var lines: [String] = []
        _ = try SecbridgeCLI.writeNDEF(
            message: try NDEFMessage(records: [.uri(uri)]), channel: card, atr: ultralightATR, reader: "R",
            out: { lines.append($0) }, reactivate: reactivate, confirm: { _ in true })
        return lines
    }

    @Test func aTagMuteAfterGETVERSIONIsSelectedAgainAndWritten() throws {
        let card = PseudoAPDUCard(pages: ultralight("03 00 FE 00"))
        card.version = nil
        card.haltsAfterUnknownCommand = true
        var reactivations = 0
        let lines = try write(card, "https://example.com") {
            reactivations += 1
            card.halted = false
        }
        #expect(reactivations == 1)
        #expect(lines.contains { $0.hasPrefix("note: the tag did not answer GET_VERSION") })
        #expect(Array(card.pages[16..<(16 + Self.exampleTLV.count)]) == Self.exampleTLV)
    }

    @Test func aCapabilityContainerClaimingMoreThanAnUltralightHoldsIsRefusedWithNothingWritten() throws {
        // CC raised to FF (2040 bytes claimed); the Ultralight has pages 0–15 and answers READ of
        // page 16 and beyond with a NAK.
        let card = PseudoAPDUCard(pages: ultralight("03 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D FE", cc: "E1 10 FF 00"))
        card.version = nil
        let before = card.pages
        let long = "https://example.com/" + String(repeating: "a", count: 60)
        #expect {
            _ = try write(card, long) {}
        } throws: { error in
            guard case .failure(let message) = error as? CLIError else { return false }
            // 80 bytes of TLV (77-byte record + 03 4D + FE): pages 4–23.
            return message.contains("the message needs pages 4–23, but the tag does not answer a read of page 23 (63 00)")
                && message.contains("nothing was written")
        }
        #expect(card.pages == before)
        #expect(!card.log.contains { $0.count > 1 && $0[1] == 0xD6 }, "no Update Binary was sent")
    }
}

@Suite struct StorageCardCommandTests {
    @Test func readType2TagShowsCardUIDAndNDEF() throws {
        let card = PseudoAPDUCard(pages: ntag213("03 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D FE"))
        var lines: [String] = []
        let request = try SecbridgeCLI.StorageReadRequest(ParsedArguments(values: [:]))
        let status = try SecbridgeCLI.readStorageCard(channel: card, atr: ultralightATR, reader: "R", request: request) { lines.append($0) }
        #expect(status == 0)
        #expect(lines.first == "reader: R")
        // The model from GET_VERSION (NTAG213: storage size 0F), asked after the reads.
        #expect(lines.contains("card: NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03; PC/SC part 3 name 00 03, ISO/IEC 14443 A, part 3)"))
        #expect(card.log.last == bytes("FF 00 00 00 03 D4 42 60"))
        #expect(lines.contains("UID 04 A1 B2 C3 D4 E5 F6"))
        #expect(lines.contains("capability container: E1 10 12 00 (version 1.0, 144 data bytes, read/write)"))
        #expect(lines.last == "NDEF record 1: URI https://example.com")
    }

    @Test func readClassicWithoutKeySaysWhichOptionToAdd() throws {
        let card = PseudoAPDUCard(pages: [UInt8](repeating: 0, count: 1024), classicKey: bytes("FF FF FF FF FF FF"))
        var lines: [String] = []
        let request = try SecbridgeCLI.StorageReadRequest(ParsedArguments(values: [:]))
        _ = try SecbridgeCLI.readStorageCard(channel: card, atr: classic1KATR, reader: "R", request: request) { lines.append($0) }
        #expect(lines.last == "note: MIFARE Classic 1K blocks are behind sector keys: add --key HEX12 (key A; --key-b for key B) and --blocks N[-M] to read them")
    }

    @Test func readClassicBlocksNeverShowsTheKey() throws {
        var memory = [UInt8](repeating: 0x41, count: 1024)
        for k in 0..<16 { memory[7 * 16 + k] = bytes("00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5")[k] }
        let card = PseudoAPDUCard(pages: memory, classicKey: bytes("A0 A1 A2 A3 A4 A5"))
        var lines: [String] = []
        let request = try SecbridgeCLI.StorageReadRequest(ParsedArguments(values: ["key": "A0A1A2A3A4A5", "blocks": "6-7"]))
        _ = try SecbridgeCLI.readStorageCard(channel: card, atr: classic1KATR, reader: "R", request: request) { lines.append($0) }
        let text = lines.joined(separator: "\n")
        #expect(text.contains("> FF 82 00 00 06 [REDACTED 6]"))
        #expect(text.contains("block   6 (sector  1): 41 41 41 41 41 41 41 41 41 41 41 41 41 41 41 41  |AAAAAAAAAAAAAAAA|"))
        #expect(text.contains("block   7 (sector  1, trailer): 00 00 00 00 00 00 FF 07 80 69 [REDACTED 6]"))
        #expect(!text.contains("A0 A1"))
        #expect(!text.contains("B0 B1"))
    }

    @Test func writeNDEFWritesPagesAndRefusesOtherCards() throws {
        let card = PseudoAPDUCard(pages: ntag213("03 00 FE"))
        var lines: [String] = []
        let message = try SecbridgeCLI.writeNDEFMessage(ParsedArguments(values: ["uri": "https://example.com"]))
        let status = try SecbridgeCLI.writeNDEF(message: message, channel: card, atr: ultralightATR, reader: "R", out: { lines.append($0) }, confirm: { _ in true })
        #expect(status == 0)
        #expect(card.log.contains(bytes("FF D6 00 04 04 03 10 D1 01")))
        #expect(card.log.contains(bytes("FF D6 00 08 04 6F 6D FE 00")))
        #expect(lines.contains("wrote 19 bytes (16 bytes of NDEF) to pages 4–8 and read them back"))
        #expect(throws: CLIError.self) {
            try SecbridgeCLI.writeNDEF(message: message, channel: card, atr: classic1KATR, reader: "R", out: { _ in }, confirm: { _ in true })
        }
        let declined = PseudoAPDUCard(pages: ntag213("03 00 FE"))
        #expect(throws: CLIError.self) {
            try SecbridgeCLI.writeNDEF(message: message, channel: declined, atr: ultralightATR, reader: "R", out: { _ in }, confirm: { _ in false })
        }
        #expect(!declined.log.contains { $0[1] == 0xD6 }, "nothing written when not confirmed")
    }

    @Test func writeNDEFUsageErrors() {
        #expect(run(["write-ndef"]).status == 64)
        #expect(run(["write-ndef", "--uri", "https://a", "--text", "b"]).status == 64)
        #expect(run(["write-ndef", "--uri", "https://a", "--lang", "de"]).status == 64)
    }

    @Test(arguments: [
        (["--text", "Hello", "--lang", ""], "--lang is empty: give a language code such as en or de-CH"),
        (["--uri", ""], "--uri is empty: give the URI to write, e.g. https://example.com"),
        (["--uri", "https://example.com/\na"], "--uri contains a control character (U+000A): give it on one line without control characters"),
        (["--text", "Hello\nWorld"], "--text contains a control character (U+000A): give it on one line without control characters"),
        (["--text", "Hello\u{7F}"], "--text contains a control character (U+007F): give it on one line without control characters"),
        (["--text", "Hi", "--lang", "e\tn"], "--lang contains a control character (U+0009): give it on one line without control characters"),
    ])
    func writeNDEFRefusesEmptyAndControlCharacters(_ arguments: [String], _ message: String) {
        let result = run(["write-ndef"] + arguments)
        #expect(result.status == 64)
        #expect(result.err.contains(message), "\(result.err)")
    }

    @Test func readNamesTheModelOrSaysWhyNot() throws {
        let card = PseudoAPDUCard(pages: ntag213("03 00 FE"))
        card.version = nil
        var lines: [String] = []
        let request = try SecbridgeCLI.StorageReadRequest(ParsedArguments(values: [:]))
        _ = try SecbridgeCLI.readStorageCard(channel: card, atr: ultralightATR, reader: "R", request: request) { lines.append($0) }
        #expect(lines.contains("card: MIFARE Ultralight (PC/SC part 3 name 00 03, ISO/IEC 14443 A, part 3)"))
        #expect(lines.contains("note: the tag did not answer GET_VERSION (PN532 status 01; > FF 00 00 00 03 D4 42 60, < D5 43 01 90 00); a MIFARE Ultralight does not know the command: the model is not known; going by the capability container"))
    }

    @Test func writeNDEFShowsTheModelAndRefusesACCThatClaimsMoreThanIt() throws {
        let message = try SecbridgeCLI.writeNDEFMessage(ParsedArguments(values: ["uri": "https://example.com"]))
        let good = PseudoAPDUCard(pages: ntag213("03 00 FE"))
        var lines: [String] = []
        _ = try SecbridgeCLI.writeNDEF(message: message, channel: good, atr: ultralightATR, reader: "R", out: { lines.append($0) }, confirm: { _ in true })
        #expect(lines.contains("card: NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03; PC/SC part 3 name 00 03, ISO/IEC 14443 A, part 3)  UID 04 A1 B2 C3 D4 E5 F6"))

        let claimsFF = PseudoAPDUCard(pages: ntag213("03 00 FE", cc: "E1 10 FF 00"))
        var asked = false
        do {
            _ = try SecbridgeCLI.writeNDEF(message: message, channel: claimsFF, atr: ultralightATR, reader: "R", out: { _ in }, confirm: { _ in asked = true; return true })
            Issue.record("expected a refusal")
        } catch let error as CLIError {
            #expect(error.message.hasPrefix("the capability container claims a data area of 2040 bytes (SIZE FF × 8), but the tag is an NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03) with 144 bytes of user memory (pages 4–39)"), "\(error.message)")
        }
        #expect(!asked, "refused before asking")
        #expect(!claimsFF.log.contains { $0[1] == 0xD6 }, "nothing written")
    }

    struct RefusalVector: Sendable {
        var memory: [UInt8]
        var uri: String
        var start: String
    }

    /// Every refusal comes before the prompt, and no error starts with a code name.
    @Test(arguments: [
        RefusalVector(memory: ntag213("03 00 FE", cc: "E1 10 12 0F"), uri: "https://example.com", start: "the tag is read-only: its capability container's access byte is 0F"),
        RefusalVector(memory: ntag213("03 00 FE", lock: "F0 00"), uri: "https://example.com", start: "pages 4, 5, 6, 7 are locked by the static lock bits (page 2 bytes 2–3: F0 00) and the message needs pages 4–8; nothing was written"),
        RefusalVector(memory: ntag213("03 00 FE"), uri: "https://example.com/" + String(repeating: "x", count: 200), start: "the message needs 220 bytes"),
    ])
    func writeNDEFChecksEverythingBeforeAsking(_ v: RefusalVector) throws {
        let card = PseudoAPDUCard(pages: v.memory)
        let message = try SecbridgeCLI.writeNDEFMessage(ParsedArguments(values: ["uri": v.uri]))
        var asked = false
        do {
            _ = try SecbridgeCLI.writeNDEF(message: message, channel: card, atr: ultralightATR, reader: "R", out: { _ in }, confirm: { _ in asked = true; return true })
            Issue.record("expected a refusal")
        } catch let error as CLIError {
            #expect(error.message.hasPrefix(v.start), "\(error.message)")
        }
        #expect(!asked)
        #expect(!card.log.contains { $0[1] == 0xD6 })
    }

    @Test func writeNDEFFailureSaysWhatTheTagHolds() throws {
        let card = PseudoAPDUCard(pages: ntag213("03 00 FE"))
        card.failAfter = 7  // Get Data, GET_VERSION, CC, the last page (8), page 2, page 4 (empty), page 5, then the card is gone
        let message = try SecbridgeCLI.writeNDEFMessage(ParsedArguments(values: ["uri": "https://example.com"]))
        do {
            _ = try SecbridgeCLI.writeNDEF(message: message, channel: card, atr: ultralightATR, reader: "R", out: { _ in }, confirm: { _ in true })
            Issue.record("expected a failure")
        } catch let error as CLIError {
            #expect(error.message.hasPrefix("writing page 6 failed: "), "\(error.message)")
            #expect(error.message.contains("(was the card removed?)"))
            #expect(error.message.hasSuffix("; the tag now holds an empty NDEF message (03 00 FE on page 4), not the old one and not a half-written one"))
        }
        #expect(Array(card.pages[16..<20]) == bytes("03 00 FE 00"))
    }

    @Test func readKeepsWhatItReadWhenTheCardGoesAway() throws {
        var memory = [UInt8](repeating: 0x41, count: 1024)
        for k in 0..<16 { memory[7 * 16 + k] = bytes("00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5")[k] }
        for json in [false, true] {
            let card = PseudoAPDUCard(pages: memory, classicKey: bytes("A0 A1 A2 A3 A4 A5"))
            card.failAfter = 5  // Get Data, Load Keys, authenticate, block 4, block 5; block 6 fails
            var lines: [String] = []
            let request = try SecbridgeCLI.StorageReadRequest(ParsedArguments(flags: json ? ["json"] : [], values: ["key": "A0A1A2A3A4A5", "blocks": "4-7"]))
            do {
                _ = try SecbridgeCLI.readStorageCard(channel: card, atr: classic1KATR, reader: "R", request: request) { lines.append($0) }
                Issue.record("expected a failure")
            } catch let error as CLIError {
                #expect(error == .failure("the reader or card stopped answering: SCARD_W_UNRESPONSIVE_CARD (0x80100066): the card is not responding to a reset (was the card removed?); what was read before is shown"), "\(error)")
            }
            let text = lines.joined(separator: "\n")
            if json {
                #expect(text.contains("\"block\": 5"))
                #expect(text.contains("\"error\": \"the reader or card stopped answering"))
                #expect(text.contains("\"command\": \"FFB0000610\""))
                #expect(text.contains("\"error\": \"SCARD_W_UNRESPONSIVE_CARD\""), "\(text)")
            } else {
                #expect(text.contains("block   5 (sector  1): 41 41"))
                #expect(text.contains("> FF B0 00 06 10\n! SCARD_W_UNRESPONSIVE_CARD 0x80100066"), "\(text)")
            }
        }
    }

    @Test func jsonHexIsUppercaseWithoutSpacesAndRedactionIsAnObject() throws {
        var memory = [UInt8](repeating: 0x41, count: 1024)
        for k in 0..<16 { memory[7 * 16 + k] = bytes("00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5")[k] }
        let card = PseudoAPDUCard(pages: memory, classicKey: bytes("A0 A1 A2 A3 A4 A5"))
        var lines: [String] = []
        let request = try SecbridgeCLI.StorageReadRequest(ParsedArguments(flags: ["json"], values: ["key": "A0A1A2A3A4A5", "blocks": "7"]))
        _ = try SecbridgeCLI.readStorageCard(channel: card, atr: classic1KATR, reader: "R", request: request) { lines.append($0) }
        let text = lines.joined(separator: "\n")
        #expect(text.contains("\"command\": {\n        \"hex\": \"FF82000006\",\n        \"redacted\": 6\n      }"), "\(text)")
        #expect(text.contains("\"data\": {\n        \"hex\": \"000000000000FF078069\",\n        \"redacted\": 6\n      }"), "\(text)")
        #expect(!text.contains("REDACTED"))
        #expect(!text.contains("A0A1"))
        #expect(!text.contains("B0B1"))
    }

    @Test func readBlockAndKeyArgumentErrors() throws {
        let classic = PseudoAPDUCard(pages: [UInt8](repeating: 0, count: 1024), classicKey: bytes("FF FF FF FF FF FF"))
        let outside = try SecbridgeCLI.StorageReadRequest(ParsedArguments(values: ["key": "FFFFFFFFFFFF", "blocks": "60-64"]))
        #expect(throws: CLIError.usage("--blocks 60-64: block 64 is not on a MIFARE Classic 1K, which has blocks 0–63")) {
            try SecbridgeCLI.readStorageCard(channel: classic, atr: classic1KATR, reader: "R", request: outside) { _ in }
        }
        #expect(classic.log.isEmpty)
        #expect(throws: CLIError.usage("--blocks: '+5' is not a block number or a range N-M of block numbers 0–255 (e.g. 4 or 4-7)")) {
            try SecbridgeCLI.StorageReadRequest(ParsedArguments(values: ["key": "FFFFFFFFFFFF", "blocks": "+5"]))
        }
        #expect(throws: CLIError.usage("--key: a MIFARE Classic key is 12 hex digits; got 13, an odd number of hex digits")) {
            try SecbridgeCLI.StorageReadRequest(ParsedArguments(values: ["key": "FFFFFFFFFFFFF", "blocks": "4"]))
        }
    }
}
