import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// The exact `--help` of every command of the full tree (`secbridge-tools`, which `secbridge`
/// shares), one usage error per command, and the refusal of each kind of option value.
///
/// Goldens, generated once from the built tool and read: a change of any help text, usage line or
/// message fails here; update the golden with the change, on purpose.
@Suite struct HelpGoldenTests {
    struct Golden: Sendable, CustomTestStringConvertible {
        /// The command's words after `secbridge`.
        var path: [String]
        /// `secbridge PATH --help`, on standard output, exit 0.
        var help: String
        /// `secbridge PATH --colour`, on standard error, exit 64.
        var unknownOption: String
        var testDescription: String { path.isEmpty ? "secbridge" : path.joined(separator: " ") }
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        var kind: String
        var arguments: [String]
        /// Standard error, exit 64.
        var error: String
        var testDescription: String { "\(kind): \(arguments.joined(separator: " "))" }
    }

    @Test(arguments: goldens) func helpIsTheGolden(_ golden: Golden) {
        let result = run(golden.path + ["--help"])
        #expect(result.status == 0)
        #expect(result.err == "")
        #expect(result.out == golden.help)
    }

    @Test(arguments: goldens) func unknownOptionIsTheGolden(_ golden: Golden) {
        let result = run(golden.path + ["--colour"])
        #expect(result.status == 64)
        #expect(result.out == "")
        #expect(result.err == golden.unknownOption)
    }

    /// A command added to the tree needs its golden here.
    @Test func everyCommandHasAGolden() {
        func paths(_ command: Command, _ path: [String]) -> [[String]] {
            [path] + command.subcommands.flatMap { paths($0, path + [$0.name]) }
        }
        let tree = paths(SecbridgeCLI.makeRoot(toolCommands: SecbridgeTools.commands), [])
        #expect(tree == Self.goldens.map(\.path))
    }

    /// The parser refuses a value that does not fit its option's kind before the command runs
    /// (nothing here reaches PC/SC or the file system beyond a stat).
    @Test(arguments: refusals) func valueIsRefusedBeforeRunning(_ refusal: Refusal) {
        let result = run(refusal.arguments)
        #expect(result.status == 64)
        #expect(result.out == "")
        #expect(result.err == refusal.error)
        #expect(!result.err.contains("A0A1A2A3A4"), "a key is never shown")
    }

    @Test func helpWinsOverABadValue() {
        let result = run(["monitor", "--count", "0", "--help"])
        #expect(result.status == 0)
        #expect(result.out == Self.goldens.first { $0.path == ["monitor"] }?.help)
    }

    static let refusals: [Refusal] = [
        Refusal(kind: "integer", arguments: ["monitor", "--count", "0"], error: #"""
            secbridge: error: --count takes a whole number from 1 to 1000000, not '0'
            USAGE: secbridge monitor [--count N] [--timeout SECONDS] [--liveness SECONDS] [--json] [--record FILE]
            Run 'secbridge monitor --help' for more information.

            """#),
        Refusal(kind: "integer, inline value", arguments: ["monitor", "--count=1000001"], error: #"""
            secbridge: error: --count takes a whole number from 1 to 1000000, not '1000001'
            USAGE: secbridge monitor [--count N] [--timeout SECONDS] [--liveness SECONDS] [--json] [--record FILE]
            Run 'secbridge monitor --help' for more information.

            """#),
        Refusal(kind: "integer 1|2", arguments: ["simulate", "--readers", "3"], error: #"""
            secbridge: error: --readers takes a whole number from 1 to 2, not '3'
            USAGE: secbridge simulate [--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID [--tag-type TYPE] [--tag-uri URI | --tag-text TEXT] [--tag-key HEX12]] [--terminal SCRIPT] [--timeout SECONDS] [--time-scale FACTOR] [--pn532-serial] [--in-process] [--json]
            Run 'secbridge simulate --help' for more information.

            """#),
        Refusal(kind: "seconds", arguments: ["monitor", "--timeout", "soon"], error: #"""
            secbridge: error: --timeout takes a number of seconds greater than 0 and at most 86400, not 'soon'
            USAGE: secbridge monitor [--count N] [--timeout SECONDS] [--liveness SECONDS] [--json] [--record FILE]
            Run 'secbridge monitor --help' for more information.

            """#),
        Refusal(kind: "decimal", arguments: ["simulate", "--time-scale", "0"], error: #"""
            secbridge: error: --time-scale takes a decimal number above 0.002 and at most 1 (1 is real time, 0.01 a hundred times faster), not '0'
            USAGE: secbridge simulate [--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID [--tag-type TYPE] [--tag-uri URI | --tag-text TEXT] [--tag-key HEX12]] [--terminal SCRIPT] [--timeout SECONDS] [--time-scale FACTOR] [--pn532-serial] [--in-process] [--json]
            Run 'secbridge simulate --help' for more information.

            """#),
        Refusal(kind: "decimal, no exponent", arguments: ["demo", "--time-scale", "1e2"], error: #"""
            secbridge: error: --time-scale takes a decimal number above 0.002 and at most 1 (1 is real time, 0.01 a hundred times faster), not '1e2'
            USAGE: secbridge demo [--record FILE] [--credential FILE] [--time-scale FACTOR] [--in-process] [--json]
            Run 'secbridge demo --help' for more information.

            """#),
        Refusal(kind: "choice", arguments: ["replay", "--mode", "fast", "session.trn"], error: #"""
            secbridge: error: --mode takes strict, ignore-timing or wildcard, not 'fast'
            USAGE: secbridge replay [--against live|credential:FILE|simulated] [--mode strict|ignore-timing|wildcard] [--reader NAME|INDEX] [--json] [--record FILE] FILE
            Run 'secbridge replay --help' for more information.

            """#),
        Refusal(kind: "choice with a noun", arguments: ["simulate", "--personality", "acr1252"], error: #"""
            secbridge: error: unknown personality 'acr1252'; use one of ccid-escape-enabled, ccid-escape-disabled, acs-driver, legacy-t0, atr-whole-ats, empty-target-wait, acr122u203, acr122u214, acr122u215, acr122u216, clone, touchatag
            USAGE: secbridge simulate [--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID [--tag-type TYPE] [--tag-uri URI | --tag-text TEXT] [--tag-key HEX12]] [--terminal SCRIPT] [--timeout SECONDS] [--time-scale FACTOR] [--pn532-serial] [--in-process] [--json]
            Run 'secbridge simulate --help' for more information.

            """#),
        Refusal(kind: "choice of terminal scripts", arguments: ["simulate", "--terminal", "ios"], error: #"""
            secbridge: error: unknown terminal script 'ios'; use one of android-t4t-read, android11-t4t-read, android-t4t-write, ios-t4t-read, emv-payment, access-control, android-t4t-recording, ios-t4t-recording, android-beam-p2p
            USAGE: secbridge simulate [--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID [--tag-type TYPE] [--tag-uri URI | --tag-text TEXT] [--tag-key HEX12]] [--terminal SCRIPT] [--timeout SECONDS] [--time-scale FACTOR] [--pn532-serial] [--in-process] [--json]
            Run 'secbridge simulate --help' for more information.

            """#),
        Refusal(kind: "hex of a wrong length", arguments: ["simulate", "--card", "04A1B2"], error: #"""
            secbridge: error: --card takes a UID of 4, 7 or 10 bytes (ISO/IEC 14443-3), not 3
            USAGE: secbridge simulate [--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID [--tag-type TYPE] [--tag-uri URI | --tag-text TEXT] [--tag-key HEX12]] [--terminal SCRIPT] [--timeout SECONDS] [--time-scale FACTOR] [--pn532-serial] [--in-process] [--json]
            Run 'secbridge simulate --help' for more information.

            """#),
        Refusal(kind: "not hex", arguments: ["simulate", "--tag", "04:A1:B2:CZ"], error: #"""
            secbridge: error: --tag is not hex: 'Z' at character 10 is not a hex digit (0-9, A-F) or a separator (space, colon, comma)
            USAGE: secbridge simulate [--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID [--tag-type TYPE] [--tag-uri URI | --tag-text TEXT] [--tag-key HEX12]] [--terminal SCRIPT] [--timeout SECONDS] [--time-scale FACTOR] [--pn532-serial] [--in-process] [--json]
            Run 'secbridge simulate --help' for more information.

            """#),
        Refusal(kind: "secret hex: the key is never shown", arguments: ["simulate", "--tag", "04A1B2C3", "--tag-type", "classic1k", "--tag-key", "A0A1A2A3A4"], error: #"""
            secbridge: error: --tag-key takes 6 bytes of hex (12 digits), e.g. FFFFFFFFFFFF
            USAGE: secbridge simulate [--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID [--tag-type TYPE] [--tag-uri URI | --tag-text TEXT] [--tag-key HEX12]] [--terminal SCRIPT] [--timeout SECONDS] [--time-scale FACTOR] [--pn532-serial] [--in-process] [--json]
            Run 'secbridge simulate --help' for more information.

            """#),
        Refusal(kind: "existing file", arguments: ["emulate", "--credential", "/nonexistent/credential.json"], error: #"""
            secbridge: error: --credential takes an existing file, not '/nonexistent/credential.json' (No such file or directory)
            USAGE: secbridge emulate --credential FILE [--reader NAME|INDEX | --device tty:PATH] [--yes] [--keep | --once] [--record FILE] [--json] [--show-secrets]
            Run 'secbridge emulate --help' for more information.

            """#),
        Refusal(kind: "existing file, not a directory", arguments: ["demo", "--credential", "/"], error: #"""
            secbridge: error: --credential takes an existing file, not '/' (a directory)
            USAGE: secbridge demo [--record FILE] [--credential FILE] [--time-scale FACTOR] [--in-process] [--json]
            Run 'secbridge demo --help' for more information.

            """#),
        Refusal(kind: "reader", arguments: ["send", "--reader", "", "00A4040000"], error: #"""
            secbridge: error: --reader needs a reader index or part of a reader name, not an empty string
            USAGE: secbridge send [--reader NAME|INDEX] [--raw | --stop-at-ne] [--wait SECONDS] [--json] [--record FILE] [--show-secrets] HEX…
            Run 'secbridge send --help' for more information.

            """#),
        Refusal(kind: "first given first", arguments: ["monitor", "--timeout", "0", "--count", "0"], error: #"""
            secbridge: error: --timeout takes a number of seconds greater than 0 and at most 86400, not '0'
            USAGE: secbridge monitor [--count N] [--timeout SECONDS] [--liveness SECONDS] [--json] [--record FILE]
            Run 'secbridge monitor --help' for more information.

            """#),
    ]

    static let goldens: [Golden] = [
        Golden(
            path: [],
            help: #"""
            OVERVIEW: PC/SC and NFC credential sessions on Linux: readers, APDUs, transcripts.

            USAGE: secbridge <subcommand>

            Talks to smart cards and NFC readers through pcscd (pcsc-lite). Set PCSCLITE_CSOCK_NAME to
            use a pcscd other than the system one. SECBRIDGE_CALL_TIMEOUT bounds every blocking PC/SC
            call (seconds, 1 to 3600; default 40). SECBRIDGE_ACR122_IFD names the simulated ACR122U's
            pcscd driver library for simulate, demo and replay (default: beside the binary, then
            ../lib/secbridge from the binary's directory, then the source tree's build directory).

            Exit status: 0 success, 1 failure, 64 usage error.

            SUBCOMMANDS:
              readers      List the readers pcscd knows, with card state, ATR and protocol.
              send         Send APDUs to the card in a reader, with ISO 7816-4 handling.
              control      Send escape commands and pseudo-APDUs to a reader, with or without a card.
              decode       Decode a command APDU, a response, an ATR or BER-TLV data, given in hex.
              monitor      Show reader and card events as they happen.
              run          Send the APDUs of a script file to a card (reads pcsc-tools' scriptor files).
              shell        An interactive session on a reader: APDUs, pseudo-APDUs, escape commands, reset, with history.
              replay       Send a transcript's recorded commands to a live reader or a credential and compare the answers.
              simulate     Run simulated ACR122U readers in a private pcscd, for any PC/SC program to use.
              credentials  List the credentials a session knows, from credential files.
              emulate      Present a credential to a terminal: card emulation on an ACR122U.
              read         A reader session: read the presented card's UID and ATS, SELECT an AID, or read its NDEF message.
              demo         The main job: a credential session emulating an NDEF tag on one simulated ACR122U, read by a second.
              transcript   Read, compare, redact and import transcripts (Fixtures/README.md).
              capture      Run any PC/SC program under pcsc-lite's spy and save what it did as a transcript.
              selftest     Run a fixed sequence on an ACR122U in both roles and save it as a transcript bundle; replay bundles against the simulator.
              doctor       Check pcscd, the ACR122U, its driver, escape commands and firmware, and say how to fix what fails.
              reset        Bring an ACR122U back to a usable state after an interrupted emulation.
              write-ndef   Write an NDEF message (a URI or a text record) to an NFC Forum Type 2 Tag.
              write-dump   Restore a storage-card dump in libnfc's .mfd layout (MIFARE Classic, Ultralight, NTAG21x), rules checked first.
              serve        Present a credential as the card in a vpcd reader (vsmartcard), to a pcscd here or on another host.

              See 'secbridge <subcommand> --help' for details.

            OPTIONS:
              --version   Show the version.
              -h, --help  Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge <subcommand>
            Run 'secbridge --help' for more information.

            """#),
        Golden(
            path: ["readers"],
            help: #"""
            OVERVIEW: List the readers pcscd knows, with card state, ATR and protocol.

            USAGE: secbridge readers [--json] [--record FILE]

            Each reader is shown with its index (usable as --reader INDEX in other commands), its
            state, and for a present card its ATR and the protocol a shared connection negotiates
            (decided from the ATR as pcscd does: T=1 when offered, else T=0; nothing is connected).

            Example:
              $ secbridge readers
              0: Virtual PCD 00 00
                 state: present  protocol: T=1
                 ATR: 3B 80 80 01 01

            OPTIONS:
              --json           Print a JSON array of {index, name, state, atr, protocol}.
              --record <FILE>  Record what was seen (reader-added and card-inserted events) to a transcript FILE.
              -h, --help       Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge readers [--json] [--record FILE]
            Run 'secbridge readers --help' for more information.

            """#),
        Golden(
            path: ["send"],
            help: #"""
            OVERVIEW: Send APDUs to the card in a reader, with ISO 7816-4 handling.

            USAGE: secbridge send [--reader NAME|INDEX] [--raw | --stop-at-ne] [--wait SECONDS] [--json] [--record FILE] [--show-secrets] HEX…

            Consecutive single-byte arguments form one APDU (00 A4 04 00 00); any other argument is
            an APDU of its own ("00A4040000" "00B0000000", or quoted with spaces). Hex may use
            spaces, colons or 0x prefixes.

            ISO 7816-4 handling is on by default: 61xx is answered with GET RESPONSE, 6Cxx by sending
            again with the right Le, long commands use extended length or chaining as the card and
            reader allow. A 61xx chain is followed to its end whatever Le said (as OpenSC and
            javax.smartcardio do: a 2847-byte object read with Le 00 arrives whole), at most 256
            GET RESPONSEs; --stop-at-ne stops once Le's bytes arrived and shows the card's 61xx.
            Reader pseudo-APDUs (CLA FF) always go through untouched. --raw turns the handling off.
            An APDU that carries a PIN or a key can be given as env:NAME (an environment variable),
            file:PATH (the file's first line) or - (one line of standard input), so that it does not
            show in the process list; a script (`secbridge run FILE`, `run -`) keeps it out too.
            Each raw exchange is shown (> to the card, < from it), then the status word's meaning;
            PINs, keys and cryptograms are shown [REDACTED n], as in a --record transcript, here and
            in --json unless --show-secrets, and always in error messages (docs/secrets.md).
            The exit status is 0 when every APDU was exchanged, whatever its SW. It is 1 when an
            exchange failed: a card that answered nothing (0 bytes), a GET RESPONSE chain broken by
            an error SW (the data before it is shown as partial), the card removed or reset during
            the exchange; the exchanges before the failure are still shown, in --json too (with an
            "error" member), and recorded.

            Example:
              $ secbridge send 00 A4 04 00 07 D2 76 00 00 85 01 01 00
              > 00 A4 04 00 07 D2 76 00 00 85 01 01 00
              < 6A 82
                SW 6A 82: file or application not found

            OPTIONS:
              -r, --reader <NAME|INDEX>  The reader: an index from `secbridge readers` or part of its name.
              --raw                      Send the bytes as they are: no GET RESPONSE, no Le correction, no chaining.
              --stop-at-ne               Follow 61xx only until Le's bytes arrived; the card's remaining 61xx is shown.
              --wait <SECONDS>           Wait up to SECONDS (at most 3600) for a card when none is there.
              --json                     Print a JSON object {reader, protocol, exchanges: [{command, response, data, sw, meaning, raw}], error}; a broken GET RESPONSE chain gives {command, partial, sw, raw}.
              --record <FILE>            Record every exchange to a transcript FILE.
              --show-secrets             Print PINs, keys, cryptograms and read-back MIFARE keys as sent; by default they are [REDACTED n], as in transcripts (docs/secrets.md).
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge send [--reader NAME|INDEX] [--raw | --stop-at-ne] [--wait SECONDS] [--json] [--record FILE] [--show-secrets] HEX…
            Run 'secbridge send --help' for more information.

            """#),
        Golden(
            path: ["control"],
            help: #"""
            OVERVIEW: Send escape commands and pseudo-APDUs to a reader, with or without a card.

            USAGE: secbridge control [--reader NAME|INDEX] [--code HEX4] [--json] [--record FILE] [--show-secrets] HEX…

            Opens a DIRECT connection to the reader (SCardConnect with SCARD_SHARE_DIRECT: no card
            needed) and sends each argument with SCardControl. Without --code the control code is the
            reader's escape command: the one its feature list announces (CM_IOCTL_GET_FEATURE_REQUEST,
            FEATURE_CCID_ESC_COMMAND, tag 0x13: 0x42000001 for libccid with escape commands enabled,
            0x42000DAC for ACS's acsccid). Arguments form APDUs as in `secbridge send`.

            On an ACR122U this carries the reader's pseudo-APDUs (FF 00 48 00 00 firmware string,
            FF 00 51 PP 00 PICC operating parameter, FF 00 40 … LEDs) and PN532 commands through
            Direct Transmit (FF 00 00 00 Lc D4 …). Answers are shown as the reader gives them: a
            pseudo-APDU's status word is its last two bytes, the firmware string has none. Nothing
            is restored afterwards: a setting you change stays changed (`secbridge reset` puts an
            ACR122U back). A PIN, key or cryptogram inside a frame (a VERIFY in InDataExchange, a
            LOAD KEY) is shown [REDACTED n], as a --record transcript has it, unless --show-secrets
            (docs/secrets.md).

            Example:
              $ secbridge control FF 00 48 00 00
              > FF 00 48 00 00
              < 41 43 52 31 32 32 55 32 30 37
                firmware: ACR122U207

            OPTIONS:
              -r, --reader <NAME|INDEX>  The reader: an index from `secbridge readers` or part of its name.
              --code <HEX4>              The SCardControl code, e.g. 42000001 (default: the escape code the reader announces).
              --json                     Print a JSON object {reader, code, exchanges: [{command, response}]}.
              --record <FILE>            Record every exchange to a transcript FILE.
              --show-secrets             Print PINs, keys, cryptograms and read-back MIFARE keys as sent; by default they are [REDACTED n], as in transcripts (docs/secrets.md).
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge control [--reader NAME|INDEX] [--code HEX4] [--json] [--record FILE] [--show-secrets] HEX…
            Run 'secbridge control --help' for more information.

            """#),
        Golden(
            path: ["decode"],
            help: #"""
            OVERVIEW: Decode a command APDU, a response, an ATR or BER-TLV data, given in hex.

            USAGE: secbridge decode <subcommand>

            Nothing is sent: decoding works without pcscd or a reader.

            Examples:
              $ secbridge decode apdu 00 A4 04 00 07 D2 76 00 00 85 01 01 00
              $ secbridge decode response 6A 82
              $ secbridge decode atr 3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A
              $ secbridge decode tlv --json 6F 15 81 02 02 00 82 01 01 83 02 44 02 86 08 FF 90 90 90 90 90 90 00

            SUBCOMMANDS:
              apdu      Decode a command APDU: its ISO 7816-4 case, header, Nc and Ne.
              response  Decode a response APDU: data and status word with its meaning.
              atr       Decode an ATR: interface bytes, protocols, historical bytes, TCK.
              tlv       Decode BER-TLV data objects (ISO/IEC 7816-4 §5.2), nested.

              See 'secbridge decode <subcommand> --help' for details.

            OPTIONS:
              -h, --help  Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge decode <subcommand>
            Run 'secbridge decode --help' for more information.

            """#),
        Golden(
            path: ["decode", "apdu"],
            help: #"""
            OVERVIEW: Decode a command APDU: its ISO 7816-4 case, header, Nc and Ne.

            USAGE: secbridge decode apdu [--json] HEX…

            The hex may be split over several arguments and use spaces, colons or 0x prefixes.

            OPTIONS:
              --json      Print JSON: {case, cla, ins, p1, p2, nc, ne, data}. Hex strings are uppercase without spaces.
              -h, --help  Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge decode apdu [--json] HEX…
            Run 'secbridge decode apdu --help' for more information.

            """#),
        Golden(
            path: ["decode", "response"],
            help: #"""
            OVERVIEW: Decode a response APDU: data and status word with its meaning.

            USAGE: secbridge decode response [--json] HEX…

            The hex may be split over several arguments and use spaces, colons or 0x prefixes.

            OPTIONS:
              --json      Print JSON: {data, sw, meaning, tlv (when the data is FCP, FMD or FCI)}. Hex strings are uppercase without spaces.
              -h, --help  Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge decode response [--json] HEX…
            Run 'secbridge decode response --help' for more information.

            """#),
        Golden(
            path: ["decode", "atr"],
            help: #"""
            OVERVIEW: Decode an ATR: interface bytes, protocols, historical bytes, TCK.

            USAGE: secbridge decode atr [--json] HEX…

            The hex may be split over several arguments and use spaces, colons or 0x prefixes.

            What can still be read is decoded and the rest said: bytes after a complete ATR
            (an ATR copied with its SW 90 00) are reported and ignored, a wrong TCK is named
            with the expected one, a TCK missing where a protocol other than T=0 is announced
            and malformed historical bytes are warnings.

            OPTIONS:
              --json      Print JSON: {convention, t0, interfaceBytes, protocols, historicalBytes, tck, checksumValid, …, warnings}. Hex strings are uppercase without spaces.
              -h, --help  Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge decode atr [--json] HEX…
            Run 'secbridge decode atr --help' for more information.

            """#),
        Golden(
            path: ["decode", "tlv"],
            help: #"""
            OVERVIEW: Decode BER-TLV data objects (ISO/IEC 7816-4 §5.2), nested.

            USAGE: secbridge decode tlv [--json] [--ff padding|tag] HEX…

            The hex may be split over several arguments and use spaces, colons or 0x prefixes.

            ISO/IEC 7816-4 §5.2.2 lets 00 and FF bytes stand before, between and after objects
            as padding. 00 is always skipped there. FF is skipped too by default (--ff padding),
            since card responses and files padded with FF are common; with --ff tag an FF
            starts a private-class constructed tag (FF 01 …). A constructed object whose value
            is not BER-TLV is shown with its raw value and a note. Inside 62 (FCP), 64 (FMD)
            and 6F (FCI) the common parameters are named (ISO/IEC 7816-4 §7.4.3).

            OPTIONS:
              --json              Print JSON: [{tag, length, meaning, value, note} or {tag, length, meaning, children}]. Hex strings are uppercase without spaces.
              --ff <padding|tag>  What FF between objects is: padding (the default) or the first byte of a tag.
              -h, --help          Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge decode tlv [--json] [--ff padding|tag] HEX…
            Run 'secbridge decode tlv --help' for more information.

            """#),
        Golden(
            path: ["monitor"],
            help: #"""
            OVERVIEW: Show reader and card events as they happen.

            USAGE: secbridge monitor [--count N] [--timeout SECONDS] [--liveness SECONDS] [--json] [--record FILE]

            Prints readers and cards already present, then each reader attach/detach and card
            insert/remove until interrupted (Ctrl-C), until N events were shown (--count), or until
            SECONDS passed (--timeout). A reader pcscd keeps listed but cannot reach (unplugged, its
            driver reporting no device) shows `reader-unavailable`, and `reader-available` when it
            answers again; its card leaves and comes back with it. When pcscd stops or restarts, monitoring reports it and resumes
            by itself once pcscd is back. A pcscd that is still there but answers nothing (stopped
            with SIGSTOP, or stuck in a driver) looks like a quiet one to a waiting client, so every
            --liveness SECONDS (default 10) monitor asks pcscd for its readers on a connection of its
            own; no answer within that time prints `service-unresponsive`, and
            `service-answering` follows when the answer comes. With no reader at all at the start,
            a note on standard error says that monitor waits for the first one.

            Example:
              $ secbridge monitor --count 2
              reader-attached "Virtual PCD 00 00"
              card-inserted "Virtual PCD 00 00" ATR 3B 80 80 01 01

            OPTIONS:
              --count <N>           Stop after N events (1–1000000).
              --timeout <SECONDS>   Stop after SECONDS (at most 86400); exit 0.
              --liveness <SECONDS>  Ask pcscd every SECONDS (default 10, 0.1 to 3600) and say so when it gives no answer within that time.
              --json                Print one JSON object per line: {event, reader, atr, time}.
              --record <FILE>       Record the events to a transcript FILE.
              -h, --help            Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge monitor [--count N] [--timeout SECONDS] [--liveness SECONDS] [--json] [--record FILE]
            Run 'secbridge monitor --help' for more information.

            """#),
        Golden(
            path: ["run"],
            help: #"""
            OVERVIEW: Send the APDUs of a script file to a card (reads pcsc-tools' scriptor files).

            USAGE: secbridge run [--reader NAME|INDEX] [--raw] [--stop-on-error] [--wait SECONDS] [--code HEX4] [--json] [--record FILE] [--show-secrets] SCRIPT

            SCRIPT holds one APDU in hex per line; `#` and `//` start comments; `reset` resets the
            card (its ATR is shown) and `exit` stops, as in scriptor; `-` reads the script from
            standard input. Scripts speak the language of `secbridge shell` (its --help lists
            control, reader, record and help too), so `secbridge shell < SCRIPT` prints the same.
            Lines are read and run one at a time: a malformed line stops the script there, after
            the lines before it ran. ISO 7816-4 handling is on unless --raw (see `secbridge send
            --help`). The script runs inside one PC/SC transaction: no other program's command
            lands between its lines (a `reset` line keeps the transaction). From standard input,
            a pause of more than 0.2 s before the next line ends the transaction while it lasts,
            so other programs reach the card; it begins again with the next line (a note says so,
            and a card reset meanwhile stops the script). PINs, keys and cryptograms are printed
            [REDACTED n], as a --record transcript has them, unless --show-secrets
            (docs/secrets.md).

            Example script:
              # select the NFC Forum Type 4 Tag application
              00 A4 04 00 07 D2 76 00 00 85 01 01 00
              00 B0 00 00 0F   // read the capability container

            Exit status: 0 when every APDU was exchanged (with --stop-on-error: and every SW was
            90 00 or 61xx), 1 otherwise.

            OPTIONS:
              -r, --reader <NAME|INDEX>  The reader: an index from `secbridge readers` or part of its name.
              --raw                      Send the bytes as they are: no GET RESPONSE, no Le correction, no chaining.
              --stop-on-error            Stop at the first status word other than 90 00 or 61xx, and exit 1.
              --wait <SECONDS>           Wait up to SECONDS (at most 3600) for a card when none is there.
              --code <HEX4>              The SCardControl code, e.g. 42000001 (default: the escape code the reader announces).
              --json                     Print a JSON array, an object per line run: {line, command, response, sw, meaning} for an APDU (firmware instead of sw for FF 00 48 00 00), {line, control, command, response} for an escape command, {line, reset, atr}, {line, reader, atr}, {line, record} and {line, recorded}.
              --record <FILE>            Record every exchange to a transcript FILE.
              --show-secrets             Print PINs, keys, cryptograms and read-back MIFARE keys as sent; by default they are [REDACTED n], as in transcripts (docs/secrets.md).
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge run [--reader NAME|INDEX] [--raw] [--stop-on-error] [--wait SECONDS] [--code HEX4] [--json] [--record FILE] [--show-secrets] SCRIPT
            Run 'secbridge run --help' for more information.

            """#),
        Golden(
            path: ["shell"],
            help: #"""
            OVERVIEW: An interactive session on a reader: APDUs, pseudo-APDUs, escape commands, reset, with history.

            USAGE: secbridge shell [--reader NAME|INDEX | --device tty:PATH] [--raw] [--stop-on-error] [--wait SECONDS] [--code HEX4] [--record FILE] [--history FILE] [--show-secrets]

            Opens the reader (--reader, else the first with a card, else the first) and reads
            statements, one a line: on the card when there is one, else on the reader alone (a
            DIRECT connection, where pseudo-APDUs go as escape commands as `secbridge control`
            sends them). A card placed later is connected to by the first APDU that needs one.

            Statements (one a line; `#` and `//` start comments; keywords in any case):
              HEX…             an APDU in hex, e.g. 00 A4 04 00 07 D2 76 00 00 85 01 01 00
              FF …             a reader pseudo-APDU (e.g. FF 00 48 00 00, the ACR122U firmware);
                               without a card it goes as an escape command
              control HEX…     an escape command (SCardControl with the reader's escape code)
              reset            reset the card and show its ATR
              reader [NAME]    show the reader, or change to another (an index or part of its name,
                               or tty:PATH, a PN532 board on a serial line: control D4 … then)
              record FILE      record every exchange to a new transcript FILE; `record off` stops
              help             this list
              exit, quit       stop (Ctrl-D too)

            With --device tty:/dev/ttyUSB0 (or nfcpy's tty:USB0), or after `reader tty:PATH`, the
            session is on a PN532 board on a serial line, reached without PC/SC (docs/shell.md §4):
            `control D4 …` sends a PN532 command frame and shows the chip's D5 answer, and a Direct
            Transmit pseudo-APDU FF 00 00 00 Lc D4 … sends the frame inside it and answers as the
            ACR122U does (D5 … 90 00). `reader NAME` changes back to a PC/SC reader.

            On a terminal, lines are edited with libedit (arrow keys, Ctrl-A, Ctrl-E, history; Ctrl-C
            drops the line being typed) and the history is kept in --history, by default
            $XDG_STATE_HOME/secbridge/history or else ~/.local/state/secbridge/history; a failing
            line is reported and the session goes on. A line that carries a secret (a VERIFY with
            its PIN, a LOAD KEY) is not kept in the history, and PINs, keys and cryptograms are
            printed [REDACTED n] unless --show-secrets (docs/secrets.md).
            When standard input is not a terminal, the lines are read without prompts as a script,
            exactly as `secbridge run -` reads them: the same output, one PC/SC transaction over
            the card (ended during a pause of more than 0.2 s in the input, as `run -` does), and
            the first failing line stops the script (exit status 1).

            Example:
              $ secbridge shell
              reader: ACS ACR122U PICC Interface 00 00, no card (a DIRECT connection: …)
              secbridge> FF 00 48 00 00
              ctl 0x42000001 > FF 00 48 00 00
              ctl < 41 43 52 31 32 32 55 32 30 37
                firmware: ACR122U207
              $ printf '00 A4 04 00 07 D2 76 00 00 85 01 01 00\nreset\n' | secbridge shell

            OPTIONS:
              -r, --reader <NAME|INDEX>  The reader: an index from `secbridge readers` or part of its name.
              --device <tty:PATH>        A PN532 board on this serial port (tty:/dev/ttyUSB0, or tty:USB0) instead of a PC/SC reader.
              --raw                      Send the bytes as they are: no GET RESPONSE, no Le correction, no chaining.
              --stop-on-error            In a script: stop at the first status word other than 90 00 or 61xx, and exit 1.
              --wait <SECONDS>           Wait up to SECONDS (at most 3600) for a card when none is there.
              --code <HEX4>              The SCardControl code, e.g. 42000001 (default: the escape code the reader announces).
              --record <FILE>            Record every exchange to a transcript FILE (as the `record` statement does).
              --history <FILE>           The history file on a terminal (default: $XDG_STATE_HOME/secbridge/history).
              --show-secrets             Print PINs, keys, cryptograms and read-back MIFARE keys as sent; by default they are [REDACTED n], as in transcripts (docs/secrets.md).
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge shell [--reader NAME|INDEX | --device tty:PATH] [--raw] [--stop-on-error] [--wait SECONDS] [--code HEX4] [--record FILE] [--history FILE] [--show-secrets]
            Run 'secbridge shell --help' for more information.

            """#),
        Golden(
            path: ["replay"],
            help: #"""
            OVERVIEW: Send a transcript's recorded commands to a live reader or a credential and compare the answers.

            USAGE: secbridge replay [--against live|credential:FILE|simulated] [--mode strict|ignore-timing|wildcard] [--reader NAME|INDEX] [--json] [--record FILE] FILE

            Every recorded command (SCardTransmit `>` and SCardControl `ctl` lines) is sent in
            order; each answer must match the recorded one (`??` bytes match anything). The first
            difference stops the replay with exit status 1, naming the file and line, the expected
            and the actual answer.

            Before anything is sent, the whole file is checked: a command with redacted bytes
            (`[REDACTED n]`) or `??` wildcards is refused, since sending other bytes than the
            original (a masked VERIFY) would spend the card's PIN tries.

            The reader is --reader, else the transcript header's `reader` when connected, else the
            first reader with a card. A transcript whose header says `protocol: undefined` is
            replayed over a direct connection (no card needed; reader control commands only).

            --against credential:FILE plays the terminal's side instead (the `tgt <` commands, or
            the `>` commands of a file without `tgt` lines; reader pseudo-APDUs with CLA FF are
            skipped) to the credential's host applets, and compares each answer with the recorded
            `tgt >` (or `<`) line. No reader is needed.

            --mode: every mode checks the order and count of the exchanges and never the time
            offsets. strict (the default) compares the answers byte for byte (`??` and
            `[REDACTED n]` in the file match anything); ignore-timing replays as strict; wildcard
            also lets the data (not SW1-SW2, not the length) of GET CHALLENGE (INS 84) and of
            INTERNAL/EXTERNAL AUTHENTICATE (INS 88/82) answers differ, since they are random.

            OPTIONS:
              --against <TARGET>         What answers: live (a reader, the default), credential:FILE (a credential file's host applets), simulated (a simulated ACR122U in this process).
              --mode <MODE>              How answers are compared: strict (the default), ignore-timing or wildcard.
              -r, --reader <NAME|INDEX>  The reader: an index from `secbridge readers` or part of its name.
              --json                     Print a JSON object {file, reader, exchanges, result, error}.
              --record <FILE>            Record the replayed exchanges (what the reader answered now) to a transcript FILE.
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge replay [--against live|credential:FILE|simulated] [--mode strict|ignore-timing|wildcard] [--reader NAME|INDEX] [--json] [--record FILE] FILE
            Run 'secbridge replay --help' for more information.

            """#),
        Golden(
            path: ["simulate"],
            help: #"""
            OVERVIEW: Run simulated ACR122U readers in a private pcscd, for any PC/SC program to use.

            USAGE: secbridge simulate [--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID [--tag-type TYPE] [--tag-uri URI | --tag-text TEXT] [--tag-key HEX12]] [--terminal SCRIPT] [--timeout SECONDS] [--time-scale FACTOR] [--pn532-serial] [--in-process] [--json]

            Starts a private pcscd (its own mount namespace; the system pcscd and USB readers are not
            touched) with one or two simulated ACR122U readers sharing one RF field, prints the
            `export PCSCLITE_CSOCK_NAME=…` line that points other programs (secbridge, pcsc_scan,
            opensc-tool, libnfc's tools) at it, and runs until Ctrl-C (or --timeout).

            Peers are placed in the field with the options, or while it runs by typing control
            requests on standard input, prefixed with the reader (a or b):
              a place-card uid=04A1B2C3 applet=t4t-ndef     an ISO 14443-4 card (applet ok, echo, t4t-ndef)
              a place-tag uid=04A1B2C3                      an ISO 14443-3 tag (UID only)
              a place-tag type=ntag213 uid=04A1B2C3D4E5F6 ndef=D1010C55046578616D706C652E636F6D
                                                            an NTAG213 holding an NDEF message (hex)
              a place-tag type=classic1k uid=04A1B2C3 key=A0A1A2A3A4A5 id=mf
                                                            a MIFARE Classic 1K, keys A and B of every sector
              a tag-memory peer=mf first=4 count=3          what a tag holds now (keys read as 00)
              b place-terminal script=android-t4t-read      a terminal that reads an emulated Type 4 Tag
              a remove all=yes        a status        a events        a help
            Each control socket is printed too, for programs that place peers themselves.

            --pn532-serial also puts a bare PN532 board in the field, on a pseudo-terminal behind the
            PN532 serial framing (docs/pn532-uart.md), and prints its device node: open it as a
            board on /dev/ttyUSB0 (`--device tty:/dev/pts/N`, or libnfc's
            LIBNFC_DEVICE=pn532_uart:/dev/pts/N). The board and the ACR122U readers share the
            field: one can emulate a card the other reads.

            --time-scale 0.01 makes every wait of the simulated devices take 0.01 of its real time
            (the ACR122U's 5 s MCU timeout 50 ms, libccid's 30 s escape timeout 300 ms), for tests
            and CI that should not wait out device timeouts; the default 1 is real time.

            Personalities (--personality NAME; docs/acr122-units.md):
              ccid-escape-enabled   ACR122U207 behind libccid, escape commands enabled (default)
              ccid-escape-disabled  ACR122U207 behind libccid as distributed: escape commands refused
              acs-driver            ACR122U207 behind ACS's acsccid (escape code 0x42000DAC)
              legacy-t0             an early T=0 unit, ACR122U103 (61 xx and FF C0)
              atr-whole-ats         ATR historical bytes are the whole ATS (U)
              empty-target-wait     TgInitAsTarget with no terminal answers 0 bytes (U)
              acr122u203            firmware ACR122U203 behind libccid, escape enabled
              acr122u214            firmware ACR122U214 behind libccid, escape enabled
              acr122u215            firmware ACR122U215: one-byte answer to Set PICC Operating Parameter
              acr122u216            firmware ACR122U216 behind libccid, escape enabled
              clone                 an ACR122U clone (vendor RFCARD, ACR122U214): PC/SC never reports the card, SENS_RES LSB first, InDeselect ignored
              touchatag             a Touchatag-era unit (ACR122U102, PN532 v1.4, T=0): a permanent pseudo-card, ATR 3B 00

            Needs root, or unprivileged user namespaces; otherwise it says why and exits 1,
            unless --in-process is given: then the readers run inside this process (no pcscd, so no
            other program sees them) and standard input also takes `send a|b HEX…` to send a
            command APDU (to the card) or a pseudo-APDU (FF …, through the escape path without a card).

            Example:
              $ secbridge simulate --card 04A1B2C3 &
              export PCSCLITE_CSOCK_NAME=/tmp/secbridge-pcscd.1234.AB12CD34/run/pcscd.comm
              …
              $ export PCSCLITE_CSOCK_NAME=…; secbridge send 00 A4 04 00 07 D2 76 00 00 85 01 01 00

            OPTIONS:
              --readers <1|2>        How many simulated readers (default 2, sharing one field).
              --personality <NAME>   The readers' personality (driver and firmware), one of the list above; default ccid-escape-enabled.
              --card <UID>           Place an ISO 14443-4 card with this UID (4, 7 or 10 bytes of hex).
              --applet <NAME>        The placed card's applet: ok (default), echo or t4t-ndef.
              --tag <UID>            Place an ISO 14443-3 tag (no ISO-DEP) with this UID (4, 7 or 10 bytes of hex), as peer `tag` (e.g. `a tag-memory peer=tag`).
              --tag-type <TYPE>      The placed tag's memory: ntag213, ntag215, ntag216 or ultralight (each with a 7-byte UID); classic1k, classic4k or mini (a 4- or 7-byte UID); default: none (UID only).
              --tag-uri <URI>        A Type 2 tag's content: an NDEF URI record (default: an empty NDEF message).
              --tag-text <TEXT>      A Type 2 tag's content: an NDEF text record (language en).
              --tag-key <HEX12>      A MIFARE Classic tag's key A and key B for every sector: 6 bytes of hex (default FF FF FF FF FF FF). Also env:NAME, file:PATH or - (one line of standard input): keeps it out of the process list.
              --terminal <SCRIPT>    Place a terminal, a model of a reader (android-t4t-read, android11-t4t-read, android-t4t-write, ios-t4t-read, emv-payment, access-control, android-beam-p2p; docs/terminal-models.md) or a recording (android-t4t-recording, ios-t4t-recording).
              --timeout <SECONDS>    Stop after SECONDS (at most 86400) instead of waiting for Ctrl-C.
              --time-scale <FACTOR>  Wall-clock seconds per simulated second, above 0.002 and at most 1 (default 1, real time; 0.01: a 5 s MCU timeout takes 50 ms).
              --pn532-serial         Also place a bare PN532 board in the field, on a pseudo-terminal (its path is printed).
              --in-process           Run the readers in this process (no pcscd); `send a|b HEX` on standard input.
              --json                 Print JSON lines: {event: started, socket, driver, readers: [{reader, name, controlSocket}], pn532Serial, standardInput}, then {event: reply, reader, line, ok, fields | code, reason} per control request, {event: exchange, reader, path, command, response} per `send`, {event: stopped}.
              -h, --help             Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge simulate [--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID [--tag-type TYPE] [--tag-uri URI | --tag-text TEXT] [--tag-key HEX12]] [--terminal SCRIPT] [--timeout SECONDS] [--time-scale FACTOR] [--pn532-serial] [--in-process] [--json]
            Run 'secbridge simulate --help' for more information.

            """#),
        Golden(
            path: ["credentials"],
            help: #"""
            OVERVIEW: List the credentials a session knows, from credential files.

            USAGE: secbridge credentials [--json] [FILE…]

            Loads each credential file (JSON; the format is in the README) into a session and lists
            what `listCredentials()` returns: id, name, how the emulated card presents itself, and
            the secure element (host applets with their AIDs, or a PC/SC card). Without files, the
            built-in example (a URI tag for https://example.com) is listed.

            Example:
              $ secbridge credentials Fixtures/credentials/access-badge.json

            OPTIONS:
              --json      Print a JSON array of {id, name, emulation, secureElement}.
              -h, --help  Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge credentials [--json] [FILE…]
            Run 'secbridge credentials --help' for more information.

            """#),
        Golden(
            path: ["emulate"],
            help: #"""
            OVERVIEW: Present a credential to a terminal: card emulation on an ACR122U.

            USAGE: secbridge emulate --credential FILE [--reader NAME|INDEX | --device tty:PATH] [--yes] [--keep | --once] [--record FILE] [--json] [--show-secrets]

            Runs the client sequence of a credential session on an ACR122-class reader: wired mode,
            a presentment assertion, the authorization prompt (or --yes), then performTransaction:
            the PN532 in target mode presents the credential until the terminal is done (it reads
            and releases the target), or the 60-second card emulation window ends, or Ctrl-C. The
            target is then not armed again, so the reader is restored at once (an armed
            TgInitAsTarget cannot be cancelled and would hold the reader for one 5 s MCU timeout).
            An NFC Forum Type 4 Tag is done when its NDEF file was read to the end (or written): a
            phone that slips during detection (it leaves after READ CC or READ NLEN, or in the
            middle of the file) is served again when it comes back within the window, the target
            armed again 250 ms after it left. With --once emulation ends when the first terminal
            leaves, unless it left in the middle of reading the NDEF file. With --keep, emulation
            continues for further terminals until the window ends: the target is armed again
            250 ms after each release. The reader's settings (PICC polling, RF field) are restored
            at the end, on every exit path: after Ctrl-C, errors, and when the window ends while
            the target waits for a terminal. An activation that is no ISO-DEP reader (a
            peer-to-peer initiator's ATR_REQ) is reported and the target armed again.

            With --device tty:PATH the PN532 is a bare board on a serial line (docs/pn532-uart.md
            §9), reached without PC/SC: a bare PN532 has no MCU timeout, so the host bounds each
            TgInitAsTarget at 1 s and each TgGetData at 5 s and aborts an unanswered one with an
            ACK frame; at the end the board gets InRelease 00. The recording then holds the
            terminal's APDUs and events, not the serial frames.

            Readers that cannot emulate (not ACR122-class, the ACR1252U family, escape commands not
            enabled in the CCID driver) fail with the reason and what to do. At the end a
            `terminal:` line (also written to the --record transcript) says what the terminal did:
            how many APDUs, and for an NFC Forum Type 4 Tag whether the NDEF file was read to the
            end; if it was not, the tag is run through the model of Android's reader to say where
            and why Android would refuse it. On a simulated reader (`secbridge simulate`) each
            simulated terminal's own verdict follows: what it read, or the step and reason it
            failed. Exit status 0 when a terminal exchanged APDUs, read a Type 4 Tag to the end
            (any other credential: its last command got 90 00 or 61 XX, else the `terminal:` line
            names the answer it stopped at), and no simulated terminal failed; 1 otherwise. A
            terminal's PIN, keys and cryptograms are printed [REDACTED n], as the --record
            transcript has them, unless --show-secrets (docs/secrets.md).

            OPTIONS:
              --credential <FILE>        The credential file to present (required).
              -r, --reader <NAME|INDEX>  The ACR122U: an index from `secbridge readers` or part of its name.
              --device <tty:PATH>        A PN532 board on this serial port (tty:/dev/ttyUSB0, or tty:USB0) instead of an ACR122U.
              --yes                      Approve the transaction without asking.
              --keep                     Serve terminals until the 60-second window ends, not only the first.
              --once                     End when the first terminal leaves, even a phone that left a Type 4 Tag before reading its NDEF file.
              --record <FILE>            Record the reader's exchanges and the terminal's APDUs to a transcript FILE.
              --json                     Print JSON lines, one per event: {event: authorization|state|assertion|apdu|field|secureElementChanged|cardEmulationTimeout|interrupted|other, …}, then {event: end, commands, status} or {event: error, error}; the prompt goes to standard error.
              --show-secrets             Print PINs, keys, cryptograms and read-back MIFARE keys as sent; by default they are [REDACTED n], as in transcripts (docs/secrets.md).
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge emulate --credential FILE [--reader NAME|INDEX | --device tty:PATH] [--yes] [--keep | --once] [--record FILE] [--json] [--show-secrets]
            Run 'secbridge emulate --help' for more information.

            """#),
        Golden(
            path: ["read"],
            help: #"""
            OVERVIEW: A reader session: read the presented card's UID and ATS, SELECT an AID, or read its NDEF message.

            USAGE: secbridge read [--reader NAME|INDEX] [--pn532 [--device tty:PATH]] [--wait SECONDS] [--aid HEX | --lenient-cc] [--key HEX12 [--key-b] --blocks N[-M]] [--dump FILE [--key HEX12 | --keys FILE] [--key-b]] [--json] [--record FILE]

            The host acts as the terminal. By default the reader's own polling finds the card
            (a PC/SC connection); with --pn532 an ACR122U is driven with PN532 initiator commands
            (automatic polling off, InListPassiveTarget, InDataExchange; settings restored after).
            An ACR122U clone or Touchatag-era unit, whose PC/SC side never reports the card, is
            read on the PN532 path by itself, with a note saying so. --wait SECONDS waits for a
            card through pcscd (SCardGetStatusChange) on the PC/SC path, and on the PN532 path with
            InListPassiveTarget polls, each ended by the chip after 33 activation attempts,
            repeated until a card answers or the wait is over.

            A storage card (its ATR names a PC/SC part 3 card: 80 4F 0C A0 00 00 03 06 …) is read
            with the reader's pseudo-APDUs: the UID (FF CA 00 00 00) and the card name from the ATR;
            an NFC Forum Type 2 Tag (MIFARE Ultralight, NTAG21x) has its capability container and
            NDEF message read (FF B0) and decoded; a MIFARE Classic card has the blocks of --blocks
            read with --key (key A, or key B with --key-b; loaded into the reader's volatile slot
            00). Keys never appear in the output or in transcripts; a sector trailer shows key A as
            zeros (the card never reveals it) and key B masked. A Type 2 Tag's model is asked with
            GET_VERSION (FF 00 00 00 03 D4 42 60) after the reads and shown on the `card:` line. If
            the card goes away mid-read, what was read and the exchanges are still printed (text
            and --json), with the error, and the exit status is 1. --aid and --pn532 do not apply
            to storage cards (usage error).

            --dump FILE writes every block (MIFARE Classic) or page (Ultralight, NTAG21x) to a new
            FILE in libnfc's layout, the one nfc-mfclassic and nfc-mfultralight read and write
            (restore it with `secbridge write-dump`). MIFARE Classic sectors are read with --key
            (default the transport key FF FF FF FF FF FF) or each sector's key from the trailers of
            --keys FILE, as key A or (--key-b) key B; each trailer in the file holds the key used,
            the access bits read and the other key where the card showed it (else 00 × 6). A
            dump is written whole or not at all, and never over an existing file.

            JSON: every hex value is uppercase without spaces. A byte string with secret bytes left
            out is an object instead: {"hex": "FF82000006", "redacted": 6} for Load Keys, and a
            sector trailer's data {"hex": "000000000000FF078069", "redacted": 6} (key B unshown).

            Without --aid, the card is read as an NFC Forum Type 4 Tag with Android's sequence and its
            NDEF message decoded. Its capability container is held to the rules of Android 12 and
            later (AOSP android-15.0.0_r23): a maximum NDEF size above 7FFF is refused, as those
            phones refuse it; --lenient-cc accepts what Android 8 to 11 accept (up to FFFE, as
            libnfc's nfc-emulate-forum-tag4 declares). docs/terminal-models.md §1 lists the rules. With --aid, that application is selected and the answer shown.
            The UID and ATS come from the ACR122U's Get Data pseudo-APDUs (FF CA 00/01 00 00) on
            the PC/SC path, from InListPassiveTarget on the PN532 path.
            With --pn532 --device tty:/dev/ttyUSB0 (or nfcpy's tty:USB0) the card is read through a
            PN532 board on a serial line, without pcscd (docs/pn532-uart.md); --reader, --wait,
            --record and the storage-card options do not apply there yet.

            Example:
              $ secbridge read --reader acr122
              UID 08 00 B0 0B  ATS 05 75 33 92 03
              NDEF record 1: URI https://example.com
              $ secbridge read --key FFFFFFFFFFFF --blocks 4-7     # a MIFARE Classic 1K
              $ secbridge read --dump card.mfd                     # every block, libnfc's layout

            OPTIONS:
              -r, --reader <NAME|INDEX>  The reader: an index from `secbridge readers` or part of its name.
              --pn532                    Use PN532 initiator commands (ACR122U, no card needed at connect time).
              --device <tty:PATH>        With --pn532: a PN532 board on this serial port (tty:/dev/ttyUSB0, or tty:USB0) instead of a PC/SC reader.
              --wait <SECONDS>           Wait up to SECONDS (at most 3600) for a card when none is there.
              --aid <HEX>                SELECT this application (its AID: 5 to 16 bytes of hex) instead of reading NDEF.
              --lenient-cc               Accept a Type 4 Tag capability container as Android 8 to 11 do (maximum NDEF size up to FFFE), not only as Android 12 and later do.
              --key <HEX12>              MIFARE Classic: the 6-byte key (12 hex digits), key A unless --key-b. Also env:NAME, file:PATH or - (one line of standard input): keeps it out of the process list.
              --key-b                    MIFARE Classic: authenticate with the key as key B.
              --blocks <N[-M]>           MIFARE Classic: the block or inclusive block range to read.
              --dump <FILE>              Storage cards: write every block or page to a new FILE in libnfc's .mfd layout.
              --keys <FILE>              With --dump, MIFARE Classic: each sector's key from the trailers of this .mfd dump.
              --json                     Print a JSON object {reader, uid, ats, exchanges, ndef} (storage cards: {reader, card, uid, exchanges, ndef | blocks, error, note, hint}). Hex values are uppercase without spaces; a byte string with secret bytes left out (a key, a trailer's key B) is an object {"hex": the bytes shown, "redacted": how many bytes follow unshown}.
              --record <FILE>            Record the exchanges to a transcript FILE.
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge read [--reader NAME|INDEX] [--pn532 [--device tty:PATH]] [--wait SECONDS] [--aid HEX | --lenient-cc] [--key HEX12 [--key-b] --blocks N[-M]] [--dump FILE [--key HEX12 | --keys FILE] [--key-b]] [--json] [--record FILE]
            Run 'secbridge read --help' for more information.

            """#),
        Golden(
            path: ["demo"],
            help: #"""
            OVERVIEW: The main job: a credential session emulating an NDEF tag on one simulated ACR122U, read by a second.

            USAGE: secbridge demo [--record FILE] [--credential FILE] [--time-scale FACTOR] [--in-process] [--json]

            Starts two simulated ACR122U readers sharing one RF field in a private pcscd (its own mount
            namespace), then runs the client sequence of Apple's SecureElementCredential model on
            reader A: startSession, enterWiredMode, acquirePresentmentAssertion, relinquish,
            performTransaction (card emulation: the PN532 in target mode), while reader B, as the
            terminal, reads the NDEF credential with Android's Type 4 Tag read sequence through PN532
            initiator commands; then endCardEmulation, acquire and relinquish again, invalidate.

            It prints the reader names, the escape control code in use, every state and session
            event, the terminal's APDUs, the decoded NDEF record, and the transcript of both readers,
            whose file it names. The credential is a URI tag for https://example.com unless
            --credential names a credential file. Needs root (or unprivileged user namespaces) for
            the private pcscd; otherwise it says why and exits 1, unless --in-process is given: then
            the same readers run inside this process, driven through the same driver entry points
            with pcscd's rules (no pcscd involved).

            OPTIONS:
              --record <FILE>        Write the transcript to FILE (default: a new file in /tmp).
              --credential <FILE>    Emulate the credential of this file instead of the built-in URI tag.
              --time-scale <FACTOR>  Wall-clock seconds per simulated second, above 0.002 and at most 1 (default 1, real time; 0.01: a 5 s MCU timeout takes 50 ms).
              --in-process           Run the simulated readers in this process instead of a private pcscd.
              --json                 Print a JSON object {emulator, terminal, escapeControlCode, credential: {id, name}, states, events, terminalExchanges: [{command, response}], ndef, billableEvents, transcript}; the running commentary goes to standard error.
              -h, --help             Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge demo [--record FILE] [--credential FILE] [--time-scale FACTOR] [--in-process] [--json]
            Run 'secbridge demo --help' for more information.

            """#),
        Golden(
            path: ["transcript"],
            help: #"""
            OVERVIEW: Read, compare, redact and import transcripts (Fixtures/README.md).

            USAGE: secbridge transcript <subcommand>

            Example:
              secbridge transcript import-spy spy.log -o session.trn
              secbridge transcript show session.trn
              secbridge transcript diff before.trn after.trn

            SUBCOMMANDS:
              import-spy  Convert the output of pcsc-spy into a transcript.
              show        Print a transcript with status-word meanings, decoded ACR122/PN532 frames and NDEF records.
              diff        Compare two transcripts structurally (records, not text).
              redact      Mask secrets (PINs, keys) in a transcript's commands, keeping their length.
              stats       Count a transcript's exchanges, failures, events and status words, and time them.

              See 'secbridge transcript <subcommand> --help' for details.

            OPTIONS:
              -h, --help  Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge transcript <subcommand>
            Run 'secbridge transcript --help' for more information.

            """#),
        Golden(
            path: ["transcript", "import-spy"],
            help: #"""
            OVERVIEW: Convert the output of pcsc-spy into a transcript.

            USAGE: secbridge transcript import-spy [--no-redact] [--force] [--json] LOG -o FILE

            LOG is what the pcsc-spy viewer printed (pcsc-lite's spy: LD_PRELOAD=libpcscspy.so.0, read by
            `pcsc-spy`), in the older (pcsc-lite ≤ 2.1) or newer (2.2) result-line form, with or
            without -t (thread tags), -d (diffable) or colour codes. SCardTransmit and SCardControl
            become exchanges, SCardConnect/SCardStatus give the ATR and protocol, SCardGetStatusChange
            gives card events. Several card handles get one channel id each (@h1, @h2, …).

            Secrets (VERIFY PINs, keys: Fixtures/README.md, "Bytes") are redacted unless --no-redact.
            Nothing is written when the log cannot be read, is empty or ends inside a call (cut
            short): the error names its line.

            Example:
              secbridge transcript import-spy spy.log -o Fixtures/imported/nfc-list.trn

            OPTIONS:
              -o, --output <FILE>  The transcript to write (atomically).
              --no-redact          Keep secrets (PINs, keys) as logged. Only for test cards.
              --force              Replace FILE when it exists.
              --json               Print a JSON object {file, output, exchanges, events, channels}.
              -h, --help           Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge transcript import-spy [--no-redact] [--force] [--json] LOG -o FILE
            Run 'secbridge transcript import-spy --help' for more information.

            """#),
        Golden(
            path: ["transcript", "show"],
            help: #"""
            OVERVIEW: Print a transcript with status-word meanings, decoded ACR122/PN532 frames and NDEF records.

            USAGE: secbridge transcript show [--json] [--html OUT] FILE

            Each line gets its meaning: the APDU's instruction, the status word (ISO/IEC 7816-4), the
            ACR122U pseudo-APDU or PN532 command it carries (PN532 UM0701-02), and NDEF records read
            from a tag. --html writes a self-contained page: a timeline of the exchange between
            terminal, reader, host and secure element.

            Example:
              secbridge transcript show Fixtures/vicc/select-read.trn
              secbridge transcript show --html session.html session.trn

            OPTIONS:
              --json        Print a JSON array of lines {line, offset, channel, kind, direction, hex, meaning}.
              --html <OUT>  Write a self-contained HTML timeline to OUT (atomically) instead.
              --force       With --html: replace OUT when it exists.
              -h, --help    Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge transcript show [--json] [--html OUT] FILE
            Run 'secbridge transcript show --help' for more information.

            """#),
        Golden(
            path: ["transcript", "diff"],
            help: #"""
            OVERVIEW: Compare two transcripts structurally (records, not text).

            USAGE: secbridge transcript diff [--timing] [--notes] [--json] LEFT RIGHT

            Header fields are compared by key (date and tool left out), records in order: comments,
            blank lines, offsets and notes do not count unless --timing / --notes. A changed payload
            names the first differing byte. Exit status 0 when equal, 1 when they differ.

            Example:
              secbridge transcript diff recorded.trn replayed.trn

            OPTIONS:
              --timing    Compare time offsets too.
              --notes     Compare trailing '; notes' too.
              --json      Print a JSON object {left, right, equal, differences}.
              -h, --help  Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge transcript diff [--timing] [--notes] [--json] LEFT RIGHT
            Run 'secbridge transcript diff --help' for more information.

            """#),
        Golden(
            path: ["transcript", "redact"],
            help: #"""
            OVERVIEW: Mask secrets (PINs, keys) in a transcript's commands, keeping their length.

            USAGE: secbridge transcript redact [--force] [--json] FILE -o OUT

            Applies the default policy (Fixtures/README.md, "Bytes"): VERIFY, CHANGE REFERENCE DATA,
            RESET RETRY COUNTER, PUT KEY, EXTERNAL/MUTUAL AUTHENTICATE data, the ACR122U LOAD KEY key
            and the MIFARE key of PN532 InDataExchange authentication, MIFARE sector trailer keys,
            and the same card-command rules on C-APDUs inside PN532 frames (InDataExchange,
            InCommunicateThru, TgGetData answers). Header lines holding a command line (capture's
            source) get a PIN or key argument masked. The rules: docs/secrets.md. OUT may be FILE
            itself with --force; it is replaced atomically.

            Example:
              secbridge transcript redact raw.trn -o shared.trn

            OPTIONS:
              -o, --output <OUT>  The redacted transcript to write.
              --force             Replace OUT when it exists.
              --json              Print a JSON object {file, output, redacted}.
              -h, --help          Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge transcript redact [--force] [--json] FILE -o OUT
            Run 'secbridge transcript redact --help' for more information.

            """#),
        Golden(
            path: ["transcript", "stats"],
            help: #"""
            OVERVIEW: Count a transcript's exchanges, failures, events and status words, and time them.

            USAGE: secbridge transcript stats [--json] FILE

            An exchange's time is its answer's offset minus its command's; the span is the last offset
            minus the first. Times in JSON are microseconds.

            Example:
              secbridge transcript stats Fixtures/imported/nfc-list.trn

            OPTIONS:
              --json      Print a JSON object of the counts and times.
              -h, --help  Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge transcript stats [--json] FILE
            Run 'secbridge transcript stats --help' for more information.

            """#),
        Golden(
            path: ["capture"],
            help: #"""
            OVERVIEW: Run any PC/SC program under pcsc-lite's spy and save what it did as a transcript.

            USAGE: secbridge capture -o FILE [--spy-log FILE] [--no-redact] [--force] [--json] -- COMMAND [ARGUMENT…]

            COMMAND runs under pcsc-lite's spy library libpcscspy.so.0 (package libpcsclite-dev) with
            HOME set to a private temporary directory, where the spy writes its log (`$HOME/pcsc-spy`).
            A program linked with libpcsclite (as `ldd` shows) gets the spy by LD_PRELOAD; one that
            loads it with dlopen (OpenSC, pyscard) finds the spy as libpcsclite.so.1 in a directory on
            LD_LIBRARY_PATH, where the real library is libpcsclite_nospy.so.1 (the spy's replacement
            mode). When COMMAND ends, `pcsc-spy -n` turns the log into text and `transcript
            import-spy` converts that into FILE: SCardTransmit and SCardControl exchanges, ATR,
            protocol and card events. Secrets are redacted unless --no-redact: in the exchanges, and
            in COMMAND's arguments as the header's source line and the output show them (a PIN or
            key after an option such as --pin, a key or PIN-carrying APDU in hex: docs/secrets.md).
            --spy-log keeps pcsc-spy's text as logged, secrets included. COMMAND's standard input and
            output are this terminal's.

            The exit status is COMMAND's success (0) or failure (1), or 128 + the signal when SIGINT,
            SIGTERM or SIGHUP stopped it (passed on to COMMAND); FILE is written in each case, and
            nothing is written when the log cannot be converted. The temporary directory is always
            removed. A crash of pcsc-lite 1.9.9's spy in SCardTransmit (nfc-list with a card) is
            named, with what to do.

            Example:
              secbridge capture -o select.trn -- opensc-tool --send-apdu 00A4040007D2760000850101
              secbridge capture -o nfc-list.trn -- nfc-list

            OPTIONS:
              -o, --output <FILE>  The transcript to write (atomically).
              --spy-log <FILE>     Also keep pcsc-spy's text output in FILE.
              --no-redact          Keep secrets (PINs, keys) as logged, and COMMAND's arguments as given. Only for test cards.
              --force              Replace FILE when it exists.
              --json               Print a JSON object {command, status, output, exchanges, events, channels}.
              -h, --help           Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge capture -o FILE [--spy-log FILE] [--no-redact] [--force] [--json] -- COMMAND [ARGUMENT…]
            Run 'secbridge capture --help' for more information.

            """#),
        Golden(
            path: ["selftest"],
            help: #"""
            OVERVIEW: Run a fixed sequence on an ACR122U in both roles and save it as a transcript bundle; replay bundles against the simulator.

            USAGE: secbridge selftest --hardware [--reader NAME|INDEX [--output DIR] [--phone] | --device tty:PATH] [--json] | --replay DIR…

            --hardware runs the same escape commands on every unit, over a DIRECT connection (a card
            is not needed): reader identification, PICC parameter, LEDs, PN532 status, RF field,
            polling for a card with bounded retries, commands that must fail, and card emulation
            (TgInitAsTarget) with no terminal until the 5 s MCU timeout; then everything it changed
            is put back. With --phone it also emulates the built-in URI tag
            (https://example.com) for one 60 s emulation window: hold a phone or terminal to the
            reader to read it. A card left on the reader is found and recorded; keep phones away unless
            --phone is given.

            It writes a bundle directory (default selftest-FIRMWARE-DATE in the current directory,
            never an existing one): reader.trn, target.trn and, with --phone, phone.trn, each with
            its provenance in the header (reader name, driver, firmware, date; see Fixtures/README.md).
            Each step prints ok, differs (the unit answered otherwise than the documents say; the
            recording keeps what it said) or error. Exit status 1 only when a step failed with a
            PC/SC error or the bundle could not be written.

            With --device tty:/dev/ttyUSB0 (or nfcpy's tty:USB0) --hardware runs the PN532 steps on a
            bare board on a serial line instead (docs/pn532-uart.md §12), framed for its UART: the
            wake-up, GetFirmwareVersion, the chip's self tests (Diagnose 00 communication line, 01
            ROM, 02 RAM), status, RF field off and on, polling with bounded retries, TgGetData
            outside the target role, and TgInitAsTarget with no terminal, ended by the host's 1 s
            bound and the ACK frame; then targets released and the RF field off. The ACR122U's
            own steps (PC/SC feature request, firmware string, PICC parameter, LEDs, MCU timeout)
            are listed as not applicable. Nothing is recorded: --output and --phone apply to an
            ACR122U.

            --replay DIR… replays bundles against a simulated ACR122U in this process: reader.trn
            and target.trn on a fresh simulated unit with the recorded driver and firmware (and the
            recorded card placed in its field, left powered up when the recording shows that pcscd
            still held it powered, else powered down), phone.trn's terminal side against the built-in
            credential. A bundle recorded on a real unit and put under Fixtures/hardware/ becomes a
            fidelity test: the tests replay every bundle found there.

            OPTIONS:
              --hardware                 Run the sequence on a reader and write a bundle.
              -r, --reader <NAME|INDEX>  The reader: an index from `secbridge readers` or part of its name (default: the first ACR122-class reader).
              --device <tty:PATH>        A PN532 board on this serial port (tty:/dev/ttyUSB0, or tty:USB0) instead of an ACR122U.
              -o, --output <DIR>         The bundle directory to create (must not exist).
              --phone                    Also emulate the built-in URI tag (one 60 s window) for a phone or terminal to read.
              --replay <DIR>             Replay the bundle in DIR against the simulated ACR122U (repeat or list several).
              --json                     Print the outcome as JSON.
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge selftest --hardware [--reader NAME|INDEX [--output DIR] [--phone] | --device tty:PATH] [--json] | --replay DIR…
            Run 'secbridge selftest --help' for more information.

            """#),
        Golden(
            path: ["doctor"],
            help: #"""
            OVERVIEW: Check pcscd, the ACR122U, its driver, escape commands and firmware, and say how to fix what fails.

            USAGE: secbridge doctor [--reader NAME|INDEX] [--device tty:PATH] [--json]

            Checks, in order, each with a verdict (ok, warning, fail, skipped) and, when not ok, the fix:
              pcscd installed, pcscd running (the socket: PCSCLITE_CSOCK_NAME or /run/pcscd/pcscd.comm),
              the reader in PC/SC (ACR122-class by name, confirmed by its firmware string),
              the USB device 072F:2200 (or 072F:90CC Touchatag) and the kernel NFC modules that
              claim it (pn533_usb, pn533, nfc), the driver serving it (escape code from
              CM_IOCTL_GET_FEATURE_REQUEST tag 0x13: 0x42000001 libccid, 0x42000DAC acsccid),
              escape commands (the ifdDriverOptions edit when refused), the firmware and its
              known quirks, the variant (genuine unit, clone or Touchatag-era unit, firmware,
              libccid or acsccid, escape option; what works on it and what does not; the simulator
              personality that models it), the PICC operating parameter (automatic polling), a card
              in the field.
            With --device tty:/dev/ttyUSB0 (or nfcpy's tty:USB0) a PN532 board on a serial line is
            checked instead: the device node, its permissions (the dialout group), a wake-up (55
            preamble, SAMConfiguration) and GetFirmwareVersion, at 115200 baud (docs/pn532-uart.md).
            Exit status 0 when no check failed, 1 otherwise. Read-only: nothing is changed.

            Example:
              $ secbridge doctor
              ok       pcscd installed: /usr/sbin/pcscd
              ok       pcscd running: SCardEstablishContext answered on /run/pcscd/pcscd.comm
              ok       reader in PC/SC: ACS ACR122U PICC Interface 00 00
              …
              fail     escape commands: refused: SCardControl 0x42000001 gave SCARD_E_NOT_TRANSACTED (0x80100016)
                       fix: edit /etc/libccid_Info.plist: …

            OPTIONS:
              -r, --reader <NAME|INDEX>  The reader to check: an index from `secbridge readers` or part of its name.
              --device <tty:PATH>        Check a PN532 board on this serial port instead (tty:/dev/ttyUSB0, or tty:USB0).
              --json                     Print a JSON array of {check, verdict, detail, fix}.
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge doctor [--reader NAME|INDEX] [--device tty:PATH] [--json]
            Run 'secbridge doctor --help' for more information.

            """#),
        Golden(
            path: ["reset"],
            help: #"""
            OVERVIEW: Bring an ACR122U back to a usable state after an interrupted emulation.

            USAGE: secbridge reset [--reader NAME|INDEX] [--device tty:PATH] [--json]

            Connects DIRECT (escape commands; if the driver refuses them and a card is present, SHARED
            with pseudo-APDUs through SCardTransmit) and sends, printing each command and answer:
              GetFirmwareVersion    FF 00 00 00 02 D4 02        aborts a pending PN532 command
              InRelease             FF 00 00 00 03 D4 52 00     releases every target
              RF field on           FF 00 00 00 04 D4 32 01 01
              PICC parameter FF     FF 00 51 FF 00              automatic polling back on
              LEDs idle             FF 00 40 0D 04 00 00 00 00  red on, green off
              MCU timeout           FF 00 41 01 00              one 5-second step
            Exit status 0 when every step got the expected answer; otherwise unplug and replug
            the reader.

            With --device tty:/dev/ttyUSB0 (or nfcpy's tty:USB0) the PN532 is a bare board on a
            serial line (docs/pn532-uart.md §11), reached without PC/SC, and put back in its idle
            state: the ACK frame (aborts a pending command), the wake-up (55 preamble,
            SAMConfiguration), GetFirmwareVersion, InRelease 00, RF field off (D4 32 01 00) and the
            retries back to FF 01 FF (D4 32 05 FF 01 FF). The PICC parameter, LEDs and MCU timeout
            are the ACR122U's and have no counterpart there.

            Example:
              $ secbridge reset --reader acr122
              reader: ACS ACR122U PICC Interface 00 00
              connection: DIRECT, escape code 0x42000001, firmware ACR122U207
              abort a pending PN532 command (GetFirmwareVersion): FF 00 00 00 02 D4 02 → D5 03 32 01 06 07 90 00  ok
              …
              reader restored

            OPTIONS:
              -r, --reader <NAME|INDEX>  The ACR122U: an index from `secbridge readers` or part of its name.
              --device <tty:PATH>        A PN532 board on this serial port (tty:/dev/ttyUSB0, or tty:USB0) instead of an ACR122U.
              --json                     Print a JSON object {reader, connection, steps: [{name, exchanges: [{command, reply}], ok, failure}], restored}.
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge reset [--reader NAME|INDEX] [--device tty:PATH] [--json]
            Run 'secbridge reset --help' for more information.

            """#),
        Golden(
            path: ["write-ndef"],
            help: #"""
            OVERVIEW: Write an NDEF message (a URI or a text record) to an NFC Forum Type 2 Tag.

            USAGE: secbridge write-ndef [--reader NAME|INDEX] (--uri URI | --text TEXT [--lang en]) [--wait SECONDS] [--record FILE] [--yes] [--json]

            Writes one URI record or one UTF-8 text record to the NFC Forum Type 2 Tag (MIFARE
            Ultralight, NTAG213/215/216) on a PC/SC part 3 reader such as the ACR122U: reads the
            model with GET_VERSION through Direct Transmit (FF 00 00 00 03 D4 42 60; a tag or reader
            that does not answer is noted and the capability container used), the capability
            container (page 3; refuses a tag that is not NDEF formatted, is read-only, or whose CC
            claims more than its model has: NTAG213 144, NTAG215 504, NTAG216 888 bytes of user
            memory), checks that the message fits, and the static lock bytes (page 2; refuses when a
            page the message needs is locked). Only then does it ask (unless --yes) and write, in
            the NFC Forum order that leaves a valid tag if interrupted: page 4 as an empty NDEF
            message (03 00 FE), then `03 len message FE` from page 5 on with Update Binary
            (FF D6 00 <page> 04, the last page padded with 00), then page 4 with the message's start;
            then it reads the pages back to verify. A failed write says what the tag holds now.
            Other cards (Type 4 tags, MIFARE Classic, phones) are refused.

            Example:
              $ secbridge write-ndef --uri https://example.com --yes
              reader: ACS ACR122U PICC Interface 00 00
              card: NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03; PC/SC part 3 name 00 03, ISO/IEC 14443 A, part 3)  UID 04 A1 B2 C3 D4 E5 F6
              capability container: E1 10 12 00 (144 data bytes, read/write)
              wrote 19 bytes (16 bytes of NDEF) to pages 4–8 and read them back
              NDEF record 1: URI https://example.com

            OPTIONS:
              -r, --reader <NAME|INDEX>  The reader: an index from `secbridge readers` or part of its name.
              --uri <URI>                Write one URI record (the prefix abbreviated, e.g. https:// → 04).
              --text <TEXT>              Write one UTF-8 text record.
              --lang <CODE>              The text record's language code (default en).
              --record <FILE>            Record the exchanges to a transcript FILE.
              --yes                      Write without asking.
              --wait <SECONDS>           Wait up to SECONDS (at most 3600) for a card when none is there.
              --json                     Print a JSON object {reader, card, uid, capabilityContainer, dataAreaSize, readOnly, written: {bytes, ndefBytes, firstPage, lastPage}, ndef}; the prompt goes to standard error.
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge write-ndef [--reader NAME|INDEX] (--uri URI | --text TEXT [--lang en]) [--wait SECONDS] [--record FILE] [--yes] [--json]
            Run 'secbridge write-ndef --help' for more information.

            """#),
        Golden(
            path: ["write-dump"],
            help: #"""
            OVERVIEW: Restore a storage-card dump in libnfc's .mfd layout (MIFARE Classic, Ultralight, NTAG21x), rules checked first.

            USAGE: secbridge write-dump FILE [--reader NAME|INDEX] [--key HEX12 | --keys FILE] [--key-b] [--write-trailers] [--lock-bytes] [--config] [--wait SECONDS] [--record FILE] [--yes] [--json]

            Restores a dump in libnfc's layout (from `secbridge read --dump`, nfc-mfclassic or
            nfc-mfultralight) to the storage card on a PC/SC part 3 reader such as the ACR122U. The
            file must be exactly the card's size (MIFARE Mini 320, 1K 1024, 4K 4096 bytes;
            Ultralight 64, NTAG213 180, NTAG215 540, NTAG216 924 bytes). Every block or page is
            checked against the card before anything is written; one refusal and nothing is written.

            MIFARE Classic: each sector is authenticated with the dump's own key A (key B with
            --key-b), or --key for every sector, or the trailers of --keys FILE; its trailer's
            access bits are read and decoded, and a data block that differs from the card is written
            only if its access conditions let the key held write it. Block 0 (the manufacturer
            block) is never written: it is read-only on a genuine card. A sector trailer is written
            only with --write-trailers, and only when the dump's access bits are consistent (each
            bit of bytes 6-8 the inverse of its copy: others would block the sector for good) and
            the card's trailer conditions let the key held write the keys and any changed access
            bits. A dump made with key A by nfc-mfclassic holds key B as 00 00 00 00 00 00.

            MIFARE Ultralight / NTAG21x: pages 0-1 and bytes 0-1 of page 2 (UID, check bytes,
            internal byte) are never written; a page a lock bit protects is refused; page 3 (the
            capability container) is one-time programmable, so a dump that would clear one of its
            bits is refused; lock bytes (page 2 bytes 2-3, the NTAG dynamic lock page) only with
            --lock-bytes, written last and never clearing a bit; NTAG CFG0/CFG1 only with --config;
            PWD and PACK never (they read as 00, so a dump does not hold them).

            Keys never appear in the output or in transcripts.

            Example:
              $ secbridge read --dump card.mfd --key FFFFFFFFFFFF
              $ secbridge write-dump card.mfd --yes

            OPTIONS:
              -r, --reader <NAME|INDEX>  The reader: an index from `secbridge readers` or part of its name.
              --key <HEX12>              MIFARE Classic: authenticate every sector with this key (12 hex digits) instead of the dump's. Also env:NAME, file:PATH or - (one line of standard input): keeps it out of the process list.
              --keys <FILE>              MIFARE Classic: take each sector's key from the trailers of this .mfd dump.
              --key-b                    MIFARE Classic: authenticate with key B instead of key A.
              --write-trailers           MIFARE Classic: also write the sector trailers (keys and access bits), after checking the access bits.
              --lock-bytes               Ultralight/NTAG: also write the lock bytes (page 2 bytes 2-3, the dynamic lock page); lock bits are permanent.
              --config                   NTAG: also write CFG0 and CFG1 when they differ.
              --record <FILE>            Record the exchanges to a transcript FILE.
              --yes                      Write without asking.
              --wait <SECONDS>           Wait up to SECONDS (at most 3600) for a card when none is there.
              --json                     Print a JSON object {reader, card, uid, file, unit (block or page), written: [numbers], unchanged, notes}; the question goes to standard error.
              -h, --help                 Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge write-dump FILE [--reader NAME|INDEX] [--key HEX12 | --keys FILE] [--key-b] [--write-trailers] [--lock-bytes] [--config] [--wait SECONDS] [--record FILE] [--yes] [--json]
            Run 'secbridge write-dump --help' for more information.

            """#),
        Golden(
            path: ["serve"],
            help: #"""
            OVERVIEW: Present a credential as the card in a vpcd reader (vsmartcard), to a pcscd here or on another host.

            USAGE: secbridge serve --credential FILE [--host HOST] [--port PORT] [--atr HEX] [--slot-wait SECONDS] [--record FILE] [--json]

            Connects to vsmartcard's vpcd (the pcscd driver of package vsmartcard-vpcd) as its virtual
            card, the way vicc and Android's "Remote Smart Card Reader" do, and answers with the
            credential's host applets: every PC/SC program on vpcd's host then sees the credential as a
            card in "Virtual PCD 00 00". vpcd listens on port 35963 for slot 00 (35964 for slot 01) on
            every interface; give --host to serve a pcscd on another machine.

            The card's ATR is the one a PC/SC reader builds for a contactless ISO/IEC 14443-4 card
            (PC/SC part 3 §3.1.3.2.3): 3B 8N 80 01, the credential's historical bytes, TCK; with none,
            3B 80 80 01 01. --atr replaces it.

            vpcd talks only to the first card of a slot: when the connection is made but vpcd asks
            nothing within 5 s (its presence poll asks about every 400 ms; --slot-wait changes the
            wait), another program is the card there already (another serve, vicc) and serve exits
            with status 1 saying so.

            When vpcd goes away (pcscd stopped or restarted) serve connects again, at most every 2 s,
            until Ctrl-C or SIGTERM, which close the connection (vpcd sees the card removed), finish
            the transcript and exit with status 0. A credential file that is a PC/SC card (pcscCard)
            is relayed: its card answers.

            Example:
              $ secbridge serve --credential Fixtures/credentials/uri-tag.json
              serving credential 'example-uri-tag' (host applets (NFC Forum Type 4 Tag)) as ATR 3B 80 80 01 01
              connected to vpcd at localhost:35963: the card is in its reader (Ctrl-C stops)
              $ secbridge read --reader 'Virtual PCD 00 00'    # in another terminal: NDEF record 1: URI https://example.com

            OPTIONS:
              --credential <FILE>    The credential file to present (required).
              --host <HOST>          vpcd's host (default: localhost).
              --port <PORT>          vpcd's port for the slot (default: 35963, slot 00).
              --atr <HEX>            The ATR to present (default: PC/SC part 3's contactless ATR).
              --slot-wait <SECONDS>  How long vpcd may stay silent after the connection before the slot counts as held by another program (0.5 to 60, default 5).
              --record <FILE>        Record every exchange to a transcript FILE (tgt < / tgt > lines).
              --json                 Print JSON lines, one per event: {event: serving, credential, atr}, {event: connected, vpcd}, {event: disconnected, vpcd, reason}, {event: stopped, commands}.
              -h, --help             Show help information.

            """#,
            unknownOption: #"""
            secbridge: error: unknown option '--colour'
            USAGE: secbridge serve --credential FILE [--host HOST] [--port PORT] [--atr HEX] [--slot-wait SECONDS] [--record FILE] [--json]
            Run 'secbridge serve --help' for more information.

            """#),
    ]
}
