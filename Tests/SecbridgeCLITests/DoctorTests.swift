import Foundation
import PCSC
import PN53x
import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// `secbridge doctor` against fake system trees (no PC/SC call: the PC/SC findings are given), and
/// `secbridge reset` / `doctor` help (docs/acr122-pn532.md §1, §5d).
@Suite struct DoctorTests {
    /// A fake root directory with `files` (path → contents) below it; removed by the caller.
    static func fakeRoot(_ files: [String: String]) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-doctor-\(UUID().uuidString)").path
        for (path, contents) in files {
            let full = root + path
            try FileManager.default.createDirectory(
                atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try contents.write(toFile: full, atomically: true, encoding: .utf8)
        }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return root
    }

    static func plist(_ value: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0">
        <dict>
        \t<key>ifdCapabilities</key>
        \t<string>0x00000000</string>
        \t<key>ifdDriverOptions</key>
        \t<string>\(value)</string>
        </dict>
        </plist>
        """
    }

    /// What pcscd says about a healthy simulated ACR122U behind libccid with escape commands on.
    static var healthy: DoctorPCSCFindings {
        var findings = DoctorPCSCFindings()
        findings.readers = ["ACS ACR122U PICC Interface 00 00"]
        findings.reader = findings.readers[0]
        findings.announcedEscapeCode = 0x4200_0001
        findings.workingEscapeCode = 0x4200_0001
        findings.firmware = try? ACR122FirmwareVersion(parsing: Array("ACR122U207".utf8))
        findings.piccParameter = 0xFF
        return findings
    }

    static func check(_ checks: [DoctorCheck], _ name: String) -> DoctorCheck? { checks.first { $0.check == name } }

    @Test func usbDevicePresentWithPn533LoadedFailsWithTheBlacklistFix() throws {
        let root = try Self.fakeRoot([
            "/sys/bus/usb/devices/1-1.2/idVendor": "072f\n",
            "/sys/bus/usb/devices/1-1.2/idProduct": "2200\n",
            "/sys/bus/usb/devices/1-1.3/idVendor": "1d6b\n",
            "/sys/bus/usb/devices/1-1.3/idProduct": "0002\n",
            "/proc/modules": "pn533_usb 20480 0 - Live 0x0000000000000000\npn533 45056 1 pn533_usb, Live 0x0000000000000000\nnfc 135168 1 pn533, Live 0x0000000000000000\next4 999 1 - Live 0x0\n",
            "/usr/sbin/pcscd": "",
        ])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let system = DoctorSystem(root: root, environment: ["PATH": "/usr/bin"])
        #expect(system.loadedKernelNFCModules == ["pn533_usb", "pn533", "nfc"])
        #expect(system.usbReaders.map(\.id) == ["072F:2200"])
        var findings = DoctorPCSCFindings()
        findings.readers = []  // pcscd answers but lists no reader: the kernel took it
        let checks = Doctor.evaluate(system: system, pcsc: findings)
        let usb = try #require(Self.check(checks, "USB device"))
        #expect(usb.verdict == .fail)
        #expect(usb.detail.contains("ACS ACR122U 072F:2200 at 1-1.2 is present but not in PC/SC; kernel modules loaded: pn533_usb, pn533, nfc"))
        #expect(usb.fix == "create /etc/modprobe.d/blacklist-pn533.conf with the three lines `blacklist pn533_usb`, `blacklist pn533`, `blacklist nfc`, then run `rmmod pn533_usb pn533 nfc` (or unplug and replug the reader) and `systemctl restart pcscd`")
        #expect(Self.check(checks, "reader in PC/SC")?.verdict == .fail)
        #expect(Self.check(checks, "pcscd installed")?.verdict == .ok)
        #expect(Self.check(checks, "escape commands")?.verdict == .skipped)
    }

    @Test func sysModuleIsTheFallbackWithoutProcModules() throws {
        let root = try Self.fakeRoot(["/sys/module/nfc/refcnt": "1\n", "/sys/module/pn533/refcnt": "1\n"])
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(DoctorSystem(root: root, environment: [:]).loadedKernelNFCModules == ["pn533", "nfc"])
    }

    @Test func escapeRefusedGivesTheExactPlistEdit() throws {
        let root = try Self.fakeRoot(["/etc/libccid_Info.plist": Self.plist("0x0000")])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let system = DoctorSystem(root: root, environment: [:])
        #expect(system.libccidDriverOptions == "0x0000")
        var findings = Self.healthy
        findings.announcedEscapeCode = nil
        findings.workingEscapeCode = nil
        findings.escapeRefused = true
        findings.firmware = nil
        findings.piccParameter = nil
        let checks = Doctor.evaluate(system: system, pcsc: findings)
        let escape = try #require(Self.check(checks, "escape commands"))
        #expect(escape.verdict == .fail)
        #expect(escape.detail.hasPrefix("refused: SCardControl 0x42000001 gave SCARD_E_NOT_TRANSACTED (0x80100016)"))
        #expect(escape.fix == "edit /etc/libccid_Info.plist: after <key>ifdDriverOptions</key>, change <string>0x0000</string> to <string>0x0001</string> (bit 0x0001 enables escape commands; the other bits are kept), then run `systemctl restart pcscd`")
        #expect(Self.check(checks, "driver")?.verdict == .warning)
    }

    /// OR 0x0001 into the current value: other option bits survive (libccid's 0x0004 lets firmware
    /// below 2.06 in).
    @Test(arguments: [("0x0000", "0x0001"), ("0x0004", "0x0005"), ("0x0001", "0x0001"), ("0x0010", "0x0011"), ("4", "0x0005")])
    func enablingEscapeKeepsOtherBits(_ current: String, _ expected: String) {
        #expect(Doctor.enablingEscape(current) == expected)
    }

    @Test func plistAlreadyEnabledSaysRestart() throws {
        let root = try Self.fakeRoot(["/etc/libccid_Info.plist": Self.plist("0x0001")])
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(Doctor.escapeFix(system: DoctorSystem(root: root, environment: [:]))
            == "/etc/libccid_Info.plist already sets ifdDriverOptions to 0x0001 (escape commands on): pcscd has not read it since; run `systemctl restart pcscd`")
    }

    @Test func noServiceSaysHowToStartPcscd() throws {
        var findings = DoctorPCSCFindings()
        findings.contextError = .noService
        let checks = Doctor.evaluate(system: DoctorSystem(root: try Self.fakeRoot([:]), environment: [:]), pcsc: findings)
        let running = try #require(Self.check(checks, "pcscd running"))
        #expect(running.verdict == .fail)
        #expect(running.detail.contains("/run/pcscd/pcscd.comm (the default socket) failed: SCARD_E_NO_SERVICE (0x8010001D)"))
        #expect(running.fix == "start it: `systemctl start pcscd.socket` (or `systemctl start pcscd`; `pcscd --foreground --debug` shows why it stops)")
        #expect(Self.check(checks, "pcscd installed")?.fix == "install it: `apt-get install pcscd libccid pcsc-tools` (Debian/Ubuntu)")
        #expect(checks.filter { $0.verdict == .skipped }.count == 7)
    }

    /// docs/acr122-clones.md §3: the variant check names a clone by its vendor name and a
    /// Touchatag-era unit by its pseudo-card, which the card check does not call a card; one
    /// line says what the classification and the unit check said before they were folded.
    @Test func variantCheckNamesClonesAndPseudoCardUnits() throws {
        let system = DoctorSystem(root: "/nonexistent", environment: [:])
        var genuine = Self.healthy
        genuine.vendorName = "ACS"
        let genuineVariant = try #require(Self.check(Doctor.evaluate(system: system, pcsc: genuine), "variant"))
        #expect(genuineVariant.verdict == .ok)
        #expect(genuineVariant.detail.contains("; no sign of a clone or a Touchatag-era unit (vendor ACS or not given, no pseudo-card): cards show in PC/SC; works: reader sessions (PC/SC part 3 and --pn532)"), "\(genuineVariant.detail)")
        var clone = Self.healthy
        clone.vendorName = "RFCARD"
        let cloneVariant = try #require(Self.check(Doctor.evaluate(system: system, pcsc: clone), "variant"))
        #expect(cloneVariant.verdict == .warning)
        #expect(cloneVariant.detail.hasPrefix("ACR122U clone (vendor \"RFCARD\"), firmware ACR122U207, libccid (escape option on)"), "\(cloneVariant.detail)")
        #expect(cloneVariant.detail.contains("; a clone (vendor \"RFCARD\", not ACS): its PC/SC side never reports a card; cards are read through the PN532 (InListPassiveTarget); works: `secbridge read` (it falls back to the PN532 path, --wait included), --pn532 sessions, card emulation (emulate, performTransaction); does not work: anything that waits for a card in PC/SC"), "\(cloneVariant.detail)")
        #expect(cloneVariant.fix?.hasPrefix("read cards with `secbridge read` (PN532 path)") == true)
        var touchatag = Self.healthy
        touchatag.cardPresent = true
        touchatag.atr = [0x3B, 0x00]
        let checks = Doctor.evaluate(system: system, pcsc: touchatag)
        #expect(Self.check(checks, "variant")?.detail.contains("; a Touchatag-era unit: it always reports a pseudo-card (ATR 3B 00) with no tag") == true)
        #expect(Self.check(checks, "variant")?.detail.contains("works: `secbridge read` (it falls back to the PN532 path, --wait included), --pn532 sessions, card emulation (emulate, performTransaction), pseudo-APDUs through the pseudo-card") == true)
        #expect(Self.check(checks, "card in the field")?.detail.hasPrefix("none: the reader shows its pseudo-card (ATR 3B 00), which is no card") == true)
        #expect(!checks.contains { $0.check == "unit" })
    }

    @Test func healthyReaderPassesAndPollingOffSuggestsReset() throws {
        let system = DoctorSystem(root: try Self.fakeRoot(["/usr/sbin/pcscd": ""]), environment: ["PCSCLITE_CSOCK_NAME": "/tmp/x/pcscd.comm"])
        let checks = Doctor.evaluate(system: system, pcsc: Self.healthy)
        #expect(!checks.contains { $0.verdict == .fail }, "\(checks)")
        #expect(Self.check(checks, "driver")?.detail.hasPrefix("CCID driver (libccid): escape code 0x42000001 (CM_IOCTL_GET_FEATURE_REQUEST, tag 0x13)") == true)
        #expect(Self.check(checks, "firmware")?.detail.hasPrefix("ACR122U207 (version 2.07); ") == true)
        #expect(Self.check(checks, "pcscd running")?.detail.hasPrefix("SCardEstablishContext answered on /tmp/x/pcscd.comm (PCSCLITE_CSOCK_NAME)") == true)
        var off = Self.healthy
        off.piccParameter = 0x00
        let picc = try #require(Self.check(Doctor.evaluate(system: system, pcsc: off), "PICC parameter"))
        #expect(picc.verdict == .warning)
        #expect(picc.detail.hasPrefix("FF 00 50 00 00 → 90 00: automatic polling off"))
        #expect(picc.fix == "run `secbridge reset` (sends FF 00 51 FF 00 among others)")
    }

    @Test(arguments: [("ACR122U214", true, false), ("ACR122U215", true, true), ("ACR122U216", true, false), ("ACR122U207", false, false), ("ACR122U103", true, false)])
    func firmwareQuirks(_ text: String, _ warns: Bool, _ mentionsTargets: Bool) throws {
        var findings = Self.healthy
        findings.firmware = try ACR122FirmwareVersion(parsing: Array(text.utf8))
        let firmware = try #require(Self.check(Doctor.evaluate(system: DoctorSystem(root: "/nonexistent", environment: [:]), pcsc: findings), "firmware"))
        #expect((firmware.verdict == .warning) == warns)
        #expect(firmware.detail.contains("2.15 units reportedly never get detected as targets") == mentionsTargets)
        #expect(firmware.detail.contains("timing-fragile"))
    }

    @Test func jsonIsAnArrayOfCheckVerdictDetailFix() throws {
        let root = try Self.fakeRoot(["/etc/libccid_Info.plist": Self.plist("0x0000")])
        defer { try? FileManager.default.removeItem(atPath: root) }
        var findings = Self.healthy
        findings.workingEscapeCode = nil
        findings.escapeRefused = true
        let checks = Doctor.evaluate(system: DoctorSystem(root: root, environment: [:]), pcsc: findings)
        let text = Doctor.json(checks).prettySerialized()
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
        #expect(parsed.count == checks.count)
        #expect(parsed.map { $0["check"] as? String } == [
            "pcscd installed", "pcscd running", "reader in PC/SC", "USB device", "driver", "escape commands",
            "firmware", "variant", "PICC parameter", "card in the field",
        ])
        for entry in parsed {
            #expect(Set(entry.keys) == ["check", "verdict", "detail", "fix"])
            #expect(["ok", "warning", "fail", "skipped"].contains(entry["verdict"] as? String ?? ""))
            // ok: no fix; warning and fail: the fix in words; skipped: what it depends on is in detail.
            switch entry["verdict"] as? String {
            case "ok": #expect(entry["fix"] is NSNull)
            case "warning", "fail": #expect(entry["fix"] is String, "\(entry)")
            default: break
            }
        }
    }

    @Test(arguments: ["doctor", "reset"])
    func helpNamesTheCommand(_ name: String) {
        let result = run([name, "--help"])
        #expect(result.status == 0)
        #expect(result.out.contains("USAGE: secbridge \(name) [--reader NAME|INDEX]"))
    }

    @Test func resetRefusesArguments() {
        let result = run(["reset", "extra"])
        #expect(result.status == 64)
        #expect(result.err.hasPrefix("secbridge: error: reset takes no arguments, got 'extra'\n"))
    }
}
