import Foundation
import PCSCSandbox
import Testing

/// True when OpenSC's opensc-tool is installed (package opensc, scripts/install-deps.sh).
let openscInstalled = FileManager.default.isExecutableFile(atPath: "/usr/bin/opensc-tool")

/// `secbridge serve` as the card in Debian's vpcd (package vsmartcard-vpcd), in a pcscd of its own
/// (docs/vpcd-protocol.md): pcsc_scan sees it, `secbridge read` and opensc-tool read it, it comes
/// back after pcscd restarts, and SIGTERM ends it cleanly with the transcript written.
///
/// Real-time check: pcscd's own start and restart, its ~400 ms presence poll that finds the card
/// and serve's reconnect back-off take wall-clock time (a few seconds in all).
@Suite(.serialized, .needsPrivatePCSCD) struct ServeTests {
    static let credential = "Fixtures/credentials/uri-tag.json"

    func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "secbridge-serve-test-\(getpid())"
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// pcsc_scan's view of `reader` once it shows a card, asked until it does (15 s in all: each
    /// pcsc_scan may take what is left of that, so a slow one on a loaded machine is no failure).
    func cardShown(in reader: String, environment: [String: String]) async throws -> ReaderStatus? {
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            let left = deadline - ContinuousClock.now
            let status = try await blocking { try PCSCScan.status(environment: environment, timeout: left) }
            if let shown = status.first(where: { $0.name == reader && $0.isCardPresent }) { return shown }
            try await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    @Test func servesTheCredentialThroughVpcd() async throws {
        try requireBuiltBinaries()  // a pcscd of its own: the shared one is not needed
        let port = try FreePort.pick()
        let pcscd = try PrivatePCSCD(readers: [.vpcd(port: port)])
        defer { pcscd.stop() }
        _ = try await blocking { try pcscd.start() }
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let record = dir + "/serve.trn"
        var environment = ProcessInfo.processInfo.environment.merging(pcscd.environment) { $1 }
        environment["HOME"] = dir  // opensc-tool keeps a cache in HOME
        let serve = try BinaryProcess(
            ["serve", "--credential", Self.credential, "--port", String(port), "--record", record], environment: environment)
        defer { serve.stop() }
        var at = try await serve.wait(for: "connected to vpcd at localhost:\(port)")
        #expect(serve.output.first == "serving credential 'example-uri-tag' (host applets (NFC Forum Type 4 Tag)) as ATR 3B 80 80 01 01")

        // pcsc_scan lists the card in "Virtual PCD 00 00" with PC/SC part 3's contactless ATR.
        let shown = try await cardShown(in: "Virtual PCD 00 00", environment: environment)
        #expect(shown?.atr == [0x3B, 0x80, 0x80, 0x01, 0x01], "\(pcscd.logTail())")

        // `secbridge read` reads the NDEF message through vpcd: the credential's URI.
        let read = try await runBinary(["read", "--reader", "Virtual PCD 00 00", "--json"], environment: environment, timeout: .seconds(30))
        #expect(read.status == 0, "\(read.err)")
        #expect(read.out.contains("https://example.com"), "\(read.out)")

        // opensc-tool (which loads libpcsclite with dlopen) reads the NDEF message too, with the
        // Type 4 Tag read sequence (docs/iso14443-t4t-ndef.md §4): SELECT the NDEF application,
        // SELECT the NDEF file E104, READ BINARY its length and then the 16-byte message.
        if openscInstalled {
            let apdus = ["00A4040007D276000085010100", "00A4000C02E104", "00B0000002", "00B0000210"]
            let opensc = try await runProgram(
                URL(fileURLWithPath: "/usr/bin/opensc-tool"), ["--reader", "0"] + apdus.flatMap { ["--send-apdu", $0] }, environment: environment)
            #expect(opensc.status == 0, "\(opensc.err)")
            #expect(opensc.out.contains("Received (SW1=0x90, SW2=0x00)"), "\(opensc.out)")
            // The URI record: D1 01 0C 55, prefix 04 (https://), "example.com".
            #expect(opensc.out.contains("D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D"), "\(opensc.out)")
        }

        // pcscd restarts: serve notices vpcd going away, connects again, and the card is back.
        _ = try await blocking { try pcscd.restart() }
        at = try await serve.wait(for: "went away", after: at)
        at = try await serve.wait(for: "connected to vpcd at localhost:\(port)", after: at)
        #expect(try await cardShown(in: "Virtual PCD 00 00", environment: environment) != nil)

        // SIGTERM: a clean stop, exit status 0, the count said.
        serve.process.terminate()
        try await serve.exit(after: "SIGTERM")
        #expect(serve.process.terminationStatus == 0, "\(serve.standardError)")
        _ = try await serve.wait(for: "stopped after", after: at)

        // The transcript holds the exchanges as an emulated card's: the terminal's C-APDUs (tgt <)
        // and the credential's answers (tgt >).
        let text = try String(contentsOfFile: record, encoding: .utf8)
        #expect(text.contains("# tool: secbridge 0.1.0 serve\n"))
        #expect(text.contains("# atr: 3B 80 80 01 01\n"))
        #expect(text.contains("event connected vpcd=\"localhost:\(port)\""))
        #expect(text.contains(" tgt < 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n"))
        #expect(text.contains(" tgt > 90 00\n"))
        #expect(text.contains("event disconnected"))
        _ = try await blocking { pcscd.stop() }
    }

    /// Issue 33 item 5: a second serve on a vpcd port whose slot has its card. vpcd takes the
    /// connection into its backlog and never talks to it; serve says so and exits 1, where it
    /// said `connected … the card is in its reader` before. The first serve keeps serving.
    ///
    /// Real-time check: the second serve's 5 s wait for vpcd's first message is the bound itself.
    @Test func aSecondServeOnTheSamePortSaysTheSlotIsHeld() async throws {
        try requireBuiltBinaries()  // a pcscd of its own: the shared one is not needed
        let port = try FreePort.pick()
        let pcscd = try PrivatePCSCD(readers: [.vpcd(port: port)])
        defer { pcscd.stop() }
        _ = try await blocking { try pcscd.start() }
        let environment = ProcessInfo.processInfo.environment.merging(pcscd.environment) { $1 }
        let first = try BinaryProcess(["serve", "--credential", Self.credential, "--port", String(port)], environment: environment)
        defer { first.stop() }
        _ = try await first.wait(for: "connected to vpcd at localhost:\(port)")

        // --slot-wait 1: vpcd's silence is real time (its presence poll), so the test spends 1 s on it, not 5.
        let second = try await runBinary(
            ["serve", "--credential", Self.credential, "--port", String(port), "--slot-wait", "1"], environment: environment, timeout: .seconds(30))
        #expect(second.status == 1, "\(second.err)")
        #expect(!second.out.contains("connected"), "\(second.out)")
        #expect(second.err.contains(
            "secbridge: error: vpcd at localhost:\(port) took the connection but sent nothing within 1 s: another program is already the card in that slot"),
            "\(second.err)")
        #expect(second.err.contains("or serve another slot with --port (vpcd's next slot listens on \(port + 1))"), "\(second.err)")

        // The first serve is still the card.
        let read = try await runBinary(["read", "--reader", "Virtual PCD 00 00", "--json"], environment: environment, timeout: .seconds(30))
        #expect(read.status == 0, "\(read.err)")
        #expect(read.out.contains("https://example.com"), "\(read.out)")
        _ = try await blocking { first.stop(); pcscd.stop() }
    }

    @Test func waitsForVpcdAndStopsOnSIGINT() async throws {
        try requireBuiltBinaries()
        let port = try FreePort.pick()  // nobody listens there
        let serve = try BinaryProcess(
            ["serve", "--credential", Self.credential, "--port", String(port)], environment: ProcessInfo.processInfo.environment)
        defer { serve.stop() }
        _ = try await serve.wait(for: "serving credential 'example-uri-tag'")
        let deadline = ContinuousClock.now + .seconds(10)
        while !serve.standardError.contains("trying again") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(serve.standardError.contains("secbridge: cannot connect to vpcd at localhost:\(port): Connection refused; trying again until it answers"))
        serve.process.interrupt()
        try await serve.exit(after: "SIGINT")
        #expect(serve.process.terminationStatus == 0)
        _ = try await serve.wait(for: "stopped after 0 commands")
    }

    /// `serve --json`: one JSON line per event, from `serving` to `stopped`.
    @Test func jsonLinesFromServingToStopped() async throws {
        try requireBuiltBinaries()
        let port = try FreePort.pick()  // nobody listens there
        let serve = try BinaryProcess(
            ["serve", "--credential", Self.credential, "--port", String(port), "--json"], environment: ProcessInfo.processInfo.environment)
        defer { serve.stop() }
        _ = try await serve.wait(for: #""event":"serving""#)
        serve.process.interrupt()
        try await serve.exit(after: "SIGINT")
        #expect(serve.process.terminationStatus == 0)
        _ = try await serve.wait(for: #""event":"stopped""#)
        let objects = serve.output.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == serve.output.count, "every line is a JSON object: \(serve.output)")
        #expect(objects.first?["credential"] as? String == "example-uri-tag")
        // PC/SC part 3's contactless ATR with no historical bytes (docs/acr122-pn532.md §3).
        #expect(objects.first?["atr"] as? String == "3B80800101")
        #expect(objects.last?["commands"] as? Int == 0)
    }
}
