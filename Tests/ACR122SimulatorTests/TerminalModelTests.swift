import ACR122Simulator
import ISO7816
import NFCTags
import PN53x
import SecbridgeTesting
import Testing

/// Runs `program` against `respond` (at most `limit` exchanges): the C-APDUs it sent and how it ended.
func run(_ program: some TerminalProgram, limit: Int = 64, against respond: ([UInt8]) -> [UInt8])
    -> (commands: [String], outcome: TerminalOutcome?)
{
    var program = program
    var commands: [String] = []
    var action = program.start()
    for _ in 0..<limit {
        switch action {
        case .finish(let outcome): return (commands, outcome)
        case .send(let command):
            commands.append(text(command))
            action = program.receive(respond(command))
        }
    }
    return (commands, nil)
}

/// A 15-byte mapping 2.0 CC (docs/iso14443-t4t-ndef.md §4).
func capabilityContainer(
    version: UInt8 = 0x20, mle: UInt16 = 0x007F, mlc: UInt16 = 0x007F, fileID: UInt16 = 0xE104, maxSize: UInt16 = 0x0400,
    read: UInt8 = 0x00, write: UInt8 = 0x00
) -> [UInt8] {
    [0x00, 0x0F, version, UInt8(mle >> 8), UInt8(mle & 0xFF), UInt8(mlc >> 8), UInt8(mlc & 0xFF), 0x04, 0x06,
     UInt8(fileID >> 8), UInt8(fileID & 0xFF), UInt8(maxSize >> 8), UInt8(maxSize & 0xFF), read, write]
}

/// NLEN + message.
func ndefFile(_ message: [UInt8]) -> [UInt8] { [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message }

/// The worked example's message: one URI record, https://example.com (docs/iso14443-t4t-ndef.md §5).
let exampleMessage = hex("D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D")

extension TerminalOutcome {
    var ndefMessage: [UInt8]? {
        if case .completed(let report) = self { return report.ndefMessage }
        return nil
    }
    var failure: (stage: String, reason: String)? {
        if case .failed(let stage, let reason, _) = self { return (stage, reason) }
        return nil
    }
}

@Suite("Android's Type 4 Tag reader (AOSP rw_t4t.cc, docs/terminal-models.md §1)")
struct AndroidType4ReaderTests {
    @Test("the worked example: the recorded six commands byte for byte, and the URI record read")
    func workedExample() {
        let applet = NDEFApplet(capabilityContainer: ExternalTerminal.Script.exampleCapabilityContainer, ndefFile: ndefFile(exampleMessage))
        let (commands, outcome) = run(AndroidType4Reader(), against: applet.respond)
        #expect(commands == ExternalTerminal.Script.androidType4ReadExample.steps.map { text($0.command) })
        #expect(outcome?.ndefMessage == exampleMessage)
        if case .completed(let report) = outcome { #expect(report.items == ["URI https://example.com"]) }
    }

    @Test("a read-only CC (write access FF) and a 256-byte file are read like any other", arguments: [
        capabilityContainer(write: 0xFF), capabilityContainer(maxSize: 0x0100), capabilityContainer(read: 0x80),
    ])
    func acceptedContainers(_ cc: [UInt8]) {
        let (_, outcome) = run(AndroidType4Reader(), against: NDEFApplet(capabilityContainer: cc, ndefFile: ndefFile(exampleMessage)).respond)
        #expect(outcome?.ndefMessage == exampleMessage)
    }

    @Test("rw_t4t_validate_cc_file refusals: the step is the CC check, after READ BINARY of the CC", arguments: [
        (capabilityContainer(fileID: 0xE102), "NDEF file id E102 is reserved"),
        (capabilityContainer(fileID: 0x3F00), "NDEF file id 3F00 is reserved"),
        (capabilityContainer(fileID: 0x0000), "NDEF file id 0000 is reserved"),
        (capabilityContainer(mle: 0x000E), "MLe 000E is below 000F"),
        (capabilityContainer(mlc: 0x0000), "MLc 0000 is below 0001"),
        (capabilityContainer(maxSize: 0x0004), "maximum NDEF size 0004 is outside 0005…7FFF"),
        (capabilityContainer(maxSize: 0xFFFE), "maximum NDEF size FFFE is outside 0005…7FFF"),
        (capabilityContainer(read: 0xFF), "read access FF is not 00 or 80…FE"),
        (capabilityContainer(write: 0x01), "write access 01 is not 00 or 80…FF"),
        (capabilityContainer(version: 0x40), "the CC's mapping version 40 is newer"),
    ])
    func refused(_ cc: [UInt8], _ reason: String) {
        let (commands, outcome) = run(AndroidType4Reader(), against: NDEFApplet(capabilityContainer: cc, ndefFile: ndefFile(exampleMessage)).respond)
        #expect(commands.count == 3, "\(commands)")
        #expect(outcome?.failure?.stage == "capability container check")
        #expect(outcome?.failure?.reason.hasPrefix(reason) == true, "\(String(describing: outcome))")
    }

    @Test("libnfc's CC (max size FFFE): refused by the android-15 rules, read by the android-11 rules")
    func libnfcContainer() {
        // libnfc utils/nfc-emulate-forum-tag4.c: MLe 0054, MLc 00FF, E104, FFFE, 00, 00.
        let cc = hex("00 0F 20 00 54 00 FF 04 06 E1 04 FF FE 00 00")
        let applet = { NDEFApplet(capabilityContainer: cc, ndefFile: ndefFile(exampleMessage)) }
        #expect(run(AndroidType4Reader(release: .android15), against: applet().respond).outcome?.failure?.stage == "capability container check")
        #expect(run(AndroidType4Reader(release: .android11), against: applet().respond).outcome?.ndefMessage == exampleMessage)
    }

    @Test("chunks of min(MLe, 647): MLe 000F reads 15 + 15 + 10 from offset 2; MLe 0100 sends Le FF, not 00")
    func chunks() throws {
        let message = try NDEFMessage(records: [NDEFRecord.uri("https://example.com/a-somewhat-longer-paths")]).serialized()
        #expect(message.count == 40)
        let (small, outcome) = run(AndroidType4Reader(), against: NDEFApplet(capabilityContainer: capabilityContainer(mle: 0x0F), ndefFile: ndefFile(message)).respond)
        #expect(Array(small.suffix(3)) == ["00 B0 00 02 0F", "00 B0 00 11 0F", "00 B0 00 20 0A"])
        #expect(outcome?.ndefMessage == message)
        let long = try NDEFMessage(records: [NDEFRecord(tnf: .mimeMedia, type: Array("text/plain".utf8), payload: [UInt8](repeating: 0x41, count: 290))]).serialized()
        let (big, bigOutcome) = run(AndroidType4Reader(), against: NDEFApplet(capabilityContainer: capabilityContainer(mle: 0x0100), ndefFile: ndefFile(long)).respond)
        #expect(Array(big.suffix(2)) == ["00 B0 00 02 FF", "00 B0 01 01 \(text([UInt8(long.count - 255)]))"])
        #expect(bigOutcome?.ndefMessage == long)
    }

    @Test("MLe above 256: the android-15 reader asks with an extended Le (00 B0 00 02 00 01 2C); android-11 caps at 255")
    func extendedLe() throws {
        let long = try NDEFMessage(records: [NDEFRecord(tnf: .mimeMedia, type: Array("text/plain".utf8), payload: [UInt8](repeating: 0x41, count: 284))]).serialized()
        #expect(long.count == 300)
        let cc = capabilityContainer(mle: 0x0400)
        // The test applet answers 67 00 to a 7-byte READ BINARY: Android ends the read there.
        let (commands, outcome) = run(AndroidType4Reader(), against: NDEFApplet(capabilityContainer: cc, ndefFile: ndefFile(long)).respond)
        #expect(commands.last == "00 B0 00 02 00 01 2C")
        #expect(outcome?.failure?.stage == "READ BINARY NDEF message")
        #expect(outcome?.failure?.reason.hasPrefix("SW 67 00") == true)
        let (old, oldOutcome) = run(AndroidType4Reader(release: .android11), against: NDEFApplet(capabilityContainer: cc, ndefFile: ndefFile(long)).respond)
        #expect(Array(old.suffix(2)) == ["00 B0 00 02 FF", "00 B0 01 01 2D"])
        #expect(oldOutcome?.ndefMessage == long)
    }

    @Test("mapping 1.0: after 6A 82 to the 2.0 AID, the 1.0 AID without Le, then SELECT E103 with P2 00")
    func mappingOneFallback() {
        let cc = capabilityContainer(version: 0x10)
        let file = ndefFile(exampleMessage)
        let respond = { (apdu: [UInt8]) -> [UInt8] in
            switch text(apdu) {
            case "00 A4 04 00 07 D2 76 00 00 85 01 01 00": return hex("6A 82")
            case "00 A4 04 00 07 D2 76 00 00 85 01 00", "00 A4 00 00 02 E1 03", "00 A4 00 00 02 E1 04": return hex("90 00")
            case "00 B0 00 00 0F": return cc + hex("90 00")
            case "00 B0 00 00 02": return Array(file.prefix(2)) + hex("90 00")
            case "00 B0 00 02 10": return Array(file.dropFirst(2)) + hex("90 00")
            default: return hex("6D 00")
            }
        }
        let (commands, outcome) = run(AndroidType4Reader(), against: respond)
        #expect(commands == [
            "00 A4 04 00 07 D2 76 00 00 85 01 01 00", "00 A4 04 00 07 D2 76 00 00 85 01 00", "00 A4 00 00 02 E1 03",
            "00 B0 00 00 0F", "00 A4 00 00 02 E1 04", "00 B0 00 00 02", "00 B0 00 02 10",
        ])
        #expect(outcome?.ndefMessage == exampleMessage)
        // A 2.0 CC behind the 1.0 application: newer than the application selected.
        let (_, refused) = run(AndroidType4Reader(), against: { text($0) == "00 B0 00 00 0F" ? capabilityContainer() + hex("90 00") : respond($0) })
        #expect(refused?.failure?.reason.hasPrefix("the CC's mapping version 20 is newer") == true)
    }

    @Test("no NDEF application at all: both SELECTs refused, the step is the 1.0 SELECT with its SW")
    func noApplication() {
        let (commands, outcome) = run(AndroidType4Reader(), against: { _ in hex("6A 82") })
        #expect(commands.count == 2)
        #expect(outcome?.failure?.stage == "SELECT NDEF Tag Application (mapping 1.0)")
        #expect(outcome?.failure?.reason.hasPrefix("SW 6A 82") == true)
    }

    @Test("NLEN past the maximum size, and an NLEN answer of 3 bytes, end the read at READ BINARY NLEN")
    func nlenChecks() {
        let cc = capabilityContainer(maxSize: 0x0010)
        let applet = NDEFApplet(capabilityContainer: cc, ndefFile: ndefFile(exampleMessage))
        let (_, outcome) = run(AndroidType4Reader(), against: applet.respond)
        #expect(outcome?.failure?.stage == "READ BINARY NLEN")
        #expect(outcome?.failure?.reason == "NLEN 16 + 2 is more than the maximum NDEF size 16")
        let (_, three) = run(AndroidType4Reader(), against: { text($0) == "00 B0 00 00 02" ? hex("00 10 00 90 00") : applet.respond($0) })
        #expect(three?.failure?.reason == "the answer has 3 data bytes; Android needs exactly 2")
    }
}

@Suite("iOS Core NFC's Type 4 Tag read (docs/terminal-models.md §2)")
struct IOSType4ReaderTests {
    @Test("probes, then the recorded iOS read of the worked example byte for byte")
    func workedExample() {
        let applet = NDEFApplet(capabilityContainer: ExternalTerminal.Script.exampleCapabilityContainer, ndefFile: ndefFile(exampleMessage))
        let (commands, outcome) = run(IOSType4Reader(), against: applet.respond)
        #expect(Array(commands.prefix(3)) == [
            "00 A4 04 00 07 D2 76 00 00 85 01 01 00", "90 60 00 00 00",
            "00 A4 04 00 10 A0 00 00 03 96 56 43 41 FF FF FF FF FF FF FF FF 00",
        ])
        #expect(Array(commands.dropFirst(3)) == ExternalTerminal.Script.iOSType4ReadExample.steps.map { text($0.command) })
        #expect(outcome?.ndefMessage == exampleMessage)
    }

    @Test("a long message in chunks of min(MLe, 255) from offset 0; the message equals what was stored")
    func chunks() throws {
        let message = try NDEFMessage(records: [NDEFRecord.uri("https://example.com/a-somewhat-longer-paths")]).serialized()
        let (commands, outcome) = run(IOSType4Reader(), against: NDEFApplet(capabilityContainer: capabilityContainer(mle: 0x0F), ndefFile: ndefFile(message)).respond)
        #expect(Array(commands.suffix(3)) == ["00 B0 00 00 0F", "00 B0 00 0F 0F", "00 B0 00 1E 0C"])
        #expect(outcome?.ndefMessage == message)
    }
}

@Suite("Terminal models in the simulated field")
struct TerminalModelFieldTests {
    @Test("the Android model against an emulating reader: a reserved file id (E102) fails at the CC check, the target is released")
    func androidInTheField() throws {
        let field = fastField()
        let terminal = try #require(ExternalTerminal.named("android-t4t-read"))
        field.place(terminal)
        let reader = SimulatedACR122U(field: field)
        let pn532 = try directPN532(reader)
        try pn532.prepareForCardEmulation()
        _ = try pn532.initAsTarget(uid: EmulatedUID(hex("08 00 B0 0B")))
        let applet = NDEFApplet(capabilityContainer: capabilityContainer(fileID: 0xE102), ndefFile: ndefFile(exampleMessage))
        #expect(try serve(pn532, applet: applet) == .released(.targetReleased))
        #expect(terminal.result == .failed(step: 2, stage: "capability container check",
                                           reason: "NDEF file id E102 is reserved (E102, E103, 3F00, 3FFF, FFFF, and 0000 for mapping 2.0/3.0)"))
        #expect(terminal.exchanges.count == 3)
    }
}

@Suite("The payment-style and access-control terminals (docs/terminal-models.md §3, §4)")
struct PaymentAndAccessTerminalTests {
    /// A PPSE FCI with two entries: F0…022010 priority 2 first, F0…011010 priority 1 second.
    static let ppse = hex("""
        6F 4A 84 0E 32 50 41 59 2E 53 59 53 2E 44 44 46 30 31 A5 38 BF 0C 35 61 18 4F 07 F0 00 00 00 02 20 10
        50 0A 54 45 53 54 20 44 45 42 49 54 87 01 02 61 19 4F 07 F0 00 00 00 01 10 10 50 0B 54 45 53 54 20 43
        52 45 44 49 54 87 01 01 90 00
        """)

    @Test("priority 1 wins over an earlier priority 2; the PDOL 9F66 04 9F02 06 9F37 04 5F2A 02 gets 16 bytes in 83; one READ RECORD per AFL record")
    func payment() {
        let respond = { (apdu: [UInt8]) -> [UInt8] in
            switch text(apdu) {
            case "00 A4 04 00 0E 32 50 41 59 2E 53 59 53 2E 44 44 46 30 31 00": return Self.ppse
            case "00 A4 04 00 07 F0 00 00 00 01 10 10 00":
                return hex("6F 1A 84 07 F0 00 00 00 01 10 10 A5 0F 9F 38 0C 9F 66 04 9F 02 06 9F 37 04 5F 2A 02 90 00")
            case "80 A8 00 00 12 83 10 36 00 40 00 00 00 00 00 01 00 11 22 33 44 09 78 00": return hex("80 0A 19 80 08 01 01 00 10 01 02 00 90 00")
            case "00 B2 01 0C 00", "00 B2 01 14 00", "00 B2 02 14 00": return hex("70 03 5A 01 99 90 00")
            default: return hex("6D 00")
            }
        }
        let (commands, outcome) = run(PaymentTerminal(), against: respond)
        #expect(Array(commands.suffix(3)) == ["00 B2 01 0C 00", "00 B2 01 14 00", "00 B2 02 14 00"], "\(commands)")
        guard case .completed(let report) = outcome else { Issue.record("\(String(describing: outcome))"); return }
        #expect(report.summary == "payment application F0 00 00 00 01 10 10: 3 record(s) read")
        #expect(report.items.first == "AID F0 00 00 00 01 10 10 (TEST CREDIT), priority 1 of 2 in the PPSE")
    }

    @Test("a DOL with one- and two-byte tags")
    func dataObjectList() {
        let list = PaymentTerminal.dataObjectList(hex("9F 66 04 9A 03 5F 2A 02")) ?? []
        #expect(list.map(\.tag) == [0x9F66, 0x9A, 0x5F2A])
        #expect(list.map(\.length) == [4, 3, 2])
        #expect(PaymentTerminal.dataObjectList(hex("9F 66")) == nil)
    }

    @Test("access: SELECT, GET CHALLENGE, INTERNAL AUTHENTICATE, EXTERNAL AUTHENTICATE over the challenge; 63 00 there is access denied")
    func access() {
        func respond(granting: Bool) -> ([UInt8]) -> [UInt8] {
            { apdu in
                switch apdu[1] {
                case 0xA4: return hex("6F 09 84 07 F0 53 42 41 44 47 45 90 00")
                case 0x88: return hex("01 02 90 00")
                case 0x84: return hex("11 22 33 44 55 66 77 88 90 00")
                case 0x82: return granting && Array(apdu.suffix(8)) == hex("4B 78 69 1E 0F 3C 2D D2") ? hex("90 00") : hex("63 00")
                default: return hex("6D 00")
                }
            }
        }
        let (commands, granted) = run(AccessControlReader(), against: respond(granting: true))
        #expect(commands == [
            "00 A4 04 00 07 F0 53 42 41 44 47 45 00", "00 84 00 00 08", "00 88 00 00 08 A1 A2 A3 A4 A5 A6 A7 A8 00",
            "00 82 00 00 08 4B 78 69 1E 0F 3C 2D D2",
        ])
        if case .completed(let report) = granted { #expect(report.items.last == "access granted") } else { Issue.record("\(String(describing: granted))") }
        let (_, denied) = run(AccessControlReader(), against: respond(granting: false))
        #expect(denied?.failure?.stage == "EXTERNAL AUTHENTICATE")
        #expect(denied?.failure?.reason.hasPrefix("access denied: SW 63 00") == true)
    }

    /// The FCI is parsed as a reader parses it (ISO/IEC 7816-4 §11.1): the template that says 10
    /// bytes and holds 9 (the access examples before issue 34), data that is no 6F template, and a
    /// DF name that is not the AID selected all end the reader at SELECT.
    @Test("access: a malformed FCI, a non-FCI answer or another DF name fails at SELECT", arguments: [
        ("6F 0A 84 07 F0 53 42 41 44 47 45 90 00", "not one well-formed FCI template"),
        ("01 02 90 00", "not one well-formed FCI template"),
        ("6F 09 84 07 F0 53 42 41 44 47 46 90 00", "DF name 84 is F0 53 42 41 44 47 46"),
    ])
    func accessFCIParsed(_ select: String, _ reason: String) {
        let (commands, outcome) = run(AccessControlReader()) { $0[1] == 0xA4 ? hex(select) : hex("90 00") }
        #expect(commands.count == 1)
        #expect(outcome?.failure?.stage == "SELECT application")
        #expect(outcome?.failure?.reason.contains(reason) == true, "\(String(describing: outcome))")
    }
}

@Suite("Android's NDEF write (AOSP RW_T4tUpdateNDef, docs/terminal-models.md §1)")
struct AndroidType4WriteTests {
    /// A writable file behind `cc`: SELECT as NDEFApplet, UPDATE BINARY into `file`.
    final class WritableTag {
        let cc: [UInt8]
        var file: [UInt8]
        init(cc: [UInt8], size: Int) {
            self.cc = cc
            file = [UInt8](repeating: 0, count: size)
        }
        func respond(_ apdu: [UInt8]) -> [UInt8] {
            if apdu[1] == 0xD6 {
                let offset = Int(apdu[2]) << 8 | Int(apdu[3])
                let data = Array(apdu[5..<5 + Int(apdu[4])])
                guard offset + data.count <= file.count else { return hex("6B 00") }
                file.replaceSubrange(offset..<offset + data.count, with: data)
                return hex("90 00")
            }
            return NDEFApplet(capabilityContainer: cc, ndefFile: file).respondStateless(apdu)
        }
    }

    @Test("NLEN 0000, the message in chunks of MLc from offset 2, then NLEN; the file then holds the message")
    func write() {
        let tag = WritableTag(cc: capabilityContainer(mlc: 0x000F, maxSize: 0x0040), size: 0x40)
        let message = ExternalTerminal.writtenMessage
        #expect(message.count == 24)
        let (commands, outcome) = run(AndroidType4Reader(writing: message), against: tag.respond)
        #expect(Array(commands.suffix(4)) == [
            "00 D6 00 00 02 00 00", "00 D6 00 02 0F " + text(Array(message.prefix(15))), "00 D6 00 11 09 " + text(Array(message.suffix(9))),
            "00 D6 00 00 02 00 18",
        ])
        #expect(outcome?.ndefMessage == message)
        #expect(Array(tag.file.prefix(26)) == [0x00, 0x18] + message)
    }

    @Test("a read-only tag (write access FF) is not written: nothing after READ BINARY NLEN")
    func readOnly() {
        let tag = WritableTag(cc: capabilityContainer(write: 0xFF), size: 0x40)
        let (commands, outcome) = run(AndroidType4Reader(writing: ExternalTerminal.writtenMessage), against: tag.respond)
        #expect(commands.last == "00 B0 00 00 02")
        #expect(outcome?.failure?.stage == "NDEF update")
        #expect(outcome?.failure?.reason == "the NDEF file is read-only (write access FF)")
    }
}
