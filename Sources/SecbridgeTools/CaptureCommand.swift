// Shares the transcript commands' helpers, in the `secbridge-tools` binary.
import SecbridgeCLI
import Transcript

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    static let captureCommand = Command(
        name: "capture",
        abstract: SecbridgeCLI.toolAbstract("capture"),
        usage: "-o FILE [--spy-log FILE] [--no-redact] [--force] [--json] -- COMMAND [ARGUMENT…]",
        discussion: """
            COMMAND runs with LD_PRELOAD=libpcscspy.so.0 (package libpcsclite-dev) and HOME set to a
            private temporary directory, where the spy library writes its log (`$HOME/pcsc-spy`).
            When COMMAND ends, `pcsc-spy -n` turns the log into text and `transcript import-spy`
            converts that into FILE: SCardTransmit and SCardControl exchanges, ATR, protocol and card
            events. Secrets are redacted unless --no-redact. COMMAND's standard input and output are
            this terminal's.

            The exit status is COMMAND's success (0) or failure (1); FILE is written in both cases,
            and nothing is written when the log cannot be converted.

            Example:
              secbridge capture -o select.trn -- opensc-tool --send-apdu 00A4040007D2760000850101
              secbridge capture -o nfc-list.trn -- nfc-list
            """,
        options: [
            .value("output", short: "o", "FILE", "The transcript to write (atomically)."),
            .value("spy-log", "FILE", "Also keep pcsc-spy's text output in FILE."),
            .flag("no-redact", "Keep secrets (PINs, keys) as logged. Only for test cards."),
            .flag("force", "Replace FILE when it exists."),
            .flag("json", "Print a JSON object {command, status, output, exchanges, events, channels}."),
        ],
        run: runCapture
    )

    @Sendable static func runCapture(_ invocation: Invocation) throws -> Int32 {
        let command = invocation.arguments.positional
        guard !command.isEmpty else {
            throw CLIError.usage("give the program to run after --, e.g. `secbridge capture -o s.trn -- nfc-list`")
        }
        let output = try outputPath(invocation)
        guard let viewer = findExecutable("pcsc-spy") else {
            throw CLIError.failure("pcsc-spy is not installed: install pcsc-lite's spy (Debian package libpcsclite-dev)")
        }
        var template = Array("/tmp/secbridge-capture-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CLIError.failure("cannot create a temporary directory in /tmp: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        let rawLog = directory + "/pcsc-spy", textLog = directory + "/spy.txt"
        defer {
            unlink(rawLog)
            unlink(textLog)
            rmdir(directory)
        }
        // A regular file: the spy library appends to $HOME/pcsc-spy whatever it is, so no reader
        // has to run while the program does (no FIFO that could block it).
        let fd = open(rawLog, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLIError.failure("cannot create \(rawLog): \(String(cString: strerror(errno)))") }
        close(fd)

        let date = utcTimestamp()
        var environment = currentEnvironment()
        environment["HOME"] = directory
        environment["LD_PRELOAD"] = ["libpcscspy.so.0", environment["LD_PRELOAD"]].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
        let status: Int32
        do {
            status = try spawnAndWait(command, environment: environment, standardOutput: nil)
        } catch {
            throw CLIError.failure("cannot run '\(command[0])': \(error.message)")
        }
        var info = stat()
        guard stat(rawLog, &info) == 0, info.st_size > 0 else {
            throw CLIError.failure("'\(command[0])' made no PC/SC call through the spy (exit status \(status)): is libpcscspy.so.0 installed (libpcsclite-dev), and is the program linked dynamically with libpcsclite (not setuid)? Nothing was written")
        }
        let viewerStatus: Int32
        do {
            viewerStatus = try spawnAndWait([viewer, "-n", rawLog], environment: currentEnvironment(), standardOutput: textLog)
        } catch {
            throw CLIError.failure("cannot run pcsc-spy: \(error.message)")
        }
        if viewerStatus != 0 {
            invocation.console.err("secbridge: note: pcsc-spy exited with status \(viewerStatus) (the log may end inside a call)\n")
        }
        if let keep = invocation.arguments.value("spy-log") {
            let bytes: [UInt8]
            do { bytes = try readRegularFile(textLog, limit: .max) } catch { throw CLIError.failure(error.reason) }
            try writeAtomically(bytes, to: keep)
        }
        let options = SpyImportOptions(
            redactor: invocation.arguments.has("no-redact") ? .disabled : .default,
            tool: "secbridge \(version) capture", date: date,
            source: "secbridge capture -- \(command.joined(separator: " ")) (libpcscspy.so.0, pcsc-spy -n)")
        let transcript: Transcript
        do {
            transcript = try SpyLogImporter.importLog(contentsOfFile: textLog, options: options)
        } catch {
            throw CLIError.failure("the spy log of '\(command[0])' could not be converted: \(error.reason) (line \(error.line) of pcsc-spy's output; keep it with --spy-log FILE to look at it); nothing was written")
        }
        try save(transcript, to: output)
        report(invocation, transcript, input: command.joined(separator: " "), output: output,
               extra: [("command", .array(command.map { .string($0) })), ("status", .int(Int(status)))])
        if status != 0 {
            invocation.console.err("secbridge: error: '\(command[0])' exited with status \(status); its session was saved in \(output)\n")
            return exitFailure
        }
        return exitSuccess
    }

    /// The environment of this process as a dictionary.
    static func currentEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        var count = 0
        while let entry = pointer.pointee, count < 100_000 {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
            count += 1
        }
        return result
    }

    /// The first executable `name` on PATH.
    static func findExecutable(_ name: String) -> String? {
        let path = currentEnvironment()["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where access("\(directory)/\(name)", X_OK) == 0 {
            return "\(directory)/\(name)"
        }
        return nil
    }

    /// Runs `arguments` (looked up on PATH) with `environment`, optionally sending its standard
    /// output to a new file, and returns its exit status (128 + signal when killed).
    static func spawnAndWait(_ arguments: [String], environment: [String: String], standardOutput: String?) throws(CLIError) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardOutput {
            posix_spawn_file_actions_addopen(&actions, 1, standardOutput, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, arguments[0], &actions, nil, argv, envp)
        guard result == 0 else {
            throw .failure(String(cString: strerror(result)) + (result == ENOENT ? ": no such program on PATH" : ""))
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw .failure("waitpid: \(String(cString: strerror(errno)))") }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG by their bit layout (glibc <bits/waitstatus.h>).
        if status & 0x7F == 0 { return (status >> 8) & 0xFF }
        return 128 + (status & 0x7F)
    }
}
