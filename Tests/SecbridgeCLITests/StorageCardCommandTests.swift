import ISO7816
import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// An NTAG213 or a MIFARE Classic 1K behind PC/SC part 3 pseudo-APDUs, in memory (enough for
/// `read` and `write-ndef`; the full fake is in SecureElementCredentialTests).
final class PseudoAPDUCard: CardChannel {
    var pages: [UInt8]
    var classicKey: [UInt8]?
    var log: [[UInt8]] = []
    private var loaded: [UInt8]?
    private var sector: Int?
    init(pages: [UInt8], classicKey: [UInt8]? = nil) {
        self.pages = pages
        self.classicKey = classicKey
    }
    var transmissionProtocol: TransmissionProtocol { .t1 }
    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] { [0x6A, 0x81] }
    func transmit(_ c: [UInt8]) throws -> [UInt8] {
        log.append(c)
        switch c[1] {
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
            return Array(pages[Int(c[3]) * 4..<Int(c[3]) * 4 + Int(c[4])]) + [0x90, 0x00]
        case 0xD6:
            for k in 0..<4 { pages[Int(c[3]) * 4 + k] = c[5 + k] }
            return [0x90, 0x00]
        default: return [0x6A, 0x81]
        }
    }
}

private func bytes(_ text: String) -> [UInt8] { text.split(separator: " ").map { UInt8($0, radix: 16)! } }

private let ultralightATR = bytes("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68")
private let classic1KATR = bytes("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A")

private func ntag213(_ data: String) -> [UInt8] {
    var memory = bytes("04 A1 B2 9F C3 D4 E5 F6 A4 48 00 00 E1 10 12 00") + bytes(data)
    memory += [UInt8](repeating: 0, count: 45 * 4 - memory.count)
    return memory
}

@Suite struct StorageCardCommandTests {
    @Test func readType2TagShowsCardUIDAndNDEF() throws {
        let card = PseudoAPDUCard(pages: ntag213("03 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D FE"))
        var lines: [String] = []
        let request = try SecbridgeCLI.StorageReadRequest(ParsedArguments(values: [:]))
        let status = try SecbridgeCLI.readStorageCard(channel: card, atr: ultralightATR, reader: "R", request: request) { lines.append($0) }
        #expect(status == 0)
        #expect(lines.first == "reader: R")
        #expect(lines.contains("card: MIFARE Ultralight (PC/SC part 3 name 00 03, ISO/IEC 14443 A, part 3)"))
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
}
