import ISO7816
import SecbridgeTesting
import Testing
@testable import Transcript

/// The writer formats exchange lines (`>`, `<`, `ctl … >`, `ctl … <` of concrete bytes, no note)
/// from their values without parsing them back (`LineValidator.checkExchange`); every other line
/// is still read back. These tests hold the fast form to the full check: same text, same
/// acceptance, same refusals.
@Suite("Exchange lines written without a parse-back")
struct ExchangeLineTests {
    static let header = TranscriptHeader(tool: "secbridge 0.1.0", origin: .recorded, reader: "ACS ACR122U PICC Interface 00 00")

    /// Offsets as recorders write them and as hand-written transcripts may hold them.
    static let offsets: [TranscriptOffset?] = [
        nil,
        TranscriptOffset(elapsed: .zero),  // +0.000ms
        TranscriptOffset(elapsed: .microseconds(5)),  // +0.005ms
        TranscriptOffset(elapsed: .milliseconds(12) + .microseconds(345)),  // +12.345ms
        TranscriptOffset(elapsed: .seconds(86_400 * 365)),  // a year: 31 536 000 000.000 ms
        TranscriptOffset(mantissa: 7, fractionDigits: 0, unit: .seconds),  // +7s
        TranscriptOffset(mantissa: 1, fractionDigits: 9, unit: .microseconds),  // +0.000000001us
        TranscriptOffset(mantissa: 123_456_789_012_345_678, fractionDigits: 9, unit: .seconds),  // 18 digits
    ]

    static let payloads: [[UInt8]] = [
        [],
        [0x90, 0x00],
        hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"),
        Array(0...255),
    ]

    /// Command and answer records on channel `channel`, over every offset and payload.
    static func exchanges(channel: String?) -> [TranscriptRecord] {
        var records: [TranscriptRecord] = []
        for offset in offsets {
            for payload in payloads {
                let bytes = TranscriptBytes(payload)
                records.append(TranscriptRecord(.transmit(.outgoing, bytes), offset: offset, channel: channel))
                records.append(TranscriptRecord(.transmit(.incoming, bytes), offset: offset, channel: channel))
                records.append(TranscriptRecord(.control(code: 0x4200_0001, .outgoing, bytes), offset: offset, channel: channel))
                records.append(TranscriptRecord(.control(code: 0x4200_0001, .incoming, bytes), offset: offset, channel: channel))
            }
        }
        return records
    }

    @Test("an exchange line is the text serialized() gives, and the full check (its parse-back) accepts it")
    func sameTextAsTheFullCheck() throws {
        for channel in [nil, "r0", "reader_B.2-x"] {
            var fast = try LineValidator(header: Self.header, fileName: "fast.trn")
            var full = try LineValidator(header: Self.header, fileName: "full.trn")
            var out = LineBytes()
            for record in Self.exchanges(channel: channel) {
                let text = try full.check(.record(record))
                #expect(try fast.checkExchange(record, into: &out))
                let written = out.withBytes { String(decoding: $0, as: UTF8.self) }
                #expect(written == text + "\n")
            }
            #expect(fast.nextLineNumber == full.nextLineNumber)
        }
    }

    @Test("the pairing rules refuse what the full check refuses, with the same message")
    func pairingStillChecked() throws {
        let command = TranscriptRecord(.transmit(.outgoing, TranscriptBytes([0x00, 0xB0, 0x00, 0x00, 0x00])))
        let answer = TranscriptRecord(.transmit(.incoming, TranscriptBytes([0x90, 0x00])))
        let controlAnswer = TranscriptRecord(.control(code: 0x4200_0001, .incoming, TranscriptBytes([0x90, 0x00])))
        for sequence in [[answer], [command, command], [command, controlAnswer]] {
            var fast = try LineValidator(header: Self.header, fileName: "t.trn")
            var full = try LineValidator(header: Self.header, fileName: "t.trn")
            var out = LineBytes()
            for record in sequence.dropLast() {
                _ = try fast.checkExchange(record, into: &out)
                _ = try full.check(.record(record))
            }
            var fastError: TranscriptWriteError?
            var fullError: TranscriptWriteError?
            do { _ = try fast.checkExchange(sequence.last!, into: &out) } catch { fastError = error }
            do { _ = try full.check(.record(sequence.last!)) } catch { fullError = error }
            #expect(fastError != nil)
            #expect(fastError?.code == .invalidLine)
            #expect(fastError?.reason == fullError?.reason)
        }
    }

    @Test("lines with free text, masks, bad ids or oversized offsets go to the full check")
    func otherLinesAreReadBack() throws {
        var validator = try LineValidator(header: Self.header, fileName: "t.trn")
        var out = LineBytes()
        let bytes = TranscriptBytes([0x90, 0x00])
        let others: [TranscriptRecord] = [
            TranscriptRecord(.transmit(.outgoing, bytes), note: "a note"),
            TranscriptRecord(.transmit(.outgoing, TranscriptBytes(items: [.byte(0x00), .redacted(count: 8)]))),
            TranscriptRecord(.transmit(.outgoing, TranscriptBytes(items: [.wildcard]))),
            TranscriptRecord(.transmit(.outgoing, bytes), channel: "bad id"),
            TranscriptRecord(.transmit(.outgoing, bytes), channel: ""),
            TranscriptRecord(.transmit(.outgoing, bytes), offset: TranscriptOffset(mantissa: 1, fractionDigits: 10, unit: .seconds)),
            TranscriptRecord(.transmit(.outgoing, bytes), offset: TranscriptOffset(mantissa: 1_000_000_000_000_000_000, fractionDigits: 0, unit: .seconds)),
            TranscriptRecord(.failure(TranscriptFailure(name: "SCARD_E_TIMEOUT", code: 0x8010_000A))),
            TranscriptRecord(.event(TranscriptEvent(.cardRemoved))),
            TranscriptRecord(.target(.incoming, bytes)),
        ]
        for record in others {
            #expect(try !validator.checkExchange(record, into: &out))
            #expect(out.count == 0)
        }
        #expect(validator.nextLineNumber == 5)  // nothing was counted
    }

    @Test("a file recorded through the writer reads back line for line")
    func writerFileReadsBack() throws {
        let dir = try makeTemporaryDirectory()
        let path = dir + "/exchanges.trn"
        let writer = try TranscriptWriter(creatingFileAt: path, header: Self.header)
        var expected: [TranscriptLine] = [.comment("a comment, read back")]
        try writer.append(expected[0])
        for record in Self.exchanges(channel: "r1") where record.entry.isCommand {
            // Each command is answered on its own kind: pair every command with an answer.
            let answer: TranscriptEntry = switch record.entry {
            case .control(let code, _, _): .control(code: code, .incoming, TranscriptBytes([0x90, 0x00]))
            default: .transmit(.incoming, TranscriptBytes([0x6A, 0x82]))
            }
            for line in [TranscriptLine.record(record), .record(TranscriptRecord(answer, offset: record.offset, channel: "r1"))] {
                try writer.append(line)
                expected.append(line)
            }
        }
        try writer.close()
        let text = try fileText(path)
        #expect(text == Transcript(header: Self.header, fileName: path).serialized() + expected.map { $0.serialized() + "\n" }.joined())
        #expect(try Transcript(contentsOfFile: path).lines == expected)
    }
}
