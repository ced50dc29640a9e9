import ISO7816
import SecbridgeTesting
import Testing
@testable import Transcript

@Suite("Replay")
struct ReplayTests {
    /// Line numbers in the tests are the file's: the header is lines 1–2, SELECT is line 4.
    static let session = versionLine + """
        # protocol: T=0
        ; line 3
        +1.000ms > 00 A4 04 00 06 D2 76 00 01 24 01 00
        +2.000ms < 90 00
        +3.000ms > 00 20 00 81 06 [REDACTED 6]
        +4.000ms < 90 00
        event field-off
        +5.000ms ctl 0x42000001 > FF 00 48 00 00
        +6.000ms ctl 0x42000001 < 41 43 52 31 32 32 55 32 30 37
        +7.000ms > 00 B0 00 00 00
        +8.000ms ! SCARD_W_REMOVED_CARD 0x80100069

        """

    func replay() throws -> ReplayChannel {
        ReplayChannel(try Transcript(parsing: Self.session, fileName: "session.transcript"))
    }

    @Test("the host side plays back: answers, a redacted PIN of the right length, control, failure")
    func happyPath() throws {
        let r = try replay()
        #expect(r.transmissionProtocol == .t0)
        #expect(try r.transmit(hex("00 A4 04 00 06 D2 76 00 01 24 01 00")) == hex("90 00"))
        #expect(try r.transmit(hex("00 20 00 81 06 39 38 37 36 35 34")) == hex("90 00"))
        #expect(try r.control(code: 0x4200_0001, hex("FF 00 48 00 00")) == Array("ACR122U207".utf8))
        do {
            _ = try r.transmit(hex("00 B0 00 00 00"))
            Issue.record("expected the recorded failure")
        } catch let e as ReplayedFailure {
            #expect(e.transcriptFailure == TranscriptFailure(name: "SCARD_W_REMOVED_CARD", code: 0x8010_0069))
            #expect(e.line == 12)
            #expect(e.file == "session.transcript")
        }
        #expect(r.remainingExchanges == 0)
        try r.finish()
    }

    @Test("a different command: file, line, expected and actual bytes")
    func mismatch() throws {
        let r = try replay()
        do {
            _ = try r.transmit(hex("00 A4 04 0C 06 D2 76 00 01 24 01"))
            Issue.record("accepted")
        } catch let e as ReplayError {
            #expect(e.code == .mismatch)
            #expect(e.file == "session.transcript")
            #expect(e.line == 4)
            #expect(e.expected == "> 00 A4 04 00 06 D2 76 00 01 24 01 00")
            #expect(e.actual == "> 00 A4 04 0C 06 D2 76 00 01 24 01")
            #expect(e.description == """
                session.transcript:4: the host sent another command than recorded (first difference at byte 3)
                  expected: > 00 A4 04 00 06 D2 76 00 01 24 01 00
                  actual:   > 00 A4 04 0C 06 D2 76 00 01 24 01
                """)
        }
        // Strict: the replay does not move on after a mismatch.
        #expect(try r.transmit(hex("00 A4 04 00 06 D2 76 00 01 24 01 00")) == hex("90 00"))
    }

    @Test("a redacted command still has to have the recorded length")
    func redactedLength() throws {
        let r = try replay()
        _ = try r.transmit(hex("00 A4 04 00 06 D2 76 00 01 24 01 00"))
        #expect(throws: ReplayError(code: .mismatch, file: "", line: 0, reason: "")) {
            try r.transmit(hex("00 20 00 81 04 31 32 33 34"))
        }
    }

    @Test("transmit where control was recorded, or another control code")
    func unexpectedCall() throws {
        let r = try replay()
        _ = try r.transmit(hex("00 A4 04 00 06 D2 76 00 01 24 01 00"))
        _ = try r.transmit(hex("00 20 00 81 06 31 32 33 34 35 36"))
        do {
            _ = try r.transmit(hex("FF 00 48 00 00"))
            Issue.record("accepted")
        } catch let e as ReplayError {
            #expect(e.code == .unexpectedCall)
            #expect(e.line == 9)
            #expect(e.expected == "ctl 0x42000001 > FF 00 48 00 00")
            #expect(e.actual == "> FF 00 48 00 00")
        }
        do {
            _ = try r.control(code: 0x4200_0DAC, hex("FF 00 48 00 00"))
            Issue.record("accepted")
        } catch let e as ReplayError {
            #expect(e.code == .unexpectedCall)
            #expect(e.actual == "ctl 0x42000DAC > FF 00 48 00 00")
        }
    }

    @Test("a command after the end names the last line")
    func endOfTranscript() throws {
        let t = try Transcript(parsing: versionLine + "> 00 A4 04 00\n< 90 00\n; end\n", fileName: "short.transcript")
        let r = ReplayChannel(t)
        _ = try r.transmit(hex("00 A4 04 00"))
        do {
            _ = try r.transmit(hex("00 A4 04 00"))
            Issue.record("accepted")
        } catch let e as ReplayError {
            #expect(e.code == .endOfTranscript)
            #expect(e.line == 4)
            #expect(e.actual == "> 00 A4 04 00")
        }
    }

    @Test("a recording cut after a command has no answer to give")
    func noAnswer() throws {
        let t = try Transcript(parsing: versionLine + "> 00 A4 04 00\n", fileName: "cut.transcript")
        #expect(throws: ReplayError(code: .noRecordedAnswer, file: "", line: 0, reason: "")) {
            try ReplayChannel(t).transmit(hex("00 A4 04 00"))
        }
    }

    @Test("an answer with wildcards cannot be replayed")
    func wildcardAnswer() throws {
        let t = try Transcript(parsing: versionLine + "> FF CA 00 00 00\n< ?? ?? ?? ?? 90 00\n", fileName: "w.transcript")
        do {
            _ = try ReplayChannel(t).transmit(hex("FF CA 00 00 00"))
            Issue.record("accepted")
        } catch let e as ReplayError {
            #expect(e.code == .unreplayableAnswer)
            #expect(e.line == 3)
        }
    }

    @Test("wildcards in a recorded command match any byte")
    func wildcardCommand() throws {
        let t = try Transcript(parsing: versionLine + "> 00 B0 ?? ?? 00\n< 90 00\n", fileName: "w.transcript")
        #expect(try ReplayChannel(t).transmit(hex("00 B0 01 7F 00")) == hex("90 00"))
    }

    @Test("finish reports exchanges never asked for")
    func leftover() throws {
        let r = try replay()
        _ = try r.transmit(hex("00 A4 04 00 06 D2 76 00 01 24 01 00"))
        do {
            try r.finish()
            Issue.record("no leftover reported")
        } catch {
            #expect(error.code == .leftover)
            #expect(error.line == 6)
        }
    }

    @Test("one channel of a multi-reader file (README example 3)")
    func channelFilter() throws {
        let t = try Transcript(parsing: try readmeTranscripts()[3].text, fileName: "example3")
        let r1 = ReplayChannel(t, channel: "r1")
        #expect(try r1.transmit(hex("00 A4 04 00 09 A0 00 00 03 08 00 00 10 00 00"))
            == hex("61 11 4F 06 00 00 10 00 01 00 79 07 4F 05 A0 00 00 03 08 90 00"))
        try r1.finish()
        let r0 = ReplayChannel(t, channel: "r0")
        #expect(throws: ReplayError(code: .unreplayableAnswer, file: "", line: 0, reason: "")) {
            try r0.transmit(hex("FF CA 00 00 00"))
        }
    }

    // MARK: Live replay

    @Test("live replay refuses a redacted VERIFY before sending anything")
    func liveRefusesRedacted() throws {
        let t = try Transcript(parsing: Self.session, fileName: "session.transcript")
        let card = ScriptedChannel([hex("00 A4 04 00 06 D2 76 00 01 24 01 00"): .bytes(hex("90 00"))])
        do {
            try LiveReplay.run(t, on: card)
            Issue.record("sent")
        } catch {
            #expect(error.code == .refusedRedacted)
            #expect(error.line == 6)
            #expect(error.expected == "> 00 20 00 81 06 [REDACTED 6]")
        }
        #expect(card.calls.isEmpty, "nothing may be sent when a command is refused")
    }

    @Test("live replay refuses wildcard commands")
    func liveRefusesWildcard() throws {
        let t = try Transcript(parsing: versionLine + "> 00 B0 ?? 00 00\n< 90 00\n", fileName: "w.transcript")
        let card = ScriptedChannel([:])
        #expect(throws: ReplayError(code: .refusedWildcard, file: "", line: 0, reason: "")) {
            try LiveReplay.run(t, on: card)
        }
        #expect(card.calls.isEmpty)
    }

    @Test("live replay compares answers (wildcards allowed) and failures")
    func liveCompares() throws {
        let text = versionLine + """
            > FF CA 00 00 00
            < ?? ?? ?? ?? 90 00
            ctl 0x42000001 > FF 00 48 00 00
            ctl 0x42000001 < 41 43 52 31 32 32 55 32 30 37
            > 00 B0 00 00 00
            ! SCARD_E_NOT_TRANSACTED 0x80100016

            """
        let t = try Transcript(parsing: text, fileName: "live.transcript")
        let reader = ScriptedChannel([
            hex("FF CA 00 00 00"): .bytes(hex("08 00 B0 0B 90 00")),
            hex("FF 00 48 00 00"): .bytes(Array("ACR122U207".utf8)),
        ])
        #expect(try LiveReplay.run(t, on: reader) == 3)
        #expect(reader.calls.count == 3)

        let other = ScriptedChannel([
            hex("FF CA 00 00 00"): .bytes(hex("08 00 B0 0B 90 00")),
            hex("FF 00 48 00 00"): .bytes(Array("ACR122U214".utf8)),
        ])
        do {
            try LiveReplay.run(t, on: other)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .mismatch)
            #expect(error.line == 5)
            #expect(error.expected == "ctl 0x42000001 < 41 43 52 31 32 32 55 32 30 37")
            #expect(error.actual == "ctl 0x42000001 < 41 43 52 31 32 32 55 32 31 34")
        }
        #expect(other.calls.count == 2, "stops at the first difference")
    }

    @Test("live replay: the device fails where an answer was recorded")
    func liveFailureMismatch() throws {
        let t = try Transcript(parsing: versionLine + "> 00 A4 04 00\n< 90 00\n", fileName: "f.transcript")
        let card = ScriptedChannel([hex("00 A4 04 00"): .error(TestCardError(name: "SCARD_W_REMOVED_CARD", code: 0x8010_0069))])
        do {
            try LiveReplay.run(t, on: card)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .failureMismatch)
            #expect(error.line == 3)
            #expect(error.actual == "! SCARD_W_REMOVED_CARD 0x80100069")
        }
    }
}
