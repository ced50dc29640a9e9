import Foundation
import PCSCSandbox
import SecbridgeTesting
import Testing

// PC/SC clients other than libnfc against the simulated ACR122U through the shared private pcscd:
// pyscard (SCardControl, SCardGetAttrib), pcsc_scan (the ATR names of pcsc-tools'
// smartcard_list.txt) and OpenSC's opensc-tool.

/// True when Debian's python3-pyscard is installed (scripts/install-deps.sh).
let pyscardInstalled = FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/smartcard/scard/__init__.py")
    || FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/smartcard/__init__.py")

/// What the pyscard script prints for a direct connection to `reader`: one `name: hex` line each
/// for the feature request, the firmware string through the escape code, libnfc's line test
/// through the escape code, and the vendor-name attribute.
let pyscardScript = """
    import sys
    from smartcard.scard import *
    from smartcard.util import toHexString
    reader = sys.argv[1]
    hr, context = SCardEstablishContext(SCARD_SCOPE_USER)
    hr, card, protocol = SCardConnect(context, reader, SCARD_SHARE_DIRECT, 0)
    if hr != SCARD_S_SUCCESS:
        print("connect:", SCardGetErrorMessage(hr)); sys.exit(1)
    def control(name, code, data):
        hr, answer = SCardControl(card, code, data)
        print(name + ":", toHexString(answer) if hr == SCARD_S_SUCCESS else "error %08X" % (hr & 0xFFFFFFFF))
    control("features", SCARD_CTL_CODE(3400), [])
    control("firmware", SCARD_CTL_CODE(1), [0xFF, 0x00, 0x48, 0x00, 0x00])
    control("diagnose", SCARD_CTL_CODE(1), [0xFF, 0x00, 0x00, 0x00, 0x09, 0xD4, 0x00, 0x00] + list(b"libnfc"))
    hr, attribute = SCardGetAttrib(card, SCARD_ATTR_VENDOR_NAME)
    print("vendor:", toHexString(attribute) if hr == SCARD_S_SUCCESS else "error %08X" % (hr & 0xFFFFFFFF))
    SCardDisconnect(card, SCARD_LEAVE_CARD)
    SCardReleaseContext(context)
    """

extension SharedReader {
    @Suite struct ThirdPartyClientTests {
        /// pyscard's SCardControl reaches the chip through libccid's escape code as on a unit
        /// with `ifdDriverOptions` 0x0001, and SCardGetAttrib gives libccid's vendor name.
        @Test(.enabled(if: pyscardInstalled, "python3-pyscard is not installed: run scripts/install-deps.sh"))
        func pyscardControlAndAttributes() async throws {
            let environment = try await resetSimulatedReaders()
            let directory = try toolScratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let script = directory + "/probe.py"
            try pyscardScript.write(toFile: script, atomically: true, encoding: .utf8)
            let result = try await runProgram(
                URL(fileURLWithPath: "/usr/bin/python3"), [script, environment.simulatedReaderA],
                environment: environment.environmentForSubprocesses)
            #expect(result.status == 0, "\(result.out)\(result.err)")
            // libccid's list (docs/acr122-units.md §1): FEATURE_GET_TLV_PROPERTIES (12), 4 bytes,
            // 42 33 00 12, then, with escape commands enabled, FEATURE_CCID_ESC_COMMAND (13), 4 bytes,
            // SCARD_CTL_CODE(1) = 42 00 00 01.
            #expect(result.out.contains("features: 12 04 42 33 00 12 13 04 42 00 00 01\n"), "\(result.out)")
            // "ACR122U207", no status word.
            #expect(result.out.contains("firmware: 41 43 52 31 32 32 55 32 30 37\n"), "\(result.out)")
            // libnfc's communication line test comes back behind D5 01 00, then 90 00.
            #expect(result.out.contains("diagnose: D5 01 00 6C 69 62 6E 66 63 90 00\n"), "\(result.out)")
            // "ACS" and its NUL, as libccid copies the USB iManufacturer string.
            #expect(result.out.contains("vendor: 41 43 53 00\n"), "\(result.out)")
        }

        /// pcsc_scan prints the name pcsc-tools' smartcard_list.txt gives the ATR: for a tag whose
        /// SAK 88 the reader has no name for, `… 03 FF 88 …` is the Infineon SLE 66R35 entry.
        @Test(arguments: [
            ("sak=88", "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 FF 88 00 00 00 00 1C", "Infineon Mifare SLE 66R35"),
            ("sak=08", "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A", "NXP/Philips MIFARE Classic 1K (as per PCSC std part3)"),
        ])
        func pcscScanNamesTheATR(_ sak: String, _ atr: String, _ name: String) async throws {
            let environment = try await resetSimulatedReaders()
            try await placeInSharedField("place-tag uid=\"04 A1 B2 C3\" \(sak) id=tag", environment: environment)
            let result = try await runProgram(
                URL(fileURLWithPath: "/usr/bin/pcsc_scan"), ["-t", "1"], environment: environment.environmentForSubprocesses)
            try SimulatedReaders.controlA.send(.remove(peer: "tag"))
            // pcsc_scan colours its output: drop the ANSI escape sequences (ESC [ … m).
            let plain = result.out.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
            #expect(plain.contains(" ATR: \(atr)\n"), "\(plain)\(result.err)")
            #expect(plain.contains("\t\(name)\n"), "\(plain)")
        }

        /// opensc-tool lists the simulated reader with its card and prints the card's ATR.
        @Test(.enabled(if: openscInstalled, "opensc-tool is not installed: run scripts/install-deps.sh"))
        func openscToolListsTheReaderAndReadsTheATR() async throws {
            let environment = try await resetSimulatedReaders()
            try await placeInSharedField("place-tag uid=\"04 A1 B2 C3\" id=tag", environment: environment)
            let directory = try toolScratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var subprocessEnvironment = environment.environmentForSubprocesses
            subprocessEnvironment["HOME"] = directory  // opensc-tool keeps a cache in HOME
            let list = try await runProgram(URL(fileURLWithPath: "/usr/bin/opensc-tool"), ["--list-readers"], environment: subprocessEnvironment)
            let atr = try await runProgram(
                URL(fileURLWithPath: "/usr/bin/opensc-tool"), ["--reader", environment.simulatedReaderA, "--atr"], environment: subprocessEnvironment)
            try SimulatedReaders.controlA.send(.remove(peer: "tag"))
            #expect(list.status == 0, "\(list.out)\(list.err)")
            #expect(list.out.contains(environment.simulatedReaderA), "\(list.out)")
            #expect(atr.status == 0, "\(atr.out)\(atr.err)")
            #expect(atr.out.lowercased().contains("3b:8f:80:01:80:4f:0c:a0:00:00:03:06:03:00:01:00:00:00:00:6a"), "\(atr.out)")
        }
    }
}
