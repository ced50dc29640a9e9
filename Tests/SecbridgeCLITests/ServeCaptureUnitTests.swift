import Foundation
import ISO7816
import SecbridgeCLI
import SecbridgeTesting
import SecureElementCredential
import Testing
import Transcript

@testable import SecbridgeTools

#if canImport(Glibc)
import Glibc
#endif

/// vsmartcard's vpcd protocol as `serve` speaks it (docs/vpcd-protocol.md §2), against a stand-in
/// vpcd on a loopback socket in this process: no pcscd.
@Suite struct VPCDProtocolTests {
    @Test func oneBytePayloadsAreControlMessagesAndLongerOnesAPDUs() {
        #expect(VPCDMessage(payload: [0x00]) == .powerOff)
        #expect(VPCDMessage(payload: [0x01]) == .powerOn)
        #expect(VPCDMessage(payload: [0x02]) == .reset)
        #expect(VPCDMessage(payload: [0x04]) == .atrRequest)
        #expect(VPCDMessage(payload: [0x03]) == .unknownControl(0x03))
        #expect(VPCDMessage(payload: []) == nil)
        #expect(VPCDMessage(payload: [0x00, 0xA4]) == .commandAPDU([0x00, 0xA4]))
    }

    @Test func framesCarryATwoByteBigEndianLength() throws {
        #expect(try VPCDMessage.frame([0x3B, 0x80, 0x80, 0x01, 0x01]) == [0x00, 0x05, 0x3B, 0x80, 0x80, 0x01, 0x01])
        #expect(try VPCDMessage.frame([UInt8](repeating: 0, count: 0xFFFF)).prefix(2) == [0xFF, 0xFF])
        #expect(throws: CLIError.self) { try VPCDMessage.frame([]) }
        #expect(throws: CLIError.self) { try VPCDMessage.frame([UInt8](repeating: 0, count: 0x10000)) }
    }

    static func uriTag() throws -> Credential {
        try CredentialFile(json: Array("""
            { "secbridge-credential": 1, "id": "t", "name": "t",
              "applets": [ { "type": "ndef-tag", "readOnly": true, "records": [ { "uri": "https://example.com" } ] } ] }
            """.utf8)).makeCredential()
    }

    /// A TCP socket listening on 127.0.0.1 at a port the system chose, and that port: where a
    /// stand-in vpcd waits for serve.
    static func loopbackListener() throws -> (Int32, UInt16) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        guard listener >= 0, bound == 0, listen(listener, 1) == 0 else {
            close(listener)
            throw CLIError.failure("cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
        }
        return (listener, UInt16(bigEndian: address.sin_port))
    }

    /// PC/SC part 3 §3.1.3.2.3 with no historical bytes (docs/acr122-pn532.md §3), or --atr.
    @Test func theDefaultATRIsPCSCPart3sContactlessOne() throws {
        let credential = try Self.uriTag()
        #expect(try SecbridgeCLI.serveATR(nil, credential: credential).bytes == [0x3B, 0x80, 0x80, 0x01, 0x01])
        #expect(try SecbridgeCLI.serveATR("3B 81 80 01 80 80", credential: credential).bytes == [0x3B, 0x81, 0x80, 0x01, 0x80, 0x80])
        #expect(throws: CLIError.self) { try SecbridgeCLI.serveATR("3B 81", credential: credential) }
    }

    /// Power on, ATR request, the NDEF application's SELECT and power off from a stand-in vpcd
    /// on loopback, served by the serve loop with `recorder`: how it ended, the commands served,
    /// and the bytes vpcd got back.
    static func serveAStandInVpcd(recorder: TranscriptRecorder?) async throws -> (VPCDLinkEnd, Int, [UInt8]) {
        // Sockets and the serve loop block: a thread of their own, never Swift's shared pool.
        try await onOwnThread { () throws -> (VPCDLinkEnd, Int, [UInt8]) in
            let (listener, port) = try Self.loopbackListener()
            defer { close(listener) }
            var stop: [Int32] = [-1, -1]
            _ = pipe(&stop)
            defer { close(stop[0]); close(stop[1]) }
            let credential = try Self.uriTag()
            let link = try VPCDLink(host: "127.0.0.1", port: port, stop: stop[0])
            let vpcd = accept(listener, nil, nil)
            defer { close(vpcd) }
            func send(_ payload: [UInt8]) {
                let framed = [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
                _ = framed.withUnsafeBytes { Glibc.send(vpcd, $0.baseAddress, $0.count, 0) }
            }
            send([0x01])
            send([0x04])
            send([0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00])
            send([0x00])
            shutdown(vpcd, Int32(SHUT_WR))
            var served = 0
            let end = SecbridgeCLI.serveConnection(
                link, atr: [0x3B, 0x80, 0x80, 0x01, 0x01], element: credential.secureElement, recorder: recorder,
                console: CapturingConsole(), served: &served)
            var answers = [UInt8](repeating: 0, count: 64)
            var received = 0
            while received < answers.count {
                let n = answers[received...].withUnsafeMutableBytes { recv(vpcd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n <= 0 { break }
                received += n
            }
            return (end, served, Array(answers[..<received]))
        }
    }

    /// A stand-in vpcd: power on, ATR request, SELECT of the NDEF application, power off, then
    /// the connection closes; serve answers the ATR and the R-APDU only.
    @Test func servesAStandInVpcdOverLoopback() async throws {
        let (end, served, answers) = try await Self.serveAStandInVpcd(recorder: nil)
        #expect(end == .closed("vpcd closed the connection"))
        #expect(served == 1)
        // The ATR (length 5), then 90 00 (length 2): nothing for power on and off.
        #expect(answers == [0x00, 0x05, 0x3B, 0x80, 0x80, 0x01, 0x01, 0x00, 0x02, 0x90, 0x00])
    }

    /// A byte on the stop pipe (what the SIGINT/SIGTERM handler writes) ends a wait for vpcd at once.
    @Test func theStopDescriptorEndsTheWait() throws {
        let (listener, port) = try Self.loopbackListener()
        defer { close(listener) }
        var stop: [Int32] = [-1, -1]
        try #require(pipe(&stop) == 0)
        defer { close(stop[0]); close(stop[1]) }
        let link = try VPCDLink(host: "127.0.0.1", port: port, stop: stop[0])
        var byte: UInt8 = 1
        _ = write(stop[1], &byte, 1)
        #expect(throws: VPCDLinkEnd.stopped) { try link.receive() }
    }

    /// A port whose slot has its card already: the kernel completes the connection into the
    /// listener's backlog, nobody accepts it and nothing comes (what vpcd does to a second card).
    /// The wait ends at its bound with false; a vpcd that asks for the ATR makes it true at once,
    /// with the request still there for `receive()`.
    @Test func aConnectionVpcdNeverTalksToIsToldFromOneItServes() throws {
        let (listener, port) = try Self.loopbackListener()
        defer { close(listener) }
        let silent = try VPCDLink(host: "127.0.0.1", port: port, stop: -1)
        #expect(try silent.awaitFirstMessage(within: .milliseconds(50)) == false)

        let first = accept(listener, nil, nil)  // the silent one: accepted, never written to
        let served = try VPCDLink(host: "127.0.0.1", port: port, stop: -1)
        let second = accept(listener, nil, nil)
        defer { close(second) }
        let request = try VPCDMessage.frame([0x04])
        _ = request.withUnsafeBytes { Glibc.send(second, $0.baseAddress, $0.count, 0) }
        #expect(try served.awaitFirstMessage(within: .seconds(30)) == true)
        #expect(try served.receive() == [0x04])
        // vpcd closing before a word is an end, not silence.
        close(first)
        #expect(throws: VPCDLinkEnd.closed("vpcd closed the connection")) { try silent.awaitFirstMessage(within: .seconds(30)) }
    }

    @Test func theHeldSlotErrorNamesThePortAndWhatToDo() {
        let message = SecbridgeCLI.slotHeldMessage(host: "localhost", port: 35963)
        #expect(message == "vpcd at localhost:35963 took the connection but sent nothing within 5 s: another program is already "
            + "the card in that slot (vpcd talks only to the first card that connects: another `secbridge serve`, vicc, "
            + "Android's Remote Smart Card Reader), or what listens on port 35963 is not vpcd; stop that program, "
            + "or serve another slot with --port (vpcd's next slot listens on 35964)")
        #expect(!SecbridgeCLI.slotHeldMessage(host: "h", port: 65535).contains("next slot"))
        // --slot-wait's value is the one named.
        #expect(SecbridgeCLI.slotHeldMessage(host: "h", port: 1, wait: .milliseconds(1500)).contains("sent nothing within 1.5 s:"))
        #expect(SecbridgeCLI.slotHeldMessage(host: "h", port: 1, wait: .seconds(2)).contains("sent nothing within 2 s:"))
    }
}

/// How capture chooses the spy's way in and recognises its 1.9.9 crash
/// (docs/test-infrastructure.md, "pcsc-spy under any program (secbridge capture)").
@Suite struct CaptureSpyTests {
    @Test func lddOutputDecidesPreloadOrReplacement() {
        // nfc-list (linked through libnfc) and opensc-tool (dlopen) on Debian 12.
        #expect(SpyMode.linksPCSCLite(lddOutput: """
            \tlinux-vdso.so.1 (0x00007ffd)
            \tlibnfc.so.6 => /usr/lib/libnfc.so.6 (0x00007f)
            \tlibpcsclite.so.1 => /lib/x86_64-linux-gnu/libpcsclite.so.1 (0x00007faeb5eff000)
            """))
        #expect(!SpyMode.linksPCSCLite(lddOutput: """
            \tlibopensc.so.8 => /lib/x86_64-linux-gnu/libopensc.so.8 (0x00007f)
            \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)
            """))
        #expect(!SpyMode.linksPCSCLite(lddOutput: "\tnot a dynamic executable\n"))
    }

    func rawLog(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "secbridge-spy-raw-\(getpid())-\(UUID().uuidString.prefix(8))"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The tail of nfc-list's raw log on Debian 12 when the spy crashed: the thread id, `@`, and an
    /// SCardTransmit that never returned (its last argument line has no newline).
    static let crashedLog = """
        7F2F83DC8C80@<|1796138481|322557|SCardConnect|Command successful.|0x00000000
        7F2F83DC8C80@>|1796138481|322561|SCardTransmit
        7F2F83DC8C80@0x42E8469C
        7F2F83DC8C80@0x00000002
        7F2F83DC8C80@FF 00 48 00 00
        """

    @Test func theKnownCrashIsASIGSEGVInsideSCardTransmit() throws {
        let crashed = try rawLog(Self.crashedLog)
        defer { unlink(crashed) }
        let explanation = try #require(SpyMode.knownSpyCrash(rawLog: crashed, status: 128 + SIGSEGV))
        #expect(explanation("nfc-list").contains("pcsc-lite issue #159, fixed in pcsc-lite 2.0.1"))
        // Another status, or a log where SCardTransmit returned, is something else.
        #expect(SpyMode.knownSpyCrash(rawLog: crashed, status: 1) == nil)
        let returned = try rawLog(Self.crashedLog + "\n7F2F83DC8C80@<|1796138481|322600|SCardTransmit|Command successful.|0x00000000\n")
        defer { unlink(returned) }
        #expect(SpyMode.knownSpyCrash(rawLog: returned, status: 128 + SIGSEGV) == nil)
    }

    @Test func rawLogEntryLinesNameTheirFunction() {
        #expect(SpyMode.lastCallEntered(">|1796138481|322561|SCardTransmit") == "SCardTransmit")
        #expect(SpyMode.lastCallEntered("<|1796138481|322557|SCardConnect|Command successful.|0x00000000") == nil)
    }
}

/// `capture` runs pcsc-spy's viewer with whole-line prints (SpyViewer). A stand-in viewer stages
/// what pcsc-spy's per-thread workers do: thread A's `print` has written its text and waits
/// (at most 2 s) before its line feed, while thread B prints a whole line. Without the wrapper B's
/// line lands inside A's (`A-text B-text`, then an empty line); with it B waits for A's line.
@Suite struct SpyViewerTests {
    static let interleavingViewer = """
        #!/usr/bin/python3
        import sys, threading
        b_printed = threading.Event()
        a_wrote_text = threading.Event()
        class Stream:
            def __init__(self, real): self.real = real
            def write(self, text):
                if text == " i hContext: 0x6BDE4C8A" and threading.current_thread().name == "A":
                    self.real.write(text)
                    a_wrote_text.set()
                    b_printed.wait(2)
                    return len(text)
                if text.startswith(" i hContext: 0x6BDE4C8A\\n") and threading.current_thread().name == "A":
                    a_wrote_text.set()
                    self.real.write(text)
                    return len(text)
                return self.real.write(text)
            def flush(self): self.real.flush()
        sys.stdout = Stream(sys.stdout)
        def a(): print(" i hContext: 0x6BDE4C8A")
        def b():
            a_wrote_text.wait(2)
            print("    SCardCancel")
            b_printed.set()
        threads = [threading.Thread(target=a, name="A"), threading.Thread(target=b, name="B")]
        for t in threads: t.start()
        for t in threads: t.join()
        print(" ".join(sys.argv[1:]))
        """

    /// The command's standard output (bounded: ``runChild(_:_:environment:timeout:)``).
    func run(_ command: [String]) async throws -> String {
        try await runChild(URL(fileURLWithPath: command[0]), Array(command.dropFirst()), timeout: .seconds(20)).out
    }

    @Test func theViewerRunsWithWholeLinePrints() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spy-viewer-\(getpid()).py").path
        try Self.interleavingViewer.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        chmod(path, 0o755)
        let plain = try await run(["/usr/bin/python3", path, "-n", "raw"])
        #expect(plain == " i hContext: 0x6BDE4C8A    SCardCancel\n\n-n raw\n", "the stand-in stages the glued line")
        let command = SpyViewer.commandLine(viewer: path, arguments: ["-n", "raw"])
        #expect(command.first == "/usr/bin/python3" && command[1] == "-c" && Array(command.suffix(3)) == [path, "-n", "raw"])
        #expect(try await run(command) == " i hContext: 0x6BDE4C8A\n    SCardCancel\n-n raw\n")
    }

    @Test func aViewerThatIsNoPythonScriptRunsAsItIs() {
        #expect(SpyViewer.commandLine(viewer: "/bin/true", arguments: ["-n", "raw"]) == ["/bin/true", "-n", "raw"])
        #expect(SpyViewer.commandLine(viewer: "/nonexistent/pcsc-spy", arguments: ["-n"]) == ["/nonexistent/pcsc-spy", "-n"])
    }
}

/// What capture does with the spy's raw log before the viewer reads it, and how it runs the
/// viewer (CaptureSpy.swift: SpyRawLog; CaptureCommand.swift: spawn).
@Suite struct SpyRawLogTests {
    func file(_ bytes: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "secbridge-raw-log-\(getpid())-\(UUID().uuidString.prefix(8))"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func contents(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    @Test func anUnfinishedLastLineIsCutAndCounted() throws {
        let cases: [(String, String, Int)] = [
            ("a@>|1|2|SCardTransmit\na@0x0000", "a@>|1|2|SCardTransmit\n", 8),
            ("a@>|1|2|SCardTransmit\n", "a@>|1|2|SCardTransmit\n", 0),
            ("", "", 0),
            ("a@0x00", "", 6),
        ]
        for (text, kept, cut) in cases {
            let path = try file(Array(text.utf8))
            defer { unlink(path) }
            #expect(try SpyRawLog.cutUnfinishedLastLine(path) == cut, "\(text)")
            #expect(try contents(path) == Array(kept.utf8))
        }
        // A last line longer than the 64 KiB blocks read backwards, after 200 000 bytes of lines.
        let lines = Array(String(repeating: "a@0x00000002\n", count: 200_000 / 13).utf8)
        let path = try file(lines + [UInt8](repeating: 0x41, count: 150_000))
        defer { unlink(path) }
        #expect(try SpyRawLog.cutUnfinishedLastLine(path) == 150_000)
        #expect(try contents(path) == lines)
    }

    @Test func theTailStartsAtALine() throws {
        let path = try file(Array("first line\nsecond\nthird\n".utf8))
        defer { unlink(path) }
        #expect(SpyRawLog.tail(of: path, count: 10) == Array("third\n".utf8), "'second' cut by the window is left out")
        #expect(SpyRawLog.tail(of: path, count: 1_000) == Array("first line\nsecond\nthird\n".utf8))
        #expect(SpyRawLog.tail(of: "/nonexistent/secbridge-raw", count: 10) == nil)
    }

    /// The viewer runs with SIGINT (and SIGTERM, SIGHUP, SIGQUIT) blocked: a Ctrl-C the terminal
    /// sends to the whole foreground group does not stop it half-way. A shell that sends itself
    /// SIGINT dies of it (130) without the block and finishes (0) with it.
    @Test func aProgramSpawnedWithStopSignalsBlockedOutlivesSIGINT() throws {
        let script = ["/bin/sh", "-c", "kill -INT $$; exit 0"]
        let environment = SecbridgeCLI.currentEnvironment()
        #expect(try SecbridgeCLI.spawnAndWait(script, environment: environment, standardOutput: nil) == 128 + SIGINT)
        #expect(try SecbridgeCLI.spawnAndWait(script, environment: environment, standardOutput: nil, blockingStopSignals: true) == 0)
    }
}
