import Foundation
import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// A fresh directory under /tmp for one test's files.
func scratchDirectory(_ name: String) throws -> String {
    let path = NSTemporaryDirectory() + "secbridge-cli-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func repositoryFile(_ relative: String) -> String {
    URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(relative).path
}

/// A console that counts the writes to standard output (each one a write(2) on the real console).
final class WriteCountingConsole: Console, @unchecked Sendable {
    let captured = CapturingConsole()
    private(set) var writes = 0
    func out(_ text: String) { writes += 1; captured.out(text) }
    func err(_ text: String) { captured.err(text) }
    func readLine() -> String? { nil }
}

@Suite struct TranscriptCommandTests {
    @Test(arguments: [[], ["--json"]])
    func showWritesThroughOneBufferNotOnceALine(_ flags: [String]) throws {
        // 3 000 exchanges: about 450 KiB of text shown, 64 KiB a write, instead of 3 a line.
        let dir = try scratchDirectory("show")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var text = "# secbridge-transcript: 1\n"
        for n in 0..<3_000 { text += "> 00 B0 \(String(format: "%02X %02X", n >> 8, n & 255)) 10\n< 6A 82\n" }
        try text.write(toFile: dir + "/t.trn", atomically: true, encoding: .utf8)
        let console = WriteCountingConsole()
        #expect(SecbridgeTools.main(arguments: ["transcript", "show"] + flags + [dir + "/t.trn"], console: console) == 0)
        let shown = console.captured.standardOutput
        #expect(shown == run(["transcript", "show"] + flags + [dir + "/t.trn"]).out)
        #expect(shown.utf8.count > 200_000)
        // Each write but the last takes at least 64 KiB.
        #expect(console.writes >= 1 && console.writes <= shown.utf8.count / (64 << 10) + 1)
    }

    @Test func importSpyWritesTheTranscriptAndRefusesToReplaceIt() throws {
        let dir = try scratchDirectory("import")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = dir + "/nfc.trn"
        let log = repositoryFile("Fixtures/spy/nfc-list.log")
        let first = run(["transcript", "import-spy", log, "-o", out])
        #expect(first.status == 0)
        #expect(first.out == "wrote \(out): 60 exchanges, 2 events\n")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(text.hasPrefix("# secbridge-transcript: 1\n# tool: secbridge \(SecbridgeCLI.version) import-spy\n# origin: imported\n"))
        let again = run(["transcript", "import-spy", log, "-o", out])
        #expect(again.status == 1)
        #expect(again.err == "secbridge: error: '\(out)' exists: choose another name, or give --force to replace it\n")
        #expect(run(["transcript", "import-spy", "--force", "--json", log, "-o", out]).out.contains("\"exchanges\": 60"))
    }

    @Test func unreadableLogNamesItsLineAndWritesNothing() throws {
        let dir = try scratchDirectory("bad")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = dir + "/spy.log"
        try "SCardCancel\n i hCard: 0x1\n => SCARD_S_SUCCESS [0x1]  [0.000001]\n".write(toFile: log, atomically: true, encoding: .utf8)
        let result = run(["transcript", "import-spy", log, "-o", dir + "/out.trn"])
        #expect(result.status == 1)
        #expect(result.err.hasPrefix("secbridge: error: \(log):3: '0x1' is not an eight-digit return code"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["spy.log"], "no partial or temporary file")
    }

    /// An empty log and a log cut inside a call (issue 33): refused, naming the file and what is
    /// wrong (for the cut log, the line where it ends and the call it cuts), exit 1, and no
    /// transcript (nor a temporary file) written.
    @Test func anEmptyOrCutLogIsRefusedAndWritesNothing() throws {
        let dir = try scratchDirectory("cut")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let empty = dir + "/empty.log", cut = dir + "/cut.log"
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        let none = run(["transcript", "import-spy", empty, "-o", dir + "/empty.trn"])
        #expect(none.status == 1)
        #expect(none.err.hasPrefix("secbridge: error: \(empty): the log is empty (0 bytes): no pcsc-spy function block found"), "\(none.err)")
        // nfc-list.log's first 31 lines: its first SCarControl (lines 25–34) has its command and
        // the length of its answer, not the answer's bytes nor its result line.
        let lines = try String(contentsOfFile: repositoryFile("Fixtures/spy/nfc-list.log"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines[24] == "SCarControl" && lines[33].hasPrefix(" => Command successful."))
        try (lines[0..<31].joined(separator: "\n") + "\n").write(toFile: cut, atomically: true, encoding: .utf8)
        let short = run(["transcript", "import-spy", cut, "-o", dir + "/cut.trn"])
        #expect(short.status == 1)
        #expect(short.err == "secbridge: error: \(cut):31: the log is cut: it ends at line 31 inside SCarControl (begun at line 25), before that call's result line (=>); give the whole log (pcsc-spy's output once the program ended); nothing was written\n", "\(short.err)")
        // The same log cut inside a line (no line feed at its end) is cut as well.
        let bytes = Array(try String(contentsOfFile: cut, encoding: .utf8).utf8)
        try Data(bytes.dropLast(12)).write(to: URL(fileURLWithPath: cut))
        let torn = run(["transcript", "import-spy", cut, "-o", dir + "/cut.trn"])
        #expect(torn.status == 1)
        #expect(torn.err.contains(":31: the log is cut: it ends at line 31 inside SCarControl (begun at line 25)"), "\(torn.err)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["cut.log", "empty.log"], "no transcript or temporary file")
    }

    @Test func usageErrors() {
        let noOutput = run(["transcript", "import-spy", "spy.log"])
        #expect(noOutput.status == 64)
        #expect(noOutput.err.hasPrefix("secbridge: error: give the file to write with -o FILE\nUSAGE: secbridge transcript import-spy"))
        #expect(run(["transcript", "diff", "a.trn"]).status == 64)
        #expect(run(["capture", "-o", "x.trn"]).err.hasPrefix("secbridge: error: give the program to run after --"))
        #expect(run(["transcript"]).status == 64)
    }

    @Test func showDecodesFramesAndStatusWords() {
        let result = run(["transcript", "show", repositoryFile("Fixtures/imported/nfc-list.trn")])
        #expect(result.status == 0)
        #expect(result.out.contains("+419us ctl 0x42000001 > FF 00 48 00 00\n        ACR122U: get firmware version\n"))
        #expect(result.out.contains("\n        firmware \"ACR122U207\"\n"))
        #expect(result.out.contains("ctl 0x42000001 > FF 00 00 00 02 D4 02\n        ACR122U direct transmit: PN532 GetFirmwareVersion\n"))
        #expect(result.out.contains("        reader: SW 90 00: normal processing, no further qualification\n"))
    }

    @Test func showJSONKeepsTheFirmwareStringWhole() {
        // nfc-list.trn line 13: FF 00 48 00 00 answered by "ACR122U207" alone, no status word.
        let result = run(["transcript", "show", "--json", repositoryFile("Fixtures/imported/nfc-list.trn")])
        #expect(result.status == 0)
        #expect(result.out.contains(#""hex": "41435231323255323037",\#n    "controlCode": "0x42000001",\#n    "note": null,\#n    "meaning": [\#n      "firmware \"ACR122U207\""\#n    ]"#))
        #expect(!result.out.contains("SW 30 37"))
    }

    @Test func showNamesTheFCPOfASelect() throws {
        let dir = try scratchDirectory("fcp")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/select-mf.trn"
        // SELECT of the MF by file identifier, answered with its FCP: a shareable DF, FID 3F 00,
        // operational activated, security attributes in expanded-format reference 8B.
        try """
            # secbridge-transcript: 1
            # origin: recorded

            +1.000ms > 00 A4 00 04 02 3F 00 00
            +2.000ms < 62 10 82 02 78 21 83 02 3F 00 8A 01 05 8B 03 2F 06 01 90 00

            """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = run(["transcript", "show", file])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("""
                    SW 90 00: normal processing, no further qualification
                    62 (16 bytes) — FCP template (file control parameters)
                      82 (2 bytes): 78 21 — file descriptor: shareable, DF; data coding byte 21
                      83 (2 bytes): 3F 00 — file identifier (the MF)
                      8A (1 byte): 05 — life cycle status: 05 (operational state, activated)
                      8B (3 bytes): 2F 06 01 — security attributes (referencing the expanded format)

            """), "\(result.out)")
    }

    @Test func showJSONHasUppercaseHexWithoutSpaces() {
        let result = run(["transcript", "show", "--json", repositoryFile("Fixtures/imported/two-threads.trn")])
        #expect(result.status == 0)
        #expect(result.out.contains("\"hex\": \"0084000008\""))
        #expect(result.out.contains("\"channel\": \"h1\""))
        #expect(result.out.contains("\"SW 6A 82: file or application not found\""))
    }

    @Test func showHTMLIsOneSelfContainedPage() throws {
        let dir = try scratchDirectory("html")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let page = dir + "/s.html"
        let result = run(["transcript", "show", "--html", page, repositoryFile("Fixtures/imported/two-threads.trn")])
        #expect(result.status == 0)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(!html.contains("<script") && !html.contains("http"), "nothing loaded from elsewhere")
        #expect(html.contains("<div>terminal</div><div>reader</div><div>host</div><div>secure element</div>"))
        #expect(html.contains("@h1 &gt; 00 84 00 00 08"))
    }

    @Test func diffExitStatusSaysWhetherTranscriptsDiffer() {
        let a = repositoryFile("Fixtures/imported/two-threads.trn")
        let same = run(["transcript", "diff", a, a])
        #expect(same.status == 0)
        let different = run(["transcript", "diff", "--json", a, repositoryFile("Fixtures/imported/nfc-list.trn")])
        #expect(different.status == 1)
        #expect(different.out.contains("\"equal\": false"))
    }

    @Test func redactMasksTheVerifyPIN() throws {
        let dir = try scratchDirectory("redact")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = dir + "/r.trn"
        let result = run(["transcript", "redact", repositoryFile("Fixtures/imported/two-threads.trn"), "-o", out])
        #expect(result.out == "wrote \(out): 2 lines redacted\n")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(text.contains("@h1 > 00 20 00 81 06 [REDACTED 6]\n"))
        #expect(!text.contains("31 32 33 34 35 36"))
    }

    @Test func statsCountsAndTimes() {
        let result = run(["transcript", "stats", "--json", repositoryFile("Fixtures/imported/two-threads.trn")])
        #expect(result.status == 0)
        #expect(result.out.contains("\"transmit\": 6"))
        #expect(result.out.contains("\"6A82\": 1"))
        #expect(result.out.contains("\"min\": 41826"))
    }
}
