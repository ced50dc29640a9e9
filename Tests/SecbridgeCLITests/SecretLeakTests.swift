import Foundation
import SecbridgeTesting
import Testing

/// Issue 15, "Secrets", done-when: a session that sends a PIN, a key and a cryptogram on every
/// path the commands have, and every artefact it leaves — standard output and error, `--json`,
/// `--record` transcripts with their headers — grepped for the secret bytes (docs/secrets.md §5).
/// In process, on a simulated desk; `EndToEndTests/SecretLeakEndToEndTests.swift` runs the binary
/// through a private pcscd and adds `capture`.
@Suite struct SecretLeakTests {
    /// An alphanumeric PIN (OpenPGP allows any UTF-8), so its ASCII form is greppable too: "Kq7#Zx".
    static let pin: [UInt8] = [0x4B, 0x71, 0x37, 0x23, 0x5A, 0x78]
    /// A MIFARE Classic key, made up.
    static let key: [UInt8] = [0x5A, 0x9C, 0x3E, 0x71, 0xD4, 0x2B]
    /// A host cryptogram and MAC (GlobalPlatform SCP02 EXTERNAL AUTHENTICATE), made up.
    static let cryptogram: [UInt8] = [0xC3, 0x1F, 0x8A, 0x60, 0x5E, 0x92, 0x47, 0xB8, 0x0D, 0xE6, 0x39, 0xA4, 0x71, 0xF2, 0x8C, 0x55]

    static func hexText(_ bytes: [UInt8], separator: String = " ") -> String { SecretScan.hexText(bytes, separator: separator) }

    /// VERIFY with the PIN padded with FF (ISO/IEC 7816-4 §11.5).
    static let verify = "00 20 00 81 08 " + hexText(pin) + " FF FF"
    /// EXTERNAL AUTHENTICATE, CLA 84, security level 33 (GlobalPlatform SCP02).
    static let externalAuthenticate = "84 82 33 00 10 " + hexText(cryptogram)
    /// ACR122U LOAD KEY into volatile slot 00 (ACR122U API v2.04).
    static let loadKey = "FF 82 00 00 06 " + hexText(key)
    /// The same VERIFY inside a PN532 InDataExchange Direct Transmit, as libnfc sends it.
    static let verifyInDataExchange = "FF 00 00 00 10 D4 40 01 " + verify

    /// The PIN, the key and the cryptogram, in any form (SecretScan).
    static func leaks(in text: String, what: String) -> [String] {
        SecretScan([("PIN", pin), ("key", key), ("cryptogram", cryptogram)]).leaks(in: text, what: what)
    }

    /// Every regular file under `directory` but the ones named in `except`, by path.
    static func files(in directory: String, except: Set<String> = []) throws -> [String: String] {
        var result: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where !except.contains(name) {
            let path = directory + "/" + name
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            result[path] = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        }
        return result
    }

    static func scratch(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "secbridge-secrets-\(name)-\(getpid())"
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// send, run, shell from a pipe (card commands, InDataExchange inside a Direct Transmit, LOAD
    /// KEY, a malformed VERIFY), with and without --json, each recorded.
    @Test func sendRunAndShellLeaveNoSecretAnywhere() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let dir = try Self.scratch("apdu")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], id: "card"))
        var outputs: [(String, String)] = []
        func check(_ arguments: [String], input: [String] = [], expectStatus: Int32? = 0) async throws {
            let result = try await runTool(arguments, on: desk, input: input)
            if let expectStatus { #expect(result.status == expectStatus, "\(arguments): \(result.err)\n\(result.out)") }
            outputs.append(("\(arguments) stdout", result.out))
            outputs.append(("\(arguments) stderr", result.err))
        }
        let apdus = [Self.verify, Self.externalAuthenticate, Self.loadKey, Self.verifyInDataExchange]
        for json in [false, true] {
            let tag = json ? "json" : "text"
            try await check(["send", "--reader", "0", "--record", dir + "/send-\(tag).trn"] + (json ? ["--json"] : []) + apdus)
            let script = dir + "/script-\(tag).apdu"
            try (apdus.joined(separator: "\n") + "\n").write(toFile: script, atomically: true, encoding: .utf8)
            try await check(["run", "--reader", "0", "--record", dir + "/run-\(tag).trn"] + (json ? ["--json"] : []) + [script])
        }
        try await check(["shell", "--reader", "0", "--record", dir + "/shell.trn"], input: apdus)
        // A malformed VERIFY (Lc 8, four bytes) and one that is not hex at all: usage errors.
        try await check(["send", "--reader", "0", "00 20 00 81 08 " + Self.hexText(Array(Self.pin.prefix(4)))], expectStatus: 64)
        try await check(["send", "--reader", "0", "0020008108" + Self.hexText(Self.pin, separator: "") + "FFZZ"], expectStatus: 64)
        // A script line with a malformed VERIFY.
        let bad = dir + "/bad.apdu"
        try "00 20 00 81 08 \(Self.hexText(Array(Self.pin.prefix(5))))\n".write(toFile: bad, atomically: true, encoding: .utf8)
        try await check(["run", "--reader", "0", bad], expectStatus: 1)
        // A script line that starts as a VERIFY and is not hex: echoed with the PIN masked.
        let typo = dir + "/typo.apdu"
        try "00 20 00 81 08 \(Self.hexText(Self.pin)) FG\n".write(toFile: typo, atomically: true, encoding: .utf8)
        try await check(["run", "--reader", "0", typo], expectStatus: 1)
        #expect(outputs.last?.1.contains("'00 20 00 81 08 [REDACTED 6] …' is not an APDU in hex") == true, "\(outputs.last?.1 ?? "")")

        let sendOut = try #require(outputs.first { $0.0.contains("send") && $0.0.hasSuffix("stdout") }).1
        #expect(sendOut.contains("> 00 20 00 81 08 [REDACTED 8]\n"), "\(sendOut)")
        #expect(sendOut.contains("> FF 00 00 00 10 D4 40 01 00 20 00 81 08 [REDACTED 8]\n"), "\(sendOut)")
        var leaks: [String] = []
        for (what, text) in outputs { leaks += Self.leaks(in: text, what: what) }
        let transcripts = try Self.files(in: dir).filter { $0.key.hasSuffix(".trn") }
        #expect(transcripts.count == 5)
        for (path, text) in transcripts { leaks += Self.leaks(in: text, what: path) }
        #expect(leaks.isEmpty, "\(leaks)")
    }

    /// `--show-secrets` prints what was sent, so the masking above is a choice the test sees.
    @Test func showSecretsPrintsTheBytesAsSent() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], id: "card"))
        let shown = try await runTool(["send", "--reader", "0", "--show-secrets", Self.verify], on: desk)
        #expect(shown.status == 0, "\(shown.err)")
        #expect(shown.out.contains("> \(Self.verify)\n"), "\(shown.out)")
        let json = try await runTool(["send", "--reader", "0", "--json", Self.verify], on: desk)
        #expect(json.out.contains("\"command\": {\n"), "\(json.out)")
        #expect(json.out.contains("\"hex\": \"0020008108\""), "\(json.out)")
        #expect(json.out.contains("\"redacted\": 8"), "\(json.out)")
    }

    /// read --key and write-dump on a MIFARE Classic 1K whose keys are `key`, and read --pn532 of a
    /// Type 4 Tag, each recorded: the key (LOAD KEY, a trailer's key B read back, trailers written)
    /// appears nowhere but in the dump file, which is a card image and holds it by design.
    @Test func readKeyWriteDumpAndReadPN532LeaveNoKey() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let dir = try Self.scratch("mifare")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keyHex = Self.hexText(Self.key, separator: "")
        try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K, key: Self.key), id: "mf"))
        var outputs: [(String, String)] = []
        func check(_ arguments: [String]) async throws {
            let result = try await runTool(arguments, on: desk)
            #expect(result.status == 0, "\(arguments): \(result.err)\n\(result.out)")
            outputs.append(("\(arguments[0]) \(arguments.contains("--json") ? "json" : "text") stdout", result.out))
            outputs.append(("\(arguments[0]) stderr", result.err))
        }
        try await check(["read", "--reader", "0", "--key", keyHex, "--blocks", "4-7", "--record", dir + "/read.trn"])
        try await check(["read", "--reader", "0", "--key", keyHex, "--blocks", "4-7", "--json", "--record", dir + "/read-json.trn"])
        try await check(["read", "--reader", "0", "--key", keyHex, "--dump", dir + "/card.mfd"])
        // Block 4 and sector 1's trailer (its general purpose byte) changed, so both are written:
        // the trailer with keys A and B (libnfc's layout, 16 bytes a block).
        var image = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/card.mfd")))
        image[4 * 16] = 0x42
        image[7 * 16 + 9] ^= 0x01
        try Data(image).write(to: URL(fileURLWithPath: dir + "/card.mfd"))
        try await check(["write-dump", dir + "/card.mfd", "--reader", "0", "--key", keyHex, "--write-trailers", "--yes",
                         "--record", dir + "/write-dump.trn"])
        try await check(["write-dump", dir + "/card.mfd", "--reader", "0", "--key", keyHex, "--write-trailers", "--yes", "--json"])
        // read --pn532 (InListPassiveTarget, InDataExchange) of a Type 4 Tag on a desk of its own.
        let t4t = try await SimulatedDesk.open()
        defer { t4t.close() }
        try t4t.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "t4t"))
        for arguments in [["--record", dir + "/read-pn532.trn"], ["--json"]] {
            let result = try await runTool(["read", "--reader", "0", "--pn532"] + arguments, on: t4t)
            #expect(result.status == 0, "\(arguments): \(result.err)\n\(result.out)")
            outputs.append(("read --pn532 \(arguments) stdout", result.out))
            outputs.append(("read --pn532 \(arguments) stderr", result.err))
        }

        let dump = try Data(contentsOf: URL(fileURLWithPath: dir + "/card.mfd"))
        #expect(dump.range(of: Data(Self.key)) != nil, "the dump holds the key used, as libnfc's layout has it")
        var leaks: [String] = []
        for (what, text) in outputs { leaks += Self.leaks(in: text, what: what) }
        let files = try Self.files(in: dir, except: ["card.mfd"])
        #expect(files.count == 4)
        for (path, text) in files { leaks += Self.leaks(in: text, what: path) }
        #expect(leaks.isEmpty, "\(leaks)")
    }

    /// emulate with a terminal that sends VERIFY and EXTERNAL AUTHENTICATE: the `terminal >` lines,
    /// the JSON events, and the transcript's `tgt <` lines and TgGetData answers hold no secret.
    @Test func emulateWithATerminalSendingVerifyLeavesNoSecret() async throws {
        let dir = try Self.scratch("emulate")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let credential = dir + "/pin-card.json"
        try """
            {
              "secbridge-credential": 1,
              "id": "pin-card",
              "name": "a PIN-protected test applet",
              "applets": [
                {
                  "type": "declarative",
                  "name": "pin applet",
                  "aids": [ "F0 53 45 43 52 45 54" ],
                  "rules": [
                    { "command": "00 20 00 81 08 *", "response": "90 00" },
                    { "command": "84 82 33 00 10 *", "response": "90 00" }
                  ]
                }
              ]
            }
            """.write(toFile: credential, atomically: true, encoding: .utf8)
        let terminal = dir + "/terminal.script"
        try """
            # secbridge-transcript: 1
            # origin: simulated
            tgt < 00 A4 04 00 07 F0 53 45 43 52 45 54 00
            tgt > 90 00
            tgt < \(Self.verify)
            tgt > 90 00
            tgt < \(Self.externalAuthenticate)
            tgt > 90 00

            """.write(toFile: terminal, atomically: true, encoding: .utf8)
        var outputs: [(String, String)] = []
        for json in [false, true] {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTerminal(transcript: "\(terminal)", id: "pin-terminal"))
            let record = dir + "/emulate-\(json ? "json" : "text").trn"
            let result = try await runTool(
                ["emulate", "--credential", credential, "--yes", "--record", record, "--reader", desk.names[0]] + (json ? ["--json"] : []),
                on: desk)
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            #expect(try desk.control(.terminalResult(peer: "pin-terminal", waitMilliseconds: 5000))["result"] == "passed")
            outputs.append(("emulate \(json) stdout", result.out))
            outputs.append(("emulate \(json) stderr", result.err))
            if !json {
                #expect(result.out.contains("  terminal > 00 20 00 81 08 [REDACTED 8]\n"), "\(result.out)")
            }
            let text = try String(contentsOfFile: record, encoding: .utf8)
            #expect(text.contains("tgt < 00 20 00 81 08 [REDACTED 8]"), "\(text)")
            #expect(text.contains("< D5 87 00 00 20 00 81 08 [REDACTED 8] 90 00"), "the TgGetData answer: \(text)")
        }
        var leaks: [String] = []
        for (what, text) in outputs { leaks += Self.leaks(in: text, what: what) }
        for (path, text) in try Self.files(in: dir).filter({ $0.key.hasSuffix(".trn") }) { leaks += Self.leaks(in: text, what: path) }
        #expect(leaks.isEmpty, "\(leaks)")
    }
}
