import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// Runs the CLI in process for commands that never reach PC/SC (decode, help, usage errors).
/// A PC/SC call here would fix this process's pcscd socket before the end-to-end harness sets it.
func run(_ arguments: [String]) -> (status: Int32, out: String, err: String) {
    let console = CapturingConsole()
    let status = SecbridgeTools.main(arguments: arguments, console: console)
    return (status, console.standardOutput, console.standardError)
}

@Suite struct DecodeCommandTests {
    @Test func decodeAPDUJSONHasTheDocumentedKeys() {
        // docs/cases.md P14: SELECT of the NFC Forum Type 4 Tag application, case 4S.
        let result = run(["decode", "apdu", "--json", "00", "A4", "04", "00", "07", "D2", "76", "00", "00", "85", "01", "01", "00"])
        #expect(result.status == 0)
        #expect(result.err == "")
        #expect(result.out == """
            {
              "case": "4S",
              "cla": "00",
              "ins": "A4",
              "p1": "04",
              "p2": "00",
              "nc": 7,
              "ne": 256,
              "data": "D2760000850101"
            }

            """)
    }

    struct CaseVector: Sendable, CustomTestStringConvertible {
        let id: String
        let hex: String
        let apduCase: String
        let nc: Int
        let ne: Int
        var testDescription: String { id }
    }

    static let cases: [CaseVector] = [
        .init(id: "case 1", hex: "00A40000", apduCase: "1", nc: 0, ne: 0),
        .init(id: "P03 case 2S Le 00 = 256", hex: "00B2011400", apduCase: "2S", nc: 0, ne: 256),
        .init(id: "case 3S", hex: "00A4000C023F00", apduCase: "3S", nc: 2, ne: 0),
        .init(id: "P01 case 2S READ BINARY", hex: "00B0000000", apduCase: "2S", nc: 0, ne: 256),
        .init(id: "case 2E Le 0000 = 65536", hex: "00B00000000000", apduCase: "2E", nc: 0, ne: 65536),
        .init(id: "case 3E", hex: "00DA00000000023F00", apduCase: "3E", nc: 2, ne: 0),
        .init(id: "case 4E", hex: "00A40400000002A0000100", apduCase: "4E", nc: 2, ne: 256),
    ]

    @Test(arguments: cases)
    func decodeAPDUCases(_ vector: CaseVector) {
        let result = run(["decode", "apdu", "--json", vector.hex])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("\"case\": \"\(vector.apduCase)\""))
        #expect(result.out.contains("\"nc\": \(vector.nc),"))
        #expect(result.out.contains("\"ne\": \(vector.ne),"))
    }

    @Test func decodeATRJSONFromP05() {
        // docs/cases.md P05: MIFARE Classic 1K storage card ATR synthesised by a PC/SC reader.
        let result = run(["decode", "atr", "--json", "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A"])
        #expect(result.status == 0)
        #expect(result.out.contains(#""protocols": [\#n    "T=0",\#n    "T=1"\#n  ]"#))
        #expect(result.out.contains(#""historicalBytes": "804F0CA00000030603000100000000""#))
        #expect(result.out.contains(#""tck": "6A""#))
        #expect(result.out.contains(#""checksumValid": true"#))
        #expect(result.out.contains(#""cardNameText": "MIFARE Classic 1K""#))
    }

    @Test func decodeATRNamesCompactTLVObjects() {
        // docs/cases.md P05: category 80, 31 → 80, 6x pre-issuing data (6 bytes), 83 → status 00, SW 90 00.
        let p05 = run(["decode", "atr", "3B 8E 80 01 80 31 80 66 B1 84 0C 01 6E 01 83 00 90 00 1C"])
        #expect(p05.out.contains("  compact-TLV 31: card service data 80\n"))
        #expect(p05.out.contains("  compact-TLV 66: pre-issuing data B1 84 0C 01 6E 01\n"))
        #expect(p05.out.contains("  compact-TLV 83: status indicator 00 90 00 (life cycle status 00, SW 90 00)\n"))
        // docs/cases.md P06: third byte C0 = chaining and extended Lc/Le; 73 C8 40 00: neither.
        let both = run(["decode", "atr", "3B 85 80 01 80 73 C0 21 C0 D6"])
        #expect(both.out.contains("  compact-TLV 73: card capabilities C0 21 C0 (command chaining, extended Lc/Le)\n"))
        let neither = run(["decode", "atr", "3B 85 80 01 80 73 C8 40 00 7F"])
        #expect(neither.out.contains("(neither command chaining nor extended Lc/Le)"))
    }

    @Test func decodeATRWithBadChecksumSaysSo() {
        // The ISO 14443-4 ATR of docs/cases.md P05 with TCK changed from 01 to 02.
        let result = run(["decode", "atr", "3B 80 80 01 02"])
        #expect(result.status == 0)
        #expect(result.out.hasSuffix("historical bytes: none\nTCK 02 invalid: expected 01\n"))
        // The MIFARE Classic 1K ATR of docs/cases.md P05 with TCK 6B for 6A.
        let mifare = run(["decode", "atr", "--json", "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6B"])
        #expect(mifare.status == 0)
        #expect(mifare.out.contains(#""checksumValid": false,\#n  "expectedTCK": "6A","#))
        #expect(mifare.out.contains(#""warnings": [\#n    "TCK 6B invalid: expected 6A"\#n  ]"#))
    }

    @Test func decodeATRIgnoresTheSWAfterIt() {
        // docs/cases.md P05 MIFARE Classic 1K, copied with the SW 90 00 of the exchange.
        let atr = "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A"
        let text = run(["decode", "atr", atr, "90 00"])
        #expect(text.status == 0, "\(text.err)")
        #expect(text.out.hasSuffix("TCK 6A (valid)\n2 bytes after the ATR ignored: 90 00\n"))
        #expect(text.out.contains("name 00 01 (MIFARE Classic 1K)"))
        let json = run(["decode", "atr", "--json", atr, "90 00"])
        #expect(json.out.contains(#""ignoredAfterATR": "9000","#))
        #expect(json.out.contains(#""historicalBytes": "804F0CA00000030603000100000000""#))
        // Nothing after: no warning.
        #expect(run(["decode", "atr", "--json", atr]).out.contains(#""warnings": []"#))
    }

    @Test func decodeATRWithoutTCKWarns() {
        // docs/cases.md P05 ISO 14443-4 ATR 3B 80 80 01 01 with its TCK cut off: T=1 needs one.
        let result = run(["decode", "atr", "3B 80 80 01"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.hasSuffix("protocols: T=0, T=1\nhistorical bytes: none\nTCK missing: a protocol other than T=0 is announced, so the ATR should end with TCK 01\n"))
        // Interface bytes cut off are still a refusal.
        let cut = run(["decode", "atr", "3B F0 13 00"])
        #expect(cut.status == 1)
        #expect(cut.err.hasPrefix("secbridge: error: not a valid ATR: TC1 is announced; the ATR ended"))
    }

    @Test func decodeATRReportsMalformedHistoricalBytes() {
        // Card capabilities 73 announce 3 bytes; 2 follow. TCK 17 is right.
        let result = run(["decode", "atr", "3B 84 80 01 80 73 C0 21 17"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.hasSuffix("historical bytes: 80 73 C0 21\nTCK 17 (valid)\nhistorical bytes malformed: COMPACT-TLV 73 at byte 1 announces 3 bytes; only 2 remain\n"))
        let json = run(["decode", "atr", "--json", "3B 84 80 01 80 73 C0 21 17"])
        #expect(json.out.contains(#""warnings": [\#n    "historical bytes malformed: COMPACT-TLV 73 at byte 1 announces 3 bytes; only 2 remain"\#n  ]"#))
    }

    @Test func decodeTLVJSONFromP02() {
        // docs/cases.md P02: the FCP of an IsoApplet SELECT.
        let result = run(["decode", "tlv", "--json", "6F 15 81 02 02 00 82 01 01 83 02 44 02 86 08 FF 90 90 90 90 90 90 00"])
        #expect(result.status == 0)
        #expect(result.out == """
            [
              {
                "tag": "6F",
                "length": 21,
                "meaning": "FCI template (file control information)",
                "children": [
                  {
                    "tag": "81",
                    "length": 2,
                    "meaning": "total file size (with structural information): 512 bytes",
                    "value": "0200"
                  },
                  {
                    "tag": "82",
                    "length": 1,
                    "meaning": "file descriptor: not shareable, working EF, transparent",
                    "value": "01"
                  },
                  {
                    "tag": "83",
                    "length": 2,
                    "meaning": "file identifier",
                    "value": "4402"
                  },
                  {
                    "tag": "86",
                    "length": 8,
                    "meaning": "security attributes (proprietary format)",
                    "value": "FF90909090909000"
                  }
                ]
              }
            ]

            """)
    }

    @Test func decodeTLVRejectsIndefiniteLength() {
        // docs/cases.md P07: 80 is the indefinite form, not allowed in ISO 7816-4 data objects.
        let result = run(["decode", "tlv", "61 80 4F 0B"])
        #expect(result.status == 1)
        #expect(result.err.hasPrefix("secbridge: error: not valid BER-TLV: "))
    }

    @Test func decodeTLVShowsAMalformedConstructedValueRaw() {
        // An FCI whose proprietary template A5 holds a DF name 84 announcing 5 bytes with 2 present.
        let text = run(["decode", "tlv", "6F 06 A5 04 84 05 A0 00"])
        #expect(text.status == 0, "\(text.err)")
        #expect(text.out == """
            6F (6 bytes) — FCI template (file control information)
              A5 (4 bytes): 84 05 A0 00 — proprietary information (constructed) [constructed, but the value is not BER-TLV (tag 84 announces 5 value bytes; only 2 remain); shown raw]

            """)
        let json = run(["decode", "tlv", "--json", "6F 06 A5 04 84 05 A0 00"])
        #expect(json.out.contains(#""value": "8405A000",\#n        "note": "constructed, but the value is not BER-TLV (tag 84 announces 5 value bytes; only 2 remain); shown raw""#))
    }

    @Test func decodeTLVFFIsPaddingUnlessAsked() {
        // FF 01 03 5A 01 42: a private-class constructed tag FF 01 holding 5A, or FF padding then tag 01.
        let padding = run(["decode", "tlv", "FF 01 03 5A 01 42 FF FF"])
        #expect(padding.status == 0, "\(padding.err)")
        #expect(padding.out == "01 (3 bytes): 5A 01 42\n")
        #expect(run(["decode", "tlv", "--ff", "padding", "FF 01 03 5A 01 42"]).out == padding.out)
        let tag = run(["decode", "tlv", "--ff", "tag", "00 FF 01 03 5A 01 42 00"])
        #expect(tag.status == 0, "\(tag.err)")
        #expect(tag.out == "FF 01 (3 bytes)\n  5A (1 byte): 42\n")
        let refused = run(["decode", "tlv", "--ff", "ignore", "00"])
        #expect(refused.status == 64)
        #expect(refused.err.hasPrefix("secbridge: error: --ff takes padding or tag, not 'ignore'\n"))
    }

    @Test func decodeResponseNamesTheFCP() {
        // The FCP of an MF: shareable DF, FID 3F 00, operational activated, security attributes 8B.
        let result = run(["decode", "response", "62 10 82 02 78 21 83 02 3F 00 8A 01 05 8B 03 2F 06 01 90 00"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out == """
            data (18 bytes) 62 10 82 02 78 21 83 02 3F 00 8A 01 05 8B 03 2F 06 01
              62 (16 bytes) — FCP template (file control parameters)
                82 (2 bytes): 78 21 — file descriptor: shareable, DF; data coding byte 21
                83 (2 bytes): 3F 00 — file identifier (the MF)
                8A (1 byte): 05 — life cycle status: 05 (operational state, activated)
                8B (3 bytes): 2F 06 01 — security attributes (referencing the expanded format)
            SW 90 00: normal processing, no further qualification

            """)
        let json = run(["decode", "response", "--json", "62 03 8A 01 0C 90 00"])
        #expect(json.out.contains(#""meaning": "life cycle status: 0C (termination state)""#))
        // Data that is not file control information gets no "tlv".
        #expect(!run(["decode", "response", "--json", "5A 01 42 90 00"]).out.contains("\"tlv\""))
    }

    @Test func decodeResponseShowsMeaning() {
        let result = run(["decode", "response", "--json", "6A82"])
        #expect(result.status == 0)
        #expect(result.out == """
            {
              "data": "",
              "sw": "6A82",
              "meaning": "file or application not found"
            }

            """)
    }
}

@Suite struct UsageErrorTests {
    @Test func oddHexIsAUsageErrorWithThePosition() {
        let result = run(["decode", "apdu", "00A4040"])
        #expect(result.status == 64)
        #expect(result.out == "")
        #expect(result.err.hasPrefix("secbridge: error: the input is not valid hex: "))
        #expect(result.err.hasSuffix("""
            USAGE: secbridge decode apdu [--json] HEX…
            Run 'secbridge decode apdu --help' for more information.

            """))
    }

    @Test func lcNotMatchingDataIsRejectedBeforeConnecting() {
        // Lc says 7 bytes, 2 follow.
        let result = run(["send", "00 A4 04 00 07 D2 76"])
        #expect(result.status == 64)
        #expect(result.err.hasPrefix("secbridge: error: APDU 1 (00 A4 04 00 07 D2 76) is malformed: "))
    }

    @Test func spuriousShortLcZeroIsRejected() {
        // docs/cases.md P03: 00 B2 01 14 00 00 carries a spurious Lc 00.
        let result = run(["send", "00B201140000"])
        #expect(result.status == 64)
        #expect(result.err.contains("short Lc of 00"))
    }

    @Test func unknownCommandAndOption() {
        let unknown = run(["frobnicate"])
        #expect(unknown.status == 64)
        #expect(unknown.err == """
            secbridge: error: unknown command 'frobnicate'
            USAGE: secbridge <subcommand>
            Run 'secbridge --help' for more information.

            """)
        let option = run(["readers", "--colour"])
        #expect(option.status == 64)
        #expect(option.err.hasPrefix("secbridge: error: unknown option '--colour'\n"))
    }

    @Test func missingValuesAndBadNumbers() {
        #expect(run(["send", "--reader"]).err.hasPrefix("secbridge: error: --reader needs a value (NAME|INDEX)\n"))
        let count = run(["monitor", "--count", "0"])
        #expect(count.status == 64)
        #expect(count.err.hasPrefix("secbridge: error: --count takes a whole number from 1 to 1000000, not '0'\n"))
        let timeout = run(["monitor", "--timeout", "soon"])
        #expect(timeout.status == 64)
        #expect(timeout.err.hasPrefix("secbridge: error: --timeout takes a number of seconds greater than 0 and at most 86400, not 'soon'\n"))
    }

    @Test func sendWithoutAPDU() {
        let result = run(["send"])
        #expect(result.status == 64)
        #expect(result.err.hasPrefix("secbridge: error: give at least one APDU in hex, e.g. `secbridge send 00 A4 04 00 00`\n"))
    }

    @Test func sendSplitsArgumentsIntoAPDUs() throws {
        #expect(try SecbridgeCLI.apdus(from: ["00", "A4", "04", "00", "00"]) == [[0x00, 0xA4, 0x04, 0x00, 0x00]])
        #expect(try SecbridgeCLI.apdus(from: ["00A4040000", "00 B0 00 00 00"]) == [[0x00, 0xA4, 0x04, 0x00, 0x00], [0x00, 0xB0, 0x00, 0x00, 0x00]])
        // Single bytes group until a longer argument: three APDUs.
        #expect(try SecbridgeCLI.apdus(from: ["00", "A4", "04", "00", "00", "00B0000000", "00", "84", "00", "00", "08"]).count == 3)
        #expect(throws: CLIError.self) { try SecbridgeCLI.apdus(from: ["0x"]) }
    }

    @Test func simulateRejectsBadOptionsBeforeStarting() {
        let personality = run(["simulate", "--personality", "acr1252"])
        #expect(personality.status == 64)
        #expect(personality.err.hasPrefix("secbridge: error: unknown personality 'acr1252'; use one of ccid-escape-enabled, ccid-escape-disabled, acs-driver, legacy-t0, atr-whole-ats, empty-target-wait, acr122u203, acr122u214, acr122u215, acr122u216, clone, touchatag\n"))
        let uid = run(["simulate", "--card", "04A1B2"])
        #expect(uid.status == 64)
        #expect(uid.err.hasPrefix("secbridge: error: --card takes a UID of 4, 7 or 10 bytes (ISO/IEC 14443-3), not 3\n"))
        #expect(run(["simulate", "--readers", "3"]).status == 64)
    }

    @Test func groupNeedsSubcommand() {
        let result = run(["decode"])
        #expect(result.status == 64)
        #expect(result.err.hasPrefix("secbridge: error: 'secbridge decode' needs a subcommand\n"))
    }

    @Test func scriptErrorsNameFileAndLine() throws {
        #expect(throws: CLIError.failure("script.txt:3: 'hello' is not an APDU in hex ('h' at character 0 is not a hex digit (0-9, A-F) or a separator (space, colon, comma)); write one APDU per line, or reset, exit, or a # comment")) {
            _ = try APDUScript(parsing: "# comment\n00 A4 00 0C 02 3F 00\nhello\n", fileName: "script.txt")
        }
        let script = try APDUScript(parsing: "00A4000C023F00 # select MF\n\nreset\n00 B0 00 00 00 // read\nexit\n00 B0 00 00 00\n", fileName: "s")
        #expect(script.steps == [
            .apdu([0x00, 0xA4, 0x00, 0x0C, 0x02, 0x3F, 0x00], line: 1), .reset(line: 3),
            .apdu([0x00, 0xB0, 0x00, 0x00, 0x00], line: 4),
        ])
    }
}

@Suite struct HelpTests {
    @Test func rootHelpListsEveryCommand() {
        let result = run(["--help"])
        #expect(result.status == 0)
        for command in ["readers", "send", "decode", "monitor", "run", "replay"] {
            #expect(result.out.contains("\n  \(command) "), "\(command) missing from help")
        }
        #expect(result.out.hasPrefix("OVERVIEW: PC/SC and NFC credential sessions on Linux"))
    }

    @Test(arguments: [
        ["readers"], ["send"], ["decode"], ["decode", "apdu"], ["decode", "response"], ["decode", "atr"],
        ["decode", "tlv"], ["monitor"], ["run"], ["replay"],
    ])
    func everyCommandHasHelp(_ path: [String]) {
        let result = run(path + ["--help"])
        #expect(result.status == 0)
        #expect(result.out.hasPrefix("OVERVIEW: "))
        #expect(result.out.contains("USAGE: secbridge \(path.joined(separator: " "))"))
        #expect(result.out.contains("-h, --help"))
    }

    @Test func leanBinaryListsToolCommandsAsTheyAre() {
        // `secbridge` names the commands of `secbridge-tools` in its help without linking them:
        // the names and abstracts must be the real ones, in the same order.
        let real = SecbridgeTools.commands.map { ($0.name, $0.abstract) }
        let summaries = SecbridgeCLI.toolCommandSummaries.map { ($0.name, $0.abstract) }
        #expect(real.map(\.0) == summaries.map(\.0))
        #expect(real.map(\.1) == summaries.map(\.1))
    }

    @Test func readerSelectionP13() throws {
        let readers = [
            "Microchip SEC1210 [CCID Interface] (12345678) 00 00",
            "Microchip SEC1210 [CCID Interface] (12345678) 00 01",
            "ACS ACR122U PICC Interface 00 00",
        ]
        #expect(try selectReader("2", in: readers) == readers[2])
        #expect(try selectReader("acr122", in: readers) == readers[2])
        #expect(try selectReader("00 01", in: readers) == readers[1])
        #expect(throws: CLIError.self) { try selectReader("SEC1210", in: readers) }  // ambiguous
        #expect(throws: CLIError.self) { try selectReader("7", in: readers) }
        #expect(throws: CLIError.self) { try selectReader("gemalto", in: readers) }
        #expect(throws: CLIError.self) { try selectReader(nil, in: []) }
        #expect(try selectReader(nil, in: readers, preferring: { $0.contains("ACR122") }) == readers[2])
    }
}
