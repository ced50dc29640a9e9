import ISO7816
import SecbridgeTesting
import Testing

/// `ISO7816Transport.transmit(encoded:)` sends a short card APDU as the bytes given; it must give
/// what `transmit(CommandAPDU(parsing:))` gives, exchange for exchange.
@Suite("ISO 7816 transport: commands sent as encoded")
struct EncodedTransmitTests {
    /// Every short shape and the lengths at its edges, and forms that are not short.
    static let encodings: [String] = [
        "00 A4 04 00",  // case 1
        "00 B0 00 00 00",  // case 2S, Le 00 = 256
        "00 B0 00 00 0F",  // case 2S
        "00 A4 04 00 07 D2 76 00 00 85 01 01",  // case 3S
        "00 A4 04 00 07 D2 76 00 00 85 01 01 00",  // case 4S, Le 00
        "00 A4 04 00 01 3F 10",  // case 4S, Le 10
        "00 B0 00 00 00 01 00",  // case 2E
        "00 D6 00 00 00 00 02 01 02",  // case 3E
        "00 A4 04 00 00 00 01 3F 00 00",  // case 4E
    ]

    @Test("shortNe(ofEncoded:) is Ne for the short forms, nil for the rest; validate agrees with init(parsing:)")
    func shortNeMatchesTheParser() throws {
        for text in Self.encodings {
            let bytes = hex(text)
            let parsed = try CommandAPDU(parsing: bytes)
            if parsed.isExtended {
                #expect(CommandAPDU.shortNe(ofEncoded: bytes) == nil, "\(text)")
            } else {
                #expect(CommandAPDU.shortNe(ofEncoded: bytes) == parsed.ne, "\(text)")
                #expect(parsed.serialized() == bytes, "\(text): a short encoding is canonical")
            }
            try CommandAPDU.validate(bytes)
        }
        // Every length of a short Lc of 05 (header + Lc + 0…7 more bytes): only 5 and 6 after Lc parse.
        for extra in 0...7 {
            let bytes = hex("00 D6 00 00 05") + [UInt8](repeating: 0xAB, count: extra)
            let parsed = try? CommandAPDU(parsing: bytes)
            #expect(CommandAPDU.shortNe(ofEncoded: bytes) == parsed?.ne, "Lc 05 with \(extra) bytes after it")
            #expect((try? CommandAPDU.validate(bytes)) != nil ? parsed != nil : parsed == nil)
        }
        for bad in ["00 A4 04", "00 A4 04 00 00 00", "00 A4 04 00 02 01"] {
            #expect(CommandAPDU.shortNe(ofEncoded: hex(bad)) == nil)
            #expect(throws: ISO7816Error.self) { try CommandAPDU.validate(hex(bad)) }
        }
    }

    @Test("transmit(encoded:) sends and returns what transmit(_:) does: 90 00, 6C XX, 61 XX chains")
    func sameExchangesAsTheDecodedPath() throws {
        let select = "00 A4 04 00 07 D2 76 00 00 85 01 01 00"
        let cases: [(TransmissionProtocol, String, [(String, String)])] = [
            (.t1, select, [(select, "90 00")]),
            (.t1, "00 B0 00 00 0F", [("00 B0 00 00 0F", "6C 08"), ("00 B0 00 00 08", "01 02 03 04 05 06 07 08 90 00")]),
            (.t1, select, [(select, "61 04"), ("00 C0 00 00 04", "6F 02 84 00 90 00")]),
            // Extended (case 2E, Ne 256) on a short-only card: the decoded path sends it short.
            (.t1, "00 B0 00 00 00 01 00", [("00 B0 00 00 00", "6A 82")]),
            (.t0, select, [("00 A4 04 00 07 D2 76 00 00 85 01 01", "61 02"), ("00 C0 00 00 02", "6F 00 90 00")]),  // T=0
        ]
        for (transmissionProtocol, command, exchanges) in cases {
            let encoded = ScriptedCardChannel(transmissionProtocol, exchanges: exchanges)
            let decoded = ScriptedCardChannel(transmissionProtocol, exchanges: exchanges)
            let viaBytes = try ISO7816Transport(channel: encoded).transmit(encoded: hex(command))
            let viaValue = try ISO7816Transport(channel: decoded).transmit(CommandAPDU(parsing: hex(command)))
            #expect(viaBytes == viaValue, "\(command)")
            #expect(encoded.commands == decoded.commands, "\(command)")
            #expect(encoded.leftovers.isEmpty && decoded.leftovers.isEmpty, "\(command)")
        }
    }

    @Test("transmit(encoded:) refuses malformed bytes before sending, with the parser's error")
    func malformedIsRefused() throws {
        let channel = ScriptedCardChannel(.t1, exchanges: [(String, String)]())
        #expect(throws: ISO7816Error.self) { try ISO7816Transport(channel: channel).transmit(encoded: hex("00 A4 04 00 02 01")) }
        #expect(channel.commands.isEmpty)
        // A mute card: the noResponse error names the command as sent.
        let mute = ScriptedCardChannel(.t1, exchanges: [("00 B0 00 00 0F", "")])
        #expect(throws: ISO7816Transport.noResponse(to: hex("00 B0 00 00 0F"))) {
            try ISO7816Transport(channel: mute).transmit(encoded: hex("00 B0 00 00 0F"))
        }
    }
}
