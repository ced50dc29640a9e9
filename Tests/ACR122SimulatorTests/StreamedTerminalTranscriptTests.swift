import Foundation
import ISO7816
import Testing
import Transcript

@testable import ACR122Simulator

/// A terminal replaying a transcript file (`ExternalTerminal(transcriptFile:)`, what
/// `place-terminal transcript=` places) sends the commands and checks the answers as the one made
/// from the parsed transcript does, and holds a bounded number of steps however long the file is.
@Suite struct StreamedTerminalTranscriptTests {
    static let header = "# secbridge-transcript: 1\n# origin: simulated\n"

    func write(_ text: String) throws -> String {
        let directory = NSTemporaryDirectory() + "secbridge-terminal-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/t.trn"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    /// Activates `terminal` and answers each command with `answer` (given the 0-based number of
    /// the exchange), at most `limit` commands.
    /// - Returns: the commands it sent.
    func run(_ terminal: ExternalTerminal, limit: Int = 100, answer: (Int) -> [UInt8]) -> [[UInt8]] {
        #expect(terminal.activate(modes: 0x00, sak: 0x20, ats: [0x05, 0x78, 0x80, 0x70, 0x02]) != nil)
        var sent: [[UInt8]] = []
        while sent.count < limit, case .command(let command) = terminal.nextCommand() {
            #expect(terminal.deliver(answer(sent.count)) == 0x00)
            sent.append(command)
        }
        return sent
    }

    /// What a terminal made from a file and one made from the parsed file do: the same error when
    /// it cannot be made, else the same commands, end and exchange count, answered by `answer`.
    /// - Returns: the number of commands sent, nil when no terminal was made.
    @discardableResult
    func expectSame(_ path: String, channel: String? = nil, answer: (Int) -> [UInt8]) throws -> Int? {
        let memory = Result { try ExternalTerminal(transcript: Transcript(contentsOfFile: path), channel: channel) }
        let file = Result { try ExternalTerminal(transcriptFile: .init(contentsOfFile: path, channel: channel)) }
        switch (memory, file) {
        case (.success(let a), .success(let b)):
            let sent = run(a, answer: answer)
            #expect(sent == run(b, answer: answer), "\(path) \(channel ?? "")")
            #expect(a.result == b.result && a.exchangeCount == b.exchangeCount, "\(path) \(channel ?? "")")
            #expect(a.name == b.name && b.script == nil)
            return sent.count
        case (.failure(let a), .failure(let b)):
            #expect("\(a)" == "\(b)", "\(path) \(channel ?? "")")
        default:
            Issue.record("\(path) \(channel ?? ""): one was made, the other not: \(memory), \(file)")
        }
        return nil
    }

    /// The recorded flows with terminal commands, on every channel and on each, answered as
    /// recorded (SW 90 00 when nothing was recorded) and then answered 6A 82: the same commands,
    /// results and errors.
    @Test(arguments: ["emulate-worked-example", "demo", "read-pcsc-t4t", "android-t4t-read-uri"])
    func aFileTerminalPlaysAsTheInMemoryOne(_ name: String) throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/flows/\(name).trn").path
        let transcript = try Transcript(contentsOfFile: path)
        let channels = Set(transcript.lines.compactMap { $0.record?.channel })
        let all: [String?] = [nil] + channels.sorted().map(Optional.some)
        var played = 0
        for channel in all {
            let steps = (try? ExternalTerminal(transcript: transcript, channel: channel))?.script?.steps ?? []
            played += try expectSame(path, channel: channel) { n in
                guard n < steps.count, let answer = steps[n].expectedResponse?.bytes else { return [0x90, 0x00] }
                return answer
            } ?? 0
            try expectSame(path, channel: channel) { _ in [0x6A, 0x82] }
        }
        #expect(played > 0, "no channel of \(name) made a terminal")
    }

    /// The pairing's corners: a command the next command follows (any answer accepted), a failure
    /// in place of an answer (passed over), a file whose `tgt` lines are on another channel than
    /// its `>` lines, a pseudo-APDU (sent: the terminal plays what was recorded), channels whose
    /// exchanges interleave, a command with wildcard or redacted bytes, and no command at all.
    static let corners = [
        "tgt < 00 A4 04 00 02 E1 03\ntgt < 00 B0 00 00 02\ntgt > 00 10 90 00\ntgt < 00 B0 00 02 02\n",
        "> 00 B0 00 00 02\n! SCARD_W_REMOVED_CARD 0x80100069\n> 00 B0 00 00 04\n< 00 10 90 00\n",
        "@b tgt < 00 A4 04 00 02 E1 03\n@b tgt > 90 00\n@a > 00 B0 00 00 02\n@a < 00 10 90 00\n@a > FF CA 00 00 00\n@a < 04 A1 B2 C3 90 00\n",
        "@a tgt < 00 B0 00 00 02\n@b tgt < 00 A4 00 0C 02 E1 03\n@b tgt > 6A 82\n@a tgt > 00 10 90 00\n",
        "> 00 B0 00 00 02\n< 00 10 90 00\n> 00 20 00 81 08 ?? ?? ?? ?? ?? ?? ?? ??\n< 90 00\n",
        "tgt < 00 A4 04 00 02 E1 03\ntgt > 90 00\ntgt < 00 20 00 81 08 [REDACTED 8]\ntgt > 90 00\n",
        "; nothing for a terminal\n@a ctl 0x42000001 > FF 00 48 00 00\n@a ctl 0x42000001 < 41 43 52 90 00\n",
    ]

    /// The steps (command → expected answer, `*` for any) or the error of the transcript terminal
    /// made from each corner, on every channel, then on @a and on @b: what the terminal made from
    /// the parsed transcript did before it could read a file as it goes.
    @Test func theCornersOfThePairing() throws {
        let none = "holds no `tgt <` nor `>` command to send"
        let expected: [[String]] = [
            ["00 A4 04 00 02 E1 03 → *; 00 B0 00 00 02 → 00 10 90 00; 00 B0 00 02 02 → *", none, none],
            ["00 B0 00 00 02 → *; 00 B0 00 00 04 → 00 10 90 00", none, none],
            ["00 A4 04 00 02 E1 03 → 90 00", "00 B0 00 00 02 → 00 10 90 00; FF CA 00 00 00 → 04 A1 B2 C3 90 00", "00 A4 04 00 02 E1 03 → 90 00"],
            ["00 B0 00 00 02 → *; 00 A4 00 0C 02 E1 03 → 6A 82", "00 B0 00 00 02 → 00 10 90 00", "00 A4 00 0C 02 E1 03 → 6A 82"],
            ["the command 00 20 00 81 08 ?? ?? ?? ?? ?? ?? ?? ?? has wildcard or redacted bytes; a terminal must send concrete bytes", none, none],
            ["the command 00 20 00 81 08 [REDACTED 8] has wildcard or redacted bytes; a terminal must send concrete bytes", none, none],
            [none, none, none],
        ]
        for (text, outcomes) in zip(Self.corners, expected) {
            let transcript = try Transcript(parsing: Self.header + text, fileName: "/corner.trn")
            for (channel, outcome) in zip([nil, "a", "b"], outcomes) {
                do {
                    let steps = try #require(try ExternalTerminal(transcript: transcript, channel: channel).script?.steps)
                    let described = steps.map { "\($0.command.hexString) → \($0.expectedResponse?.description ?? "*")" }
                    #expect(described.joined(separator: "; ") == outcome, "\(text) \(channel ?? "")")
                } catch {
                    #expect("\(error)".hasPrefix("/corner.trn") && "\(error)".hasSuffix(outcome), "\(text) \(channel ?? ""): \(error)")
                }
            }
        }
    }

    /// The corners, from a file and parsed: the same steps and errors.
    @Test func theCornersOfThePairingAreTheInMemoryOnes() throws {
        for text in Self.corners {
            let path = try write(Self.header + text)
            for channel in [nil, "a", "b"] {
                try expectSame(path, channel: channel) { _ in [0x00, 0x10, 0x90, 0x00] }
                try expectSame(path, channel: channel) { _ in [0x6A, 0x82] }
            }
        }
    }

    /// 20 000 exchanges: every command sent and answered as recorded, the terminal passed, and it
    /// never held more than the step it was at; a wrong answer at exchange 15 000 is the mismatch
    /// the in-memory terminal reports. With no answers recorded it holds that step and the next
    /// command. (The terminal made from the parsed file held all 20 000 steps.)
    @Test func aLongTranscriptIsReadAsTheTerminalGoes() throws {
        func command(_ n: Int) -> [UInt8] { [0x00, 0xB0, UInt8(n >> 8), UInt8(n & 0xFF), 0x02] }
        func answer(_ n: Int) -> [UInt8] { [UInt8(n >> 8), UInt8(n & 0xFF), 0x90, 0x00] }
        var text = Self.header, unanswered = Self.header
        for n in 0..<20_000 {
            text += "tgt < \(command(n).hexString)\ntgt > \(answer(n).hexString)\n"
            unanswered += "tgt < \(command(n).hexString)\n"
        }
        let path = try write(text)
        let terminal = try ExternalTerminal(transcriptFile: .init(contentsOfFile: path))
        let sent = run(terminal, limit: 30_000, answer: answer)
        #expect(sent.count == 20_000 && sent.last == command(19_999))
        #expect(terminal.result == .passed && terminal.exchangeCount == 20_000)
        #expect(terminal.transcriptStepsHeld == 1)

        let wrong = try ExternalTerminal(transcriptFile: .init(contentsOfFile: path))
        let inMemory = try ExternalTerminal(transcript: Transcript(contentsOfFile: path))
        for t in [wrong, inMemory] {
            _ = run(t, limit: 30_000) { n in n == 15_000 ? [0x6A, 0x82] : answer(n) }
        }
        #expect(wrong.result == .mismatch(step: 15_000, expected: "3A 98 90 00", actual: [0x6A, 0x82]))
        #expect(wrong.result == inMemory.result && wrong.exchangeCount == 15_001)
        #expect(inMemory.script?.steps.count == 20_000)

        let open = try ExternalTerminal(transcriptFile: .init(contentsOfFile: try write(unanswered)))
        #expect(run(open, limit: 30_000) { _ in [0x6A, 0x82] }.count == 20_000)
        #expect(open.result == .passed && open.transcriptStepsHeld == 2)
    }

    /// A file changed after the terminal was placed so that it reads without error but holds fewer
    /// commands (cut at the end of a line) or more (appended) ends the run as failed, naming both
    /// counts: never `passed` after part of the checked commands.
    @Test func aFileWithAnotherCountOfCommandsSincePlacingFails() throws {
        let steps = ["tgt < 00 A4 04 00 02 E1 03\ntgt > 90 00\n", "tgt < 00 B0 00 00 02\ntgt > 00 10 90 00\n",
                     "tgt < 00 B0 00 02 10\ntgt > 90 00\n"]
        let path = try write(Self.header + steps.joined())
        let answers: [[UInt8]] = [[0x90, 0x00], [0x00, 0x10, 0x90, 0x00], [0x90, 0x00], [0x90, 0x00]]

        let shortened = try ExternalTerminal(transcriptFile: .init(contentsOfFile: path))
        try (Self.header + steps[0]).write(toFile: path, atomically: false, encoding: .utf8)
        #expect(run(shortened) { answers[$0] }.count == 1)
        guard case .failed(_, let stage, let reason) = shortened.result else {
            Issue.record("a file cut short after placing: \(shortened.result)")
            return
        }
        #expect(stage == "reading \(path)")
        #expect(reason == "\(path) held 3 terminal commands when it was checked and now 1: was the file changed after the terminal was placed? Place it again")

        try (Self.header + steps.joined()).write(toFile: path, atomically: false, encoding: .utf8)
        let lengthened = try ExternalTerminal(transcriptFile: .init(contentsOfFile: path))
        try (Self.header + steps.joined() + steps[2]).write(toFile: path, atomically: false, encoding: .utf8)
        #expect(run(lengthened) { answers[$0] }.count == 3)
        guard case .failed(let step, _, let more) = lengthened.result else {
            Issue.record("a file lengthened after placing: \(lengthened.result)")
            return
        }
        #expect(step == 2 && more.hasSuffix("held 3 terminal commands when it was checked and now more: was the file changed after the terminal was placed? Place it again"))

        // Unchanged, it passes, at every activation.
        try (Self.header + steps.joined()).write(toFile: path, atomically: false, encoding: .utf8)
        let unchanged = try ExternalTerminal(transcriptFile: .init(contentsOfFile: path))
        #expect(run(unchanged) { answers[$0] }.count == 3)
        #expect(unchanged.result == .passed && unchanged.exchangeCount == 3)
    }

    /// The file is checked when the terminal is made: its errors name the path and line then, and
    /// the check keeps counts, not exchanges.
    @Test func theFileIsCheckedWhenTheTerminalIsMade() throws {
        let path = try write(Self.header + "tgt < 00 A4 04 00 02 E1 03\ntgt > 90 00\ntgt < 00 B0 00 00 0\n")
        #expect(throws: TranscriptParseError.self) { try ExternalTerminal.TranscriptFile(contentsOfFile: path) }
        let good = try write(Self.header + "tgt < 00 A4 04 00 02 E1 03\ntgt > 90 00\n> 00 B0 00 00 02\n")
        let file = try ExternalTerminal.TranscriptFile(contentsOfFile: good)
        #expect(file.commandCount == 1 && file.channel == nil)
    }
}
