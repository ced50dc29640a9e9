import ISO7816
import SecbridgeTesting
import Testing
@testable import Transcript

@Suite("Transcript text format")
struct FormatTests {
    @Test("every README example round-trips exactly")
    func readmeRoundTrip() throws {
        let blocks = try readmeTranscripts()
        #expect(blocks.count == 4)
        for (line, text) in blocks {
            let t = try Transcript(parsing: text, fileName: "README.md:\(line)")
            #expect(t.serialized() == text, "README block at line \(line)")
            let again = try Transcript(parsing: t.serialized(), fileName: "README.md:\(line)")
            #expect(again == t)
        }
    }

    @Test("P10: README example 2 (card emulation) reads as the right entries")
    func emulationExampleValues() throws {
        let text = try readmeTranscripts()[2].text
        let t = try Transcript(parsing: text, fileName: "example2")
        #expect(t.header.transmissionProtocol == .undefined)
        #expect(t.header.firmware == "ACR122U207")
        #expect(t.header.origin == .recorded)
        #expect(t.header["source"]?.hasPrefix("PN532 frames of field case P10") == true)
        let records = t.lines.compactMap(\.record)
        // The TgInitAsTarget command with Lc 0x27 (docs/cases.md P10).
        let initAsTarget = records[5]
        guard case .control(let code, .outgoing, let bytes) = initAsTarget.entry else {
            Issue.record("expected a ctl command, got \(initAsTarget)")
            return
        }
        #expect(code == 0x4200_0001)
        #expect(bytes.bytes?.prefix(7) == [0xFF, 0x00, 0x00, 0x00, 0x27, 0xD4, 0x8C])
        #expect(bytes.count == 5 + 0x27)
        #expect(initAsTarget.note == "TgInitAsTarget")
        #expect(initAsTarget.offset == TranscriptOffset(mantissa: 3100, fractionDigits: 3, unit: .milliseconds))
        // The terminal's SELECT, target role, incoming.
        let select = records.first { if case .target(.incoming, _) = $0.entry { true } else { false } }
        #expect(select?.entry == .target(.incoming, TranscriptBytes(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))))
        #expect(select?.entry.isCommand == true)
        let activated = records.first { if case .event(let e) = $0.entry { e.kind == .targetActivated } else { false } }
        if case .event(let e)? = activated?.entry {
            #expect(e["mode"] == "08")
            #expect(e["initiator-command"] == "E0 80")
        } else {
            Issue.record("no target-activated event")
        }
    }

    @Test("README example 3: channels, wildcards and redaction marks")
    func multiReaderExampleValues() throws {
        let t = try Transcript(parsing: try readmeTranscripts()[3].text, fileName: "example3")
        let records = t.lines.compactMap(\.record)
        #expect(records[0].entry == .reader([
            TranscriptAttribute("name", "ACS ACR122U PICC Interface 00 00"), TranscriptAttribute("firmware", "ACR122U207"),
        ]))
        #expect(records[0].channel == "r0")
        let uid = records.first { $0.note == "any 4-byte UID" }
        #expect(uid?.entry == .transmit(.incoming, TranscriptBytes(items: [.wildcard, .wildcard, .wildcard, .wildcard, .byte(0x90), .byte(0x00)])))
        let auth = records.first { $0.note == "MIFARE authentication, key A" }
        #expect(auth?.entry.payload?.count == 20)
        #expect(auth?.entry.payload?.containsRedaction == true)
        #expect(auth?.offset?.duration == .microseconds(2630))
    }

    struct LineVector: Sendable, CustomStringConvertible {
        var id: String
        var line: String
        var entry: TranscriptLine
        var description: String { id }
    }

    static let lineVectors: [LineVector] = [
        LineVector(id: "blank", line: "", entry: .blank),
        LineVector(id: "empty comment", line: ";", entry: .comment("")),
        LineVector(id: "comment keeps inner spaces", line: ";  indented ; text", entry: .comment(" indented ; text")),
        LineVector(id: "bare command", line: "> 00 B0 00 00 00",
                   entry: .record(TranscriptRecord(.transmit(.outgoing, TranscriptBytes(hex("00 B0 00 00 00")))))),
        LineVector(id: "empty control answer", line: "@acs ctl 0x42000DAC <",
                   entry: .record(TranscriptRecord(.control(code: 0x4200_0DAC, .incoming, TranscriptBytes([])), channel: "acs"))),
        LineVector(id: "seconds offset", line: "+1.5s event field-on",
                   entry: .record(TranscriptRecord(.event(TranscriptEvent(.fieldOn)), offset: TranscriptOffset(mantissa: 15, fractionDigits: 1, unit: .seconds)))),
        LineVector(id: "zero microseconds", line: "+0us event card-removed",
                   entry: .record(TranscriptRecord(.event(TranscriptEvent(.cardRemoved)), offset: TranscriptOffset(mantissa: 0, fractionDigits: 0, unit: .microseconds)))),
        LineVector(id: "failure with name only", line: "! Timeout",
                   entry: .record(TranscriptRecord(.failure(TranscriptFailure(name: "Timeout"))))),
        LineVector(id: "failure with escaped message and note", line: #"! SCARD_E_TIMEOUT 0x8010000A "said \"no\" \\ done" ; after 30 s"#,
                   entry: .record(TranscriptRecord(.failure(TranscriptFailure(name: "SCARD_E_TIMEOUT", code: 0x8010_000A, message: #"said "no" \ done"#)), note: "after 30 s"))),
        LineVector(id: "extension event", line: #"event x-led-changed state="90 03""#,
                   entry: .record(TranscriptRecord(.event(TranscriptEvent(TranscriptEventKind(rawValue: "x-led-changed"), [TranscriptAttribute("state", "90 03")]))))),
        LineVector(id: "initiator through InDataExchange", line: "ini > 00 A4 04 00 ?? [REDACTED 2]",
                   entry: .record(TranscriptRecord(.initiator(.outgoing, TranscriptBytes(items: [.byte(0), .byte(0xA4), .byte(4), .byte(0), .wildcard, .redacted(count: 2)]))))),
        LineVector(id: "empty payload with note", line: "tgt > ; nothing sent",
                   entry: .record(TranscriptRecord(.target(.outgoing, TranscriptBytes([])), note: "nothing sent"))),
    ]

    @Test("single lines parse to the expected value and serialize back", arguments: lineVectors)
    func lineRoundTrip(_ v: LineVector) throws {
        // A command before answers so the pairing rules hold.
        let prelude: String
        switch v.entry.record?.entry {
        case .control(let code, .incoming, _)?:
            prelude = "@acs ctl \(HexText.code(code)) > FF 00 48 00 00\n"
        case .failure?: prelude = "> 00 B0 00 00 00\n"
        case .target(.outgoing, _)?: prelude = "tgt < 00 B0 00 00 00\n"
        default: prelude = ""
        }
        let text = versionLine + prelude + v.line + "\n"
        let t = try Transcript(parsing: text, fileName: v.id)
        #expect(t.lines.last == v.entry)
        #expect(t.serialized() == text)
        #expect(v.entry.serialized() == v.line)
    }

    @Test("offsets: value, duration and the recorder's form")
    func offsets() throws {
        let t = try Transcript(parsing: versionLine + "+12.345ms event field-on\n+0.000001s event field-off\n", fileName: "o")
        #expect(t.lines[0].record?.offset?.duration == .microseconds(12345))
        #expect(t.lines[1].record?.offset?.duration == .microseconds(1))
        // One digit is 10^(18 - 3·unit - fraction digits) attoseconds, for every unit and count.
        #expect(TranscriptOffset(mantissa: 26_940_000, fractionDigits: 3, unit: .milliseconds).duration == .microseconds(26_940_000))
        #expect(TranscriptOffset(mantissa: 999_999_999_999_999_999, fractionDigits: 9, unit: .seconds).duration
            == Duration(secondsComponent: 999_999_999, attosecondsComponent: 999_999_999_000_000_000))
        #expect(TranscriptOffset(mantissa: 123_456_789, fractionDigits: 9, unit: .microseconds).duration
            == Duration(secondsComponent: 0, attosecondsComponent: 123_456_789_000))
        #expect(TranscriptOffset(mantissa: 12, fractionDigits: 0, unit: .seconds).duration == .seconds(12))
        #expect(TranscriptOffset(elapsed: .microseconds(12345)).description == "+12.345ms")
        #expect(TranscriptOffset(elapsed: .microseconds(7)).description == "+0.007ms")
        #expect(TranscriptOffset(elapsed: .seconds(-1)).description == "+0.000ms")
        #expect(TranscriptOffset(elapsed: .seconds(90)).description == "+90000.000ms")
    }

    @Test("header: typed accessors, order kept, unknown keys kept")
    func header() throws {
        var h = TranscriptHeader(tool: "secbridge 0.1.0", origin: .simulated, atr: hex("3B 80 80 01 01"), transmissionProtocol: .t1)
        h["case"] = "P05"
        let text = Transcript(header: h).serialized()
        #expect(text == versionLine + "# tool: secbridge 0.1.0\n# origin: simulated\n# atr: 3B 80 80 01 01\n# protocol: T=1\n# case: P05\n")
        let back = try Transcript(parsing: text, fileName: "h")
        #expect(back.header == h)
        #expect(back.header.atr == hex("3B 80 80 01 01"))
        #expect(back.header.transmissionProtocol == .t1)
        #expect(back.header.origin == .simulated)
        #expect(back.header.date == nil)
    }

    @Test(
        "drip-feed: a cut inside a line is reported truncated, a cut at a line end gives the lines so far",
        arguments: (try? readmeTranscripts().map(\.line)) ?? [])
    func dripFeed(startingAt line: Int) throws {
        // One case per transcript block of Fixtures/README.md (by the line it starts at), so the
        // blocks' quadratic prefix walks run in parallel.
        let text = try #require(try readmeTranscripts().first { $0.line == line }?.text)
        try dripFeed(text)
    }

    private func dripFeed(_ text: String) throws {
        let full = try Transcript(parsing: text, fileName: "full")
        let bytes = Array(text.utf8)
        for cut in 0..<bytes.count {
            let prefix = String(decoding: bytes[0..<cut], as: UTF8.self)
            do {
                let t = try Transcript(parsing: prefix, fileName: "cut")
                #expect(bytes[cut - 1] == 0x0A, "prefix of \(cut) bytes parsed without ending in LF")
                #expect(t.serialized() == prefix)
                let n = t.lines.count
                #expect(Array(full.lines.prefix(n)) == t.lines)
            } catch {
                if cut == 0 {
                    #expect(error.code == .notATranscript)
                } else {
                    #expect(error.code == .truncated, "prefix of \(cut) bytes: \(error)")
                    #expect(bytes[cut - 1] != 0x0A)
                }
            }
        }
        #expect(try Transcript(parsing: text, fileName: "full") == full)
    }

    @Test("a transcript built in code serializes to the documented text")
    func builtInCode() throws {
        let t = Transcript(
            header: TranscriptHeader(origin: .simulated),
            lines: [
                .record(TranscriptRecord(.reader([TranscriptAttribute("name", "ACS ACR122U 00 00")]), channel: "r0")),
                .blank,
                .record(TranscriptRecord(.transmit(.outgoing, TranscriptBytes(hex("FF CA 00 00 00"))), offset: TranscriptOffset(elapsed: .milliseconds(1)), channel: "r0")),
                .record(TranscriptRecord(.transmit(.incoming, TranscriptBytes(hex("08 00 B0 0B 90 00"))), offset: TranscriptOffset(elapsed: .milliseconds(2)), channel: "r0", note: "UID")),
            ])
        let expected = """
            # secbridge-transcript: 1
            # origin: simulated
            @r0 reader name="ACS ACR122U 00 00"

            +1.000ms @r0 > FF CA 00 00 00
            +2.000ms @r0 < 08 00 B0 0B 90 00 ; UID

            """
        #expect(t.serialized() == expected)
        #expect(try Transcript(parsing: expected, fileName: "<transcript>") == t)
    }
}
