import Foundation
import ISO7816
import PCSCCore
import PCSCSandbox
import PN53x
import SecbridgeTesting
import Testing

// nfcpy 1.0.4's PN532 driver (scripts/nfcpy-requirements.txt, installed into <repo>/.venv-nfcpy by
// scripts/install-deps.sh) as an independent client of the simulated serial PN532 board
// (`secbridge simulate --pn532-serial`, the control verb `pn532-serial`; docs/pn532-uart.md §6,
// §10): third-party code that opens the pseudo-terminal as it opens a PN532 on /dev/ttyUSB0.
// scripts/nfcpy-board.py drives it and prints what nfcpy found. The board sits in an in-process
// desk's field, so no pcscd is needed.

/// Where scripts/install-deps.sh puts nfcpy: `$SECBRIDGE_NFCPY_VENV`, else `<repo>/.venv-nfcpy`.
enum Nfcpy {
    static let python: String? = {
        let venv = ProcessInfo.processInfo.environment["SECBRIDGE_NFCPY_VENV"].flatMap { $0.isEmpty ? nil : $0 }
            ?? HarnessPaths.repositoryRoot?.appendingPathComponent(".venv-nfcpy").path
        guard let venv else { return nil }
        let python = venv + "/bin/python"
        let lib = venv + "/lib"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []
        let hasNfcpy = versions.contains { FileManager.default.fileExists(atPath: lib + "/" + $0 + "/site-packages/nfc/clf/pn532.py") }
        return FileManager.default.isExecutableFile(atPath: python) && hasNfcpy ? python : nil
    }()

    static var isInstalled: Bool { python != nil }

    /// Starts scripts/nfcpy-board.py with `arguments`.
    static func start(_ arguments: [String]) throws -> Libnfc.RunningTool {
        guard let python, let root = HarnessPaths.repositoryRoot else {
            throw HarnessError(code: .missingDependency, reason: "nfcpy is not installed: run scripts/install-deps.sh")
        }
        let script = root.appendingPathComponent("scripts/nfcpy-board.py").path
        return try Libnfc.RunningTool(executable: python, ["-u", script] + arguments, environment: ProcessInfo.processInfo.environment)
    }

    /// Runs scripts/nfcpy-board.py with `arguments` to its end (at most `timeout`).
    static func board(_ arguments: [String], timeout: Duration = .seconds(30)) throws -> (status: Int32, output: String) {
        try start(arguments).finish(timeout: timeout)
    }
}

@Suite(.enabled(if: Nfcpy.isInstalled, "nfcpy is not installed in .venv-nfcpy: run scripts/install-deps.sh"))
struct NfcpySerialTests {
    /// An NDEF message of two records (NFC Forum RTD URI and Text): `https://example.com`
    /// (prefix 04 "https://") and the text "hello" in language "en".
    static let message: [UInt8] = [0x91, 0x01, 0x0C, 0x55, 0x04] + Array("example.com".utf8)
        + [0x51, 0x01, 0x08, 0x54, 0x02] + Array("enhello".utf8)

    /// A Type 4 Tag holding ``message`` (UID 04 A1 B2 C3 D4 E5 F6, ATQA 00 44) placed in `desk`'s
    /// field, and a serial board in the same field: the board's pty.
    static func boardBesideAType4Tag(on desk: SimulatedDesk) throws -> String {
        let ndef = message.map { String(format: "%02X", $0) }.joined()
        _ = try desk.control().send("place-card uid=\"04 A1 B2 C3 D4 E5 F6\" atqa=\"00 44\" applet=t4t-ndef ndef=\(ndef) id=t4t")
        return try #require(try desk.control().send("pn532-serial")["path"])
    }

    /// nfcpy opens the board as a real one (GetFirmwareVersion after its 00 preamble,
    /// SAMConfiguration, SetSerialBaudRate 921 600, Diagnose, SetParameters with automatic RATS
    /// off, the RF settings), finds the Type 4 Tag an ACR122U's control socket placed in the
    /// shared field with InListPassiveTarget, sends RATS and every ISO-DEP block itself with
    /// InCommunicateThru, reads the NDEF message (NDEF Tag Application, CC, NDEF file) and closes
    /// with SetSerialBaudRate 115 200 and PowerDown.
    @Test func nfcpyReadsTheNDEFMessageOfAType4TagInTheSharedField() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let path = try Self.boardBesideAType4Tag(on: desk)
        let result = try await blocking { try Nfcpy.board(["read", path, "--seconds", "10"]) }
        print("nfcpy on \(path):\n\(result.output)")
        #expect(result.status == 0, "\(result.output)")
        // nfcpy prints SENS_RES in the order sent on air (ATQA 00 44, a 7-byte UID, sent 44 00), SAK 20.
        #expect(result.output.contains("target: 106A sdd_res=04A1B2C3D4E5F6 sel_res=20 sens_res=4400"), "\(result.output)")
        // The default ATS 05 78 80 70 02: FSCI 8 (256 bytes), FWI 7.
        #expect(result.output.contains("tag: Type4ATag MIU=253 FWT=0.038664"), "\(result.output)")
        #expect(result.output.contains("uid: 04A1B2C3D4E5F6"), "\(result.output)")
        #expect(result.output.contains("ndef-length: \(Self.message.count)"), "\(result.output)")
        #expect(result.output.contains("record: urn:nfc:wkt:U '' 046578616D706C652E636F6D"), "\(result.output)")
        #expect(result.output.contains("uri: https://example.com"), "\(result.output)")
        #expect(result.output.contains("record: urn:nfc:wkt:T '' 02656E68656C6C6F"), "\(result.output)")
        #expect(result.output.contains("text: hello"), "\(result.output)")
        // Every C-APDU reached the card through nfcpy's own ISO-DEP blocks: SELECT by AID first.
        let log = try desk.control().send("card-log peer=t4t")
        #expect(log["all"]?.hasPrefix("00 A4 04 00 07 D2 76 00 00 85 01 01 00") == true, "\(log)")
        // nfcpy closed with PowerDown: its next open (00 bytes, no 55) gets no ACK, as nfcpy issue
        // #186 reports from a real board (docs/pn532-uart.md §3): nfcpy's transport times out.
        let again = try await blocking { try Nfcpy.board(["read", path, "--seconds", "1"]) }
        #expect(again.status == 4, "\(again.output)")
        #expect(again.output == "error: the board did not answer nfcpy's opening: [Errno 110] Connection timed out\n", "\(again.output)")
    }

    /// nfcpy's own device search: `ContactlessFrontend.open("tty:NAME:pn532")`, as a user names a
    /// board on /dev/ttyUSB0 (`tty:USB0:pn532`). nfcpy looks NAME up among the entries of /dev
    /// (nfc/clf/transport.py `TTY.find`), which a pseudo-terminal under /dev/pts is not, so the test
    /// links a name in /dev to the board's pty (root only: /dev is the system's), removed after.
    @Test(.enabled(if: access("/dev", W_OK) == 0, "a link in /dev needs root"))
    func nfcpysDeviceSearchOpensTheBoardByItsTtyPath() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let path = try Self.boardBesideAType4Tag(on: desk)
        let name = "secbridge-nfcpy-\(getpid())"
        _ = unlink("/dev/" + name)
        try #require(symlink(path, "/dev/" + name) == 0, "symlink /dev/\(name): errno \(errno)")
        defer { _ = unlink("/dev/" + name) }
        let result = try await blocking { try Nfcpy.board(["read", "tty:\(name):pn532", "--seconds", "10"]) }
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.hasPrefix("device: PN532v1.6 at /dev/\(name)\n"), "\(result.output)")
        #expect(result.output.contains("uid: 04A1B2C3D4E5F6"), "\(result.output)")
        #expect(result.output.contains("uri: https://example.com"), "\(result.output)")
        #expect(result.output.contains("text: hello"), "\(result.output)")
    }

    /// The other way round: nfcpy listens as a Type 4A target on the board (`listen_tta`, SEL_RES
    /// 20, fISO14443-4_PICC off), answers the reader's RATS and each ISO-DEP block itself
    /// (TgInitAsTarget hands over the RATS, then TgResponseToInitiator and TgGetInitiatorCommand),
    /// and scripts/nfcpy-board.py serves the NDEF application; the desk's ACR122U, in the same
    /// field, reads it with PN532 initiator commands through Direct Transmit. The desk runs at 0.1
    /// of real time: nfcpy waits in real time on the serial line.
    @Test func ourACR122UReadsTheType4TagNfcpyEmulatesOnTheBoard() async throws {
        let desk = try await SimulatedDesk.open(timeScale: 0.1)
        defer { desk.close() }
        let path = try #require(try desk.control().send("pn532-serial")["path"])
        try await stopAutomaticPolling(on: desk)
        let ndef = Self.message.map { String(format: "%02X", $0) }.joined()
        let emulator = try Nfcpy.start(["emulate", path, "--ndef", ndef, "--uid", "A1B2C3", "--seconds", "10"])
        let reading = try await readType4TagWithPN532Commands(on: desk, type4CapabilityContainerRead + [
            [0x00, 0xA4, 0x00, 0x0C, 0x02, 0xE1, 0x04],  // SELECT NDEF file
            [0x00, 0xB0, 0x00, 0x00, 0x02],  // READ BINARY NLEN
            [0x00, 0xB0, 0x00, 0x02, UInt8(Self.message.count)],  // READ BINARY the message
        ])
        let emulatorResult = await Task.detached { emulator.finish(timeout: .seconds(15)) }.value
        print("nfcpy emulate on \(path):\n\(emulatorResult.output)")
        let target = try #require(reading.0, "no target found; nfcpy said: \(emulatorResult.output)")
        // nfcpy's target: NFCID1 08 A1 B2 C3, SENS_RES 44 00 as given (ATQA 00 44), SEL_RES 20, and
        // the ATS it answered the RATS with (its default 05 78 80 70 02).
        #expect(target.uid == [0x08, 0xA1, 0xB2, 0xC3])
        #expect(target.atqa.rawValue == 0x0044)
        #expect(target.sak == 0x20)
        #expect(target.ats == [0x05, 0x78, 0x80, 0x70, 0x02])
        try #require(reading.1.count == 6)
        #expect(reading.1[0] == [0x90, 0x00])
        #expect(reading.1[1] == [0x90, 0x00])
        // The script's CC: mapping 2.0, MLe 00FF, MLc 00FF, NDEF file E104 of at most 0800 bytes, open.
        #expect(reading.1[2] == [0x00, 0x0F, 0x20, 0x00, 0xFF, 0x00, 0xFF, 0x04, 0x06, 0xE1, 0x04, 0x08, 0x00, 0x00, 0x00, 0x90, 0x00])
        #expect(reading.1[3] == [0x90, 0x00])
        #expect(reading.1[4] == [0x00, UInt8(Self.message.count), 0x90, 0x00])
        #expect(reading.1[5] == Self.message + [0x90, 0x00])
        // nfcpy's side: the RATS handed over, each C-APDU as the script took it out of an I-block,
        // and the release (status 29 to TgGetInitiatorCommand) after InRelease.
        #expect(emulatorResult.status == 0, "\(emulatorResult.output)")
        #expect(emulatorResult.output.contains("activated: 106A sdd_res=08A1B2C3 sel_res=20 sens_res=4400 tt4_cmd=0200A4040007D276000085010100"), "\(emulatorResult.output)")
        #expect(emulatorResult.output.contains("capdu: 00B0000002\nrapdu: 001C9000\n"), "\(emulatorResult.output)")
        #expect(emulatorResult.output.hasSuffix("released\n"), "\(emulatorResult.output)")
    }
}
