import ACR122Simulator
import Foundation
import ISO7816
import NFCTags
import PCSC
import PCSCCore
import PN53x
import SecbridgeCLI
import SecbridgeTesting
import SecureElementCredential
import Testing
import Transcript

// The example of each library module's landing article (Sources/<Module>/<Module>.docc/<Module>.md),
// compiled here: each function's body, between its `// example:` and `// end of example` lines
// and dedented, is the article's ```swift block without its import lines, byte for byte
// (DocumentationExampleTests checks that). The values the examples claim in their comments are
// asserted by running them (ExampleRunTests), except PCSC's, which needs a pcscd.

enum Examples {
    static func pcsc() throws {
        // example: Sources/PCSC/PCSC.docc/PCSC.md
        let context = try PCSCLiteClient().establishContext()
        let reader = try context.listReaders()[0]
        let card = try context.connect(to: reader, share: .shared, protocols: .any)
        let answer = try card.transmit([0x00, 0xA4, 0x04, 0x00, 0x00])
        try card.disconnect()
        // end of example
        _ = answer
    }

    static func pcscCore() -> (String, String) {
        // example: Sources/PCSCCore/PCSCCore.docc/PCSCCore.md
        let error = PCSCError(code: 0x8010_000C, function: "SCardConnect")
        let name = error.name              // "SCARD_E_NO_SMARTCARD"
        let isNoCard = error == .noSmartcard  // true: errors compare by code
        print(error)                       // the name, the code, the function and what to do
        // end of example
        return (name, isNoCard ? "no card" : "other")
    }

    static func iso7816() throws -> (ResponseAPDU, [UInt8]) {
        // example: Sources/ISO7816/ISO7816.docc/ISO7816.md
        // SELECT by name of the NFC Forum Type 4 Tag application, case 4 (ISO/IEC 7816-4 §5.1, §11.2.2).
        let select = try CommandAPDU(
            cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01], ne: 256)
        let bytes = select.serialized()       // 00 A4 04 00 07 D2 76 00 00 85 01 01 00
        let response = try ResponseAPDU(parsing: [0x6A, 0x82])
        print(response.statusWord.meaning)    // "file or application not found"
        // end of example
        return (response, bytes)
    }

    static func transcript() throws -> Transcript {
        // example: Sources/Transcript/Transcript.docc/Transcript.md
        let text = """
            # secbridge-transcript: 1
            # reader: ACS ACR122U PICC Interface 00 00
            > 00 A4 04 00 07 D2 76 00 00 85 01 01 00
            < 90 00

            """  // a transcript file ends with a line feed
        let transcript = try Transcript(parsing: text)
        let replay = ReplayChannel(transcript)
        let answer = try replay.transmit([0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00])
        try replay.finish()                    // every recorded exchange was used
        // end of example
        _ = answer
        return transcript
    }

    static func pn53x() throws -> ([UInt8], PN532FirmwareVersion) {
        // example: Sources/PN53x/PN53x.docc/PN53x.md
        // GetFirmwareVersion (PN532 UM0701-02 §7.2.2): the host sends D4 02, a PN532 v1.6 answers
        // D5 03 32 01 06 07 (IC 32, version 1, revision 6, ISO 14443-A, -B and 18092 supported).
        let command = PN532.GetFirmwareVersion()
        let frame = try command.hostFrame().serialized()     // D4 02
        let answer = try PN532ChipFrame(parsing: [0xD5, 0x03, 0x32, 0x01, 0x06, 0x07])
        let version = try command.response(parsing: answer.data)
        // end of example
        return (frame, version)
    }

    static func nfcTags() throws -> (NDEFMessage, String?) {
        // example: Sources/NFCTags/NFCTags.docc/NFCTags.md
        // One URI record, https://example.com: header D1, type length 01, payload length 0C,
        // type "U", prefix 04 ("https://"), then "example.com" (docs/iso14443-t4t-ndef.md §5).
        let message = try NDEFMessage(records: [NDEFRecord.uri("https://example.com")])
        let bytes = message.serialized()      // D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D
        let parsed = try NDEFMessage(parsing: bytes)
        let uri = try parsed.records[0].uriValue()   // "https://example.com"
        // end of example
        return (message, uri)
    }

    static func acr122Simulator() throws -> [UInt8] {
        // example: Sources/ACR122Simulator/ACR122Simulator.docc/ACR122Simulator.md
        let field = SimulatedField(clock: SimulationClock(scale: 0.001))
        let reader = SimulatedACR122U(field: field)
        // The firmware version pseudo-APDU FF 00 48 00 00 (ACR122U API v2.04 §6.1) through the
        // CCID escape: the bytes "ACR122U207", with no status word.
        let firmware = try reader.control(code: ACR122DriverConstants.ccidEscapeCode, [0xFF, 0x00, 0x48, 0x00, 0x00])
        // end of example
        return firmware
    }

    static func secbridgeCLI() -> (Int32, String) {
        // example: Sources/SecbridgeCLI/SecbridgeCLI.docc/SecbridgeCLI.md
        let console = CapturingConsole()
        let status = SecbridgeCLI.main(arguments: ["--version"], console: console)
        // status == 0, console.standardOutput == "secbridge 0.1.0\n"
        // end of example
        return (status, console.standardOutput)
    }

    static func secureElementCredential() async throws -> [CredentialSession.Event] {
        // example: Sources/SecureElementCredential/SecureElementCredential.docc/SecureElementCredential.md
        let file = try CredentialFile(json: Array("""
            {"secbridge-credential": 1, "id": "badge", "name": "Badge",
             "applets": [{"type": "ndef-tag", "records": [{"uri": "https://example.org/badge"}]}]}
            """.utf8))
        let credential = try file.makeCredential()
        let desk = try await SimulatedSessionDesk.open(credentials: [credential])
        defer { desk.close() }
        try await desk.present(.android)                       // a phone that reads NDEF tags
        let session = try await desk.startSession()
        try await session.enterWiredMode(using: credential)
        try await session.performTransaction(using: credential)   // the card-emulation window opens
        var events: [CredentialSession.Event] = []
        for await event in session.eventStream {
            events.append(event)
            if case .fieldStateChanged(info: .fieldAbsent) = event { break }  // the phone has read it
        }
        try await session.endCardEmulation()
        await session.invalidate()
        // end of example
        return events
    }

    static func secbridgeTesting() throws {
        // example: Sources/SecbridgeTesting/SecbridgeTesting.docc/SecbridgeTesting.md
        let desk = try SimulatedDesk()
        defer { desk.close() }
        try desk.control().send("place-card uid=04A1B2C3 applet=t4t-ndef")
        let context = try desk.client.establishContext()
        let card = try context.connect(to: desk.names[0], share: .shared, protocols: .any)
        let answer = try card.transmit(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))   // 90 00
        // end of example
        _ = answer
    }
}
