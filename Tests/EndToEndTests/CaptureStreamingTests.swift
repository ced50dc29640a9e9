import Foundation
import Testing

/// `secbridge capture` of a long session, with a stand-in program that writes a raw spy log of
/// thousands of SCardTransmit calls into `$HOME/pcsc-spy` (the file the spy library appends to) and
/// was stopped while the spy wrote a line: no reader or pcscd is needed, and the real pcsc-spy
/// viewer and the streamed import run on it (docs/transcript-diff.md, "§7").
@Suite(.enabled(if: spyInstalled, "pcsc-spy is not installed (package libpcsclite-dev)"))
struct CaptureStreamingTests {
    /// The raw log: thread id, `@`, then `>|sec|usec|Function`, one parameter per line, and
    /// `<|sec|usec|Function|text|code` (pcsc-lite 1.9.9's libpcscspy, read by its pcsc-spy).
    static func rawLog(transmits: Int, unfinished: String) -> String {
        let thread = "7F2F83DC8C80@"
        var text = ""
        var usec = 0
        func call(_ name: String, _ parameters: [String]) {
            text += "\(thread)>|1796138481|\(usec)|\(name)\n"
            for p in parameters { text += thread + p + "\n" }
            usec += 120
            text += "\(thread)<|1796138481|\(usec)|\(name)|Command successful.|0x00000000\n"
            usec += 30
        }
        call("SCardEstablishContext", ["0x00000000", "0x39A134E4"])
        call("SCardConnect", ["0x39A134E4", "Virtual PCD 00 00", "0x00000002", "0x00000003",
                              "0x00000000", "0x00000000", "0x47B7610D", "0x00000002"])
        for n in 0..<transmits {
            let p1 = String(format: "%02X", (n >> 8) & 0xFF), p2 = String(format: "%02X", n & 0xFF)
            call("SCardTransmit", ["0x47B7610D", "0x00000002", "0x00000010", "0x00000005", "00 B0 \(p1) \(p2) 10",
                                   "0x00000002", "0x00000010", "0x00000004", "\(p1) \(p2) 90 00"])
        }
        // Stopped inside the next call, while the spy wrote its protocol parameter.
        text += "\(thread)>|1796138481|\(usec)|SCardTransmit\n\(thread)0x47B7610D\n" + unfinished
        return text
    }

    @Test func aLongCaptureStoppedMidLineKeepsEveryCompleteCallAndSaysWhatWasCut() async throws {
        let directory = NSTemporaryDirectory() + "secbridge-capture-stream-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let unfinished = "7F2F83DC8C80@0x000000"
        try Self.rawLog(transmits: 3_000, unfinished: unfinished).write(toFile: directory + "/raw", atomically: true, encoding: .utf8)
        // The stand-in program: appends the log where the spy library writes it.
        try "cat \"$1\" >> \"$HOME/pcsc-spy\"\n".write(toFile: directory + "/program.sh", atomically: true, encoding: .utf8)
        let out = directory + "/long.trn"
        let result = try await runBinary(
            ["capture", "-o", out, "--spy-log", directory + "/spy.txt", "--", "/bin/sh", directory + "/program.sh", directory + "/raw"],
            environment: ProcessInfo.processInfo.environment, timeout: .seconds(300))
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("wrote \(out): 3000 exchanges"), "\(result.out)")
        #expect(result.err.contains("note: the spy's log ends inside a line (\(unfinished.utf8.count) bytes after its last line feed"), "\(result.err)")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(text.components(separatedBy: " > 00 B0 ").count == 3_001, "every transmit")
        #expect(text.contains(" > 00 B0 0B B7 10\n") && text.contains(" < 0B B7 90 00\n"), "the last complete call")
        #expect(text.contains("; the log ends inside SCardTransmit"), "the unfinished call is kept")
        let spyText = try String(contentsOfFile: directory + "/spy.txt", encoding: .utf8)
        #expect(spyText.hasPrefix("SCardEstablishContext\n"))
        #expect(spyText.components(separatedBy: "\nSCardTransmit\n").count == 3_002, "the viewer's text, copied whole")
    }
}
