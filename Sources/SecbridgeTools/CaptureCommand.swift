// Shares the transcript commands' helpers, in the `secbridge-tools` binary.
import Foundation
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
            """,
        options: [
            .value("output", short: "o", "FILE", "The transcript to write (atomically)."),
            .value("spy-log", "FILE", "Also keep pcsc-spy's text output in FILE."),
            .flag("no-redact", "Keep secrets (PINs, keys) as logged, and COMMAND's arguments as given. Only for test cards."),
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
        // The program's command line, in the header, the output and every message, with its PIN
        // or key masked (docs/secrets.md §3); `program` names it in messages.
        let redactor: Redactor = invocation.arguments.has("no-redact") ? .disabled : .default
        let shown = CommandLineRedaction.redact(arguments: command, redactor: redactor)
        let program = shown[0]
        guard let viewer = findExecutable("pcsc-spy") else {
            throw CLIError.failure("pcsc-spy is not installed: install pcsc-lite's spy (Debian package libpcsclite-dev)")
        }
        guard let libraries = SpyLibraries.find() else {
            throw CLIError.failure("pcsc-lite's spy library libpcscspy.so.0 and libpcsclite.so.1 were not found side by side in \(SpyLibraries.directories.joined(separator: ", ")): install libpcsclite-dev")
        }
        // From here on a signal only sets a flag (and, while the program runs, is passed on to it),
        // so the temporary directory below is removed however capture ends.
        installInterruptHandler()
        CaptureLeftovers.sweep()  // what a SIGKILLed capture left: raw spy logs, secrets included
        var template = Array(CaptureLeftovers.template.utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CLIError.failure("cannot create a temporary directory in /tmp: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        CaptureLeftovers.markOwner(of: directory)
        // Everything lives in the directory (the program may write its own files into HOME too):
        // removed as a whole on every way out, the interrupted one included.
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rawLog = directory + "/pcsc-spy", textLog = directory + "/spy.txt", libraryDirectory = directory + "/lib"
        // A regular file: the spy library appends to $HOME/pcsc-spy whatever it is, so no reader
        // has to run while the program does (no FIFO that could block it).
        let fd = open(rawLog, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLIError.failure("cannot create \(rawLog): \(String(cString: strerror(errno)))") }
        close(fd)

        let date = utcTimestamp()
        var environment = currentEnvironment()
        environment["HOME"] = directory
        let mode = SpyMode.choose(for: command[0], environment: environment)
        switch mode {
        case .preload:
            environment["LD_PRELOAD"] = [libraries.spy, environment["LD_PRELOAD"]].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
            // The real library under the name the spy looks for first, so it prints no dlopen error.
            try libraries.makeReplacementDirectory(libraryDirectory, spyAsPCSCLite: false)
        case .replacement:
            try libraries.makeReplacementDirectory(libraryDirectory)
        }
        environment["LD_LIBRARY_PATH"] = [libraryDirectory, environment["LD_LIBRARY_PATH"]].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ":")
        let run: CapturedRun
        do {
            run = try runForwardingSignals(command, environment: environment)
        } catch {
            throw CLIError.failure("cannot run '\(program)': \(error.message)")
        }
        let status = run.status
        var info = stat()
        guard stat(rawLog, &info) == 0, info.st_size > 0 else {
            if let signal = run.forwardedSignal {
                invocation.console.err("secbridge: '\(program)' was stopped by \(signalName(signal)) before its first PC/SC call; nothing was written\n")
                return 128 + signal
            }
            throw CLIError.failure("'\(program)' made no PC/SC call through the spy (exit status \(status), \(mode.description)): is libpcscspy.so.0 installed (libpcsclite-dev), and does the program use libpcsclite (not setuid, not linked statically)? Nothing was written")
        }
        let crash = SpyMode.knownSpyCrash(rawLog: rawLog, status: status)
        // A line the spy did not finish is left out (the viewer would take a cut parameter for a
        // whole one) and said so; the call it belonged to stays, as one that did not return.
        let unfinished = try SpyRawLog.cutUnfinishedLastLine(rawLog)
        if unfinished > 0 {
            invocation.console.err("secbridge: note: the spy's log ends inside a line (\(unfinished) byte\(unfinished == 1 ? "" : "s") after its last line feed: '\(program)' was stopped while the spy wrote it); that line is left out, and its call is kept as one that did not return\n")
        }
        let viewerStatus: Int32
        do {
            // SIGINT, SIGTERM, SIGHUP and SIGQUIT blocked: a Ctrl-C meant for the program (the
            // terminal sends it to the whole foreground group) must not stop the viewer half-way
            // and lose the end of the session.
            viewerStatus = try spawnAndWait(SpyViewer.commandLine(viewer: viewer, arguments: ["-n", rawLog]),
                                         environment: currentEnvironment(), standardOutput: textLog, blockingStopSignals: true)
        } catch {
            throw CLIError.failure("cannot run pcsc-spy: \(error.message)")
        }
        if viewerStatus != 0 && crash == nil {
            invocation.console.err("secbridge: note: pcsc-spy exited with status \(viewerStatus) (the log may end inside a call)\n")
        }
        if let keep = invocation.arguments.value("spy-log") {
            try copyAtomically(textLog, to: keep)
        }
        let options = SpyImportOptions(
            redactor: redactor,
            tool: "secbridge \(version) capture", date: date,
            source: "secbridge capture -- \(shown.joined(separator: " ")) (libpcscspy.so.0 \(mode.description), pcsc-spy -n)")
        // Streamed: the viewer's text is read twice line by line and the transcript written as it
        // goes (renamed into place when complete), so memory does not grow with the session.
        let statistics: TranscriptStatistics
        do {
            statistics = try SpyLogImporter.importLog(contentsOfFile: textLog, writingTo: output, options: options)
        } catch where error.code == .writeFailed {
            throw CLIError.failure("\(error.reason); nothing was written")
        } catch {
            throw CLIError.failure("the spy log of '\(program)' could not be converted: \(error.reason) (line \(error.line) of pcsc-spy's output; keep it with --spy-log FILE to look at it); nothing was written")
        }
        report(invocation, statistics, input: shown.joined(separator: " "), output: output,
               extra: [("command", .array(shown.map { .string($0) })), ("status", .int(Int(status)))])
        if let crash {
            invocation.console.err("secbridge: error: \(crash(program)); the calls before the crash were saved in \(output)\n")
            return exitFailure
        }
        if let signal = run.forwardedSignal {
            invocation.console.err("secbridge: '\(program)' was stopped by \(signalName(signal)) (passed on to it); its session so far was saved in \(output)\n")
            return 128 + signal
        }
        if interrupted() {
            invocation.console.err("secbridge: interrupted; the session of '\(program)' was saved in \(output)\n")
            return interruptedExitStatus()
        }
        if status != 0 {
            invocation.console.err("secbridge: error: '\(program)' exited with status \(status); its session was saved in \(output)\n")
            return exitFailure
        }
        return exitSuccess
    }

    /// Copies the regular file `source` to `path` through one 1 MiB buffer, atomically (a
    /// temporary file beside `path`, flushed and renamed over it when complete; on failure `path`
    /// is unchanged): memory does not grow with the file. The copy is created mode 0600 by
    /// open(2) (`--spy-log` holds keys and PINs as logged, by design).
    /// - Throws: `CLIError.failure` naming the file that could not be read or written.
    static func copyAtomically(_ source: String, to path: String) throws(CLIError) {
        let fd = open(source, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw .failure("cannot open \(source): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let file: FileIO.AtomicFile
        do { file = try FileIO.AtomicFile(replacing: path, mode: 0o600) } catch { throw .failure(error.reason) }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            // Dropped uncommitted, the temporary file is removed: `path` stays as it was.
            guard n >= 0 else { throw .failure("cannot read \(source): \(String(cString: strerror(errno))); \(path) was not written") }
            if n == 0 { break }
            do { try file.write(Array(chunk[0..<n])) } catch { throw .failure(error.reason) }
        }
        do { try file.commit() } catch { throw .failure(error.reason) }
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
    static func spawnAndWait(
        _ arguments: [String], environment: [String: String], standardOutput: String?, discardStandardError: Bool = false,
        blockingStopSignals: Bool = false
    ) throws(CLIError) -> Int32 {
        let pid = try spawn(arguments, environment: environment, standardOutput: standardOutput,
                            discardStandardError: discardStandardError, blockingStopSignals: blockingStopSignals)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw .failure("waitpid: \(String(cString: strerror(errno)))") }
        }
        return exitStatus(status)
    }

    /// Starts `arguments` (looked up on PATH) with `environment`, optionally sending its standard
    /// output to a new file, its standard input from the descriptor `standardInput`, and its
    /// standard error to /dev/null; no signal is blocked in it, or
    /// SIGINT, SIGTERM, SIGHUP and SIGQUIT are when `blockingStopSignals` (it then runs to its
    /// end). Returns its process id.
    static func spawn(
        _ arguments: [String], environment: [String: String], standardOutput: String?, standardInput: Int32? = nil,
        discardStandardError: Bool = false, blockingStopSignals: Bool = false
    ) throws(CLIError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child's signal mask is set either way: not inherited from the calling thread
        // (a worker thread may block signals the program must get).
        var mask = sigset_t()
        sigemptyset(&mask)
        if blockingStopSignals {
            for number in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&mask, number) }
        }
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        if let standardOutput {
            posix_spawn_file_actions_addopen(&actions, 1, standardOutput, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        }
        if discardStandardError {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw .failure(String(cString: strerror(result)) + (result == ENOENT ? ": no such program on PATH" : ""))
        }
        return pid
    }

    /// A waitpid status as an exit status: WEXITSTATUS, or 128 + WTERMSIG, by their bit layout
    /// (glibc <bits/waitstatus.h>).
    static func exitStatus(_ status: Int32) -> Int32 {
        if status & 0x7F == 0 { return (status >> 8) & 0xFF }
        return 128 + (status & 0x7F)
    }
}
