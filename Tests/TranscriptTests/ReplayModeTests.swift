import ISO7816
import Testing

@testable import Transcript

/// The bytes of a `> …` line, `??` and `[REDACTED n]` included.
private func pattern(_ text: String) throws -> TranscriptBytes {
    let transcript = try Transcript(parsing: versionLine + "> " + text + "\n", fileName: "pattern")
    return try #require(transcript.lines.first?.record?.entry.payload)
}

/// Replay modes (strict, ignore-timing, wildcard) and the terminal-side replay.
@Suite("Replay modes")
struct ReplayModeTests {
    /// One answer comparison: the recorded command and answer, an actual answer, and whether each
    /// mode accepts it.
    struct Vector: Sendable, CustomStringConvertible {
        var id: String
        var source: String
        var command: String
        var recorded: String
        var actual: [UInt8]
        /// strict, ignore-timing, wildcard
        var accepted: (Bool, Bool, Bool)
        var description: String { id }
    }

    static let vectors: [Vector] = [
        Vector(id: "get-challenge-other-random", source: "ISO/IEC 7816-4 §11.5.2: 8 random bytes",
               command: "00 84 00 00 08", recorded: "11 22 33 44 55 66 77 88 90 00",
               actual: [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07, 0x18, 0x90, 0x00], accepted: (false, false, true)),
        Vector(id: "get-challenge-same", source: "ISO/IEC 7816-4 §11.5.2",
               command: "00 84 00 00 08", recorded: "11 22 33 44 55 66 77 88 90 00",
               actual: [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x90, 0x00], accepted: (true, true, true)),
        Vector(id: "get-challenge-other-status", source: "the status word is never random: 6A 86 wrong P1-P2",
               command: "00 84 00 00 08", recorded: "11 22 33 44 55 66 77 88 90 00",
               actual: [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x6A, 0x86], accepted: (false, false, false)),
        Vector(id: "get-challenge-shorter", source: "the length is Ne (Le 08): a shorter answer differs",
               command: "00 84 00 00 08", recorded: "11 22 33 44 55 66 77 88 90 00",
               actual: [0x11, 0x22, 0x33, 0x44, 0x90, 0x00], accepted: (false, false, false)),
        Vector(id: "internal-authenticate", source: "ISO/IEC 7816-4 §11.5.6: the card's cryptogram",
               command: "00 88 00 00 08 01 02 03 04 05 06 07 08 00", recorded: "DE AD BE EF 90 00",
               actual: [0x01, 0x02, 0x03, 0x04, 0x90, 0x00], accepted: (false, false, true)),
        Vector(id: "external-authenticate-status-only", source: "ISO/IEC 7816-4 §11.5.4: 63 CX counts the tries left",
               command: "00 82 00 01 08 [REDACTED 8]", recorded: "90 00",
               actual: [0x63, 0xC2], accepted: (false, false, false)),
        Vector(id: "proprietary-class", source: "CLA 80: INS 84 is not GET CHALLENGE in a proprietary class",
               command: "80 84 00 00 08", recorded: "11 22 33 44 55 66 77 88 90 00",
               actual: [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07, 0x18, 0x90, 0x00], accepted: (false, false, false)),
        Vector(id: "read-binary", source: "READ BINARY data is not random (docs/iso14443-t4t-ndef.md §4)",
               command: "00 B0 00 00 02", recorded: "00 10 90 00",
               actual: [0x00, 0x11, 0x90, 0x00], accepted: (false, false, false)),
        Vector(id: "marks-in-the-file", source: "Fixtures/README.md: ?? matches any byte in every mode",
               command: "00 84 00 00 02", recorded: "?? ?? 90 00",
               actual: [0x5A, 0xA5, 0x90, 0x00], accepted: (true, true, true)),
    ]

    @Test(arguments: vectors)
    func answerComparison(_ v: Vector) throws {
        let command = try pattern(v.command)
        let recorded = try pattern(v.recorded)
        let accepted = ReplayMode.allCases.map { mode in
            ReplayOptions(mode: mode).answerPattern(recorded, forCommand: command).matches(v.actual)
        }
        #expect(accepted == [v.accepted.0, v.accepted.1, v.accepted.2], "\(v.source)")
    }

    @Test func wildcardPatternKeepsLengthAndStatusWord() throws {
        let pattern = ReplayOptions(mode: .wildcard).answerPattern(
            try pattern("11 22 33 44 90 00"), forCommand: try pattern("00 84 00 00 04"))
        #expect(pattern.description == "?? ?? ?? ?? 90 00")
    }

    @Test func modeNamesAndDiffTiming() {
        #expect(ReplayMode.allCases.map(\.rawValue) == ["strict", "ignore-timing", "wildcard"])
        #expect(ReplayOptions().mode == .strict)
        #expect(ReplayOptions(mode: .strict).diffOptions.compareTiming)
        #expect(!ReplayOptions(mode: .ignoreTiming).diffOptions.compareTiming)
        #expect(!ReplayOptions(mode: .wildcard).diffOptions.compareTiming)
    }

    // MARK: live replay with a mode

    static let recordedChallenge = versionLine + """
        # protocol: T=1
        +0.086ms > 00 84 00 00 08
        +42.946ms < 11 22 33 44 55 66 77 88 90 00

        """
    static let deviceChallenge = versionLine + """
        # protocol: T=1
        > 00 84 00 00 08
        < 9C 01 5E 77 20 B4 C3 0D 90 00

        """

    @Test func liveReplayOfAChallengeNeedsWildcardMode() throws {
        let recording = try Transcript(parsing: Self.recordedChallenge, fileName: "challenge.trn")
        let strictDevice = ReplayChannel(try Transcript(parsing: Self.deviceChallenge, fileName: "device.trn"))
        let error = #expect(throws: ReplayError.self) {
            try LiveReplay.run(recording, on: strictDevice, options: ReplayOptions(mode: .strict))
        }
        #expect(error?.code == .mismatch)
        #expect(error?.line == 4)
        #expect(error?.expected == "< 11 22 33 44 55 66 77 88 90 00")
        #expect(error?.actual == "< 9C 01 5E 77 20 B4 C3 0D 90 00")
        let device = ReplayChannel(try Transcript(parsing: Self.deviceChallenge, fileName: "device.trn"))
        #expect(try LiveReplay.run(recording, on: device, options: ReplayOptions(mode: .wildcard)) == 1)
        try device.finish()
    }

    // MARK: terminal side

    /// The Android Type 4 Tag read of docs/iso14443-t4t-ndef.md §4; the `tgt <` lines are 4, 6, … 14.
    static let t4tRead = versionLine + """
        # protocol: undefined
        event target-activated mode="08"
        tgt < 00 A4 04 00 07 D2 76 00 00 85 01 01 00
        tgt > 90 00
        tgt < 00 A4 00 0C 02 E1 03
        tgt > 90 00
        tgt < 00 B0 00 00 0F
        tgt > 00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00 90 00
        tgt < 00 A4 00 0C 02 E1 04
        tgt > 90 00
        tgt < 00 B0 00 00 02
        tgt > 00 10 90 00
        tgt < 00 B0 00 02 10
        tgt > D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00

        """

    /// Answers from a table, as a card would.
    static func answers(_ transcript: Transcript) -> [[UInt8]: [UInt8]] {
        var table: [[UInt8]: [UInt8]] = [:]
        for e in TerminalReplay.exchanges(of: transcript) {
            if let c = e.command.bytes, let a = e.answer?.bytes { table[c] = a }
        }
        return table
    }

    @Test func terminalSideOfATargetSession() throws {
        let transcript = try Transcript(parsing: Self.t4tRead, fileName: "t4t.trn")
        let exchanges = TerminalReplay.exchanges(of: transcript)
        #expect(exchanges.map(\.line) == [4, 6, 8, 10, 12, 14])
        #expect(exchanges.map(\.answerLine) == [5, 7, 9, 11, 13, 15])
        #expect(exchanges.allSatisfy { $0.isTarget })
        #expect(exchanges.map(\.activatedBefore) == [true, false, false, false, false, false])
        let table = Self.answers(transcript)
        var activations = 0
        let count = try TerminalReplay.run(transcript, terminalActivated: { activations += 1 }) { table[$0] ?? [0x6D, 0x00] }
        #expect(count == 6)
        #expect(activations == 1)
    }

    @Test func terminalSideMismatchNamesTheAnswerLine() throws {
        let transcript = try Transcript(parsing: Self.t4tRead, fileName: "t4t.trn")
        var table = Self.answers(transcript)
        table[[0x00, 0xB0, 0x00, 0x00, 0x02]] = [0x00, 0x11, 0x90, 0x00]
        let error = #expect(throws: ReplayError.self) {
            try TerminalReplay.run(transcript) { table[$0] ?? [0x6D, 0x00] }
        }
        #expect(error?.code == .mismatch)
        #expect(error?.line == 13)
        #expect(error?.expected == "tgt > 00 10 90 00")
        #expect(error?.actual == "tgt > 00 11 90 00")
        #expect(error?.description.hasPrefix("t4t.trn:13: the credential answered differently than recorded (first difference at byte 1)") == true)
    }

    @Test func withoutTargetLinesTheHostCommandsAreTheTerminalSide() throws {
        let transcript = try Transcript(parsing: versionLine + """
            # protocol: T=1
            > FF CA 00 00 00
            < 08 00 B0 0B 90 00
            > 00 A4 04 00 07 D2 76 00 00 85 01 01 00
            < 90 00
            > 00 B0 00 00 02
            ! SCARD_W_REMOVED_CARD 0x80100069

            """, fileName: "pcsc.trn")
        let exchanges = TerminalReplay.exchanges(of: transcript)
        #expect(exchanges.map(\.line) == [5, 7], "the reader pseudo-APDU (CLA FF) is skipped")
        #expect(exchanges[1].failure?.name == "SCARD_W_REMOVED_CARD")
        let error = #expect(throws: ReplayError.self) {
            try TerminalReplay.run(transcript) { $0[1] == 0xA4 ? [0x90, 0x00] : [0x00, 0x10, 0x90, 0x00] }
        }
        #expect(error?.code == .failureMismatch)
        #expect(error?.line == 8)
    }

    @Test func terminalSideRefusesRedactedAndWildcardCommands() throws {
        let redacted = try Transcript(parsing: versionLine + """
            tgt < 00 20 00 81 06 [REDACTED 6]
            tgt > 90 00

            """, fileName: "pin.trn")
        var sent = 0
        let error = #expect(throws: ReplayError.self) {
            try TerminalReplay.run(redacted) { _ in sent += 1; return [0x90, 0x00] }
        }
        #expect(error?.code == .refusedRedacted)
        #expect(error?.line == 2)
        #expect(sent == 0, "nothing is sent before the whole file is checked")

        let empty = try Transcript(parsing: versionLine + "event field-on\n", fileName: "empty.trn")
        #expect(throws: ReplayError(code: .endOfTranscript, file: "", line: 0, reason: "")) {
            try TerminalReplay.run(empty) { _ in [0x90, 0x00] }
        }
    }

    @Test func unansweredTargetCommandIsSentButNotCompared() throws {
        let transcript = try Transcript(parsing: versionLine + """
            tgt < 00 A4 04 00 07 D2 76 00 00 85 01 01 00
            event field-off

            """, fileName: "dropped.trn")
        var sent: [[UInt8]] = []
        #expect(try TerminalReplay.run(transcript) { sent.append($0); return [0x6A, 0x82] } == 1)
        #expect(sent.count == 1)
    }
}
