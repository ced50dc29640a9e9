import ISO7816
import SecbridgeTesting
import Testing
@testable import PN53x

/// The P10 TgInitAsTarget request (docs/cases.md P10; Seeed-Studio PN532 issue 111).
let p10InitAsTarget = PN532.TgInitAsTarget(
    modes: [], atqa: ATQA(rawValue: 0x0008), uid: try! EmulatedUID(hex("08 12 34 56")), sak: 0x60,
    feliCaParameters: hex("01 FE A2 A3 A4 A5 A6 A7 C0 C1 C2 C3 C4 C5 C6 C7 FF FF"),
    nfcid3t: hex("AA 99 88 77 66 55 44 33 22 11"))

let p10InitAsTargetAPDU = hex("""
    FF 00 00 00 27 D4 8C 00 08 00 12 34 56 60 01 FE A2 A3 A4 A5 A6 A7 C0 C1 C2 C3 C4 C5 C6 C7
    FF FF AA 99 88 77 66 55 44 33 22 11 00 00
    """)

@Suite("PN532 frames and status")
struct PN532FrameTests {
    struct P08Row: Sendable, CustomTestStringConvertible {
        let id: String
        let frame: PN532HostFrame
        let apdu: [UInt8]
        let reply: [UInt8]
        /// nil = success.
        let error: PN532ErrorCode?
        var testDescription: String { id }
    }

    @Test("P08: status byte behind SW 90 00 (rows 1–3)", arguments: [
        P08Row(id: "P08 row 1: InCommunicateThru timeout", frame: try! PN532.InCommunicateThru(hex("1A 00")).hostFrame(),
               apdu: hex("FF 00 00 00 04 D4 42 1A 00"), reply: hex("D5 43 01 90 00"), error: .timeout),
        P08Row(id: "P08 row 2: reader command inside InDataExchange", frame: try! PN532.InDataExchange(target: 1, data: hex("FF 00 48 00 00")).hostFrame(),
               apdu: hex("FF 00 00 00 08 D4 40 01 FF 00 48 00 00"), reply: hex("D5 41 27 90 00"), error: .notAcceptable),
        P08Row(id: "P08 row 3: MIFARE authentication succeeds", frame: try! PN532.InDataExchange(target: 1, data: hex("60 00 A0 A1 A2 A3 A4 A5 01 02 03 04")).hostFrame(),
               apdu: hex("FF 00 00 00 0F D4 40 01 60 00 A0 A1 A2 A3 A4 A5 01 02 03 04"), reply: hex("D5 41 00 90 00"), error: nil),
    ])
    func p08StatusRows(_ row: P08Row) throws {
        #expect(ACR122Command.directTransmit(row.frame).serialized() == row.apdu)
        let channel = ScriptedCardChannel(.t1, [.transmit(expect: row.apdu, reply: row.reply)])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        let frame = row.frame
        do {
            let data: [UInt8]
            if frame.command == .inCommunicateThru {
                data = try pn532.send(PN532.InCommunicateThru(frame.parameters))
            } else {
                data = try pn532.send(PN532.InDataExchange(target: frame.parameters[0], data: Array(frame.parameters.dropFirst()))).data
            }
            #expect(row.error == nil, "expected chip error \(String(describing: row.error))")
            #expect(data.isEmpty)
        } catch let error as PN532Error {
            #expect(error.chipErrorCode == row.error)
            #expect(error.chipErrorCode != nil)
        }
        channel.assertFinished()
    }

    @Test("P08 row 4: D5 33 answering ReadRegister is a desync error, resynchronised with GetFirmwareVersion")
    func p08Desync() throws {
        #expect(throws: PN532Error.desynchronized(sent: .readRegister, received: hex("D5 33"))) {
            try PN532.ReadRegister([0x6302, 0x6303]).response(parsingFrame: hex("D5 33"))
        }
        let channel = ScriptedCardChannel(.t1, [
            .transmit(expect: hex("FF 00 00 00 06 D4 06 63 02 63 03"), reply: hex("D5 33 90 00")),
            .transmit(expect: hex("FF 00 00 00 02 D4 02"), reply: hex("D5 03 32 01 06 07 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        #expect(throws: PN532Error.desynchronized(sent: .readRegister, received: hex("D5 33"))) {
            try pn532.send(PN532.ReadRegister([0x6302, 0x6303]))
        }
        channel.assertFinished()
    }

    @Test("a reply without the D5 prefix is a desync, not success")
    func missingPrefix() {
        #expect(throws: PN532Error.desynchronized(sent: .tgSetData, received: [])) {
            try PN532.TgSetData(hex("90 00")).response(parsingFrame: [])
        }
        #expect(throws: PN532Error.desynchronized(sent: .tgSetData, received: hex("8F 00"))) {
            try PN532.TgSetData(hex("90 00")).response(parsingFrame: hex("8F 00"))
        }
    }

    @Test("SW 90 00 alone is not success: 63 00 is the chip not answering, a bare 90 00 is a desync")
    func bareStatusWord() {
        let channel = ScriptedCardChannel(.t1, [
            .transmit(expect: hex("FF 00 00 00 02 D4 86"), reply: hex("63 00")),
            .transmit(expect: hex("FF 00 00 00 02 D4 86"), reply: hex("90 00")),
            .transmit(expect: hex("FF 00 00 00 02 D4 02"), reply: hex("D5 03 32 01 06 07 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        #expect(throws: ACR122Error.operationFailed) { try pn532.send(PN532.TgGetData()) }
        #expect(throws: PN532Error.desynchronized(sent: .tgGetData, received: [])) { try pn532.send(PN532.TgGetData()) }
        channel.assertFinished()
    }

    struct StatusVector: Sendable, CustomTestStringConvertible {
        let byte: UInt8
        let code: PN532ErrorCode
        let moreInformation: Bool
        let nad: Bool
        let released: Bool
        var testDescription: String { HexBytes.format(byte) }
    }

    @Test("status byte: low 6 bits code, bit 6 MI, bit 7 NAD; 29 and 2B both released (UM0701 §7.1, libnfc)", arguments: [
        StatusVector(byte: 0x00, code: .none, moreInformation: false, nad: false, released: false),
        StatusVector(byte: 0x40, code: .none, moreInformation: true, nad: false, released: false),
        StatusVector(byte: 0x01, code: .timeout, moreInformation: false, nad: false, released: false),
        StatusVector(byte: 0x81, code: .timeout, moreInformation: false, nad: true, released: false),
        StatusVector(byte: 0x25, code: .invalidState, moreInformation: false, nad: false, released: false),
        StatusVector(byte: 0x27, code: .notAcceptable, moreInformation: false, nad: false, released: false),
        StatusVector(byte: 0x29, code: .targetReleased, moreInformation: false, nad: false, released: true),
        StatusVector(byte: 0x2B, code: .cardDisappeared, moreInformation: false, nad: false, released: true),
        StatusVector(byte: 0x69, code: .targetReleased, moreInformation: true, nad: false, released: true),
    ])
    func statusByte(_ vector: StatusVector) {
        let status = PN532Status(rawValue: vector.byte)
        #expect(status.errorCode == vector.code)
        #expect(status.moreInformation == vector.moreInformation)
        #expect(status.nadPresent == vector.nad)
        #expect(status.errorCode.isReleased == vector.released)
    }

    @Test("error meanings come from the table")
    func meanings() {
        #expect(PN532ErrorCode.timeout.meaning.contains("timeout"))
        #expect(PN532ErrorCode.invalidState.meaning.contains("TgGetData before"))
        #expect(PN532ErrorCode(rawValue: 0x3F).meaning == "unknown error")
        #expect("\(PN532Error.chipError(PN532Status(rawValue: 0x27), command: .inDataExchange))"
            == "PN532 InDataExchange failed with status 27 (command not acceptable now (wrong role or unknown target))")
    }

    struct ReplyVector: Sendable, CustomTestStringConvertible {
        let id: String
        let command: PN532CommandCode
        let reply: [UInt8]
        let data: [UInt8]
        var testDescription: String { id }
    }

    static let replyVectors: [ReplyVector] = [
        ReplyVector(id: "P10 TgInitAsTarget", command: .tgInitAsTarget, reply: hex("D5 8D 08 E0 80 90 00"), data: hex("08 E0 80")),
        ReplyVector(id: "P10 TgGetData", command: .tgGetData, reply: hex("D5 87 00 00 A4 04 00 07 D2 76 00 00 85 01 01 00 90 00"),
                    data: hex("00 00 A4 04 00 07 D2 76 00 00 85 01 01 00")),
        ReplyVector(id: "P10 TgSetData", command: .tgSetData, reply: hex("D5 8F 00 90 00"), data: hex("00")),
        ReplyVector(id: "GetFirmwareVersion", command: .getFirmwareVersion, reply: hex("D5 03 32 01 06 07 90 00"), data: hex("32 01 06 07")),
        ReplyVector(id: "RF off", command: .rfConfiguration, reply: hex("D5 33 90 00"), data: []),
    ]

    @Test("wrapped reply codec round-trips: D5 cmd+1 data 90 00", arguments: replyVectors)
    func replyRoundTrip(_ vector: ReplyVector) throws {
        let chipBytes = try ACR122Link.checked(vector.reply)
        let frame = try PN532ChipFrame(parsing: chipBytes)
        #expect(frame.answers(vector.command))
        #expect(frame.data == vector.data)
        #expect(frame == PN532ChipFrame(answering: vector.command, data: vector.data))
        #expect(ACR122Reply(data: frame.serialized(), statusWord: 0x9000).serialized() == vector.reply)
    }

    @Test("wrapped reply drip-feed: no proper prefix is taken as an answer", arguments: replyVectors)
    func replyDripFeed(_ vector: ReplyVector) throws {
        for length in 0..<vector.reply.count {
            let prefix = Array(vector.reply.prefix(length))
            #expect(throws: (any Error).self, "prefix of \(length) bytes") {
                try PN532ChipFrame.data(answering: vector.command, in: ACR122Link.checked(prefix))
            }
        }
        #expect(try PN532ChipFrame.data(answering: vector.command, in: ACR122Link.checked(vector.reply)) == vector.data)
    }

    @Test("host frame codec round-trips and rejects")
    func hostFrame() throws {
        let frame = try PN532HostFrame(parsing: hex("D4 4A 01 00"))
        #expect(frame.command == .inListPassiveTarget)
        #expect(frame.parameters == hex("01 00"))
        #expect(frame.serialized() == hex("D4 4A 01 00"))
        #expect(throws: PN53xParseError(.truncated, at: 1, "")) { try PN532HostFrame(parsing: hex("D4")) }
        #expect(throws: PN53xParseError(.unexpectedByte, at: 0, "")) { try PN532HostFrame(parsing: hex("D5 4B")) }
        #expect(throws: PN53xParseError(.invalidValue, at: 254, "")) {
            try PN532HostFrame(parsing: [0xD4, 0x8E] + Array(repeating: 0, count: 253))
        }
        #expect(throws: PN53xParseError(.truncated, at: 1, "")) { try PN532ChipFrame(parsing: hex("D5")) }
    }
}

@Suite("PN532 typed commands")
struct PN532CommandTests {
    struct RequestVector: Sendable, CustomTestStringConvertible {
        let id: String
        let source: String
        let command: any PN532Command
        let frame: [UInt8]
        var testDescription: String { id }
    }

    @Test(arguments: [
        RequestVector(id: "GetFirmwareVersion", source: "docs/acr122-pn532.md §4", command: PN532.GetFirmwareVersion(), frame: hex("D4 02")),
        RequestVector(id: "GetGeneralStatus", source: "docs/acr122-pn532.md §2 chip status", command: PN532.GetGeneralStatus(), frame: hex("D4 04")),
        RequestVector(id: "SetParameters 14 (libnfc init)", source: "docs/acr122-pn532.md §4",
                      command: PN532.SetParameters([.automaticATRRes, .automaticRATS]), frame: hex("D4 12 14")),
        RequestVector(id: "SetParameters 30 (emulation)", source: "docs/acr122-pn532.md §4, §5 step 3",
                      command: PN532.SetParameters([.automaticRATS, .iso14443_4PICC]), frame: hex("D4 12 30")),
        RequestVector(id: "SAMConfiguration normal", source: "UM0701 §7.2.10", command: PN532.SAMConfiguration(mode: .normal, timeoutIn50Milliseconds: 0x14, useIRQ: true),
                      frame: hex("D4 14 01 14 01")),
        RequestVector(id: "RF field off", source: "docs/acr122-pn532.md §2", command: PN532.RFConfiguration(.rfField(on: false)), frame: hex("D4 32 01 00")),
        RequestVector(id: "RF field on", source: "docs/acr122-pn532.md §2", command: PN532.RFConfiguration(.rfField(on: true)), frame: hex("D4 32 01 01")),
        RequestVector(id: "timeouts defaults", source: "docs/acr122-pn532.md §4 item 02", command: PN532.RFConfiguration(.timeouts(atrResponse: 0x0B, retry: 0x0A)),
                      frame: hex("D4 32 02 00 0B 0A")),
        RequestVector(id: "MaxRtyCOM", source: "docs/acr122-pn532.md §4 item 04", command: PN532.RFConfiguration(.maxRetryCOM(0x00)), frame: hex("D4 32 04 00")),
        RequestVector(id: "bounded polling", source: "docs/acr122-pn532.md §4 item 05", command: PN532.RFConfiguration(.maxRetries(atr: 0, psl: 1, passiveActivation: 2)),
                      frame: hex("D4 32 05 00 01 02")),
        RequestVector(id: "ReadRegister TxMode RxMode", source: "docs/cases.md P08 row 4", command: PN532.ReadRegister([0x6302, 0x6303]), frame: hex("D4 06 63 02 63 03")),
        RequestVector(id: "WriteRegister ManualRCV", source: "docs/acr122-pn532.md §4 CIU registers",
                      command: PN532.WriteRegister([.init(address: 0x630D, value: 0x00)]), frame: hex("D4 08 63 0D 00")),
        RequestVector(id: "InListPassiveTarget 1 × 106A", source: "docs/acr122-pn532.md §4", command: PN532.InListPassiveTarget(), frame: hex("D4 4A 01 00")),
        RequestVector(id: "InDataExchange with MI", source: "UM0701 §7.3.8", command: PN532.InDataExchange(target: 1, moreInformation: true, data: hex("00 A4")),
                      frame: hex("D4 40 41 00 A4")),
        RequestVector(id: "InDeselect all", source: "docs/acr122-pn532.md §4", command: PN532.InDeselect(), frame: hex("D4 44 00")),
        RequestVector(id: "InRelease all", source: "docs/acr122-pn532.md §5 step 5", command: PN532.InRelease(), frame: hex("D4 52 00")),
        RequestVector(id: "InSelect 1", source: "docs/acr122-pn532.md §4", command: PN532.InSelect(), frame: hex("D4 54 01")),
        RequestVector(id: "TgGetData", source: "docs/cases.md P10", command: PN532.TgGetData(), frame: hex("D4 86")),
        RequestVector(id: "TgSetData 90 00", source: "docs/cases.md P10", command: PN532.TgSetData(hex("90 00")), frame: hex("D4 8E 90 00")),
        RequestVector(id: "TgGetTargetStatus", source: "docs/acr122-pn532.md §4", command: PN532.TgGetTargetStatus(), frame: hex("D4 8A")),
        RequestVector(id: "TgInitAsTarget P10", source: "docs/cases.md P10", command: p10InitAsTarget, frame: Array(p10InitAsTargetAPDU.dropFirst(5))),
    ])
    func requests(_ vector: RequestVector) throws {
        let frame = try vector.command.hostFrame()
        #expect(HexBytes.format(frame.serialized()) == HexBytes.format(vector.frame))
        #expect(try PN532HostFrame(parsing: vector.frame) == frame)
    }

    @Test("P10: TgInitAsTarget byte for byte with Lc 0x27 computed by the library")
    func p10Frame() throws {
        let apdu = ACR122Command.directTransmit(try p10InitAsTarget.hostFrame()).serialized()
        #expect(HexBytes.format(apdu) == HexBytes.format(p10InitAsTargetAPDU))
        #expect(apdu[4] == 0x27)
    }

    @Test("P10: D5 8D 08 E0 80 is PICC at 106 kbit/s, Type A, initiator command RATS E0 80")
    func p10Activation() throws {
        let activation = try p10InitAsTarget.response(parsingFrame: hex("D5 8D 08 E0 80"))
        #expect(activation.mode.bitRateKbps == 106)
        #expect(activation.mode.isISO14443_4PICC)
        #expect(!activation.mode.isDEP)
        #expect(activation.mode.framing == 0)
        #expect(activation.initiatorCommand == hex("E0 80"))
        #expect(activation.serialized() == hex("08 E0 80"))
    }

    @Test("the emulated UID is 08 + 3 bytes")
    func emulatedUID() throws {
        #expect(try EmulatedUID(hex("08 00 B0 0B")).nfcid1t == hex("00 B0 0B"))
        #expect(EmulatedUID(nfcid1t: (0x12, 0x34, 0x56)).bytes == hex("08 12 34 56"))
        #expect(throws: PN53xParseError(.invalidValue, at: 0, "")) { try EmulatedUID(hex("04 12 34 56")) }
        #expect(throws: PN53xParseError(.lengthMismatch, at: 0, "")) { try EmulatedUID(hex("08 12 34 56 78 9A BC")) }
    }

    @Test("ATQA: one value, MSB first from InListPassiveTarget, LSB first into TgInitAsTarget (docs/acr122-pn532.md §4)")
    func atqaByteOrder() throws {
        let targets = try PN532.InListPassiveTarget().response(parsingFrame: hex("D5 4B 01 01 00 04 08 04 DE AD BE EF"))
        #expect(targets.count == 1)
        let target = try #require(targets.first)
        #expect(target.atqa == ATQA(rawValue: 0x0004))
        #expect(target.sak == 0x08)
        #expect(target.uid == hex("DE AD BE EF"))
        #expect(target.ats == nil)
        #expect(target.serialized() == hex("01 00 04 08 04 DE AD BE EF"))

        // libnfc's nfc-emulate-forum-tag4: ATQA 00 04 (printed MSB first) → sent 04 00 (docs/acr122-pn532.md §5).
        let initAsTarget = PN532.TgInitAsTarget(modes: [.passiveOnly, .piccOnly], atqa: target.atqa,
                                                uid: try EmulatedUID(hex("08 00 B0 0B")), sak: 0x20)
        let parameters = try initAsTarget.parameters()
        #expect(Array(parameters.prefix(7)) == hex("05 04 00 00 B0 0B 20"))
        #expect(parameters.count == 1 + 2 + 3 + 1 + 18 + 10 + 1 + 1)

        #expect(ATQA(leastSignificantFirst: (0x44, 0x03)) == ATQA(rawValue: 0x0344))
        #expect(ATQA(mostSignificantFirst: (0x03, 0x44)).leastSignificantFirst == hex("44 03"))
        #expect(ATQA(rawValue: 0x0344).description == "03 44")
    }

    static let listVectors: [(id: String, data: [UInt8])] = [
        ("MIFARE Classic", hex("01 01 00 04 08 04 DE AD BE EF")),
        ("DESFire with ATS", hex("01 01 03 44 20 07 04 51 2C 9A 2B 33 80 06 75 77 81 02 80")),
    ]

    @Test("InListPassiveTarget parses the ATS with its TL byte when SAK has bit 0x20")
    func listWithATS() throws {
        let targets = try PN532.InListPassiveTarget().response(parsing: Self.listVectors[1].data)
        let target = try #require(targets.first)
        #expect(target.atqa.rawValue == 0x0344)
        #expect(target.uid == hex("04 51 2C 9A 2B 33 80"))
        #expect(target.ats == hex("06 75 77 81 02 80"))
        #expect(target.supportsISO14443_4)
        #expect([0x01] + target.serialized() == Self.listVectors[1].data)
        #expect(try PN532.InListPassiveTarget().response(parsing: hex("00")).isEmpty)
    }

    @Test("InListPassiveTarget drip-feed: every proper prefix is rejected")
    func listDripFeed() throws {
        for vector in Self.listVectors {
            for length in 0..<vector.data.count {
                #expect(throws: PN532Error.self, "\(vector.id): prefix of \(length) bytes") {
                    try PN532.InListPassiveTarget().response(parsing: Array(vector.data.prefix(length)))
                }
            }
            #expect(try PN532.InListPassiveTarget().response(parsing: vector.data).count == 1)
        }
    }

    @Test("response rejections name the command and offset")
    func responseRejections() {
        // UID length 05 does not exist for Type A.
        #expect(throws: PN532Error.malformedResponse(PN53xParseError(.invalidValue, at: 0, ""), command: .inListPassiveTarget)) {
            try PN532.InListPassiveTarget().response(parsing: hex("01 01 00 04 08 05 01 02 03 04 05"))
        }
        // A trailing byte after the 4 version bytes.
        #expect(throws: PN532Error.malformedResponse(PN53xParseError(.trailingBytes, at: 0, ""), command: .getFirmwareVersion)) {
            try PN532.GetFirmwareVersion().response(parsing: hex("32 01 06 07 00"))
        }
        // WriteRegister answers with no data.
        #expect(throws: PN532Error.malformedResponse(PN53xParseError(.trailingBytes, at: 0, ""), command: .writeRegister)) {
            try PN532.WriteRegister([.init(address: 0x6302, value: 0x80)]).response(parsing: hex("00"))
        }
        // ReadRegister of two addresses needs two values.
        #expect(throws: PN532Error.malformedResponse(PN53xParseError(.truncated, at: 0, ""), command: .readRegister)) {
            try PN532.ReadRegister([0x6302, 0x6303]).response(parsing: hex("80"))
        }
        #expect(throws: PN532Error.self) { try PN532.InListPassiveTarget(maxTargets: 3).parameters() }
        #expect(throws: PN532Error.self) {
            try PN532.TgInitAsTarget(modes: [], atqa: ATQA(rawValue: 4), uid: EmulatedUID(nfcid1t: (1, 2, 3)), sak: 0x20,
                                     historicalBytes: Array(repeating: 0, count: 49)).parameters()
        }
    }

    @Test("GetGeneralStatus: Err Field NbTg [Tg BrRx BrTx Type] SAM")
    func generalStatus() throws {
        let status = try PN532.GetGeneralStatus().response(parsing: hex("00 01 01 01 00 00 00 01"))
        #expect(status.lastError == .none)
        #expect(status.externalFieldPresent)
        #expect(status.targets == [PN532GeneralStatusTarget(logicalNumber: 1, receiveBitRate: 0, transmitBitRate: 0, modulationType: 0)])
        #expect(status.samStatus == 0x01)
        let bytes = hex("00 01 01 01 00 00 00 01")
        for length in 0..<bytes.count {
            #expect(throws: PN532Error.self) { try PN532.GetGeneralStatus().response(parsing: Array(bytes.prefix(length))) }
        }
    }

    @Test("ReadRegister returns one value per address; TgGetTargetStatus keeps its two bytes")
    func registersAndTargetStatus() throws {
        #expect(try PN532.ReadRegister([0x6302, 0x6303]).response(parsing: hex("80 80")) == hex("80 80"))
        #expect(try PN532.TgGetTargetStatus().response(parsing: hex("01 00")) == PN532TargetStatus(state: 1, bitRates: 0))
    }
}
