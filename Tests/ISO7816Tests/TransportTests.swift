import ISO7816
import SecbridgeTesting
import Testing

@Suite("ISO 7816 transport over a scripted CardChannel")
struct TransportTests {
    static let data256 = (0..<256).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    static let fcp = "6F 15 81 02 02 00 82 01 01 83 02 44 02 86 08 FF 90 90 90 90 90 90 00"

    // MARK: P01

    @Test("P01 T=0: 61 00 → exactly one 00 C0 00 00 00, 256 bytes + 90 00")
    func p01T0() throws {
        let channel = ScriptedCardChannel(.t0, exchanges: [
            (hex("00 B0 00 00 00"), hex("61 00")),
            (hex("00 C0 00 00 00"), Self.data256 + [0x90, 0x00]),
        ])
        let transport = ISO7816Transport(channel: channel)
        let response = try transport.transmit(CommandAPDU(cla: 0x00, ins: 0xB0, p1: 0, p2: 0, ne: 256))
        #expect(response.data == Self.data256)
        #expect(response.statusWord == .success)
        #expect(channel.commands.filter { $0 == hex("00 C0 00 00 00") }.count == 1)
        #expect(channel.commands.filter { $0.starts(with: [0x00, 0xB0]) }.count == 1)  // never re-issued
        #expect(channel.leftovers.isEmpty)
    }

    @Test("P01 T=1: the same command gives the identical API result")
    func p01T1() throws {
        let channel = ScriptedCardChannel(.t1, exchanges: [
            (hex("00 B0 00 00 00"), Self.data256 + [0x90, 0x00])
        ])
        let response = try ISO7816Transport(channel: channel).transmit(CommandAPDU(cla: 0x00, ins: 0xB0, p1: 0, p2: 0, ne: 256))
        #expect(response == ResponseAPDU(data: Self.data256, statusWord: .success))
        #expect(channel.leftovers.isEmpty)
    }

    // MARK: P02

    @Test("P02 case-4 SELECT: T=0 sends no Le and GET RESPONSE P3 = 17; T=1 direct; same result")
    func p02() throws {
        let select = try CommandAPDU(parsing: hex("00 A4 08 00 04 50 15 44 02 00"))
        let t1 = ScriptedCardChannel(.t1, exchanges: [("00 A4 08 00 04 50 15 44 02 00", Self.fcp + " 90 00")])
        let t0 = ScriptedCardChannel(.t0, exchanges: [
            ("00 A4 08 00 04 50 15 44 02", "61 17"),
            ("00 C0 00 00 17", Self.fcp + " 90 00"),
        ])
        let r1 = try ISO7816Transport(channel: t1).transmit(select)
        let r0 = try ISO7816Transport(channel: t0).transmit(select)
        #expect(r0 == r1)
        #expect(r0.data == hex(Self.fcp))
        #expect(r0.data.count == 23)
        #expect(r0.statusWord == .success)
        #expect(t0.commands[1][4] == 0x17)  // P3 = min(Ne 256, 0x17)
        #expect(t0.leftovers.isEmpty && t1.leftovers.isEmpty)
        let fcp = try BERTLV(parsing: r0.data)
        #expect(fcp.child(BERTag(0x83))?.value == [0x44, 0x02])
    }

    // MARK: 61 XX and 6C XX

    @Test("with .stopAtNe, 61 XX stops at Ne and keeps the card's 61 XX")
    func getResponseStopsAtNe() throws {
        let ten = [UInt8](repeating: 0x11, count: 10)
        let channel = ScriptedCardChannel(.t1, exchanges: [
            (hex("00 CA 00 00 14"), ten + [0x61, 0x30]),  // Ne 20: 10 bytes, 48 more available
            (hex("00 C0 00 00 0A"), ten + [0x61, 0x26]),  // P3 = min(20 - 10, 48) = 10
        ])
        let response = try ISO7816Transport(channel: channel, responseChain: .stopAtNe)
            .transmit(CommandAPDU(cla: 0, ins: 0xCA, p1: 0, p2: 0, ne: 20))
        #expect(response.data.count == 20)
        #expect(response.statusWord == StatusWord(0x6126))
        #expect(channel.leftovers.isEmpty)
        _ = try response.checked()  // 61 XX left after resolution is success
    }

    /// The issue's case: a 2847-byte object read with Le 00 arrives whole (256 + 10 × 256 + 31),
    /// as OpenSC, javax.smartcardio and pcsc-sharp follow 61 XX past a short Ne.
    @Test("by default the 61 XX chain is followed to its end, past a short Le 00")
    func getResponseFollowsTheChainToTheEnd() throws {
        let object = (0..<2847).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var exchanges: [([UInt8], [UInt8])] = [(hex("00 CB 3F FF 05 5C 03 5F C1 05 00"), Array(object[0..<256]) + [0x61, 0x00])]
        var offset = 256
        while offset < object.count {
            let part = min(256, object.count - offset)
            let left = object.count - offset - part
            exchanges.append((hex("00 C0 00 00 00"), Array(object[offset..<(offset + part)]) + (left == 0 ? [0x90, 0x00] : [0x61, left >= 256 ? 0x00 : UInt8(left)])))
            offset += part
        }
        // The last GET RESPONSE asks for exactly what the card offered: 61 1F → P3 1F.
        exchanges[exchanges.count - 1].0 = hex("00 C0 00 00 1F")
        let channel = ScriptedCardChannel(.t1, exchanges: exchanges)
        let response = try ISO7816Transport(channel: channel)
            .transmit(CommandAPDU(cla: 0, ins: 0xCB, p1: 0x3F, p2: 0xFF, data: hex("5C 03 5F C1 05"), ne: 256))
        #expect(response.data == object)
        #expect(response.statusWord == .success)
        #expect(channel.commands.count == 12)
        #expect(channel.leftovers.isEmpty)
    }

    @Test("an error status word mid-chain ends it: the data before it is partial, not the answer")
    func getResponseChainBroken() throws {
        let channel = ScriptedCardChannel(.t1, exchanges: [
            (hex("00 B0 00 00 00"), [UInt8](repeating: 0xAA, count: 256) + [0x61, 0x00]),
            (hex("00 C0 00 00 00"), [UInt8](repeating: 0xBB, count: 256) + [0x61, 0x40]),
            (hex("00 C0 00 00 40"), [0x6F, 0x00]),
        ])
        do {
            _ = try ISO7816Transport(channel: channel).transmit(CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, ne: 256))
            Issue.record("a broken chain must throw")
        } catch let error as GetResponseChainError {
            #expect(error.partialData == [UInt8](repeating: 0xAA, count: 256) + [UInt8](repeating: 0xBB, count: 256))
            #expect(error.statusWord == StatusWord(0x6F00))
            #expect(error.getResponses == 2)
        }
        #expect(channel.leftovers.isEmpty)
    }

    @Test("an answer of 0 bytes is noResponse (a mute card), not a parse complaint")
    func mutCardIsNoResponse() throws {
        let channel = ScriptedCardChannel(.t1, exchanges: [(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), [])])
        #expect(throws: ISO7816Error(.noResponse, "")) {
            try ISO7816Transport(channel: channel).transmit(CommandAPDU(parsing: hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")))
        }
    }

    @Test("the GET RESPONSE loop is bounded")
    func getResponseCap() throws {
        let channel = ScriptedCardChannel(.t0, exchanges: [
            ("00 B0 00 00 00", "61 02"),
            ("00 C0 00 00 02", "01 02 61 02"),
            ("00 C0 00 00 02", "01 02 61 02"),
            ("00 C0 00 00 02", "01 02 61 02"),
        ])
        let transport = ISO7816Transport(channel: channel, maxGetResponses: 3)
        #expect(throws: ISO7816Error(.getResponseLimit, "")) {
            try transport.transmit(CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, ne: 256))
        }
        #expect(channel.leftovers.isEmpty)
    }

    @Test("6C XX: the same command once more with Le = XX")
    func wrongLe() throws {
        let channel = ScriptedCardChannel(.t0, exchanges: [
            ("00 B0 00 00 00", "6C 10"),
            ("00 B0 00 00 10", "00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F 90 00"),
        ])
        let response = try ISO7816Transport(channel: channel).transmit(CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, ne: 256))
        #expect(response.data == (0..<16).map { UInt8($0) })
        #expect(response.statusWord == .success)
        #expect(channel.leftovers.isEmpty)
    }

    @Test("6C XX is acted on once only")
    func wrongLeOnce() throws {
        let channel = ScriptedCardChannel(.t0, exchanges: [
            ("00 B0 00 00 00", "6C 10"),
            ("00 B0 00 00 10", "6C 08"),
        ])
        let response = try ISO7816Transport(channel: channel).transmit(CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, ne: 256))
        #expect(response.statusWord == StatusWord(0x6C08))
        #expect(channel.leftovers.isEmpty)
    }

    @Test("other status words are returned untouched", arguments: [0x6A82, 0x6982, 0x6700, 0x6D00, 0x9100] as [UInt16])
    func otherSW(_ sw: UInt16) throws {
        // T=0: case 4S goes without Le.
        let channel = ScriptedCardChannel(.t0, exchanges: [(hex("00 A4 04 00 02 3F 00"), StatusWord(sw).bytes)])
        let response = try ISO7816Transport(channel: channel).transmit(
            CommandAPDU(cla: 0, ins: 0xA4, p1: 4, p2: 0, data: [0x3F, 0x00], ne: 256))
        #expect(response.statusWord == StatusWord(sw))
        #expect(response.data.isEmpty)
        #expect(channel.commands.count == 1)
    }

    @Test("GET RESPONSE keeps the logical channel of the command")
    func getResponseChannel() throws {
        let channel = ScriptedCardChannel(.t0, exchanges: [
            ("01 A4 08 00 04 50 15 44 02", "61 17"),
            ("01 C0 00 00 17", Self.fcp + " 90 00"),
        ])
        let response = try ISO7816Transport(channel: channel).transmit(
            CommandAPDU(cla: 0x01, ins: 0xA4, p1: 8, p2: 0, data: [0x50, 0x15, 0x44, 0x02], ne: 256))
        #expect(response.data.count == 23)
    }

    // MARK: Reader pseudo-APDUs

    @Test("CLA FF passes through: no T=0 mapping, no 61 XX handling")
    func readerPassThrough() throws {
        let channel = ScriptedCardChannel(.t0, exchanges: [("FF CA 00 00 00", "61 04")])
        let response = try ISO7816Transport(channel: channel).transmit(CommandAPDU(cla: 0xFF, ins: 0xCA, p1: 0, p2: 0, ne: 256))
        #expect(response.statusWord == StatusWord(0x6104))
        #expect(channel.commands == [hex("FF CA 00 00 00")])
    }

    @Test("raw bytes for CLA FF are returned raw, even without a status word")
    func readerRawFirmware() throws {
        // FF 00 48 00 00: firmware version, answered "ACR122U207" with no SW (ACR122U API v2.04).
        let firmware = Array("ACR122U207".utf8)
        let channel = ScriptedCardChannel(.t1, exchanges: [(hex("FF 00 48 00 00"), firmware)])
        #expect(try ISO7816Transport(channel: channel).transmit(bytes: hex("FF 00 48 00 00")) == firmware)
    }

    // MARK: P06

    static let payload300 = (0..<300).map { UInt8(truncatingIfNeeded: $0) }

    @Test("P06: card and reader extended-capable → one extended APDU")
    func p06Extended() throws {
        let command = try CommandAPDU(cla: 0x00, ins: 0xDA, p1: 0x01, p2: 0x02, data: Self.payload300)
        let channel = ScriptedCardChannel(.t1, exchanges: [(hex("00 DA 01 02 00 01 2C") + Self.payload300, hex("90 00"))])
        let transport = ISO7816Transport(
            channel: channel, capabilities: CardCapabilities(compactTLVValue: [0xC0, 0x21, 0xC0]), readerMaxInput: 65_544)
        #expect(try transport.transmit(command).statusWord == .success)
        #expect(channel.commands.count == 1)
    }

    @Test("P06: ACR122U max input 271 → chained blocks, CLA | 10 except the last")
    func p06ChainedOnACR122U() throws {
        let command = try CommandAPDU(cla: 0x00, ins: 0xDA, p1: 0x01, p2: 0x02, data: Self.payload300)
        let channel = ScriptedCardChannel(.t1, exchanges: [
            (hex("10 DA 01 02 FF") + Array(Self.payload300[0..<255]), hex("90 00")),
            (hex("00 DA 01 02 2D") + Array(Self.payload300[255...]), hex("90 00")),
        ])
        let transport = ISO7816Transport(
            channel: channel, capabilities: CardCapabilities(compactTLVValue: [0xC0, 0x21, 0xC0]), readerMaxInput: 271)
        #expect(try transport.transmit(command).statusWord == .success)
        #expect(channel.leftovers.isEmpty)
    }

    @Test("P06: card with chaining only, on T=0, with Le on the last block")
    func p06ChainingT0() throws {
        let command = try CommandAPDU(cla: 0x80, ins: 0xE8, p1: 0, p2: 0, data: Self.payload300, ne: 256)
        let channel = ScriptedCardChannel(.t0, exchanges: [
            (hex("90 E8 00 00 FF") + Array(Self.payload300[0..<255]), hex("90 00")),
            (hex("80 E8 00 00 2D") + Array(Self.payload300[255...]), hex("61 02")),  // case 4S: no Le on T=0
            (hex("00 C0 00 00 02"), hex("AB CD 90 00")),  // proprietary CLA: GET RESPONSE with CLA 00
        ])
        let transport = ISO7816Transport(
            channel: channel, capabilities: CardCapabilities(supportsCommandChaining: true, supportsExtendedLength: false))
        let response = try transport.transmit(command)
        #expect(response == ResponseAPDU(data: [0xAB, 0xCD], statusWord: .success))
        #expect(channel.leftovers.isEmpty)
    }

    @Test("P06: a block the card refuses ends the chain with its status word")
    func p06ChainRefused() throws {
        let command = try CommandAPDU(cla: 0x00, ins: 0xDA, p1: 0x01, p2: 0x02, data: Self.payload300)
        let channel = ScriptedCardChannel(.t1, exchanges: [
            (hex("10 DA 01 02 FF") + Array(Self.payload300[0..<255]), hex("68 84"))
        ])
        let transport = ISO7816Transport(channel: channel, capabilities: CardCapabilities(compactTLVValue: [0x00, 0x00, 0x80]))
        #expect(try transport.transmit(command).statusWord == StatusWord(0x6884))
        #expect(channel.commands.count == 1)
    }

    @Test("P06: 73 C8 40 00 (neither) → a clear error before anything is sent")
    func p06Neither() throws {
        let command = try CommandAPDU(cla: 0x00, ins: 0xDA, p1: 0x01, p2: 0x02, data: Self.payload300)
        let channel = ScriptedCardChannel(.t1, [])
        let transport = ISO7816Transport(
            channel: channel, capabilities: CardCapabilities(compactTLVValue: [0xC8, 0x40, 0x00]), readerMaxInput: 65_544)
        #expect(throws: ISO7816Error(.commandTooLong, "")) { try transport.transmit(command) }
        #expect(channel.commands.isEmpty)
        do {
            _ = try transport.plan(for: command)
        } catch {
            #expect(error.reason == "the command carries 300 data bytes, more than a short APDU's 255, and the card announces neither extended length nor command chaining (card capabilities, ATR tag 73); nothing was sent")
        }
    }

    @Test("P06: extended-capable card on T=0 without chaining → error, nothing sent")
    func p06ExtendedOnT0() throws {
        let command = try CommandAPDU(cla: 0x00, ins: 0xDA, p1: 0x01, p2: 0x02, data: Self.payload300)
        let channel = ScriptedCardChannel(.t0, [])
        let transport = ISO7816Transport(
            channel: channel, capabilities: CardCapabilities(supportsCommandChaining: false, supportsExtendedLength: true),
            readerMaxInput: 65_544)
        #expect(throws: ISO7816Error(.commandTooLong, "")) { try transport.transmit(command) }
        #expect(channel.commands.isEmpty)
    }

    @Test("P06: Ne > 256 through an ACR122U (max input 271) stays short even for an extended-capable card")
    func p06LargeNeOnACR122U() throws {
        let channel = ScriptedCardChannel(.t1, exchanges: [
            (hex("00 B0 00 00 00"), Self.data256 + [0x61, 0x00]),
            (hex("00 C0 00 00 2C"), [UInt8](repeating: 0xEE, count: 44) + [0x90, 0x00]),
        ])
        let transport = ISO7816Transport(
            channel: channel, capabilities: CardCapabilities(compactTLVValue: [0xC0, 0x21, 0xC0]), readerMaxInput: 271)
        let response = try transport.transmit(CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, ne: 300))
        #expect(response.data.count == 300)
        #expect(channel.leftovers.isEmpty)
    }

    @Test("Ne > 256 on an extended-capable card and reader: one case 2E APDU")
    func largeNeExtended() throws {
        let channel = ScriptedCardChannel(.t1, exchanges: [
            (hex("00 B0 00 00 00 01 2C"), [UInt8](repeating: 0xEE, count: 300) + [0x90, 0x00])
        ])
        let transport = ISO7816Transport(
            channel: channel, capabilities: CardCapabilities(compactTLVValue: [0xC0, 0x21, 0xC0]), readerMaxInput: 65_544)
        let response = try transport.transmit(CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, ne: 300))
        #expect(response.data.count == 300)
        #expect(channel.commands.count == 1)
    }

    @Test("Ne > 256 on a short-only card: Le 00, the rest through 61 XX")
    func largeNeShortOnly() throws {
        let channel = ScriptedCardChannel(.t1, exchanges: [
            (hex("00 B0 00 00 00"), Self.data256 + [0x61, 0x00]),
            (hex("00 C0 00 00 2C"), [UInt8](repeating: 0xEE, count: 44) + [0x90, 0x00]),  // P3 = 300 - 256
        ])
        let response = try ISO7816Transport(channel: channel).transmit(CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, ne: 300))
        #expect(response.data.count == 300)
        #expect(response.statusWord == .success)
    }

    // MARK: P14

    @Test("P14: PIV SELECT through the transport, AID check accepts the PIX")
    func p14PIV() throws {
        let aid = try AID(hex: "A0 00 00 03 08 00 00 10 00")
        let channel = ScriptedCardChannel(.t1, exchanges: [
            ("00 A4 04 00 09 A0 00 00 03 08 00 00 10 00 00",
             "61 11 4F 06 00 00 10 00 01 00 79 07 4F 05 A0 00 00 03 08 90 00")
        ])
        let response = try ISO7816Transport(channel: channel).transmit(.select(aid: aid)).checked()
        #expect(response.data.count == 19)
        #expect(try checkSelectedAID(requested: aid, responseData: response.data) == .pixOnly([0x00, 0x00, 0x10, 0x00, 0x01, 0x00]))
    }
}
