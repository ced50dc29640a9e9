import ISO7816
import PCSC
import Transcript

extension SecbridgeCLI {
    package static let runCommand = Command(
        name: "run",
        abstract: "Send the APDUs of a script file to a card (reads pcsc-tools' scriptor files).",
        usage: "[--reader NAME|INDEX] [--raw] [--stop-on-error] [--wait SECONDS] [--code HEX4] [--json] [--record FILE] [--show-secrets] SCRIPT",
        discussion: """
            SCRIPT holds one APDU in hex per line; `#` and `//` start comments; `reset` resets the
            card (its ATR is shown) and `exit` stops, as in scriptor; `-` reads the script from
            standard input. Scripts speak the language of `secbridge shell` (its --help lists
            control, reader, record and help too), so `secbridge shell < SCRIPT` prints the same.
            Lines are read and run one at a time: a malformed line stops the script there, after
            the lines before it ran. ISO 7816-4 handling is on unless --raw (see `secbridge send
            --help`). The script runs inside one PC/SC transaction: no other program's command
            lands between its lines (a `reset` line keeps the transaction). From standard input,
            a pause of more than \(secondsText(ScriptInterpreter.inputHold)) s before the next line ends the transaction while it lasts,
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
            """,
        options: [
            .reader("The reader: an index from `secbridge readers` or part of its name."),
            .flag("raw", "Send the bytes as they are: no GET RESPONSE, no Le correction, no chaining."),
            .flag("stop-on-error", "Stop at the first status word other than 90 00 or 61xx, and exit 1."),
            .waitForCard,
            .controlCode,
            .flag("json", "Print a JSON array, an object per line run: {line, command, response, sw, meaning} for an APDU (firmware instead of sw for FF 00 48 00 00), {line, control, command, response} for an escape command, {line, reset, atr}, {line, reader, atr}, {line, record} and {line, recorded}."),
            .value("record", "FILE", "Record every exchange to a transcript FILE."),
            .showSecrets,
        ],
        run: runScript
    )

    @Sendable package static func runScript(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.count == 1 else {
            throw CLIError.usage(
                invocation.arguments.positional.isEmpty
                    ? "give the script file to run" : "run takes one script file, got \(invocation.arguments.positional.count) arguments")
        }
        let path = invocation.arguments.positional[0]
        // Output is buffered and written at the end, before an error and when a line is read.
        let buffered = BufferedConsole(invocation.console)
        defer { buffered.flush() }
        let invocation = invocation.with(console: buffered)
        let options = interpreterOptions(invocation, command: "run")
        if path == "-" {
            var source = ConsoleLines(console: buffered)
            return try interpret(&source, invocation: invocation, fileName: "<stdin>", options: options, needsCard: true)
        }
        var source = try APDUScript.lines(ofFile: path)
        return try interpret(&source, invocation: invocation, fileName: path, options: options, needsCard: true)
    }
}
