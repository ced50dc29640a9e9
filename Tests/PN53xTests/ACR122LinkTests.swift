import ISO7816
import SecbridgeTesting
import Testing
@testable import PN53x

@Suite("ACR122 link over a CardChannel")
struct ACR122LinkTests {
    @Test("with a card (T=1) pseudo-APDUs go through transmit; the firmware reply has no SW")
    func transmitPath() throws {
        let channel = ScriptedCardChannel(.t1, [
            .transmit(expect: hex("FF 00 48 00 00"), reply: Array("ACR122U207".utf8)),
            .transmit(expect: hex("FF 00 40 0F 04 00 00 00 00"), reply: hex("90 03")),
        ])
        let link = ACR122Link(channel: channel)
        #expect(try link.firmwareVersion().version == "2.07")
        #expect(link.firmware?.text == "ACR122U207")
        #expect(try link.setLEDAndBuzzer(ACR122LEDBuzzerControl(led: [.finalRed, .finalGreen, .redMask, .greenMask])) == [.red, .green])
        channel.assertFinished()
    }

    @Test("without a card (protocol undefined) pseudo-APDUs go through control with the escape code")
    func controlPath() throws {
        let channel = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0DAC, expect: hex("FF 00 51 00 00"), reply: hex("90 00")),
            .control(code: 0x4200_0DAC, expect: hex("FF 00 41 01 00"), reply: hex("90 00")),
            .control(code: 0x4200_0DAC, expect: hex("FF 00 00 00 04 D4 32 01 00"), reply: hex("D5 33 90 00")),
        ])
        let link = ACR122Link(channel: channel, escapeCode: ACR122ControlCode.acsccidEscape)
        #expect(try link.setPICCOperatingParameter([]) == [])
        try link.setMCUTimeout(.fiveSecondSteps(1))
        #expect(try link.transmitPN532(PN532HostFrame(command: .rfConfiguration, parameters: [0x01, 0x00])) == hex("D5 33"))
        channel.assertFinished()
    }

    @Test("T=0 personality: 61 xx is fetched with FF C0 00 00 xx (docs/acr122-pn532.md §1 step 4)")
    func t0GetResponse() throws {
        let channel = ScriptedCardChannel(.t0, [
            .transmit(expect: hex("FF 00 00 00 02 D4 02"), reply: hex("61 08")),
            .transmit(expect: hex("FF C0 00 00 08"), reply: hex("D5 03 32 01 06 07 90 00")),
        ])
        let pn532 = PN532(link: ACR122Link(channel: channel))
        let version = try pn532.send(PN532.GetFirmwareVersion())
        #expect(version == PN532FirmwareVersion(ic: 0x32, version: 0x01, revision: 0x06, support: 0x07))
        channel.assertFinished()
    }

    @Test("T=0 personality: the FF C0 loop is bounded")
    func t0GetResponseBounded() {
        var steps: [ScriptedCardChannel.Step] = [.transmit(expect: hex("FF CA 00 00 00"), reply: hex("61 04"))]
        for _ in 0..<ACR122Link.maximumGetResponseRounds {
            steps.append(.transmit(expect: hex("FF C0 00 00 04"), reply: hex("61 04")))
        }
        let channel = ScriptedCardChannel(.t0, steps)
        #expect(throws: ACR122Error.tooManyGetResponses(limit: ACR122Link.maximumGetResponseRounds)) {
            try ACR122Link(channel: channel).uid()
        }
        channel.assertFinished()
    }

    @Test("Get UID and Get ATS map 63 00 and 6A 81 (docs/acr122-pn532.md §2)")
    func uidAndATS() throws {
        let channel = ScriptedCardChannel(.t1, [
            .transmit(expect: hex("FF CA 00 00 00"), reply: hex("04 A2 2B 91 90 00")),
            .transmit(expect: hex("FF CA 01 00 00"), reply: hex("06 75 77 81 02 80 90 00")),
            .transmit(expect: hex("FF CA 00 00 00"), reply: hex("63 00")),
            .transmit(expect: hex("FF CA 01 00 00"), reply: hex("6A 81")),
        ])
        let link = ACR122Link(channel: channel)
        #expect(try link.uid() == hex("04 A2 2B 91"))
        #expect(try link.ats() == hex("06 75 77 81 02 80"))
        #expect(throws: ACR122Error.operationFailed) { try link.uid() }
        #expect(throws: ACR122Error.unsupported) { try link.ats() }
        channel.assertFinished()
    }

    @Test("P09: SCARD_E_NOT_TRANSACTED on 0x42000001 gives the exact ifdDriverOptions message")
    func p09EscapeRefused() {
        let channel = ScriptedCardChannel(.undefined, [
            .controlThrows(code: 0x4200_0001, expect: hex("FF 00 48 00 00"), error: PCSCError(code: 0x8010_0016, function: "SCardControl")),
        ])
        let link = ACR122Link(channel: channel, escapeCode: ACR122ControlCode.ccidEscape)
        #expect {
            try link.firmwareVersion()
        } throws: { error in
            (error as? ACR122Error) == .escapeCommandsNotEnabled
                && "\(error)" == "escape commands are not enabled in the CCID driver: set ifdDriverOptions to 0x0001 in /etc/libccid_Info.plist and restart pcscd (`systemctl restart pcscd`)"
        }
        channel.assertFinished()
    }

    @Test("P09: after an escape command has worked, 0x80100016 is libccid's timeout and passes through")
    func p09TimeoutAfterSuccess() {
        let channel = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0001, expect: hex("FF 00 48 00 00"), reply: Array("ACR122U207".utf8)),
            .controlThrows(code: 0x4200_0001, expect: hex("FF 00 00 00 02 D4 86"), error: PCSCError(code: 0x8010_0016, function: "SCardControl")),
        ])
        let link = ACR122Link(channel: channel)
        #expect(throws: Never.self) { try link.firmwareVersion() }
        #expect(throws: PCSCError(code: 0x8010_0016, function: "SCardControl")) {
            try link.transmitPN532(PN532HostFrame(command: .tgGetData))
        }
        channel.assertFinished()
    }

    @Test("P09: libccid without the option: no tag 13, 0x42000001 refused, 0x42000DAC unsupported → the message")
    func p09OpenWithoutOption() {
        let channel = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0D48, expect: [], reply: []),
            .controlThrows(code: 0x4200_0001, expect: hex("FF 00 48 00 00"), error: PCSCError(code: 0x8010_0016, function: "SCardControl")),
            .controlThrows(code: 0x4200_0DAC, expect: hex("FF 00 48 00 00"), error: PCSCError(code: 0x8010_001F, function: "SCardControl")),
        ])
        #expect(throws: ACR122Error.escapeCommandsNotEnabled) {
            try ACR122Link.open(channel: channel, readerName: "ACS ACR122U PICC Interface 00 00")
        }
        #expect(ACR122Error.escapeCommandsNotEnabled.description == ACR122Error.escapeCommandsNotEnabledMessage)
        channel.assertFinished()
    }

    @Test("P09: feature TLV 13 04 42 00 00 01 selects 0x42000001 (libccid with the option)")
    func p09OpenWithFeature() throws {
        let channel = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0D48, expect: [], reply: hex("13 04 42 00 00 01")),
            .control(code: 0x4200_0001, expect: hex("FF 00 48 00 00"), reply: Array("ACR122U207".utf8)),
        ])
        let link = try ACR122Link.open(channel: channel, readerName: "ACS ACR122U PICC Interface 00 00")
        #expect(link.escapeCode == 0x4200_0001)
        #expect(link.firmware?.product == "ACR122U")
        channel.assertFinished()
    }

    @Test("P09: acsccid lists 0x42000DAC; feature request unsupported falls back in order")
    func p09Acsccid() throws {
        let listed = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0D48, expect: [], reply: hex("13 04 42 00 0D AC")),
            .control(code: 0x4200_0DAC, expect: hex("FF 00 48 00 00"), reply: Array("ACR122U215".utf8)),
        ])
        #expect(try ACR122Link.open(channel: listed, readerName: "ACS ACR122U 00 00").escapeCode == 0x4200_0DAC)
        listed.assertFinished()

        let fallback = ScriptedCardChannel(.undefined, [
            .controlThrows(code: 0x4200_0D48, expect: [], error: PCSCError(code: 0x8010_001F, function: "SCardControl")),
            .controlThrows(code: 0x4200_0001, expect: hex("FF 00 48 00 00"), error: PCSCError(code: 0x8010_001F, function: "SCardControl")),
            .control(code: 0x4200_0DAC, expect: hex("FF 00 48 00 00"), reply: Array("ACR122U207".utf8)),
        ])
        #expect(try ACR122Link.open(channel: fallback, readerName: "ACS ACR122U 00 00").escapeCode == 0x4200_0DAC)
        fallback.assertFinished()
    }

    @Test("no escape code answers at all → noEscapeCode naming the codes tried")
    func noEscapeCode() {
        let channel = ScriptedCardChannel(.undefined, [
            .control(code: 0x4200_0D48, expect: [], reply: []),
            .controlThrows(code: 0x4200_0001, expect: hex("FF 00 48 00 00"), error: PCSCError(code: 0x8010_001F, function: "SCardControl")),
            .controlThrows(code: 0x4200_0DAC, expect: hex("FF 00 48 00 00"), error: PCSCError(code: 0x8010_001F, function: "SCardControl")),
        ])
        #expect(throws: ACR122Error.noEscapeCode(tried: [0x4200_0001, 0x4200_0DAC])) {
            try ACR122Link.open(channel: channel, readerName: "Some Reader")
        }
        channel.assertFinished()
    }

    struct NameVector: Sendable, CustomTestStringConvertible {
        let name: String
        let suggests: Bool
        var testDescription: String { name }
    }

    @Test("reader names (docs/acr122-pn532.md §1)", arguments: [
        NameVector(name: "ACS ACR122U PICC Interface 00 00", suggests: true),
        NameVector(name: "ACS ACR 38U-CCID 00 00", suggests: true),
        NameVector(name: "acs acr122u picc interface", suggests: true),
        NameVector(name: "ACS AET65 1SAM ICC Reader 00 00", suggests: true),
        NameVector(name: "RFCARD / RF1258V603 PICC Interface 00 00", suggests: false),
        NameVector(name: "Virtual PCD 00 00", suggests: false),
    ])
    func readerNames(_ vector: NameVector) {
        #expect(ACR122Detection.nameSuggestsACR122(vector.name) == vector.suggests)
    }

    @Test("a clone with another name works when its firmware answers ACR122U")
    func cloneByFirmware() throws {
        let clone = ScriptedCardChannel(.t1, [
            .transmit(expect: hex("FF 00 48 00 00"), reply: Array("ACR122U214".utf8)),
        ])
        let link = try ACR122Link.open(channel: clone, readerName: "RFCARD / RF1258V603 PICC Interface 00 00")
        #expect(link.firmware?.version == "2.14")
        clone.assertFinished()

        let other = ScriptedCardChannel(.t1, [
            .transmit(expect: hex("FF 00 48 00 00"), reply: Array("ACR1252U".utf8)),
        ])
        #expect(throws: ACR122Error.notAnACR122(readerName: "ACS ACR1252 1S CL Reader", firmware: "ACR1252U")) {
            try ACR122Link.open(channel: other, readerName: "ACS ACR1252 1S CL Reader")
        }
        other.assertFinished()
    }
}
