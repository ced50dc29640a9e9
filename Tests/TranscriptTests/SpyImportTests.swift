import Foundation
import ISO7816
import SecbridgeTesting
import Testing

@testable import Transcript

/// A log under Fixtures/spy/ (provenance in Fixtures/spy/README.md).
func spyLogPath(_ name: String) -> String {
    URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/spy/\(name)").path
}

func spyLog(_ name: String) throws -> String {
    try String(contentsOfFile: spyLogPath(name), encoding: .utf8)
}

/// Records without offsets: what the variants of one log must agree on.
func untimedRecords(_ t: Transcript) -> [String] {
    t.lines.compactMap { line in
        guard var r = line.record else { return nil }
        r.offset = nil
        return r.serialized()
    }
}

@Suite struct SpyImportTests {
    // MARK: Real logs (pcsc-lite 1.9.9)

    @Test func nfcListLogOfLibnfcBecomesSixtyControlExchanges() throws {
        let t = try SpyLogImporter.importLog(contentsOfFile: spyLogPath("nfc-list.log"))
        let s = TranscriptStatistics(t)
        #expect(s.controlCommands == 60)
        #expect(s.transmitCommands == 0)
        #expect(s.unanswered == 0)
        #expect(t.header.reader == "ACS ACR122U PICC Interface 00 00")
        #expect(t.header.transmissionProtocol == .undefined)
        #expect(t.header.origin == .imported)
        // The first SCardConnect failed (no card on the ACR122U), then a DIRECT connection.
        #expect(t.lines.first == .comment("SCardConnect to 'ACS ACR122U PICC Interface 00 00' failed: SCARD_E_NO_SMARTCARD (log line 5)"))
        let records = t.lines.compactMap(\.record)
        #expect(records[0].entry == .event(TranscriptEvent(.connected, [
            TranscriptAttribute("share", "direct"), TranscriptAttribute("protocol", "undefined"), TranscriptAttribute("handle", "0x47B7610D"),
        ])))
        // The escape command asking the firmware version, and its ASCII answer "ACR122U207".
        #expect(records[1].entry == .control(code: 0x4200_0001, .outgoing, TranscriptBytes(hex("FF 00 48 00 00"))))
        #expect(records[2].entry == .control(code: 0x4200_0001, .incoming, TranscriptBytes(Array("ACR122U207".utf8))))
        // The call took [0.000325] s: the answer's offset minus the command's.
        #expect(records[2].offset!.duration - records[1].offset!.duration == .microseconds(325))
        // A 17-byte buffer spans two hexdump lines (InListPassiveTarget-era ReadRegister).
        #expect(records[7].entry == .control(code: 0x4200_0001, .outgoing, TranscriptBytes(hex("FF 00 00 00 0C D4 06 63 02 63 03 63 0D 63 38 63 3D"))))
        #expect(records.last?.entry == .event(TranscriptEvent(.disconnected, [TranscriptAttribute("disposition", "leave")])))
        // What is imported reads back as a transcript, byte for byte.
        #expect(try Transcript(parsing: t.serialized()).serialized() == t.serialized())
    }

    @Test func twoThreadsTwoHandlesGetOneChannelEach() throws {
        let t = try SpyLogImporter.importLog(contentsOfFile: spyLogPath("two-threads.log"))
        let readers = t.lines.compactMap(\.record).filter { if case .reader = $0.entry { true } else { false } }
        #expect(readers.map(\.channel) == ["h1", "h2"])
        #expect(readers[0].entry == .reader([
            TranscriptAttribute("name", "Virtual PCD 00 00"), TranscriptAttribute("handle", "0x33329290"),
            TranscriptAttribute("protocol", "T=1"), TranscriptAttribute("atr", "3B 95 13 81 01 80 73 FF 01 00 0B"),
        ]))
        #expect(t.header.reader == nil, "two handles: the readers are declared per channel")
        let h1 = t.lines.compactMap(\.record).filter { $0.channel == "h1" }.map(\.entry).filter { if case .reader = $0 { false } else { true } }
        // GET CHALLENGE: 8 random bytes from vicc, then the VERIFY, masked by default.
        #expect(h1.contains(.transmit(.outgoing, TranscriptBytes(hex("00 84 00 00 08")))))
        #expect(h1.contains(.transmit(.incoming, TranscriptBytes(hex("E1 54 1A E6 45 FD 11 02 90 00")))))
        #expect(h1.contains(.transmit(.outgoing, TranscriptBytes(items: hex("00 20 00 81 06").map { .byte($0) } + [.redacted(count: 6)]))))
        #expect(h1.first == .event(TranscriptEvent(.connected, [
            TranscriptAttribute("share", "shared"), TranscriptAttribute("protocol", "T=1"), TranscriptAttribute("handle", "0x33329290"),
        ])))
        #expect(h1.contains(.event(TranscriptEvent(.transactionBegan))))
        let s = TranscriptStatistics(t)
        #expect(s.transmitCommands == 6)
        #expect(s.redactedCommands == 2)
        #expect(t.header["spy-format"] == "result lines of pcsc-lite 2.1 or earlier, 2 threads")
    }

    @Test func secretsAreKeptOnlyWhenAsked() throws {
        let t = try SpyLogImporter.importLog(contentsOfFile: spyLogPath("two-threads.log"), options: SpyImportOptions(redactor: .disabled))
        #expect(t.lines.compactMap(\.record).contains { $0.entry == .transmit(.outgoing, TranscriptBytes(hex("00 20 00 81 06 31 32 33 34 35 36"))) })
        #expect(TranscriptStatistics(t).redactedCommands == 0)
    }

    struct Variant: Sendable, CustomStringConvertible {
        var id: String
        var file: String
        var source: String
        var format: String
        var timed: Bool
        var description: String { id }
    }

    static let variants: [Variant] = [
        Variant(id: "thread-tags", file: "two-threads-t.log", source: "pcsc-spy 1.9.9 -n -t, real",
                format: "result lines of pcsc-lite 2.1 or earlier, thread tags, 2 threads", timed: true),
        Variant(id: "diffable-colour", file: "two-threads-d-colour.log", source: "pcsc-spy 1.9.9 -d, real",
                format: "result lines of pcsc-lite 2.1 or earlier, 2 threads, diffable, colour codes", timed: false),
        Variant(id: "pcsc-lite-2.2", file: "two-threads-2.2.log", source: "result lines rewritten by hand after docs/test-infrastructure.md",
                format: "result lines of pcsc-lite 2.2 or later, 2 threads", timed: true),
    ]

    /// Every form pcsc-spy prints gives the same records as the plain `-n` output.
    @Test(arguments: variants)
    func variantsImportAlike(_ v: Variant) throws {
        let plain = try SpyLogImporter.importLog(contentsOfFile: spyLogPath("two-threads.log"))
        let t = try SpyLogImporter.importLog(contentsOfFile: spyLogPath(v.file))
        #expect(t.header["spy-format"] == v.format)
        if v.timed {
            #expect(t.lines.compactMap(\.record) == plain.lines.compactMap(\.record))
        } else {
            #expect(untimedRecords(t) == untimedRecords(plain))
            #expect(t.lines.allSatisfy { $0.record?.offset == nil })
            // Diffable mode masks hCard (0x????) but prints phCard: SCardConnect still names the
            // handle, and the calls go to the handle their thread connected.
            #expect(t.header["timing"] == "none: the diffable mode prints no call times")
        }
    }

    @Test func statusChangeGivesCardEvents() throws {
        // An SCardGetStatusChange that saw the card arrive (EMPTY known, PRESENT now) and another
        // reader that was only looked at (UNAWARE known).
        let log = """
            SCardGetStatusChange
             i hContext: 0x0A0B0C0D
             i dwTimeout: 0xFFFFFFFF (4294967295)
             i cReaders: 2
             i szReader: Virtual PCD 00 00
             i  dwCurrentState: SCARD_STATE_EMPTY (0x00000010)
             i  dwEventState:  (0x00000000)
             i  Atr length: 0x00000000 (0)
             i  Atr: 
             i szReader: Virtual PCD 00 01
             i  dwCurrentState:  (0x00000000)
             i  dwEventState:  (0x00000000)
             i  Atr length: 0x00000000 (0)
             i  Atr: 
             o szReader: Virtual PCD 00 00
             o  dwCurrentState: SCARD_STATE_EMPTY (0x00000010)
             o  dwEventState: SCARD_STATE_CHANGED, SCARD_STATE_PRESENT (0x00010022)
             o  Atr length: 0x0000000B (11)
             o  Atr: 3B 95 13 81 01 80 73 FF 01 00 0B
             o szReader: Virtual PCD 00 01
             o  dwCurrentState:  (0x00000000)
             o  dwEventState: SCARD_STATE_CHANGED, SCARD_STATE_EMPTY (0x00000012)
             o  Atr length: 0x00000000 (0)
             o  Atr: 
             => Command successful. (SCARD_S_SUCCESS [0x00000000])  [1.250000]

            """
        let t = try SpyLogImporter.importLog(log)
        let entries = t.lines.compactMap(\.record).map(\.entry)
        #expect(entries == [
            .event(TranscriptEvent(.cardInserted, [TranscriptAttribute("reader", "Virtual PCD 00 00"), TranscriptAttribute("atr", "3B 95 13 81 01 80 73 FF 01 00 0B")])),
            .event(TranscriptEvent(.stateChanged, [TranscriptAttribute("reader", "Virtual PCD 00 01"), TranscriptAttribute("state", "0x00000012")])),
        ])
        #expect(t.lines.compactMap(\.record).first?.offset == TranscriptOffset(mantissa: 1_250_000, fractionDigits: 0, unit: .microseconds))
    }

    @Test func failedTransmitBecomesAFailureLine() throws {
        let log = """
            SCardTransmit
             i hCard: 0x11223344
             i pioSendPci.dwProtocol: 0x00000002
             i pioSendPci.cbPciLength: 0x00000010
             i bSendLength 0x00000005 (5)
             i bSendBuffer
             i  0000 00 B0 00 00 00                                  .....
             o pioRecvPci.dwProtocol: 0x00000002
             o pioRecvPci.cbPciLength: 0x00000010
             o bRecvLength 0x00000000 (0)
             o bRecvBuffer
             o  NULL
             => Card was removed. (SCARD_W_REMOVED_CARD [0x80100069])  [0.000120]

            """
        let t = try SpyLogImporter.importLog(log)
        #expect(t.lines.compactMap(\.record).map(\.entry) == [
            .transmit(.outgoing, TranscriptBytes(hex("00 B0 00 00 00"))),
            .failure(TranscriptFailure(name: "SCARD_W_REMOVED_CARD", code: 0x8010_0069, message: "Card was removed.")),
        ])
    }

    // MARK: Bad input

    struct Bad: Sendable, CustomStringConvertible {
        var id: String
        var log: String
        var code: SpyImportError.Code
        var line: Int
        var says: String
        var description: String { id }
    }

    static let transmitHead = """
        SCardTransmit
         i hCard: 0x11223344
         i pioSendPci.dwProtocol: 0x00000002
         i pioSendPci.cbPciLength: 0x00000010

        """

    static let bad: [Bad] = [
        Bad(id: "empty", log: "", code: .notASpyLog, line: 0, says: "no pcsc-spy function block"),
        Bad(id: "raw library log", log: "7F1B8377C8C0@>|1795965133|527695|SCardEstablishContext\n7F1B8377C8C0@0x00000002\n",
            code: .rawLibraryFormat, line: 1, says: "pcsc-spy -n"),
        Bad(id: "another tool's output", log: "Using T=1 protocol\n> 00 A4 04 00\n", code: .unknownLine, line: 1, says: "not pcsc-spy output"),
        Bad(id: "parameter before any function", log: " i hCard: 0x11223344\n", code: .badSequence, line: 1, says: "outside any function block"),
        Bad(id: "bad hex byte", log: transmitHead + " i bSendLength 0x00000005 (5)\n i bSendBuffer\n i  0000 00 G0 00 00 00                                  .....\n",
            code: .badHex, line: 7, says: "'G0' at column"),
        Bad(id: "hexdump cut inside a line", log: transmitHead + " i bSendLength 0x00000005 (5)\n i bSendBuffer\n i  0000 00 B0 0\n",
            code: .badHex, line: 7, says: "not a hex byte"),
        Bad(id: "hexdump offset skips a line", log: transmitHead + " i bSendLength 0x00000005 (5)\n i bSendBuffer\n i  0010 00 B0 00 00 00                                  .....\n",
            code: .badHex, line: 7, says: "where 0000 was due"),
        Bad(id: "fewer bytes than the length line", log: transmitHead + " i bSendLength 0x00000006 (6)\n i bSendBuffer\n i  0000 00 B0 00 00 00                                  .....\n o bRecvLength 0x00000002 (2)\n o bRecvBuffer\n o  0000 90 00                                           ..\n => Command successful. (SCARD_S_SUCCESS [0x00000000])  [0.000100]\n",
            code: .lengthMismatch, line: 7, says: "bSendBuffer holds 5 bytes but bSendLength says 6"),
        Bad(id: "result line without a time", log: transmitHead + " i bSendLength 0x00000001 (1)\n i bSendBuffer\n i  0000 00                                              .\n => Command successful. (SCARD_S_SUCCESS [0x00000000])\n",
            code: .badResult, line: 8, says: "a result line without its time"),
        Bad(id: "result line with a short code", log: "SCardCancel\n i hCard: 0x1\n => SCARD_S_SUCCESS [0x0000]  [0.000001]\n",
            code: .badResult, line: 3, says: "eight-digit return code"),
        Bad(id: "new block before the result", log: "SCardCancel\n i hCard: 0x1\nSCardCancel\n", code: .badSequence, line: 3, says: "starts before SCardCancel (line 1)"),
    ]

    @Test(arguments: bad)
    func badLogIsAnErrorNamingItsLine(_ b: Bad) {
        #expect {
            _ = try SpyLogImporter.importLog(b.log, fileName: "spy.log")
        } throws: { error in
            guard let e = error as? SpyImportError else { return false }
            return e.code == b.code && e.line == b.line && e.description.contains(b.says) && e.file == "spy.log"
        }
    }

    /// Drip-feed: every prefix of a real log (cut at a line end) imports or fails with a
    /// SpyImportError, never traps; a cut inside a block is said in a comment; the whole imports.
    @Test func everyLinePrefixImportsOrIsRejected() async throws {
        let lines = try spyLog("two-threads.log").split(separator: "\n", omittingEmptySubsequences: false)
        // 184 imports: long CPU work, done on a thread of its own; the verdicts are checked here.
        let text = lines.map(String.init)
        let verdicts = try await onOwnThread { () throws -> [(n: Int, roundTrips: Bool?, error: SpyImportError?)] in
            try (1..<text.count).map { n in
                let prefix = text[0..<n].joined(separator: "\n") + "\n"
                do {
                    let t = try SpyLogImporter.importLog(prefix)
                    return (n, try Transcript(parsing: t.serialized()).serialized() == t.serialized(), nil)
                } catch let error as SpyImportError {
                    return (n, nil, error)
                }
            }
        }
        var imported = 0
        for verdict in verdicts {
            if let roundTrips = verdict.roundTrips {
                imported += 1
                #expect(roundTrips, "\(verdict.n)")
            } else if let error = verdict.error {
                #expect(error.code == .notASpyLog || error.code == .lengthMismatch || error.code == .badParameter, "\(verdict.n): \(error)")
            }
        }
        #expect(imported > lines.count / 2)
        let cut = lines[0..<30].joined(separator: "\n") + "\n"
        #expect(try SpyLogImporter.importLog(cut).serialized().contains("; the log ends inside SCardTransmit"))
        // Refused instead when unfinished calls are not kept (`transcript import-spy`).
        var strict = SpyImportOptions()
        strict.keepsUnfinishedCalls = false
        #expect {
            _ = try SpyLogImporter.importLog(cut, fileName: "spy.log", options: strict)
        } throws: { error in
            guard let e = error as? SpyImportError else { return false }
            return e.code == .truncated && e.line == 30 && e.file == "spy.log" && e.reason.contains("ends at line 30 inside SCardTransmit")
        }
    }
}

@Suite struct SpyImportKeyRedactionTests {
    /// A pcsc-spy log of a MIFARE Classic sector-trailer read (block 7, `FF B0 00 07 10`): the
    /// answer holds key A (read as zeros), the access bits FF 07 80 69 and key B (NXP MIFARE Classic
    /// EV1 1K data sheet, sector trailer). The import masks key B, as the recorder does.
    @Test func sectorTrailerAnswerLosesKeyBOnImport() throws {
        let log = """
            SCardEstablishContext
             i dwScope: SCARD_SCOPE_SYSTEM (0x00000002)
             o hContext: 0x3024046C
             => Command successful. (SCARD_S_SUCCESS [0x00000000])  [0.000351]
            SCardConnect
             i hContext: 0x3024046C
             i szReader ACS ACR122U PICC Interface 00 00
             i dwShareMode: SCARD_SHARE_SHARED (0x00000002)
             i dwPreferredProtocols: 0x00000003 (T=0, T=1)
             i phCard 0x00000000 (0)
             i pdwActiveProtocol 0x00000000 (0)
             o phCard 0x33329290 (858952336)
             o dwActiveProtocol: T=1 (0x00000002)
             => Command successful. (SCARD_S_SUCCESS [0x00000000])  [0.000060]
            SCardTransmit
             i hCard: 0x33329290
             i pioSendPci.dwProtocol: 0x00000002
             i pioSendPci.cbPciLength: 0x00000010
             i bSendLength 0x00000005 (5)
             i bSendBuffer
             i  0000 FF B0 00 07 10                                  .....
             o pioRecvPci.dwProtocol: 0x00000002
             o pioRecvPci.cbPciLength: 0x00000010
             o bRecvLength 0x00000012 (18)
             o bRecvBuffer
             o  0000 00 00 00 00 00 00 FF 07 80 69 B0 B1 B2 B3 B4 B5  ...........i....
             o  0010 90 00                                            ..
             => Command successful. (SCARD_S_SUCCESS [0x00000000])  [0.001000]

            """
        let t = try SpyLogImporter.importLog(log, fileName: "trailer.log")
        let records = t.lines.compactMap(\.record)
        let answer = try #require(records.first { if case .transmit(.incoming, _) = $0.entry { true } else { false } })
        #expect(answer.entry == .transmit(.incoming, TranscriptBytes(items:
            hex("00 00 00 00 00 00 FF 07 80 69").map { .byte($0) } + [.redacted(count: 6)] + hex("90 00").map { .byte($0) })))
        #expect(!t.serialized().contains("B0 B1 B2 B3 B4 B5"))
    }
}
