import Foundation
import PCSCSandbox
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
    /// nfc-list on `pn532_uart:/dev/pts/N` finds the card an ACR122U's control socket placed in
    /// the shared field: libnfc's wake-up, SAMConfiguration, firmware probe and pn53x_init all go
    /// through the board's serial framing.
    @Test func nfcListOnThePseudoTerminalFindsACardInTheSharedField() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        _ = try desk.control().send("place-tag uid=\"04 A1 B2 C3\" atqa=\"00 04\" sak=08 id=classic")
        let path = try #require(try desk.control().send("pn532-serial")["path"])
        var environment = ProcessInfo.processInfo.environment
        environment["LIBNFC_DEVICE"] = "pn532_uart:" + path
        environment["LIBNFC_AUTO_SCAN"] = "false"
        environment["LIBNFC_LOG_LEVEL"] = "1"  // errors only
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
}
