import ISO7816
import PCSCCore
import SecbridgeTesting
import Testing
@testable import PN53x

struct CommandVector: Sendable, CustomTestStringConvertible {
    let id: String
    let source: String
    let command: ACR122Command
    let bytes: [UInt8]
    var testDescription: String { id }
}

private func led(_ p2: UInt8, _ t1: Duration = .zero, _ t2: Duration = .zero, _ rep: UInt8 = 0, _ link: ACR122BuzzerLink = .off) -> ACR122Command {
    .ledAndBuzzer(try! ACR122LEDBuzzerControl(led: ACR122LEDControl(rawValue: p2), t1: t1, t2: t2, repetitions: rep, buzzer: link))
}

let commandVectors: [CommandVector] = [
    .init(id: "firmware", source: "ACR122U API v2.04 §6.1; docs/acr122-pn532.md §2", command: .firmwareVersion, bytes: hex("FF 00 48 00 00")),
    .init(id: "getUID", source: "docs/acr122-pn532.md §2", command: .getUID, bytes: hex("FF CA 00 00 00")),
    .init(id: "getATS", source: "docs/acr122-pn532.md §2", command: .getATS, bytes: hex("FF CA 01 00 00")),
    .init(id: "getResponse", source: "docs/acr122-pn532.md §1 step 4 (T=0 units)", command: .getResponse(length: 0x08), bytes: hex("FF C0 00 00 08")),
    .init(id: "LED 0F", source: "docs/acr122-pn532.md §2: FF 00 40 0F 04 00 00 00 00 → 90 03", command: led(0x0F), bytes: hex("FF 00 40 0F 04 00 00 00 00")),
    .init(id: "LED blink with buzzer", source: "ACR122U API v2.04 §6.2 layout, T1 500 ms, T2 200 ms",
          command: led(0x50, .milliseconds(500), .milliseconds(200), 3, .duringT1), bytes: hex("FF 00 40 50 04 05 02 03 01")),
    .init(id: "getPICC", source: "docs/acr122-pn532.md §2", command: .getPICCOperatingParameter, bytes: hex("FF 00 50 00 00")),
    .init(id: "setPICC all off (libnfc)", source: "docs/acr122-pn532.md §2", command: .setPICCOperatingParameter([]), bytes: hex("FF 00 51 00 00")),
    .init(id: "setPICC 7F (nfcpy)", source: "docs/acr122-pn532.md §2",
          command: .setPICCOperatingParameter(ACR122PICCOperatingParameter.factoryDefault.subtracting(.automaticPolling)), bytes: hex("FF 00 51 7F 00")),
    .init(id: "MCU timeout 5 s", source: "docs/acr122-pn532.md §2, §5b", command: .setMCUTimeout(.fiveSecondSteps(1)), bytes: hex("FF 00 41 01 00")),
    .init(id: "MCU timeout wait", source: "docs/acr122-pn532.md §2", command: .setMCUTimeout(.waitForChip), bytes: hex("FF 00 41 FF 00")),
    .init(id: "MCU timeout none", source: "docs/acr122-pn532.md §2", command: .setMCUTimeout(.none), bytes: hex("FF 00 41 00 00")),
    .init(id: "buzzer off", source: "docs/acr122-pn532.md §2", command: .setBuzzerOnDetection(false), bytes: hex("FF 00 52 00 00")),
    .init(id: "buzzer on", source: "docs/acr122-pn532.md §2", command: .setBuzzerOnDetection(true), bytes: hex("FF 00 52 FF 00")),
    .init(id: "chip status", source: "docs/acr122-pn532.md §2", command: try! .directTransmit(command: .getGeneralStatus, parameters: []),
          bytes: hex("FF 00 00 00 02 D4 04")),
    .init(id: "RF off", source: "docs/acr122-pn532.md §2", command: try! .directTransmit(command: .rfConfiguration, parameters: [0x01, 0x00]),
          bytes: hex("FF 00 00 00 04 D4 32 01 00")),
    .init(id: "P08 row 1 InCommunicateThru", source: "docs/cases.md P08", command: try! .directTransmit(command: .inCommunicateThru, parameters: [0x1A, 0x00]),
          bytes: hex("FF 00 00 00 04 D4 42 1A 00")),
]

@Suite("ACR122U pseudo-APDUs")
struct ACR122CommandTests {
    @Test(arguments: commandVectors)
    func serializes(_ vector: CommandVector) {
        #expect(HexBytes.format(vector.command.serialized()) == HexBytes.format(vector.bytes))
    }

    @Test(arguments: commandVectors)
    func roundTrips(_ vector: CommandVector) throws {
        let parsed = try ACR122Command(parsing: vector.bytes)
        #expect(parsed == vector.command)
        #expect(parsed.serialized() == vector.bytes)
    }

    @Test("drip-feed: every proper prefix is rejected", arguments: commandVectors)
    func dripFeed(_ vector: CommandVector) throws {
        for length in 0..<vector.bytes.count {
            #expect(throws: PN53xParseError.self, "prefix of \(length) bytes") {
                try ACR122Command(parsing: Array(vector.bytes.prefix(length)))
            }
        }
        _ = try ACR122Command(parsing: vector.bytes)
    }

    struct Rejection: Sendable, CustomTestStringConvertible {
        let id: String
        let bytes: [UInt8]
        let code: PN53xParseError.Code
        let offset: Int
        var testDescription: String { id }
    }

    @Test(arguments: [
        // CLA FE: pseudo-APDUs are class FF.
        Rejection(id: "class FE", bytes: hex("FE 00 48 00 00"), code: .unexpectedByte, offset: 0),
        // Lc 05 but only D4 02 follow.
        Rejection(id: "Lc too large", bytes: hex("FF 00 00 00 05 D4 02"), code: .truncated, offset: 4),
        // Lc 01 but two bytes follow.
        Rejection(id: "Lc too small", bytes: hex("FF 00 00 00 01 D4 02"), code: .lengthMismatch, offset: 4),
        // D5 is chip-to-host: a host frame starts D4.
        Rejection(id: "TFI D5 in a command", bytes: hex("FF 00 00 00 02 D5 03"), code: .unexpectedByte, offset: 5),
        // Buzzer link 04 does not exist (00 … 03).
        Rejection(id: "buzzer link 04", bytes: hex("FF 00 40 0F 04 00 00 00 04"), code: .invalidValue, offset: 8),
        // LED Lc must be 04.
        Rejection(id: "LED Lc 03", bytes: hex("FF 00 40 0F 03 00 00 00"), code: .unexpectedByte, offset: 4),
        // A sixth byte after the firmware-version command.
        Rejection(id: "trailing byte", bytes: hex("FF 00 48 00 00 00"), code: .trailingBytes, offset: 5),
        // FF B0 is READ BINARY for storage cards, not modelled here.
        Rejection(id: "unknown FF B0", bytes: hex("FF B0 00 04 10"), code: .unknownCommand, offset: 1),
        // Buzzer on detection takes 00 or FF only.
        Rejection(id: "buzzer P2 01", bytes: hex("FF 00 52 01 00"), code: .invalidValue, offset: 3),
    ])
    func rejects(_ vector: Rejection) {
        #expect {
            try ACR122Command(parsing: vector.bytes)
        } throws: { error in
            guard let error = error as? PN53xParseError else { return false }
            return error.code == vector.code && error.offset == vector.offset
        }
    }

    @Test("Lc is computed by the library; frames above 254 bytes are refused (docs/acr122-pn532.md §4)")
    func frameCap() throws {
        let largest = try ACR122Command.directTransmit(command: .tgSetData, parameters: Array(repeating: 0xAB, count: 252))
        #expect(largest.serialized()[4] == 0xFE)
        #expect(largest.serialized().count == 5 + 254)
        #expect(throws: ACR122Error.frameTooLong(length: 255)) {
            try ACR122Command.directTransmit(command: .tgSetData, parameters: Array(repeating: 0xAB, count: 253))
        }
        #expect(throws: ACR122Error.frameTooLong(length: 302)) {
            try PN532HostFrame(command: .inDataExchange, parameters: Array(repeating: 0, count: 300))
        }
        #expect(ACR122Error.frameTooLong(length: 255).description.contains("254"))
    }

    @Test("LED durations must be whole 100 ms steps up to 25.5 s")
    func ledDurations() {
        #expect(throws: PN53xParseError.self) { try ACR122LEDBuzzerControl(led: [], t1: .milliseconds(150)) }
        #expect(throws: PN53xParseError.self) { try ACR122LEDBuzzerControl(led: [], t2: .milliseconds(25_600)) }
        #expect((try? ACR122LEDBuzzerControl(led: [], t1: .milliseconds(25_500)))?.t1Units == 0xFF)
    }

    @Test("MCU timeout from a duration rounds up to 5 s steps")
    func mcuTimeout() throws {
        #expect(try ACR122MCUTimeout(covering: .seconds(5)) == .fiveSecondSteps(1))
        #expect(try ACR122MCUTimeout(covering: .seconds(6)) == .fiveSecondSteps(2))
        #expect(try ACR122MCUTimeout(covering: .milliseconds(100)) == .fiveSecondSteps(1))
        #expect(try ACR122MCUTimeout(covering: .seconds(1270)) == .fiveSecondSteps(254))
        #expect(throws: PN53xParseError.self) { try ACR122MCUTimeout(covering: .seconds(1271)) }
        #expect(ACR122MCUTimeout(byte: 0x00) == .none)
        #expect(ACR122MCUTimeout(byte: 0xFF) == .waitForChip)
    }
}

@Suite("ACR122U replies")
struct ACR122ReplyTests {
    struct FirmwareVector: Sendable, CustomTestStringConvertible {
        let id: String
        let source: String
        let bytes: [UInt8]
        let product: String
        let version: String?
        let isACR122U: Bool
        var testDescription: String { id }
    }

    @Test(arguments: [
        FirmwareVector(id: "ACR122U207", source: "docs/acr122-pn532.md §2", bytes: hex("41 43 52 31 32 32 55 32 30 37"),
                       product: "ACR122U", version: "2.07", isACR122U: true),
        FirmwareVector(id: "ACR122U214", source: "docs/acr122-pn532.md §6 (firmware 2.14)", bytes: Array("ACR122U214".utf8),
                       product: "ACR122U", version: "2.14", isACR122U: true),
        FirmwareVector(id: "with 90 00 after Get Response", source: "T=0 Get Response adds a SW",
                       bytes: Array("ACR122U207".utf8) + [0x90, 0x00], product: "ACR122U", version: "2.07", isACR122U: true),
        FirmwareVector(id: "another product", source: "docs/acr122-pn532.md §7 (ACR1252U family)", bytes: Array("ACR1252U".utf8),
                       product: "ACR1252U", version: nil, isACR122U: false),
    ])
    func firmwareWithoutStatusWord(_ vector: FirmwareVector) throws {
        let firmware = try ACR122FirmwareVersion(parsing: vector.bytes)
        #expect(firmware.product == vector.product)
        #expect(firmware.version == vector.version)
        #expect(firmware.isACR122U == vector.isACR122U)
    }

    @Test("the firmware string ends in 30 37, which is not a status word")
    func firmwareIsNotSplitAsAPDU() throws {
        let firmware = try ACR122FirmwareVersion(parsing: hex("41 43 52 31 32 32 55 32 30 37"))
        #expect(firmware.text == "ACR122U207")
        #expect(firmware.major == 2)
        #expect(firmware.minor == 7)
        #expect(firmware.serialized() == hex("41 43 52 31 32 32 55 32 30 37"))
    }

    @Test func firmwareRejections() {
        #expect(throws: PN53xParseError(.truncated, at: 0, "")) { try ACR122FirmwareVersion(parsing: []) }
        #expect(throws: PN53xParseError(.invalidValue, at: 1, "")) { try ACR122FirmwareVersion(parsing: hex("63 00")) }
    }

    @Test("LED FF 00 40 0F 04 00 00 00 00 → 90 03: red and green on (docs/acr122-pn532.md §2)")
    func ledState() throws {
        #expect(try ACR122LEDState(parsingReply: hex("90 03")) == [.red, .green])
        #expect(try ACR122LEDState(parsingReply: hex("90 02")) == [.green])
        #expect(throws: ACR122Error.operationFailed) { try ACR122LEDState(parsingReply: hex("63 00")) }
        #expect(throws: ACR122Error.self) { try ACR122LEDState(parsingReply: hex("90")) }
        #expect(throws: ACR122Error.self) { try ACR122LEDState(parsingReply: hex("91 03")) }
    }

    @Test("PICC parameter replies: 90 pp and the single-byte pp variant (U)")
    func piccReplies() throws {
        #expect(try ACR122PICCOperatingParameter(parsingReply: hex("90 FF")) == .factoryDefault)
        #expect(try ACR122PICCOperatingParameter(parsingReply: hex("90 00")) == [])
        let nfcpy = try ACR122PICCOperatingParameter(parsingReply: hex("7F"))
        #expect(!nfcpy.contains(.automaticPolling))
        #expect(nfcpy.contains([.automaticATSGeneration, .pollInterval250ms, .feliCa424, .feliCa212, .topaz, .iso14443TypeB, .iso14443TypeA]))
        #expect(throws: ACR122Error.operationFailed) { try ACR122PICCOperatingParameter(parsingReply: hex("63 00")) }
    }

    @Test("status words: 90 00 data, 63 00 failed, 6A 81 unsupported")
    func statusWords() throws {
        let uid = try ACR122Reply(parsing: hex("04 A2 2B 91 90 00"))
        #expect(try uid.checkedData() == hex("04 A2 2B 91"))
        #expect(uid.serialized() == hex("04 A2 2B 91 90 00"))
        #expect(throws: ACR122Error.operationFailed) { try ACR122Reply(parsing: hex("63 00")).checkedData() }
        #expect(throws: ACR122Error.unsupported) { try ACR122Reply(parsing: hex("6A 81")).checkedData() }
        #expect(throws: ACR122Error.unexpectedStatusWord(0x637F)) { try ACR122Reply(parsing: hex("63 7F")).checkedData() }
        #expect(throws: PN53xParseError(.truncated, at: 1, "")) { try ACR122Reply(parsing: hex("90")) }
    }
}

@Suite("Escape control codes and the feature request")
struct CCIDFeatureTests {
    @Test("control codes: SCARD_CTL_CODE(n) = 0x42000000 + n (docs/acr122-pn532.md §1)")
    func codes() {
        #expect(ACR122ControlCode.ccidEscape == PCSCConstants.controlCode(1))
        #expect(ACR122ControlCode.acsccidEscape == PCSCConstants.controlCode(3500))
        #expect(ACR122ControlCode.getFeatureRequest == PCSCConstants.controlCode(3400))
        #expect(ACR122ControlCode.ccidEscape == 0x4200_0001)
        #expect(ACR122ControlCode.acsccidEscape == 0x4200_0DAC)
    }
}

/// The summaries every view prints for pseudo-APDUs and PN532 answers (ACR122U API v2.04 §4–§6,
/// PN532 UM0701-02 §7).
@Suite struct PN532SummaryTests {
    @Test(arguments: [
        ("FF 00 48 00 00", "ACR122U: get firmware version"),
        ("FF 00 00 00 02 D4 02", "ACR122U direct transmit: PN532 GetFirmwareVersion"),
        ("FF 00 00 00 04 D4 8E 90 00", "ACR122U direct transmit: PN532 TgSetData: R-APDU ending 90 00"),
        ("FF 00 00 00 07 D4 40 01 00 B0 00 00", "ACR122U direct transmit: PN532 InDataExchange target 1: READ BINARY (case 1, Nc 0, Ne 0)"),
        ("FF CA 01 00 00", "ACR122U: get data (ATS)"),
        ("FF 00 51 FF 00", "ACR122U: set PICC operating parameter FF"),
        ("FF C0 00 00 0A", "ACR122U: get response (Le 0A)"),
    ])
    func pseudoAPDU(_ hex: String, _ summary: String) throws {
        #expect(try ACR122Command(parsing: HexBytes.parse(hex)).summary == summary)
    }

    @Test(arguments: [
        ("D5 03 32 01 06 07", ["PN532 GetFirmwareVersion answer"]),
        ("D5 41 00 6A 82", ["PN532 InDataExchange answer, status 00 (success)", "card: SW 6A 82: file or application not found"]),
        ("D5 43 01", ["PN532 InCommunicateThru answer, status 01 (timeout: the target did not answer)"]),
        ("D5 87 29", ["PN532 TgGetData answer, status 29 (the initiator released the target)"]),
        ("D5 87 00 00 A4 00 0C 02 E1 04", ["PN532 TgGetData answer, status 00 (success)", "terminal's C-APDU: SELECT by file identifier (case 3S, Nc 2, Ne 0)"]),
        ("D5 41 40 01 02", ["PN532 InDataExchange answer, status 00 (success), MI"]),
    ])
    func chipAnswer(_ hex: String, _ lines: [String]) throws {
        #expect(try PN532ChipFrame(parsing: HexBytes.parse(hex)).summary == lines)
    }
}
