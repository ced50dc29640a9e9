import Foundation
import PCSCCore
import PCSCSandbox
import PN53x
import SecbridgeTesting
import Testing

// libnfc 1.8.0's pn532_uart driver (scripts/build-libnfc.sh) as an independent client of the
// simulated serial PN532 board (`secbridge simulate --pn532-serial`, the control verb
// `pn532-serial`; docs/pn532-uart.md §6): third-party code that opens the pseudo-terminal as it
// opens a USB-serial adapter. The board sits in an in-process desk's field, so no pcscd is needed.

extension Libnfc {
    /// True when the build's configure options include pn532_uart (its stamp file).
    static var hasPN532UART: Bool {
        guard isBuilt, let bin = binDirectory,
              // <cache>/install/bin → <cache>/stamp
              let stamp = FileManager.default.contents(
                  atPath: ((bin as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent + "/stamp")
        else { return false }
        return String(decoding: stamp, as: UTF8.self).contains("pn532_uart")
    }
}

@Suite(.enabled(if: Libnfc.hasPN532UART, "libnfc is not built with pn532_uart: run scripts/build-libnfc.sh"))
struct LibnfcSerialTests {
    /// libnfc's environment for the board at `path`: that device only, errors only in the log.
    static func environment(_ path: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["LIBNFC_DEVICE"] = "pn532_uart:" + path
        environment["LIBNFC_AUTO_SCAN"] = "false"
        environment["LIBNFC_LOG_LEVEL"] = "1"  // errors only
        return environment
    }

    /// A MIFARE Classic 1K-like tag (UID 04 A1 B2 C3, ATQA 00 04, SAK 08) placed through the
    /// desk's ACR122U, and the board in the same field: its pty and libnfc's environment for it.
    static func boardWithTag(on desk: SimulatedDesk) throws -> (path: String, environment: [String: String]) {
        _ = try desk.control().send("place-tag uid=\"04 A1 B2 C3\" atqa=\"00 04\" sak=08 id=classic")
        let path = try #require(try desk.control().send("pn532-serial")["path"])
        return (path, environment(path))
    }

    /// nfc-list on `pn532_uart:/dev/pts/N` finds the card an ACR122U's control socket placed in
    /// the shared field: libnfc's wake-up, SAMConfiguration, firmware probe and pn53x_init all go
    /// through the board's serial framing.
    @Test func nfcListOnThePseudoTerminalFindsACardInTheSharedField() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let (path, environment) = try Self.boardWithTag(on: desk)
        let toolEnvironment = environment
        let result = try await blocking { try Libnfc.run("nfc-list", ["-t", "1"], environment: toolEnvironment) }
        print("nfc-list on \(path):\n\(result.output)")
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("NFC device: user defined device opened"), "\(result.output)")
        // libnfc closes the pn532_uart device with PowerDown (D4 16 F0): answered, not the error frame.
        #expect(!result.output.contains("Application level error"), "\(result.output)")
        #expect(result.output.contains("1 ISO14443A passive target(s) found"), "\(result.output)")
        #expect(result.output.contains("UID (NFCID1): 04  a1  b2  c3"), "\(result.output)")
        #expect(result.output.contains("ATQA (SENS_RES): 00  04"), "\(result.output)")
        #expect(result.output.contains("SAK (SEL_RES): 08"), "\(result.output)")
    }

    /// nfc-poll on `pn532_uart:/dev/pts/N` lists the tag an ACR122U's control socket placed in the
    /// shared field (libnfc's nfc_initiator_poll_target: InAutoPoll on a PN532), then waits for it
    /// to leave (nfc_initiator_target_is_present); the tag is taken away once listed, and nfc-poll
    /// ends with "done.".
    @Test func nfcPollOnThePseudoTerminalListsATagInTheSharedField() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let (path, environment) = try Self.boardWithTag(on: desk)
        let poll = try Libnfc.RunningTool("nfc-poll", [], environment: environment)
        // Until nfc-poll printed the target (bounded: a tool start, not a device timeout).
        let listed = try await blocking { () -> Bool in
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(20)
            while clock.now < deadline {
                let output = (try? String(contentsOf: poll.outputURL, encoding: .utf8)) ?? ""
                if output.contains("SAK (SEL_RES)") { return true }
                if !poll.process.isRunning { return false }
                usleep(20_000)
            }
            return false
        }
        if listed { _ = try desk.control().send("remove peer=classic") }
        let result = await Task.detached { poll.finish(timeout: .seconds(10)) }.value
        print("nfc-poll on \(path):\n\(result.output)")
        #expect(listed, "\(result.output)")
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("NFC reader: user defined device opened"), "\(result.output)")
        #expect(result.output.contains("ISO/IEC 14443A (106 kbps) target:"), "\(result.output)")
        #expect(result.output.contains("ATQA (SENS_RES): 00  04"), "\(result.output)")
        #expect(result.output.contains("UID (NFCID1): 04  a1  b2  c3"), "\(result.output)")
        #expect(result.output.contains("SAK (SEL_RES): 08"), "\(result.output)")
        #expect(result.output.contains("done."), "\(result.output)")
    }

    /// The other way round: nfc-emulate-forum-tag4 emulates its Type 4 Tag on the serial board
    /// (TgInitAsTarget, TgGetData, TgSetData through the pty), and the desk's ACR122U, in the same
    /// field, reads it with PN532 initiator commands through Direct Transmit. The desk runs at 0.1
    /// of real time, so the board's 60 s (simulated) bound on TgInitAsTarget outlasts the polls.
    @Test func ourACR122UReadsNfcEmulateForumTag4OnTheSerialBoard() async throws {
        let desk = try await SimulatedDesk.open(timeScale: 0.1)
        defer { desk.close() }
        let path = try #require(try desk.control().send("pn532-serial")["path"])
        let environment = Self.environment(path)
        try await stopAutomaticPolling(on: desk)
        let emulator = try Libnfc.RunningTool("nfc-emulate-forum-tag4", [], environment: environment)
        let reading = try await readType4TagWithPN532Commands(on: desk, type4CapabilityContainerRead)
        let emulatorResult = await Task.detached { emulator.finish(timeout: .seconds(10)) }.value
        print("nfc-emulate-forum-tag4 on \(path):\n\(emulatorResult.output)")
        let target = try #require(reading.0, "no target found; nfc-emulate-forum-tag4 said: \(emulatorResult.output)")
        // nfc-emulate-forum-tag4's target (libnfc utils/nfc-emulate-forum-tag4.c): UID 08 00 B0 0B,
        // ATQA 00 04, SAK 20.
        #expect(target.uid == [0x08, 0x00, 0xB0, 0x0B])
        #expect(target.atqa.rawValue == 0x0004)
        #expect(target.sak == 0x20)
        try #require(reading.1.count == 3)
        #expect(reading.1[0] == [0x90, 0x00])
        #expect(reading.1[1] == [0x90, 0x00])
        // Its CC: mapping 2.0, MLe 0054, MLc 00FF, NDEF file E104 of at most FFFE bytes, open access.
        #expect(reading.1[2] == [0x00, 0x0F, 0x20, 0x00, 0x54, 0x00, 0xFF, 0x04, 0x06, 0xE1, 0x04, 0xFF, 0xFE, 0x00, 0x00, 0x90, 0x00])
    }
}

/// Turns the automatic polling of the desk's first ACR122U off: it would activate a target the
/// serial board emulates by itself (docs/acr122-pn532.md §2, PICC operating parameter bit 7).
func stopAutomaticPolling(on desk: SimulatedDesk) async throws {
    let client = desk.client
    let reader = desk.names[0]
    try await blocking {
        let context = try client.establishContext()
        defer { try? context.release() }
        let direct = try context.connect(to: reader, share: .direct, protocols: .undefined)
        defer { try? direct.disconnect(.leave) }
        try ACR122Link.open(channel: direct, readerName: reader).setPICCOperatingParameter([])
    }
}

/// NFC Forum Type 4 Tag 2.0 §5.4 up to the CC: SELECT the NDEF Tag Application, SELECT the
/// capability container E103, READ BINARY its 15 bytes.
let type4CapabilityContainerRead: [[UInt8]] = [
    [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00],  // SELECT NDEF Tag Application
    [0x00, 0xA4, 0x00, 0x0C, 0x02, 0xE1, 0x03],  // SELECT capability container
    [0x00, 0xB0, 0x00, 0x00, 0x0F],  // READ BINARY CC
]

/// The desk's first ACR122U as a PN532 initiator through Direct Transmit: polls until a target
/// answers (at most 200 polls of 17 attempts each, until the emulating host reaches
/// TgInitAsTarget), sends `commands` to it, releases it; nil and no answers when none came.
func readType4TagWithPN532Commands(on desk: SimulatedDesk, _ commands: [[UInt8]]) async throws -> (ISO14443ATarget?, [[UInt8]]) {
    let client = desk.client
    let reader = desk.names[0]
    return try await blocking { () throws -> (ISO14443ATarget?, [[UInt8]]) in
        let context = try client.establishContext()
        defer { try? context.release() }
        let direct = try context.connect(to: reader, share: .direct, protocols: .undefined)
        defer { try? direct.disconnect(.leave) }
        let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: reader))
        var target: ISO14443ATarget?
        for _ in 0..<200 where target == nil {
            target = try chip.pollISO14443A(passiveActivationRetries: 0x10)
        }
        guard let target else { return (nil, []) }
        let answers = try commands.map { try chip.exchangeAPDU($0, target: target.logicalNumber) }
        try chip.release()
        return (target, answers)
    }
}
