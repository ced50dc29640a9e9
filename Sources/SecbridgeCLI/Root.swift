/// The `secbridge` command-line tool: entry point and command tree.
public enum SecbridgeCLI {
    /// The tool's version, written into transcripts' provenance headers.
    public static let version = "0.1.0"

    /// Exit status: success.
    public static let exitSuccess: Int32 = 0
    /// Exit status: the command ran and failed (a card error, a missing reader, a diverging replay).
    public static let exitFailure: Int32 = 1
    /// Exit status: the command line was wrong (EX_USAGE).
    public static let exitUsage: Int32 = 64

    /// Runs the tool with `arguments` (without the program name) and returns the exit status.
    public static func main(arguments: [String], console: any Console = StandardConsole()) -> Int32 {
        let status = dispatch(arguments: arguments, console: console)
        if let failure = (console as? StandardConsole)?.outputFailure {
            console.err("secbridge: error: cannot write standard output: \(failure)\n")
            return exitFailure
        }
        return status
    }

    static func dispatch(arguments: [String], console: any Console) -> Int32 {
        // `secbridge help [COMMAND…]` is `secbridge [COMMAND…] --help`.
        if arguments.first == "help" {
            return dispatch(arguments: Array(arguments.dropFirst()) + ["--help"], console: console)
        }
        var path: [String] = []
        var command = root
        var remaining = arguments[...]
        // Walk down the tree while the next word names a subcommand.
        while !command.subcommands.isEmpty, let word = remaining.first, !word.hasPrefix("-") {
            guard let next = command.subcommands.first(where: { $0.name == word }) else {
                return usageError(
                    "unknown command '\(word)'", command: command, path: path, console: console)
            }
            path.append(word)
            command = next
            remaining = remaining.dropFirst()
        }
        if remaining.first == "--version" && path.isEmpty {
            console.out("secbridge \(version)\n")
            return exitSuccess
        }
        let parsed: ParsedArguments
        do {
            parsed = try parseArguments(Array(remaining), options: command.options)
        } catch {
            return usageError(error.message, command: command, path: path, console: console)
        }
        if parsed.has("help") || command.run == nil {
            if command.run == nil && !parsed.has("help") && !path.isEmpty {
                return usageError("'\((["secbridge"] + path).joined(separator: " "))' needs a subcommand",
                    command: command, path: path, console: console)
            }
            console.out(command.help(path: path))
            return parsed.has("help") || path.isEmpty && arguments.isEmpty ? exitSuccess : exitUsage
        }
        do {
            return try command.run!(Invocation(arguments: parsed, console: console, path: path))
        } catch let error as CLIError {
            switch error {
            case .usage(let message):
                return usageError(message, command: command, path: path, console: console)
            case .failure(let message):
                console.err("secbridge: error: \(message)\n")
                return exitFailure
            }
        } catch {
            console.err("secbridge: error: \(error)\n")
            return exitFailure
        }
    }

    static func usageError(_ message: String, command: Command, path: [String], console: any Console) -> Int32 {
        let full = (["secbridge"] + path).joined(separator: " ")
        var text = "secbridge: error: \(message)\n"
        var usage = "USAGE: \(full)"
        if !command.subcommands.isEmpty { usage += " <subcommand>" }
        if !command.usage.isEmpty { usage += " " + command.usage }
        text += usage + "\n"
        text += "Run '\(full) --help' for more information.\n"
        console.err(text)
        return exitUsage
    }

    static let root = Command(
        name: "secbridge",
        abstract: "PC/SC and NFC credential sessions on Linux: readers, APDUs, transcripts.",
        discussion: """
            Talks to smart cards and NFC readers through pcscd (pcsc-lite). Set PCSCLITE_CSOCK_NAME to
            use a pcscd other than the system one.

            Exit status: 0 success, 1 failure, 64 usage error.
            """,
        options: [.flag("version", "Show the version.")],
        subcommands: [readersCommand, sendCommand, decodeCommand] + laterCommands
    )

    /// Commands registered by later layers (monitor, run, replay, …).
    static var laterCommands: [Command] { [monitorCommand, runCommand, replayCommand, simulateCommand, credentialsCommand, emulateCommand, readCommand, demoCommand, transcriptCommand, captureCommand] }
}
