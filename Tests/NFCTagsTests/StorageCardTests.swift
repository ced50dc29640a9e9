import ISO7816
import Synchronization
import SecbridgeTesting
import Testing
@testable import NFCTags

/// A PC/SC part 3 reader with a storage card, in memory: Get Data, Load Keys, General Authenticate,
/// Read Binary, Update Binary (ACR122U API v2.04 §5), answering from a page or block memory.
final class FakeStorageCardChannel: CardChannel {
    enum Memory {
        /// A Type 2 Tag: 4-byte pages; READ returns 4 pages (Le bytes of them).
        case type2([UInt8])
        /// MIFARE Classic: 16-byte blocks, with the key each sector accepts as key A.
        case classic([UInt8], keyA: [UInt8])
    }

    var memory: Memory
    var uid: [UInt8] = [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6]
    /// The GET_VERSION answer through Direct Transmit (`FF 00 00 00 03 D4 42 60` → `D5 43 00 <8> 90 00`);
    /// nil: the tag stays silent (`D5 43 01 90 00`, a MIFARE Ultralight).
    var version: [UInt8]? = ntag213Version
    /// Every command, in order.
    private(set) var log: [[UInt8]] = []
    /// Answers to give instead of the memory's, by command (first match wins, used once).
    var overrides: [([UInt8], [UInt8])] = []
    /// Pages from which Update Binary fails with 63 00 (locked).
    var lockedPages: Set<Int> = []
    /// Pages whose writes are silently dropped (to test read-back).
    var droppedPages: Set<Int> = []
    private var slots: [UInt8: [UInt8]] = [:]
    private var authenticatedSector: Int?

    init(_ memory: Memory) { self.memory = memory }

    var transmissionProtocol: TransmissionProtocol { .t1 }
    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] { [0x6A, 0x81] }

    var pages: [UInt8] {
        if case .type2(let bytes) = memory { return bytes }
        return []
    }

    func transmit(_ c: [UInt8]) throws -> [UInt8] {
        log.append(c)
        if let index = overrides.firstIndex(where: { $0.0 == c }) {
            return overrides.remove(at: index).1
        }
        guard c.count >= 5, c[0] == 0xFF else { return [0x6E, 0x00] }
        switch (c[1], memory) {
        case (0x00, .type2) where c == StorageCard.getVersionCommand:
            return version.map { [0xD5, 0x43, 0x00] + $0 + [0x90, 0x00] } ?? [0xD5, 0x43, 0x01, 0x90, 0x00]
        case (0xCA, _):
            return uid + [0x90, 0x00]
        case (0x82, _):
            guard c.count == 11, c[4] == 0x06, c[3] <= 1 else { return [0x63, 0x00] }
            slots[c[3]] = Array(c[5..<11])
            return [0x90, 0x00]
        case (0x86, .classic(_, let keyA)):
            guard c.count == 10, let key = slots[c[9]], c[8] == 0x60, key == keyA else {
                authenticatedSector = nil
                return [0x63, 0x00]
            }
            authenticatedSector = MifareClassicLayout.sector(ofBlock: Int(c[7]))
            return [0x90, 0x00]
        case (0xB0, .type2(let bytes)):
            let page = Int(c[3]), le = Int(c[4])
            guard le > 0, le <= 16, page * 4 < bytes.count else { return [0x63, 0x00] }
            var out: [UInt8] = []
            for k in 0..<le { out.append(bytes[(page * 4 + k) % bytes.count]) }
            return out + [0x90, 0x00]
        case (0xB0, .classic(let blocks, _)):
            let block = Int(c[3])
            guard c[4] == 0x10, authenticatedSector == MifareClassicLayout.sector(ofBlock: block) else { return [0x63, 0x00] }
            var data = Array(blocks[(block * 16)..<(block * 16 + 16)])
            if MifareClassicLayout.isSectorTrailer(block) {
                for k in 0..<6 { data[k] = 0 }  // key A never reads back
            }
            return data + [0x90, 0x00]
        case (0xD6, .type2(var bytes)):
            let page = Int(c[3])
            guard c[4] == 0x04, c.count == 9, page * 4 < bytes.count, !lockedPages.contains(page) else { return [0x63, 0x00] }
            if !droppedPages.contains(page) {
                for k in 0..<4 { bytes[page * 4 + k] = c[5 + k] }
                memory = .type2(bytes)
            }
            return [0x90, 0x00]
        default:
            return [0x6A, 0x81]
        }
    }
}

/// A Type 2 Tag memory: pages 0–2 (UID, lock bytes), the CC on page 3, the data area after it.
func type2Memory(cc: String, data: String, dataAreaSize: Int) -> [UInt8] {
    var bytes = hex("04 A1 B2 9F  C3 D4 E5 F6  A4 48 00 00") + hex(cc)
    var area = hex(data)
    area += [UInt8](repeating: 0, count: max(0, dataAreaSize - area.count))
    bytes += area
    bytes += [UInt8](repeating: 0, count: 20)  // dynamic lock and configuration pages
    return bytes
}

let ntag213CC = "E1 10 12 00"
/// GET_VERSION answers (NXP NTAG213/215/216 data sheet §10.1, table 28).
let ntag213Version = hex("00 04 04 02 01 00 0F 03")
let ntag215Version = hex("00 04 04 02 01 00 11 03")
let ntag216Version = hex("00 04 04 02 01 00 13 03")
let exampleURITLV = "03 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D FE"

@Suite("Storage cards, Type 2 Tags and MIFARE Classic (PC/SC part 3)")
struct StorageCardTests {
    // MARK: ATR identification

    struct ATRVector: Sendable, CustomTestStringConvertible {
        var atr: String
        var kind: StorageCardKind?
        var testDescription: String { atr }
    }

    static let atrVectors: [ATRVector] = [
        ATRVector(atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A", kind: .mifareClassic1K),
        ATRVector(atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 02 00 00 00 00 69", kind: .mifareClassic4K),
        ATRVector(atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68", kind: .type2Tag),
        ATRVector(atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 26 00 00 00 00 4D", kind: .mifareMini),
        ATRVector(atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 F0 04 00 00 00 00 9F", kind: .topaz),
        ATRVector(atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 11 F0 11 00 00 00 00 98", kind: .felica),
        ATRVector(atr: "3B 81 80 01 80 80", kind: nil),  // DESFire, ISO 14443-4
        ATRVector(atr: "3B 80 80 01 01", kind: nil),
    ]

    @Test("card kind from the ATR (PC/SC part 3 names, docs/acr122-pn532.md §3)", arguments: atrVectors)
    func kindFromATR(_ v: ATRVector) {
        #expect(StorageCard.kind(atr: hex(v.atr)) == v.kind)
    }

    // MARK: Get Data

    @Test("Get Data UID, and a 6C xx answer resent with Le xx")
    func uid() throws {
        let channel = FakeStorageCardChannel(.type2([]))
        #expect(try StorageCard(channel: channel).uid() == channel.uid)
        channel.overrides = [(hex("FF CA 00 00 00"), hex("6C 07")), (hex("FF CA 00 00 07"), hex("04 01 02 03 04 05 06 90 00"))]
        #expect(try StorageCard(channel: channel).uid() == hex("04 01 02 03 04 05 06"))
        #expect(channel.log.suffix(2) == [hex("FF CA 00 00 00"), hex("FF CA 00 00 07")])
    }

    @Test("Get Data errors name the command, the SW and what to do")
    func uidErrors() {
        let channel = FakeStorageCardChannel(.type2([]))
        channel.overrides = [(hex("FF CA 00 00 00"), hex("63 00"))]
        #expect {
            try StorageCard(channel: channel).uid()
        } throws: { error in
            let e = error as? StorageCardError
            return e?.code == .operationFailed && e!.description.contains("FF CA 00 00 00") && e!.description.contains("63 00")
                && e!.description.contains("keep the card on the reader")
        }
        channel.overrides = [(hex("FF CA 00 00 00"), hex("6A 81"))]
        #expect(throws: StorageCardError.self) { try StorageCard(channel: channel).uid() }
    }

    // MARK: Type 2 capability container

    struct CCVector: Sendable, CustomTestStringConvertible {
        var name: String
        var cc: String
        var dataAreaSize: Int
        var readOnly: Bool
        var testDescription: String { name }
    }

    static let ccVectors: [CCVector] = [
        CCVector(name: "NTAG213", cc: "E1 10 12 00", dataAreaSize: 144, readOnly: false),
        CCVector(name: "NTAG215", cc: "E1 10 3E 00", dataAreaSize: 496, readOnly: false),
        CCVector(name: "NTAG216", cc: "E1 10 6D 00", dataAreaSize: 872, readOnly: false),
        CCVector(name: "MIFARE Ultralight", cc: "E1 10 06 00", dataAreaSize: 48, readOnly: false),
        CCVector(name: "NTAG213 read-only", cc: "E1 10 12 0F", dataAreaSize: 144, readOnly: true),
    ]

    @Test("capability containers (NTAG213/215/216 data sheet §8.5.6)", arguments: ccVectors)
    func capabilityContainer(_ v: CCVector) throws {
        let cc = try Type2CapabilityContainer(parsing: hex(v.cc))
        #expect(cc.dataAreaSize == v.dataAreaSize)
        #expect(cc.isReadOnly == v.readOnly)
    }

    @Test("a CC without E1 is not NDEF formatted; major version 2 is refused")
    func ccErrors() {
        #expect(throws: Type2TagError(.notNDEFFormatted, "")) { try Type2CapabilityContainer(parsing: hex("00 00 00 00")) }
        #expect(throws: Type2TagError(.unsupportedVersion, "")) { try Type2CapabilityContainer(parsing: hex("E1 20 12 00")) }
        do {
            _ = try Type2CapabilityContainer(parsing: hex("00 00 00 00"))
        } catch {
            #expect(error.description == "not NDEF formatted: the capability container's magic byte is 00, not E1 (page 3: 00 00 00 00)")
        }
    }

    // MARK: Type 2 reads

    struct TLVVector: Sendable, CustomTestStringConvertible {
        var id: String
        var data: String
        var ndef: String
        var tlvTags: [UInt8]
        var testDescription: String { id }
    }

    static let tlvVectors: [TLVVector] = [
        TLVVector(id: "empty tag 03 00 FE", data: "03 00 FE", ndef: "", tlvTags: [0x03]),
        TLVVector(id: "https://example.com", data: exampleURITLV, ndef: "D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D", tlvTags: [0x03]),
        TLVVector(id: "lock control TLV before the NDEF TLV", data: "01 03 A0 10 44 " + exampleURITLV,
                  ndef: "D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D", tlvTags: [0x01, 0x03]),
        TLVVector(id: "NULL, memory control and proprietary TLVs skipped", data: "00 00 02 03 01 02 03 FD 01 AA " + exampleURITLV,
                  ndef: "D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D", tlvTags: [0x00, 0x00, 0x02, 0xFD, 0x03]),
        TLVVector(id: "3-byte length form FF 00 10", data: "03 FF 00 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D FE",
                  ndef: "D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D", tlvTags: [0x03]),
    ]

    @Test("TLV layouts of the data area (NFC Forum T2T §2.3)", arguments: tlvVectors)
    func readTLVs(_ v: TLVVector) throws {
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: ntag213CC, data: v.data, dataAreaSize: 144)))
        let result = try Type2TagReader.read(StorageCard(channel: channel))
        #expect(result.ndefBytes == hex(v.ndef))
        #expect(result.tlvs.map(\.tag) == v.tlvTags)
        if v.ndef.isEmpty {
            #expect(result.message == nil)
        } else {
            #expect(try result.message?.records.first?.uriValue() == "https://example.com")
        }
    }

    @Test("reads only as far as needed: CC with Le 04, then one 16-byte read, then 4 bytes")
    func readSequence() throws {
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: ntag213CC, data: exampleURITLV, dataAreaSize: 144)))
        _ = try Type2TagReader.read(StorageCard(channel: channel))
        #expect(channel.log == [hex("FF B0 00 03 04"), hex("FF B0 00 04 10"), hex("FF B0 00 08 10")])
    }

    @Test("a long message with the FF length form on an NTAG215")
    func longMessage() throws {
        let uri = "https://example.com/" + String(repeating: "a", count: 300)
        let message = try NDEFMessage(records: [.uri(uri)])
        let tlv = Type2TagWriter.tlvBytes(for: message)
        #expect(Array(tlv.prefix(4)) == [0x03, 0xFF, 0x01, UInt8(message.serialized().count - 256)])
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: "E1 10 3E 00", data: tlv.hexString, dataAreaSize: 496)))
        let result = try Type2TagReader.read(StorageCard(channel: channel))
        #expect(try result.message?.records.first?.uriValue() == uri)
    }

    struct MalformedVector: Sendable, CustomTestStringConvertible {
        var id: String
        var cc: String
        var data: String
        var code: Type2TagError.Code
        var contains: String
        var testDescription: String { id }
    }

    static let malformedVectors: [MalformedVector] = [
        MalformedVector(id: "not NDEF formatted", cc: "00 00 00 00", data: "", code: .notNDEFFormatted, contains: "magic byte is 00"),
        MalformedVector(id: "CC major version 2", cc: "E1 20 12 00", data: "03 00 FE", code: .unsupportedVersion, contains: "version 2.0"),
        MalformedVector(id: "terminator before NDEF", cc: ntag213CC, data: "01 03 A0 10 44 FE", code: .noNDEFTLV,
                        contains: "Terminator TLV (FE) at data offset 5"),
        MalformedVector(id: "no NDEF TLV in an all-NULL area", cc: "E1 10 02 00", data: "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
                        code: .noNDEFTLV, contains: "ends without an NDEF Message TLV"),
        MalformedVector(id: "NDEF length past the data area", cc: ntag213CC, data: "03 A0 D1 01", code: .malformedTLV,
                        contains: "declares 160 bytes, running to data offset 162, past the data area of 144 bytes"),
        MalformedVector(id: "FF length past the data area", cc: ntag213CC, data: "03 FF 01 00 D1", code: .malformedTLV,
                        contains: "declares 256 bytes"),
        MalformedVector(id: "lock control TLV past the data area", cc: "E1 10 02 00", data: "00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 05",
                        code: .malformedTLV, contains: "Lock Control TLV at data offset 14"),
        MalformedVector(id: "data area ends inside a length", cc: "E1 10 02 00", data: "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 03",
                        code: .malformedTLV, contains: "ends inside the length"),
        MalformedVector(id: "NDEF value not a message", cc: ntag213CC, data: "03 03 D1 01 0C FE", code: .invalidNDEF,
                        contains: "does not hold a valid NDEF message"),
    ]

    @Test("malformed tags give errors naming page, offset and bytes", arguments: malformedVectors)
    func malformed(_ v: MalformedVector) {
        let size = (try? Type2CapabilityContainer(parsing: hex(v.cc)).dataAreaSize) ?? 16
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: v.cc, data: v.data, dataAreaSize: size)))
        do {
            _ = try Type2TagReader.read(StorageCard(channel: channel))
            Issue.record("expected \(v.code)")
        } catch let error as Type2TagError {
            #expect(error.code == v.code)
            #expect(error.description.contains(v.contains), "\(error)")
            #expect(error.page != nil)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("a truncated Read Binary answer is an error naming the page, not a silent truncation")
    func truncatedRead() {
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: ntag213CC, data: exampleURITLV, dataAreaSize: 144)))
        channel.overrides = [(hex("FF B0 00 04 10"), hex("03 10 D1 01 0C 55 04 65 90 00"))]
        do {
            _ = try Type2TagReader.read(StorageCard(channel: channel))
            Issue.record("expected an error")
        } catch let error as StorageCardError {
            #expect(error.code == .wrongDataLength)
            #expect(error.description.hasPrefix("Read Binary block 4 failed: asked for 16 bytes, got 8 (a truncated read) (> FF B0 00 04 10, < 03 10 D1 01 0C 55 04 65 90 00)"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    // MARK: Type 2 writes

    @Test("the writer's exact commands for https://example.com on an NTAG213")
    func writeExampleURI() throws {
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: ntag213CC, data: "03 00 FE", dataAreaSize: 144)))
        let result = try Type2TagWriter.writeURI("https://example.com", to: StorageCard(channel: channel))
        // Checks first (GET_VERSION, CC, the last page needed exists, static lock bytes), then the
        // NFC Forum Type 2 order: page 4 as an empty NDEF message, pages 5–8, page 4 with the
        // message's start; read-back.
        #expect(channel.log == [
            hex("FF 00 00 00 03 D4 42 60"),
            hex("FF B0 00 03 04"),
            hex("FF B0 00 08 04"),
            hex("FF B0 00 02 04"),
            hex("FF D6 00 04 04 03 00 FE 00"),
            hex("FF D6 00 05 04 0C 55 04 65"),
            hex("FF D6 00 06 04 78 61 6D 70"),
            hex("FF D6 00 07 04 6C 65 2E 63"),
            hex("FF D6 00 08 04 6F 6D FE 00"),
            hex("FF D6 00 04 04 03 10 D1 01"),
            hex("FF B0 00 04 10"),
            hex("FF B0 00 08 04"),
        ])
        #expect(result.pages == 4...8)
        #expect(result.written == hex(exampleURITLV + " 00"))
        // And it reads back.
        let read = try Type2TagReader.read(StorageCard(channel: channel))
        #expect(try read.message?.records.first?.uriValue() == "https://example.com")
    }

    @Test("a text record (NDEF.swift's builder)")
    func writeText() throws {
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: ntag213CC, data: "03 00 FE", dataAreaSize: 144)))
        try Type2TagWriter.writeText("Hello", to: StorageCard(channel: channel))
        #expect(Array(channel.pages[16..<32]) == hex("03 0C D1 01 08 54 02 65 6E 48 65 6C 6C 6F FE 00"))
    }

    @Test("refusals: read-only CC, too big (bytes needed and available), not formatted")
    func refusals() {
        let readOnly = FakeStorageCardChannel(.type2(type2Memory(cc: "E1 10 12 0F", data: "03 00 FE", dataAreaSize: 144)))
        do {
            try Type2TagWriter.writeURI("https://example.com", to: StorageCard(channel: readOnly))
            Issue.record("expected readOnly")
        } catch let error as Type2TagError {
            #expect(error.code == .readOnly)
            #expect(error.description.contains("access byte is 0F"))
        } catch { Issue.record("\(error)") }
        #expect(readOnly.log == [hex("FF 00 00 00 03 D4 42 60"), hex("FF B0 00 03 04")], "nothing written")

        let small = FakeStorageCardChannel(.type2(type2Memory(cc: ntag213CC, data: "03 00 FE", dataAreaSize: 144)))
        let big = "https://example.com/" + String(repeating: "x", count: 200)
        do {
            try Type2TagWriter.writeURI(big, to: StorageCard(channel: small))
            Issue.record("expected doesNotFit")
        } catch let error as Type2TagError {
            #expect(error.code == .doesNotFit)
            // 3 header + 1 type + payload (1 code + 212) → 217 bytes of NDEF, 2-byte TLV header, terminator.
            // Words first, no code name; what to do last.
            #expect(error.description == "the message needs 220 bytes (217 bytes of NDEF, 2-byte TLV header, 1-byte terminator) but the tag's data area has 144 bytes (SIZE 12 × 8); nothing was written (page 3: E1 10 12 00); write a shorter URI or text, or use a larger tag such as an NTAG215 (496 bytes) or NTAG216 (872 bytes)")
        } catch { Issue.record("\(error)") }
        #expect(small.log == [hex("FF 00 00 00 03 D4 42 60"), hex("FF B0 00 03 04")], "nothing written")

        let blank = FakeStorageCardChannel(.type2(type2Memory(cc: "00 00 00 00", data: "", dataAreaSize: 16)))
        #expect(throws: Type2TagError(.notNDEFFormatted, "")) { try Type2TagWriter.writeURI("https://example.com", to: StorageCard(channel: blank)) }
    }

    @Test("a message that exactly fills the data area fits; one more byte does not")
    func exactFit() throws {
        // Data area 16 bytes: TLV 03 0D <13 bytes> FE = 16; 3 header + 1 type + 9 payload = 13.
        let fits = try NDEFMessage(records: [NDEFRecord(tnf: .mimeMedia, type: [0x61], payload: [UInt8](repeating: 0x41, count: 9))])
        #expect(fits.serialized().count == 13)
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: "E1 10 02 00", data: "03 00 FE", dataAreaSize: 16)))
        let result = try Type2TagWriter.write(message: fits, to: StorageCard(channel: channel))
        #expect(result.pages == 4...7)
        let tooBig = try NDEFMessage(records: [NDEFRecord(tnf: .mimeMedia, type: [0x61], payload: [UInt8](repeating: 0x41, count: 10))])
        #expect(throws: Type2TagError(.doesNotFit, "")) { try Type2TagWriter.write(message: tooBig, to: StorageCard(channel: channel)) }
    }

    struct InterruptionVector: Sendable, CustomTestStringConvertible {
        /// The Update Binary that answers 63 00.
        var failing: String
        var page: Int
        var state: Type2TagWriteState
        /// Page 4 afterwards.
        var page4: String
        var testDescription: String { "63 00 at \(failing)" }
    }

    /// An old message "https://a" on the tag; writing https://example.com fails at one command.
    static let interruptionVectors: [InterruptionVector] = [
        // The first write: nothing changed, the old message is still there.
        .init(failing: "FF D6 00 04 04 03 00 FE 00", page: 4, state: .untouched, page4: "03 06 D1 01"),
        // A middle page: page 4 already holds the empty message 03 00 FE.
        .init(failing: "FF D6 00 06 04 78 61 6D 70", page: 6, state: .emptyMessage, page4: "03 00 FE 00"),
        // The last write, page 4 with the start: still the empty message.
        .init(failing: "FF D6 00 04 04 03 10 D1 01", page: 4, state: .emptyOrNewMessage, page4: "03 00 FE 00"),
    ]

    @Test("an interrupted write leaves the old message or an empty one, never half of the new", arguments: interruptionVectors)
    func interruptedWrite(_ v: InterruptionVector) throws {
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: ntag213CC, data: "03 06 D1 01 02 55 04 61 FE", dataAreaSize: 144)))
        channel.overrides = [(hex(v.failing), hex("63 00"))]
        do {
            try Type2TagWriter.writeURI("https://example.com", to: StorageCard(channel: channel))
            Issue.record("expected a write failure")
        } catch let error as Type2TagWriteFailure {
            #expect(error.page == v.page)
            #expect(error.state == v.state)
            #expect((error.underlying as? StorageCardError)?.code == .operationFailed)
        }
        #expect(Array(channel.pages[16..<20]) == hex(v.page4))
        // Whatever happened, the tag reads as a valid NDEF tag.
        let read = try Type2TagReader.read(StorageCard(channel: channel))
        #expect(v.state == .untouched ? read.message != nil : read.message == nil)
    }

    @Test("what the tag holds after a failed write, in words")
    func writeStateTexts() {
        #expect(Type2TagWriteState.untouched.description == "the tag holds what it held before (the first write, page 4, did not complete)")
        #expect(Type2TagWriteState.emptyMessage.description == "the tag now holds an empty NDEF message (03 00 FE on page 4), not the old one and not a half-written one")
    }

    @Test("a locked page fails with the command; a dropped write fails the read-back")
    func writeFailures() {
        let locked = FakeStorageCardChannel(.type2(type2Memory(cc: ntag213CC, data: "03 00 FE", dataAreaSize: 144)))
        locked.lockedPages = [6]
        do {
            try Type2TagWriter.writeURI("https://example.com", to: StorageCard(channel: locked))
            Issue.record("expected 63 00")
        } catch let error as Type2TagWriteFailure {
            let underlying = error.underlying as? StorageCardError
            #expect(underlying?.code == .operationFailed)
            #expect(error.description.hasPrefix("writing page 6 failed: Update Binary block 6 failed: SW 63 00: the operation failed (> FF D6 00 06 04 78 61 6D 70, < 63 00)"))
            #expect(error.description.hasSuffix("; the tag now holds an empty NDEF message (03 00 FE on page 4), not the old one and not a half-written one"))
        } catch { Issue.record("\(error)") }
        #expect(Array(locked.pages[16..<20]) == hex("03 00 FE 00"))

        let dropped = FakeStorageCardChannel(.type2(type2Memory(cc: ntag213CC, data: "03 00 FE", dataAreaSize: 144)))
        dropped.droppedPages = [7]
        do {
            try Type2TagWriter.writeURI("https://example.com", to: StorageCard(channel: dropped))
            Issue.record("expected verifyMismatch")
        } catch let error as Type2TagError {
            #expect(error.code == .verifyMismatch)
            #expect(error.page == 7)
            #expect(error.description.contains("wrote 6C 65 2E 63"))
        } catch { Issue.record("\(error)") }
    }

    // MARK: Models, capability containers and lock bits

    struct ProductVector: Sendable, CustomTestStringConvertible {
        var version: [UInt8]
        var product: Type2TagProduct?
        var userMemory: Int
        var lastPage: Int
        var testDescription: String { version.hexString }
    }

    /// NXP NTAG213/215/216 data sheet §8.5 (user memory pages 04h–27h / 04h–81h / 04h–E1h), §10.1.
    static let productVectors: [ProductVector] = [
        .init(version: ntag213Version, product: .ntag213, userMemory: 144, lastPage: 0x27),
        .init(version: ntag215Version, product: .ntag215, userMemory: 504, lastPage: 0x81),
        .init(version: ntag216Version, product: .ntag216, userMemory: 888, lastPage: 0xE1),
        // MIFARE Ultralight EV1 (type 03): not one of these models.
        .init(version: hex("00 04 03 01 01 00 0B 03"), product: nil, userMemory: 0, lastPage: 0),
    ]

    @Test("GET_VERSION names NTAG213/215/216 and their user memory", arguments: productVectors)
    func products(_ v: ProductVector) {
        let product = Type2TagProduct(version: v.version)
        #expect(product == v.product)
        if let product {
            #expect(product.userMemorySize == v.userMemory)
            #expect(product.lastUserPage == v.lastPage)
        }
    }

    struct ProbeVector: Sendable, CustomTestStringConvertible {
        var answer: String
        var expected: Type2TagIdentification
        var testDescription: String { answer }
    }

    static let probeVectors: [ProbeVector] = [
        .init(answer: "D5 43 00 00 04 04 02 01 00 0F 03 90 00", expected: .version(ntag213Version)),
        .init(answer: "D5 43 01 90 00", expected: .refused("the tag did not answer GET_VERSION (PN532 status 01; > FF 00 00 00 03 D4 42 60, < D5 43 01 90 00); a MIFARE Ultralight does not know the command")),
        .init(answer: "6A 81", expected: .refused("the reader did not carry GET_VERSION (Direct Transmit of InCommunicateThru; > FF 00 00 00 03 D4 42 60, < 6A 81)")),
        .init(answer: "63 00", expected: .refused("the reader did not carry GET_VERSION (Direct Transmit of InCommunicateThru; > FF 00 00 00 03 D4 42 60, < 63 00)")),
    ]

    @Test("GET_VERSION through Direct Transmit (FF 00 00 00 03 D4 42 60)", arguments: probeVectors)
    func probe(_ v: ProbeVector) throws {
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: ntag213CC, data: "03 00 FE", dataAreaSize: 144)))
        channel.overrides = [(StorageCard.getVersionCommand, hex(v.answer))]
        #expect(try StorageCard(channel: channel).type2Version() == v.expected)
    }

    struct ExceedsVector: Sendable, CustomTestStringConvertible {
        var version: [UInt8]
        var cc: String
        /// nil: the write goes through.
        var message: String?
        var testDescription: String { "\(version.hexString) with CC \(cc)" }
    }

    static let exceedsVectors: [ExceedsVector] = [
        .init(version: ntag213Version, cc: "E1 10 FF 00",
              message: "the capability container claims a data area of 2040 bytes (SIZE FF × 8), but the tag is an NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03) with 144 bytes of user memory (pages 4–39); writing by the CC could overwrite its lock and configuration pages, so nothing was written (page 3: E1 10 FF 00); the capability container is one-time programmable and cannot be corrected: use another tag"),
        // An NTAG213 formatted as an NTAG215.
        .init(version: ntag213Version, cc: "E1 10 3E 00",
              message: "the capability container claims a data area of 496 bytes (SIZE 3E × 8), but the tag is an NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03) with 144 bytes of user memory (pages 4–39); writing by the CC could overwrite its lock and configuration pages, so nothing was written (page 3: E1 10 3E 00); the capability container is one-time programmable and cannot be corrected: use another tag"),
        .init(version: ntag215Version, cc: "E1 10 40 00",
              message: "the capability container claims a data area of 512 bytes (SIZE 40 × 8), but the tag is an NTAG215 (GET_VERSION 00 04 04 02 01 00 11 03) with 504 bytes of user memory (pages 4–129); writing by the CC could overwrite its lock and configuration pages, so nothing was written (page 3: E1 10 40 00); the capability container is one-time programmable and cannot be corrected: use another tag"),
        // SIZE 3F × 8 = 504: exactly the NTAG215's user memory, allowed.
        .init(version: ntag215Version, cc: "E1 10 3F 00", message: nil),
        .init(version: ntag215Version, cc: "E1 10 3E 00", message: nil),
        .init(version: ntag216Version, cc: "E1 10 6D 00", message: nil),
        .init(version: ntag213Version, cc: "E1 10 12 00", message: nil),
    ]

    @Test("a CC claiming more than the model's user memory is refused before any write", arguments: exceedsVectors)
    func capabilityContainerExceedsModel(_ v: ExceedsVector) throws {
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: v.cc, data: "03 00 FE", dataAreaSize: 144)))
        channel.version = v.version
        do {
            try Type2TagWriter.writeURI("https://example.com", to: StorageCard(channel: channel))
            #expect(v.message == nil, "expected a refusal")
        } catch let error as Type2TagError {
            #expect(error.code == .capabilityContainerExceedsModel)
            #expect(error.description == v.message)
            #expect(!channel.log.contains { $0[1] == 0xD6 }, "nothing written")
        }
    }

    @Test("a tag that does not answer GET_VERSION is written by its CC")
    func noVersionGoesByTheCC() throws {
        let channel = FakeStorageCardChannel(.type2(type2Memory(cc: "E1 10 06 00", data: "03 00 FE", dataAreaSize: 48)))
        channel.version = nil
        let plan = try Type2TagWriter.prepare(message: NDEFMessage(records: [.uri("https://example.com")]), card: StorageCard(channel: channel))
        #expect(plan.identification.product == nil)
        #expect(plan.identification.note == "the tag did not answer GET_VERSION (PN532 status 01; > FF 00 00 00 03 D4 42 60, < D5 43 01 90 00); a MIFARE Ultralight does not know the command: the model is not known; going by the capability container")
        #expect(plan.capacity == 48)
        #expect(plan.pages == 4...8)
    }

    struct LockVector: Sendable, CustomTestStringConvertible {
        var lockBytes: [UInt8]
        var locked: [Int]
        var testDescription: String { lockBytes.hexString }
    }

    /// NTAG213/215/216 data sheet §8.5.2: LOCK0 bits 4–7 lock pages 4–7, bit 3 the CC, bits 0–2 are
    /// block-locking bits (they freeze lock bits, not pages); LOCK1 bits 0–7 lock pages 8–15.
    static let lockVectors: [LockVector] = [
        .init(lockBytes: [0x00, 0x00], locked: []),
        .init(lockBytes: [0x10, 0x00], locked: [4]),
        .init(lockBytes: [0xF0, 0x00], locked: [4, 5, 6, 7]),
        .init(lockBytes: [0x08, 0x00], locked: []),
        .init(lockBytes: [0x07, 0x00], locked: []),
        .init(lockBytes: [0x00, 0x01], locked: [8]),
        .init(lockBytes: [0x00, 0x80], locked: [15]),
        .init(lockBytes: [0xFF, 0xFF], locked: Array(4...15)),
    ]

    @Test("static lock bytes → locked pages among 4–20", arguments: lockVectors)
    func staticLockBits(_ v: LockVector) {
        #expect(Type2TagWriter.lockedPages(lockBytes: v.lockBytes, in: 4...20) == v.locked)
    }

    @Test("a page locked by the static lock bits refuses the write up front")
    func lockedRefusal() {
        var memory = type2Memory(cc: ntag213CC, data: "03 00 FE", dataAreaSize: 144)
        memory[11] = 0x01  // LOCK1 bit 0: page 8
        let channel = FakeStorageCardChannel(.type2(memory))
        do {
            try Type2TagWriter.writeURI("https://example.com", to: StorageCard(channel: channel))
            Issue.record("expected locked")
        } catch let error as Type2TagError {
            #expect(error.code == .locked)
            #expect(error.description == "page 8 is locked by the static lock bits (page 2 bytes 2–3: 00 01) and the message needs pages 4–8; nothing was written (page 2: A4 48 00 01); lock bits cannot be cleared: use another tag")
        } catch { Issue.record("\(error)") }
        #expect(channel.log == [hex("FF 00 00 00 03 D4 42 60"), hex("FF B0 00 03 04"), hex("FF B0 00 08 04"), hex("FF B0 00 02 04")], "nothing written")
        // A shorter message (pages 4–7) fits in front of the lock.
        #expect(throws: Never.self) { try Type2TagWriter.writeURI("https://a.b", to: StorageCard(channel: channel)) }
    }

    // MARK: MIFARE Classic

    static let keyA = hex("A0 A1 A2 A3 A4 A5")

    static func classicMemory() -> [UInt8] {
        var blocks = [UInt8](repeating: 0, count: 64 * 16)
        for block in 0..<64 {
            if MifareClassicLayout.isSectorTrailer(block) {
                let trailer = keyA + hex("FF 07 80 69") + hex("B0 B1 B2 B3 B4 B5")
                for k in 0..<16 { blocks[block * 16 + k] = trailer[k] }
            } else {
                for k in 0..<16 { blocks[block * 16 + k] = UInt8(block) }
            }
        }
        return blocks
    }

    @Test("Classic read: load key in slot 0, authenticate each sector once at its first block, read the blocks")
    func classicSequence() throws {
        let channel = FakeStorageCardChannel(.classic(Self.classicMemory(), keyA: Self.keyA))
        let key = try MifareKey(bytes: Self.keyA)
        let blocks = try MifareClassicReader.read(
            blocks: try MifareClassicReader.blocks(parsing: "6-9"), key: key, keyType: .a, kind: .mifareClassic1K,
            from: StorageCard(channel: channel))
        #expect(channel.log == [
            hex("FF 82 00 00 06 A0 A1 A2 A3 A4 A5"),
            hex("FF 86 00 00 05 01 00 04 60 00"),
            hex("FF B0 00 06 10"),
            hex("FF B0 00 07 10"),
            hex("FF 86 00 00 05 01 00 08 60 00"),
            hex("FF B0 00 08 10"),
            hex("FF B0 00 09 10"),
        ])
        #expect(blocks.map(\.number) == [6, 7, 8, 9])
        #expect(blocks[1].isSectorTrailer)
        #expect(Array(blocks[1].data.prefix(6)) == [0, 0, 0, 0, 0, 0], "key A reads as zeros")
        #expect(blocks[0].data == [UInt8](repeating: 6, count: 16))
    }

    @Test("4K sectors 32–39 hold 16 blocks: block 200 authenticates at 192")
    func classic4KLayout() {
        #expect(MifareClassicLayout.sector(ofBlock: 200) == 36)
        #expect(MifareClassicLayout.firstBlock(ofSector: 36) == 192)
        #expect(MifareClassicLayout.isSectorTrailer(207))
        #expect(!MifareClassicLayout.isSectorTrailer(131))
        #expect(MifareClassicLayout.isSectorTrailer(127))
    }

    @Test("a wrong key: 'authentication failed for sector N with key A', and the key is never shown")
    func classicWrongKey() throws {
        let channel = FakeStorageCardChannel(.classic(Self.classicMemory(), keyA: Self.keyA))
        let wrong = try MifareKey(hex: "FFFFFFFFFFFF")
        #expect("\(wrong)" == "[REDACTED 6]")
        #expect(String(reflecting: wrong) == "[REDACTED 6]")
        var dumped = ""
        dump(wrong, to: &dumped)
        #expect(!dumped.contains("255"), "dump shows no key bytes: \(dumped)")
        do {
            _ = try MifareClassicReader.read(blocks: [12], key: wrong, keyType: .a, kind: .mifareClassic1K, from: StorageCard(channel: channel))
            Issue.record("expected an authentication failure")
        } catch let error as StorageCardError {
            #expect(error.code == .authenticationFailed)
            #expect(error.description.contains("authentication failed for sector 3 with key A: wrong key or access conditions"))
            #expect(!error.description.contains("FF FF FF FF FF FF"))
        } catch { Issue.record("\(error)") }
    }

    @Test("Load Keys and trailer writes never show key bytes in errors")
    func keysNotInErrors() throws {
        let channel = FakeStorageCardChannel(.classic(Self.classicMemory(), keyA: Self.keyA))
        channel.overrides = [(hex("FF 82 00 00 06 A0 A1 A2 A3 A4 A5"), hex("63 00")),
                             (hex("FF D6 00 07 10") + Self.keyA + hex("FF 07 80 69 B0 B1 B2 B3 B4 B5"), hex("63 00"))]
        let card = StorageCard(channel: channel)
        do {
            try card.loadKey(try MifareKey(bytes: Self.keyA))
            Issue.record("expected 63 00")
        } catch let error as StorageCardError {
            #expect(error.description.hasPrefix("Load Keys into slot 00 failed: SW 63 00: the operation failed (> FF 82 00 00 06 [REDACTED 6], < 63 00)"))
        }
        do {
            try card.updateBinary(block: 7, data: Self.keyA + hex("FF 07 80 69 B0 B1 B2 B3 B4 B5"))
            Issue.record("expected 63 00")
        } catch let error as StorageCardError {
            #expect(error.description.contains("> FF D6 00 07 10 [REDACTED 16]"))
            #expect(!error.description.contains("A0 A1"))
        }
        #expect(throws: StorageCardError.self) { try MifareKey(hex: "A0A1A2") }
        #expect(throws: StorageCardError.self) { try card.loadKey(try MifareKey(bytes: Self.keyA), slot: 2) }
    }

    @Test("block ranges and blocks outside the card")
    func blockArguments() throws {
        #expect(try MifareClassicReader.blocks(parsing: "4") == [4])
        #expect(try MifareClassicReader.blocks(parsing: "4-7") == [4, 5, 6, 7])
        for bad in ["", "7-4", "a", "1-2-3", "256", "-1", "+5", "4-+7", "0x4", "4 -7", "0004"] {
            #expect(throws: StorageCardError.self, "\(bad)") { try MifareClassicReader.blocks(parsing: bad) }
        }
        #expect { try MifareClassicReader.blocks(parsing: "7-4") } throws: { error in
            (error as? StorageCardError)?.reason == "'7-4' is a reversed range: the first block comes first (4-7)"
        }
        let channel = FakeStorageCardChannel(.classic(Self.classicMemory(), keyA: Self.keyA))
        #expect(throws: StorageCardError.self) {
            try MifareClassicReader.read(blocks: [64], key: try MifareKey(bytes: Self.keyA), keyType: .a, kind: .mifareClassic1K, from: StorageCard(channel: channel))
        }
        #expect(channel.log.isEmpty, "nothing sent for a block outside the card")
        do {
            _ = try MifareClassicReader.read(blocks: [64], key: try MifareKey(bytes: Self.keyA), keyType: .a, kind: .mifareClassic1K, from: StorageCard(channel: channel))
        } catch let error as StorageCardError {
            // No "(> )" for a check made before anything is sent.
            #expect(error.description == "MIFARE Classic read failed: block 64 is not on a MIFARE Classic 1K, which has blocks 0–63; give blocks 0–63 with --blocks")
        } catch { Issue.record("\(error)") }
    }

    @Test("a key of 13 hex digits: an odd number of hex digits, the digits not shown")
    func oddKey() {
        for (text, reason) in [
            ("A0A1A2A3A4A5B", "a MIFARE Classic key is 12 hex digits; got 13, an odd number of hex digits"),
            ("A0A1A2A3A4", "a MIFARE Classic key is 6 bytes (12 hex digits); got 5 bytes"),
            ("A0A1A2A3A4AZ", "a MIFARE Classic key is 12 hex digits; the text given is not hex"),
        ] {
            do {
                _ = try MifareKey(hex: text)
                Issue.record("expected an error for \(text)")
            } catch {
                #expect(error.reason == reason)
                #expect(!error.description.contains("A0A1"))
            }
        }
    }

    @Test("key B authenticates but may not read under FF 07 80: say so, suggest key A")
    func keyBRefusedRead() throws {
        let channel = FakeStorageCardChannel(.classic(Self.classicMemory(), keyA: Self.keyA))
        // The card accepts key B for authentication; the read that follows answers 63 00.
        channel.overrides = [(hex("FF 86 00 00 05 01 00 04 61 00"), hex("90 00"))]
        do {
            _ = try MifareClassicReader.read(blocks: [4], key: try MifareKey(bytes: Self.keyA), keyType: .b, kind: .mifareClassic1K, from: StorageCard(channel: channel))
            Issue.record("expected 63 00")
        } catch let error as StorageCardError {
            #expect(error.description == "Read Binary block 4 failed: the card refused the read after authenticating with key B: with the transport access conditions (FF 07 80) key B may not read (> FF B0 00 04 10, < 63 00); try key A (without --key-b)")
        }
    }
}
