import ISO7816
import PCSC

extension SecbridgeCLI {
    package static let shellCommand = Command(
        name: "shell",
        abstract: "An interactive session on a reader: APDUs, pseudo-APDUs, escape commands, reset, with history.",
        usage: "[--reader NAME|INDEX | --device tty:PATH] [--raw] [--stop-on-error] [--wait SECONDS] [--code HEX4] [--record FILE] [--history FILE] [--show-secrets]",
        discussion: """
            Opens the reader (--reader, else the first with a card, else the first) and reads
            statements, one a line: on the card when there is one, else on the reader alone (a
            DIRECT connection, where pseudo-APDUs go as escape commands as `secbridge control`
            sends them). A card placed later is connected to by the first APDU that needs one.

            \(ScriptInterpreter.languageHelp)

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
            the card (ended during a pause of more than \(secondsText(ScriptInterpreter.inputHold)) s in the input, as `run -` does), and
            the first failing line stops the script (exit status 1).

            Example:
              $ secbridge shell
              reader: ACS ACR122U PICC Interface 00 00, no card (a DIRECT connection: …)
              secbridge> FF 00 48 00 00
              ctl 0x42000001 > FF 00 48 00 00
              ctl < 41 43 52 31 32 32 55 32 30 37
                firmware: ACR122U207
              $ printf '00 A4 04 00 07 D2 76 00 00 85 01 01 00\\nreset\\n' | secbridge shell
            """,
        options: [
            .reader("The reader: an index from `secbridge readers` or part of its name."),
            .value("device", "tty:PATH", "A PN532 board on this serial port (tty:/dev/ttyUSB0, or tty:USB0) instead of a PC/SC reader."),
            .flag("raw", "Send the bytes as they are: no GET RESPONSE, no Le correction, no chaining."),
            .flag("stop-on-error", "In a script: stop at the first status word other than 90 00 or 61xx, and exit 1."),
            .waitForCard,
            .controlCode,
            .value("record", "FILE", "Record every exchange to a transcript FILE (as the `record` statement does)."),
            .value("history", "FILE", "The history file on a terminal (default: $XDG_STATE_HOME/secbridge/history)."),
            .showSecrets,
        ],
        run: runShell
    )

    @Sendable package static func runShell(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.isEmpty else {
            throw CLIError.usage("shell takes no arguments, got '\(invocation.arguments.positional[0])'; give a script on standard input or use `secbridge run SCRIPT`")
        }
        if let device = invocation.arguments.value("device"), invocation.arguments.value("reader") != nil {
            throw twoReadersNamed(device: device)
        }
        let buffered = BufferedConsole(invocation.console)
        defer { buffered.flush() }
        let invocation = invocation.with(console: buffered)
        var options = interpreterOptions(invocation, command: "shell")
        guard buffered.inputIsTerminal else {
            var source = ConsoleLines(console: buffered)
            return try interpret(&source, invocation: invocation, fileName: "<stdin>", options: options, needsCard: false)
        }
        // Interactive: no transaction held while the user thinks, so other programs reach the card.
        options.holdsTransaction = false
        // One context for the whole session, established again after a pcscd restart (on a serial
        // board: at the first statement that changes to a PC/SC reader).
        let device = invocation.arguments.value("device")
        let context = device == nil ? try openReestablishingContext(invocation) : deferredReestablishingContext(invocation)
        let interpreter = try ScriptInterpreter(
            invocation: invocation, context: context, fileName: "shell", options: options,
            reader: device ?? invocation.arguments.value("reader"), needsCard: false, wait: invocation.arguments.seconds("wait"))
        defer { interpreter.close() }
        if let path = invocation.arguments.value("record") { try interpreter.startRecording(path, line: nil) }
        invocation.out(interpreter.readerDescription)
        invocation.out("`help` lists the statements; Ctrl-D or `exit` ends the session.")
        let editor = LineEditor(
            console: buffered, historyPath: invocation.arguments.value("history") ?? ShellHistory.defaultPath(environment: environmentValue))
        var lineNumber = 0
        while true {
            buffered.flush()
            guard let line = editor.readLine(prompt: "secbridge> ") else {
                invocation.out("")
                break
            }
            lineNumber += 1
            do throws(CLIError) {
                switch try ScriptLine.parse(Array(line.utf8)[...], fileName: "shell", line: lineNumber) {
                case .none: continue
                case .exit: return exitSuccess
                case .step(let step): _ = try interpreter.execute(step)
                }
            } catch {
                buffered.err("secbridge: error: \(error.message)\n")
            }
        }
        return exitSuccess
    }
}
