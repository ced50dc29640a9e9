import PCSC

#if canImport(Glibc)
import Glibc
#endif

/// The `secbridge` command-line tool: entry point and command tree.
public enum SecbridgeCLI {
    /// The tool's version, written into transcripts' provenance headers.
    public static let version = SecbridgeVersion.current

    /// Exit status: success.
    public static let exitSuccess: Int32 = 0
    /// Exit status: the command ran and failed (a card error, a missing reader, a diverging replay).
    public static let exitFailure: Int32 = 1
    /// Exit status: the command line was wrong (EX_USAGE).
    public static let exitUsage: Int32 = 64

    /// Runs the tool with `arguments` (without the program name) and returns the exit status.
    ///
    /// `toolCommands` are the commands that live in the `secbridge-tools` binary (they link
    /// Foundation, which would make the lean `secbridge` binary start several milliseconds slower
    /// than `pcsc_scan -r`). By default they are stand-ins that hand the whole command line to
    /// `secbridge-tools` beside this binary; `SecbridgeTools.main` passes the real ones.
    ///
    /// `client` is how commands reach readers: pcsc-lite (a real pcscd) by default; tests pass an
    /// in-process client (InProcessPCSC) to run commands against simulated readers without pcscd.
    public static func main(
        arguments: [String], console: any Console = StandardConsole(), toolCommands: [Command]? = nil,
        client: any PCSCClient = PCSCLiteClient(), timeScale: Double = 1
    ) -> Int32 {
        // A command of `secbridge-tools` goes there before anything else is set up (the command
        // tree, its option tables): the hand-over is the whole of the lean binary's work for it.
        if toolCommands == nil, let first = arguments.first, toolCommandSummaries.contains(where: { $0.name == first }) {
            return runTools(arguments: arguments, console: console)
        }
        let root = makeRoot(toolCommands: toolCommands ?? delegatedToolCommands)
        let status = dispatch(arguments: arguments, console: console, root: root, client: client, timeScale: timeScale)
        if let failure = (console as? StandardConsole)?.outputFailure {
            console.err("secbridge: error: cannot write standard output: \(failure)\n")
            return exitFailure
        }
        return status
    }

    package static func dispatch(
        arguments: [String], console: any Console, root: Command, client: any PCSCClient, timeScale: Double = 1
    ) -> Int32 {
        // `secbridge help [COMMAND…]` is `secbridge [COMMAND…] --help`.
        if arguments.first == "help" {
            return dispatch(arguments: Array(arguments.dropFirst()) + ["--help"], console: console, root: root, client: client, timeScale: timeScale)
        }
        if let first = arguments.first, first == "--generate-man" || first == "--generate-completion" {
            return generate(arguments: arguments, console: console, root: root)
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
            if next.delegatesToTools {
                return runTools(arguments: arguments, console: console)
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
            parsed = try parseArguments(Array(remaining), options: command.options, standardInput: { console.readLine() })
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
        // With --json, a command that fails before printing its JSON still prints a JSON object,
        // {"error": …}, so a script reading standard output always gets one.
        let tracking = parsed.has("json") ? OutputTrackingConsole(console) : nil
        func failed(_ message: String) -> Int32 {
            console.err("secbridge: error: \(message)\n")
            if let tracking, !tracking.wroteOutput {
                console.out(JSONValue.object([("error", .string(message))]).prettySerialized() + "\n")
            }
            return exitFailure
        }
        let recordings = RecordingLedger(console: console)
        // A recording that could not be written makes the run fail, after the command finished
        // its device work (docs/faults.md, "A recording that cannot be written").
        func finishingRecordings(_ status: Int32) -> Int32 {
            let incomplete = recordings.finishAll()
            for message in incomplete { console.err("secbridge: error: \(message)\n") }
            return incomplete.isEmpty || status != exitSuccess ? status : exitFailure
        }
        do {
            return finishingRecordings(try command.run!(Invocation(
                arguments: parsed, console: tracking ?? console, path: path, client: client, timeScale: timeScale,
                recordings: recordings)))
        } catch let error as CLIError {
            switch error {
            case .usage(let message):
                return finishingRecordings(usageError(message, command: command, path: path, console: console))
            case .failure(let message):
                return finishingRecordings(failed(message))
            }
        } catch {
            return finishingRecordings(failed("\(error)"))
        }
    }

    /// The hidden `--generate-man DIR` and `--generate-completion bash|zsh` (used by
    /// scripts/install.sh): man pages and completion scripts of the whole tree (ManPages.swift,
    /// Completions.swift). The lean binary knows the tools' commands by name only, so it hands
    /// these to `secbridge-tools`, whose tree is complete.
    static func generate(arguments: [String], console: any Console, root: Command) -> Int32 {
        if root.subcommands.contains(where: \.delegatesToTools) {
            return runTools(arguments: arguments, console: console)
        }
        guard arguments.count == 2 else {
            return usageError(arguments[0] == "--generate-man" ? "--generate-man takes one directory" : "--generate-completion takes one shell: bash or zsh",
                              command: root, path: [], console: console)
        }
        if arguments[0] == "--generate-man" {
            do throws(CLIError) {
                try ManPages.write(root: root, to: arguments[1])
            } catch {
                console.err("secbridge: error: \(error.message)\n")
                return exitFailure
            }
            return exitSuccess
        }
        guard let script = Completions.script(for: arguments[1], root: root) else {
            return usageError("--generate-completion takes bash or zsh, not '\(arguments[1])'", command: root, path: [], console: console)
        }
        console.out(script)
        return exitSuccess
    }

    package static func usageError(_ message: String, command: Command, path: [String], console: any Console) -> Int32 {
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

    package static func makeRoot(toolCommands: [Command]) -> Command {
        Command(
        name: "secbridge",
        abstract: "PC/SC and NFC credential sessions on Linux: readers, APDUs, transcripts.",
        discussion: """
            Talks to smart cards and NFC readers through pcscd (pcsc-lite). Set PCSCLITE_CSOCK_NAME to
            use a pcscd other than the system one. SECBRIDGE_CALL_TIMEOUT bounds every blocking PC/SC
            call (seconds, 1 to 3600; default 40). SECBRIDGE_ACR122_IFD names the simulated ACR122U's
            pcscd driver library for simulate, demo and replay (default: beside the binary, then
            ../lib/secbridge from the binary's directory, then the source tree's build directory).

            Exit status: 0 success, 1 failure, 64 usage error.
            """,
        options: [.flag("version", "Show the version.")],
        subcommands: [readersCommand, sendCommand, controlCommand, decodeCommand, monitorCommand, runCommand, shellCommand] + toolCommands
        )
    }

    /// Replaces this process with `secbridge-tools` (found beside this binary through
    /// /proc/self/exe), passing `arguments` unchanged; returns only when that is impossible.
    package static func runTools(arguments: [String], console: any Console) -> Int32 {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else {
            console.err("secbridge: error: cannot find this binary's directory (/proc/self/exe) to run secbridge-tools\n")
            return exitFailure
        }
        let me = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let directory = me.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let tools = directory + "/secbridge-tools"
        var argv: [UnsafeMutablePointer<CChar>?] = ([tools] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        execv(tools, &argv)
        let besideError = errno
        // Not beside this binary: the one in PATH, as a copy installed on its own would find it.
        execvp("secbridge-tools", &argv)
        console.err(
            "secbridge: error: '\(arguments.first ?? "")' is run by secbridge-tools, found neither beside this binary (\(tools): \(String(cString: strerror(besideError)))) nor in PATH; "
                + "install both binaries side by side, e.g. `install -m 755 .build/release/secbridge .build/release/secbridge-tools /usr/local/bin/` after `swift build -c release`\n")
        return exitFailure
    }

    /// The abstract of the `secbridge-tools` command `name`: the one text both binaries show (the
    /// lean binary's root help lists the tools' commands without loading them).
    package static func toolAbstract(_ name: String) -> String {
        toolCommandSummaries.first { $0.name == name }?.abstract ?? ""
    }

    /// The commands of `secbridge-tools`, by name and abstract, in help order.
    static let toolCommandSummaries: [(name: String, abstract: String)] = [
        ("replay", "Send a transcript's recorded commands to a live reader or a credential and compare the answers."),
        ("simulate", "Run simulated ACR122U readers in a private pcscd, for any PC/SC program to use."),
        ("credentials", "List the credentials a session knows, from credential files."),
        ("emulate", "Present a credential to a terminal: card emulation on an ACR122U."),
        ("read", "A reader session: read the presented card's UID and ATS, SELECT an AID, or read its NDEF message."),
        ("demo", "The main job: a credential session emulating an NDEF tag on one simulated ACR122U, read by a second."),
        ("transcript", "Read, compare, redact and import transcripts (Fixtures/README.md)."),
        ("capture", "Run any PC/SC program under pcsc-lite's spy and save what it did as a transcript."),
        ("selftest", "Run a fixed sequence on an ACR122U in both roles and save it as a transcript bundle; replay bundles against the simulator."),
        ("doctor", "Check pcscd, the ACR122U, its driver, escape commands and firmware, and say how to fix what fails."),
        ("reset", "Bring an ACR122U back to a usable state after an interrupted emulation."),
        ("write-ndef", "Write an NDEF message (a URI or a text record) to an NFC Forum Type 2 Tag."),
        ("write-dump", "Restore a storage-card dump in libnfc's .mfd layout (MIFARE Classic, Ultralight, NTAG21x), rules checked first."),
        ("serve", "Present a credential as the card in a vpcd reader (vsmartcard), to a pcscd here or on another host."),
    ]

    /// Stand-ins that run `secbridge-tools` (beside this binary) with the same command line.
    static var delegatedToolCommands: [Command] {
        toolCommandSummaries.map { summary in
            Command(name: summary.name, abstract: summary.abstract, delegatesToTools: true)
        }
    }
}
