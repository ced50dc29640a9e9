import ISO7816
import SecbridgeTesting
import Testing
import NFCTags
@testable import SecureElementCredential

/// The worked example's tag: read/write CC `00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00`.
func exampleTag() throws -> Type4TagApplet {
    try Type4TagApplet(
        message: NDEFMessage(records: [.uri("https://example.com")]),
        capabilityContainer: Type4CapabilityContainer(readOnly: false))
}

func exampleElement() throws -> HostSecureElement { HostSecureElement(applets: [try exampleTag()]) }

@Suite("Type 4 Tag applet (docs/iso14443-t4t-ndef.md §4)")
struct Type4TagTests {
    @Test("the full URI read sequence, byte for byte")
    func uriRead() async throws {
        let element = try exampleElement()
        for (command, response) in type4FullURIRead {
            #expect(try await element.transceive(command) == response, "\(command.hexString)")
        }
    }

    @Test("iOS reads NLEN bytes from offset 0, then the rest; any offset and length")
    func iOSRead() async throws {
        let element = try exampleElement()
        for (command, response) in type4FullURIRead.prefix(5) {
            #expect(try await element.transceive(command) == response)
        }
        #expect(try await element.transceive(hex("00 B0 00 00 10")).hexString
            == "00 10 D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 90 00")
        #expect(try await element.transceive(hex("00 B0 00 10 02")).hexString == "6F 6D 90 00")
        #expect(try await element.transceive(hex("00 B0 00 07 03")).hexString == "65 78 61 90 00")
    }

    @Test("status words for misses", arguments: [
        ("00 A4 04 00 07 D2 76 00 00 85 01 00 00", "6A 82", false),   // v1 AID: not registered
        ("00 B0 00 00 0F", "69 86", true),                           // nothing selected
        ("00 A4 00 0C 02 E1 05", "6A 82", true),                     // unknown file
        ("00 A4 00 0C 03 E1 03 00", "67 00", true),                  // Lc 3 in SELECT file
        ("00 A4 00 04 02 E1 03", "6B 00", true),                     // P2 neither 00 nor 0C
        ("80 B0 00 00 0F", "6E 00", true),                           // CLA ≠ 00
        ("00 CA 00 00 00", "6D 00", true),                           // unknown INS
        ("90 60 00 00 00", "6D 00", false),                          // iPhone probe, no applet selected
        ("00 A4 00 0C 02 E1 03", "6A 82", false),                    // SELECT file, no applet selected
    ])
    func misses(_ command: String, _ response: String, _ selectApplication: Bool) async throws {
        let element = try exampleElement()
        if selectApplication { _ = try await element.transceive(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")) }
        #expect(try await element.transceive(hex(command)).hexString == response)
    }

    @Test("READ BINARY edges: past the end 6B 00, Le > MLe 6B 00, P1 bit 8 6B 00, a read past the end is shortened")
    func readEdges() async throws {
        let element = try exampleElement()
        _ = try await element.transceive(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
        _ = try await element.transceive(hex("00 A4 00 00 02 E1 03"))  // P2 00 accepted
        #expect(try await element.transceive(hex("00 B0 00 0D 0F")).hexString == "00 00 90 00")
        #expect(try await element.transceive(hex("00 B0 00 10 01")).hexString == "6B 00")
        #expect(try await element.transceive(hex("00 B0 00 00 80")).hexString == "6B 00")
        #expect(try await element.transceive(hex("00 B0 80 00 01")).hexString == "6B 00")
        #expect(try await element.transceive(hex("00 D6 00 00 01 00")).hexString == "69 86", "the CC is read-only")
    }

    @Test("UPDATE BINARY in the Android write order: NLEN 0000, the message, then NLEN")
    func update() async throws {
        let tag = try exampleTag()
        let element = HostSecureElement(applets: [tag])
        _ = try await element.transceive(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
        _ = try await element.transceive(hex("00 A4 00 0C 02 E1 04"))
        let message = try NDEFMessage(records: [NDEFRecord.text("Hi", language: "en")]).serialized()
        #expect(try await element.transceive(hex("00 D6 00 00 02 00 00")).hexString == "90 00")
        #expect(try await element.transceive([0x00, 0xD6, 0x00, 0x02, UInt8(message.count)] + message).hexString == "90 00")
        #expect(try await element.transceive([0x00, 0xD6, 0x00, 0x00, 0x02, 0x00, UInt8(message.count)]).hexString == "90 00")
        #expect(try tag.currentMessage()?.records.first?.textValue()?.text == "Hi")
        #expect(try await element.transceive(hex("00 D6 04 00 02 00 00")).hexString == "67 00", "runs past the 1024-byte file")
        #expect(try await element.transceive(hex("00 D6 04 01 01 00")).hexString == "6B 00", "offset past the end")
    }

    @Test("a read-only tag refuses UPDATE BINARY with 69 86")
    func readOnly() async throws {
        let element = HostSecureElement(applets: [try Type4TagApplet(message: NDEFMessage(records: [.uri("https://example.com")]))])
        _ = try await element.transceive(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
        _ = try await element.transceive(hex("00 A4 00 0C 02 E1 04"))
        #expect(try await element.transceive(hex("00 D6 00 00 02 00 00")).hexString == "69 86")
    }
}

@Suite("AID routing")
struct RoutingTests {
    final class Echo: HostApplet {
        let name: String
        let aids: [AIDRegistration]
        init(_ name: String, _ aids: [AIDRegistration]) {
            self.name = name
            self.aids = aids
        }
        func select(_ command: CommandAPDU) -> ResponseAPDU { ResponseAPDU(data: Array(name.utf8), statusWord: .success) }
        func process(_ command: CommandAPDU) -> ResponseAPDU { ResponseAPDU(data: Array(name.utf8), statusWord: .success) }
        func deselect() {}
    }

    @Test("exact, then the longest prefix, then partial selection; 6A 82 for an unknown AID", arguments: [
        ("00 A4 04 00 05 F0 01 02 03 04 00", "61 90 00"),             // exact "a"
        ("00 A4 04 00 06 F0 01 02 03 04 05 00", "62 90 00"),          // prefix F0 01 02 03 04 05* → "b" (longer than "c"'s)
        ("00 A4 04 00 07 F0 01 02 03 04 09 09 00", "63 90 00"),       // prefix F0 01 02 03 04* → "c"
        ("00 A4 04 00 05 A0 00 00 00 03 00", "64 90 00"),             // partial: "d" is A0 00 00 00 03 10 10
        ("00 A4 04 00 05 A0 00 00 00 04 00", "6A 82"),                // unknown
    ])
    func routing(_ command: String, _ response: String) throws {
        var router = AppletRouter(applets: [
            Echo("a", [try AIDRegistration(text: "F0 01 02 03 04")]),
            Echo("b", [try AIDRegistration(text: "F0 01 02 03 04 05*")]),
            Echo("c", [try AIDRegistration(text: "F0 01 02 03 04*")]),
            Echo("d", [try AIDRegistration(text: "A0 00 00 00 03 10 10")]),
        ])
        #expect(router.route(hex(command)).hexString == response)
    }

    @Test("an unknown AID keeps the current selection; bad bytes get 67 00")
    func keepsSelection() throws {
        var router = AppletRouter(applets: [Echo("a", [try AIDRegistration(text: "F0 01 02 03 04")])])
        _ = router.route(hex("00 A4 04 00 05 F0 01 02 03 04"))
        #expect(router.route(hex("00 A4 04 00 05 F0 09 09 09 09")).hexString == "6A 82")
        #expect(router.route(hex("80 10 00 00")).hexString == "61 90 00")
        #expect(router.route(hex("80 10 00")).hexString == "67 00")
        router.reset()
        #expect(router.route(hex("80 10 00 00")).hexString == "6D 00")
    }

    @Test("APDU patterns: ?? and a final *")
    func patterns() throws {
        let pattern = try APDUPattern(text: "80 CA ?? 7F *")
        #expect(pattern.matches(hex("80 CA 9F 7F")))
        #expect(pattern.matches(hex("80 CA 9F 7F 00")))
        #expect(!pattern.matches(hex("80 CA 9F 7E 00")))
        #expect(!pattern.matches(hex("80 CA 9F")))
        #expect(pattern.description == "80 CA ?? 7F *")
        #expect(throws: ISO7816Error(.invalidHexDigit, "")) { try APDUPattern(text: "80 * CA") }
        #expect(throws: ISO7816Error(.invalidHexDigit, "")) { try APDUPattern(text: "8") }
    }

    @Test("a response longer than one PN532 frame goes out in parts with 61 XX and GET RESPONSE")
    func splitter() {
        var splitter = ResponseSplitter(maximumLength: 10)
        let response = Array(1...20).map(UInt8.init) + [0x90, 0x00]
        #expect(splitter.split(response).hexString == "01 02 03 04 05 06 07 08 61 0C")
        #expect(splitter.getResponse(hex("00 C0 00 00 0C"))?.hexString == "09 0A 0B 0C 0D 0E 0F 10 61 04")
        #expect(splitter.getResponse(hex("00 C0 00 00 04"))?.hexString == "11 12 13 14 90 00")
        #expect(splitter.getResponse(hex("00 C0 00 00 04")) == nil)
        #expect(splitter.split([0x90, 0x00]) == [0x90, 0x00])
    }
}
