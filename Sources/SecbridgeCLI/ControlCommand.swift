import ISO7816
import PCSC
import Transcript

extension SecbridgeCLI {
    package static let controlCommand = Command(
        name: "control",
        abstract: "Send escape commands and pseudo-APDUs to a reader, with or without a card.",
        usage: "[--reader NAME|INDEX] [--code HEX4] [--json] [--record FILE] [--show-secrets] HEX…",
        discussion: """
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
            """,
        options: [
            .reader("The reader: an index from `secbridge readers` or part of its name."),
            .controlCode,
            .flag("json", "Print a JSON object {reader, code, exchanges: [{command, response}]}."),
            .value("record", "FILE", "Record every exchange to a transcript FILE."),
            .showSecrets,
        ],
        run: runControl
    )

    @Sendable package static func runControl(_ invocation: Invocation) throws -> Int32 {
        let commands = try apdus(from: invocation.arguments.positional, example: "secbridge control FF 00 48 00 00")
        let chosenCode = invocation.arguments.value("code").flatMap { try? HexBytes.parse($0) }.map { bytes in
            bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        let context = try openContext(invocation)
        let reader = try selectReader(invocation.arguments.value("reader"), in: try listReaders(context))
        let handle: any PCSCConnection
        do {
            handle = try CallWatchdog.shared.guarding("SCardConnect") { () throws(PCSCError) in
                try context.connect(to: reader, share: .direct, protocols: .undefined)
            }
        } catch {
            throw CLIError.failure("could not connect to '\(reader)' directly: \(describe(error))")
        }
        defer { try? handle.disconnect(.leave) }
        let code = try chosenCode ?? escapeCode(of: handle, reader: reader)
        let codeText = "0x" + String(code, radix: 16, uppercase: true)
        let recording = try invocation.arguments.value("record").map { path throws(CLIError) in
            try invocation.recordings.open(
                path: path, header: TranscriptRecording.header(reader: reader, atr: nil, transmissionProtocol: .undefined, command: "control"),
                work: "the control exchange")
        }
        defer { recording?.finish() }
        let channel: any CardChannel = recording.map { RecordingChannel(wrapping: handle, recorder: TranscriptRecorder(sink: $0)) } ?? handle
        if !invocation.json { invocation.out("reader: \(reader)  control code: \(codeText)") }
        var exchanges: [JSONValue] = []
        for command in commands {
            if !invocation.json { invocation.out("> " + invocation.secrets.text(command)) }
            let answer: [UInt8]
            do {
                answer = try CallWatchdog.shared.guarding("SCardControl") { try channel.control(code: code, command) }
            } catch let error as PCSCError {
                let message = controlFailure(error, code: code, command: command)
                if invocation.json {
                    invocation.out(JSONValue.object([
                        ("reader", .string(reader)), ("code", .string(codeText)), ("exchanges", .array(exchanges)),
                        ("error", .string(message)),
                    ]).prettySerialized())
                }
                throw CLIError.failure(message)
            }
            var members: [(String, JSONValue)] = [
                ("command", invocation.secrets.json(command)), ("response", invocation.secrets.json(response: answer, answering: command)),
            ]
            let firmware = Self.firmwareString(command, answer)
            if let firmware { members.append(("firmware", .string(firmware))) }
            exchanges.append(.object(members))
            if !invocation.json {
                invocation.out("< " + invocation.secrets.text(response: answer, answering: command))
                if let firmware { invocation.out("  firmware: \(firmware)") }
            }
        }
        if invocation.json {
            invocation.out(JSONValue.object([
                ("reader", .string(reader)), ("code", .string(codeText)), ("exchanges", .array(exchanges)),
            ]).prettySerialized())
        }
        return exitSuccess
    }

    /// The escape command's control code `reader` announces: CM_IOCTL_GET_FEATURE_REQUEST's
    /// FEATURE_CCID_ESC_COMMAND (PC/SC part 10, tag 0x13) on `handle`.
    /// - Throws: `CLIError.failure` saying how to enable escape commands, or to give a code.
    package static func escapeCode(of handle: any PCSCConnection, reader: String) throws(CLIError) -> UInt32 {
        let features: [PCSCFeature]
        do {
            features = try CallWatchdog.shared.guarding("SCardControl") { try handle.features() }
        } catch let error as PCSCError {
            throw CLIError.failure("could not ask '\(reader)' for its features (CM_IOCTL_GET_FEATURE_REQUEST): \(describe(error)); give --code")
        } catch {
            throw CLIError.failure("'\(reader)' answered CM_IOCTL_GET_FEATURE_REQUEST with a malformed feature list: \(error); give --code")
        }
        guard let escape = PCSCFeatureList(features).escapeCommandCode else {
            throw CLIError.failure(
                "'\(reader)' announces no escape command (no FEATURE_CCID_ESC_COMMAND, tag 0x13, in its feature list): for an ACR122U behind libccid, "
                    + "set ifdDriverOptions to 0x0001 in /etc/libccid_Info.plist and restart pcscd; or give the code with --code")
        }
        return escape
    }

    /// A failed SCardControl in words, with libccid's reason for refusing escape commands.
    package static func controlFailure(_ error: PCSCError, code: UInt32, command: [UInt8]) -> String {
        let hint = error == .notTransacted && code == 0x4200_0001
            ? " (libccid refuses escape commands unless ifdDriverOptions 0x0001 is set in /etc/libccid_Info.plist)" : ""
        return "SCardControl 0x\(String(code, radix: 16, uppercase: true)) with \(SecretDisplay.masked.text(command)): \(describe(error))\(hint)"
    }

    /// The ACR122U firmware string, when `command` is `FF 00 48 00 00` and the answer is printable
    /// ASCII without a status word (docs/acr122-pn532.md §2: "ACR122U207").
    static func firmwareString(_ command: [UInt8], _ answer: [UInt8]) -> String? {
        guard command == [0xFF, 0x00, 0x48, 0x00, 0x00], !answer.isEmpty, answer.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            return nil
        }
        return String(decoding: answer, as: UTF8.self)
    }
}
