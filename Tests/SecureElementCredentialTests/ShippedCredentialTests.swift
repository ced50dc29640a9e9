import ACR122Simulator
import Foundation
import ISO7816
import SecbridgeTesting
import Testing
@testable import SecureElementCredential

/// Every shipped credential against each terminal model its documentation names
/// (Fixtures/credentials/README.md, docs/terminal-models.md §1–§4), and every TLV it declares
/// parsed with the ISO7816 BER-TLV decoder (issue 30 item 3, issue 34 item 2). vicc-relay.json
/// relays a card in a PC/SC reader: its end-to-end tests run it.
@Suite("Shipped credentials pass the terminals their docs name")
struct ShippedCredentialTests {
    static let pairs: [(file: String, terminal: String)] = [
        ("uri-tag.json", "android-t4t-read"), ("uri-tag.json", "android11-t4t-read"), ("uri-tag.json", "ios-t4t-read"),
        ("worked-example-tag.json", "android-t4t-read"), ("worked-example-tag.json", "ios-t4t-read"),
        ("text-tag.json", "android-t4t-read"), ("text-tag.json", "ios-t4t-read"), ("text-tag.json", "android-t4t-write"),
        ("access-badge.json", "access-control"), ("door-badge-auth.json", "access-control"),
        ("payment-test-card.json", "emv-payment"),
    ]

    static func program(_ name: String) -> any TerminalProgram {
        switch name {
        case "android-t4t-read": AndroidType4Reader(release: .android15)
        case "android11-t4t-read": AndroidType4Reader(release: .android11)
        case "android-t4t-write": AndroidType4Reader(writing: ExternalTerminal.writtenMessage)
        case "ios-t4t-read": IOSType4Reader()
        case "access-control": AccessControlReader()
        default: PaymentTerminal()
        }
    }

    /// Runs `program` against `element`, at most 512 exchanges.
    static func outcome(_ program: any TerminalProgram, _ element: any SecureElement) async throws -> TerminalOutcome? {
        var program = program
        var action = program.start()
        for _ in 0..<512 {
            switch action {
            case .finish(let outcome): return outcome
            case .send(let command): action = program.receive(try await element.transceive(command))
            }
        }
        return nil
    }

    @Test("each shipped credential passes each terminal its docs name", arguments: pairs.indices)
    func passes(_ index: Int) async throws {
        let (file, terminal) = Self.pairs[index]
        let element = try CredentialFile(contentsOfFile: credentialsDirectory + "/" + file).makeCredential().secureElement
        let result = try await Self.outcome(Self.program(terminal), element)
        guard case .completed(let report)? = result else {
            Issue.record("\(file) with \(terminal): \(String(describing: result))")
            return
        }
        #expect(!report.summary.isEmpty)
    }

    /// Each declarative applet's SELECT answer is one FCI that parses, with the DF name 84 its
    /// first AID; each rule's constructed answer parses too (the loader's check, seen from here).
    @Test("every shipped FCI parses as BER-TLV, DF name = the applet's AID",
          arguments: ["access-badge.json", "door-badge-auth.json", "payment-test-card.json"])
    func fciParses(_ file: String) throws {
        let credential = try CredentialFile(contentsOfFile: credentialsDirectory + "/" + file).makeCredential()
        let applets = try #require((credential.secureElement as? HostSecureElement)?.applets.compactMap { $0 as? DeclarativeApplet })
        #expect(!applets.isEmpty)
        for applet in applets {
            let fci = try BERTLV(parsing: Array(applet.selectResponse.dropLast(2)))
            #expect(fci.tag == BERTag(0x6F))
            #expect(fci.child(BERTag(0x84))?.value == applet.aids.first?.bytes)
        }
    }

    /// Issue 34 item 4: a terminal may choose any entry of the PPSE directory (EMV Contactless
    /// Book B §3.3: the priority decides only among the entries it supports), so each entry must
    /// select: 90 00 and an FCI whose DF name 84 is that AID and whose label 50 is the entry's.
    @Test("every AID the payment example's PPSE lists is selectable, with its own FCI")
    func everyPPSEEntrySelects() async throws {
        let element = try CredentialFile(contentsOfFile: credentialsDirectory + "/payment-test-card.json").makeCredential().secureElement
        let ppse = try await element.transceive(hex("00 A4 04 00 0E 32 50 41 59 2E 53 59 53 2E 44 44 46 30 31 00"))
        #expect(ppse.suffix(2) == [0x90, 0x00])
        let directory = try #require(try BERTLV(parsing: Array(ppse.dropLast(2))).child(BERTag(0xA5))?.child(BERTag(0xBF0C)))
        let entries = directory.children.filter { $0.tag == BERTag(0x61) }
        #expect(entries.count == 2)
        for entry in entries {
            let aid = try #require(entry.child(BERTag(0x4F))?.value)
            let answer = try await element.transceive([0x00, 0xA4, 0x04, 0x00, UInt8(aid.count)] + aid + [0x00])
            #expect(answer.suffix(2) == [0x90, 0x00], "SELECT \(aid.hexString) → \(answer.hexString)")
            let fci = try BERTLV(parsing: Array(answer.dropLast(2)))
            #expect(fci.child(BERTag(0x84))?.value == aid)
            #expect(fci.child(BERTag(0xA5))?.child(BERTag(0x50))?.value == entry.child(BERTag(0x50))?.value)
        }
    }

    /// The debit entry (priority 2) byte for byte: its FCI with the PDOL, GET PROCESSING OPTIONS
    /// (format 2: AIP 19 80, AFL SFI 1 record 1), its one record (test PAN 9999 0000 0000 0002).
    @Test("the payment example's debit application answers SELECT, GPO and READ RECORD", arguments: [
        ("00 A4 04 00 07 F0 00 00 00 02 20 10 00",
         "6F 26 84 07 F0 00 00 00 02 20 10 A5 1B 50 0A 54 45 53 54 20 44 45 42 49 54 9F 38 0C 9F 66 04 9F 02 06 9F 37 04 5F 2A 02 90 00"),
        ("80 A8 00 00 12 83 10 36 00 40 00 00 00 00 00 01 00 11 22 33 44 09 78 00", "77 0A 82 02 19 80 94 04 08 01 01 00 90 00"),
        ("00 B2 01 0C 00", "70 1D 5A 08 99 99 00 00 00 00 00 02 5F 24 03 30 12 31 5F 20 0A 54 45 53 54 2F 44 45 42 49 54 90 00"),
        ("00 B2 02 0C 00", "6A 83"),
        // P2 0C: the terminal asks for no response data, so no FCI (ISO/IEC 7816-4 §11.2.2).
        ("00 A4 04 0C 07 F0 00 00 00 02 20 10", "90 00"),
        ("00 A4 04 0C 0E 32 50 41 59 2E 53 59 53 2E 44 44 46 30 31", "90 00"),
    ])
    func debitApplication(_ command: String, _ response: String) async throws {
        let element = try CredentialFile(contentsOfFile: credentialsDirectory + "/payment-test-card.json").makeCredential().secureElement
        if !command.hasPrefix("00 A4") { _ = try await element.transceive(hex("00 A4 04 00 07 F0 00 00 00 02 20 10 00")) }
        #expect(try await element.transceive(hex(command)).hexString == response)
    }

    /// GET PROCESSING OPTIONS with PDOL data of the wrong length: 67 00 (wrong length, ISO/IEC
    /// 7816-4 §5.6; EMV Book 3 §6.5.8.4), not 6D 00, which would say the card has no GPO at all.
    /// The credit application's PDOL asks for 16 bytes (9F66 4, 9F02 6, 9F37 4, 5F2A 2).
    @Test("the payment example answers a GPO whose PDOL data has the wrong length with 67 00", arguments: [
        ("80 A8 00 00 12 83 10 36 00 40 00 00 00 00 00 01 00 11 22 33 44 09 78 00", "77 0E 82 02 19 80 94 08 08 01 01 00 10 01 02 00 90 00"),
        ("80 A8 00 00 0E 83 0C 36 00 40 00 00 00 00 00 01 00 11 22 33 44 00", "67 00"),
        ("80 A8 00 00 02 83 00 00", "67 00"),
        ("80 A8 00 00 14 83 12 36 00 40 00 00 00 00 00 01 00 11 22 33 44 09 78 00 00 00", "67 00"),
        ("80 CA 9F 36 00", "6D 00"),
    ])
    func gpoWrongLength(_ command: String, _ response: String) async throws {
        let element = try CredentialFile(contentsOfFile: credentialsDirectory + "/payment-test-card.json").makeCredential().secureElement
        _ = try await element.transceive(hex("00 A4 04 00 07 F0 00 00 00 01 10 10 00"))
        #expect(try await element.transceive(hex(command)).hexString == response)
    }

    @Test("a declared FCI whose length disagrees is refused, naming the byte", arguments: [
        ("6F 0A 84 07 F0 53 42 41 44 47 45 90 00", "$.applets[0].select", "tag 6F announces 10 value bytes; only 9 remain"),
        ("6F 09 84 08 F0 53 42 41 44 47 45 90 00", "$.applets[0].select", "tag 84 announces 8 value bytes"),
        ("6F 09 84 07 F0 53 42 41 44 47 45 00 90 00", "$.applets[0].select", ""),
    ])
    func malformedSelectRefused(_ select: String, _ path: String, _ reason: String) {
        let json = #"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "declarative", "aids": ["F0 53 42 41 44 47 45"], "select": "\#(select)"}]}"#
        do {
            _ = try CredentialFile(json: Array(json.utf8))
            // 00 after a complete object is padding (ISO/IEC 7816-4 §5.2.2): accepted.
            #expect(reason.isEmpty, "accepted \(select)")
        } catch {
            #expect(!reason.isEmpty, "\(error)")
            #expect(error.path == path, "\(error)")
            #expect(error.reason.contains(reason) && error.reason.contains("byte "), "\(error)")
        }
    }

    @Test("a rule's constructed answer is checked; GET CHALLENGE's bytes are not TLV", arguments: [
        ("00 B2 01 0C 00", "70 13 5A 08 99 99 00 00 00 00 00 01 90 00", false),
        ("00 B2 01 0C 00", "70 0A 5A 08 99 99 00 00 00 00 00 01 90 00", true),
        ("00 84 00 00 08", "A1 A2 A3 A4 A5 A6 A7 A8 90 00", true),
        ("80 CA 00 42 00", "00 00 00 42 90 00", true),
    ])
    func ruleResponses(_ command: String, _ response: String, _ accepted: Bool) {
        let json = #"{"secbridge-credential": 1, "id": "x", "applets": [{"type": "declarative", "aids": ["F0 53 42 41 44 47 45"], "rules": [{"command": "\#(command)", "response": "\#(response)"}]}]}"#
        do {
            _ = try CredentialFile(json: Array(json.utf8))
            #expect(accepted)
        } catch {
            #expect(!accepted, "\(error)")
            #expect(error.path == "$.applets[0].rules[0].response", "\(error)")
        }
    }
}
