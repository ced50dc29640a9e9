// How `secbridge capture` puts pcsc-lite's spy library under a program
// (docs/test-infrastructure.md, "pcsc-spy under any program (secbridge capture)").
import Foundation
import SecbridgeCLI
import Transcript

#if canImport(Glibc)
import Glibc
#endif

/// pcsc-lite's spy library and the real client library beside it.
struct SpyLibraries {
    /// Where Debian and other distributions put them, multiarch first.
    static let directories = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
    /// `libpcscspy.so.0` (package libpcsclite-dev).
    let spy: String
    /// `libpcsclite.so.1`, the real client library.
    let real: String

    /// The first directory that holds both, or nil.
    static func find() -> SpyLibraries? {
        for directory in directories {
            let spy = directory + "/libpcscspy.so.0", real = directory + "/libpcsclite.so.1"
            if access(spy, R_OK) == 0 && access(real, R_OK) == 0 { return SpyLibraries(spy: spy, real: real) }
        }
        return nil
    }

    /// The spy's replacement mode (pcsc-spy.pod, "Application loading libpcsclite.so.1"):
    /// `DIR/libpcsclite.so.1` is the spy, and the real library is there under the names the spy
    /// loads it by: `libpcsclite_nospy.so.1` (pcsc-lite 1.9.9 and before) and
    /// `libpcsclite_real.so.1` (2.1.0 and later). DIR goes first on LD_LIBRARY_PATH.
    ///
    /// For the preload mode (`spyAsPCSCLite` false) the directory holds only the real library's
    /// other names: the 1.9.9 spy's `load_lib` tries `dlopen("libpcsclite_nospy.so.1")` before
    /// `libpcsclite.so.1`, and prints the failure's `dlerror()` text with printf (it is built with
    /// DEBUG) to the program's standard output: `libpcsclite_nospy.so.1: cannot open shared object
    /// file: No such file or directory`, a line about capture's plumbing in the program's output.
    /// With the name there, the first dlopen finds the real library (the one already loaded, by
    /// its inode) and the spy prints nothing.
    /// - Throws: `CLIError.failure` when a link cannot be made.
    func makeReplacementDirectory(_ directory: String, spyAsPCSCLite: Bool = true) throws(CLIError) {
        guard mkdir(directory, 0o700) == 0 else {
            throw .failure("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        let links = (spyAsPCSCLite ? [("libpcsclite.so.1", spy)] : []) + [("libpcsclite_nospy.so.1", real), ("libpcsclite_real.so.1", real)]
        for (name, target) in links {
            guard symlink(target, directory + "/" + name) == 0 else {
                throw .failure("cannot link \(directory)/\(name) to \(target): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// How the spy library reaches a program.
enum SpyMode: Equatable, CustomStringConvertible {
    /// LD_PRELOAD: for programs linked with libpcsclite.so.1. The real library stays loaded and
    /// provides what the spy does not export (`g_rgSCardT0Pci`, `g_rgSCardT1Pci`, `g_rgSCardRawPci`).
    case preload
    /// A directory on LD_LIBRARY_PATH where libpcsclite.so.1 is the spy: for programs that load
    /// libpcsclite.so.1 with dlopen (OpenSC, pyscard, pcsc-perl), which a preloaded spy never sees.
    case replacement

    var description: String { self == .preload ? "preloaded" : "as libpcsclite.so.1 on LD_LIBRARY_PATH" }

    /// `.preload` when `ldd` lists libpcsclite.so.1 among the program's libraries, else
    /// `.replacement` (a program that dlopens it, or a script whose interpreter does).
    static func choose(for program: String, environment: [String: String]) -> SpyMode {
        let path = program.contains("/") ? program : (SecbridgeCLI.findExecutable(program) ?? program)
        guard let ldd = SecbridgeCLI.findExecutable("ldd") else { return .preload }
        let listing = NSTemporaryDirectory() + "secbridge-ldd-\(getpid())"
        defer { unlink(listing) }
        // ldd's own complaint (a program that does not exist) is not shown: capture's error follows.
        guard (try? SecbridgeCLI.spawnAndWait([ldd, path], environment: environment, standardOutput: listing, discardStandardError: true)) == 0,
            let text = try? String(contentsOfFile: listing, encoding: .utf8)
        else { return .replacement }
        return linksPCSCLite(lddOutput: text) ? .preload : .replacement
    }

    /// Whether `ldd`'s listing holds a `libpcsclite.so.1 => …` line.
    static func linksPCSCLite(lddOutput: String) -> Bool {
        lddOutput.split(whereSeparator: \.isNewline).contains { line in
            line.trimmingCharacters(in: .whitespaces).hasPrefix("libpcsclite.so.1 =>")
        }
    }

    /// The explanation of pcsc-lite 1.9.9's known spy crash when it is what happened: the program
    /// died of SIGSEGV (status 139) and the spy's raw log (`>|sec|usec|Function` on entry,
    /// `<|sec|usec|Function|…` on return, each line after the thread id and `@`) ends inside
    /// SCardTransmit. Before pcsc-lite 2.0.1 the spy reads `pioRecvPci->dwProtocol` after the call, and NULL is a valid pioRecvPci (libnfc's
    /// acr122_pcsc driver passes it): pcsc-lite issue #159, fixed by commit 52670e5 (2.0.1).
    static func knownSpyCrash(rawLog: String, status: Int32) -> ((String) -> String)? {
        // The log's end is enough (its last entry or return line), whatever the log's size.
        guard status == 128 + SIGSEGV, let bytes = SpyRawLog.tail(of: rawLog, count: 1 << 20) else { return nil }
        // Each line starts with the calling thread's id and `@` (1.9.9: `7F2F83DC8C80@>|…`).
        let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).map { (line: Substring) -> Substring in
            guard let at = line.firstIndex(of: "@") else { return line }
            return line[line.index(after: at)...]
        }
        guard let last = lines.last(where: { $0.hasPrefix(">|") || $0.hasPrefix("<|") }), lastCallEntered(String(last)) == "SCardTransmit" else {
            return nil
        }
        return { program in
            "'\(program)' was killed by SIGSEGV inside pcsc-lite's spy library, in SCardTransmit: the spy of pcsc-lite "
                + "before 2.0.1 (Debian 12 has 1.9.9) reads the receive PCI after the call, and the program passed NULL there, "
                + "which PC/SC allows (libnfc's acr122_pcsc driver does). This is pcsc-lite issue #159, fixed in pcsc-lite 2.0.1 "
                + "(commit 52670e5, \"libpcscspy: fix a crash with NULL pointers\"). Use the spy of pcsc-lite 2.0.1 or later, "
                + "or capture what the program does without a card (libnfc then uses SCardControl only)"
        }
    }

    /// The function of a raw-log entry line `>|sec|usec|Function`, nil for a return line.
    static func lastCallEntered(_ line: String) -> String? {
        let fields = line.split(separator: "|", omittingEmptySubsequences: false)
        guard fields.count == 4, fields[0] == ">" else { return nil }
        return String(fields[3])
    }
}

/// The spy library's raw log (`$HOME/pcsc-spy`: each line the calling thread's id, `@`, then
/// `>|sec|usec|Function` on entry, a parameter, or `<|sec|usec|Function|…` on return), read from
/// its end without loading it. The spy writes a line with three write(2) calls (the thread id,
/// the text, the line feed), so a program killed meanwhile leaves a line without its line feed.
enum SpyRawLog {
    /// The last `count` bytes of the file at most, from the start of a line (a line cut by the
    /// start of the window is left out); nil when the file cannot be read.
    static func tail(of path: String, count: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        let size = Int(info.st_size), start = max(0, size - count)
        var bytes = [UInt8](repeating: 0, count: size - start)
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(start)) }
        guard read == bytes.count else { return nil }
        if start > 0, let lf = bytes.firstIndex(of: 0x0A) { bytes.removeSubrange(...lf) }
        return bytes
    }

    /// Cuts the log back to its last complete line when it ends inside one, so that the viewer
    /// never takes a cut parameter (`FF 00 4` of `FF 00 48 00 00`) for a whole one. Returns the
    /// number of bytes cut, 0 when the log ends with a line feed (or is empty).
    /// - Throws: `CLIError.failure` when the log cannot be read or cut.
    static func cutUnfinishedLastLine(_ path: String) throws(CLIError) -> Int {
        func failure(_ what: String) -> CLIError { .failure("cannot \(what) \(path): \(String(cString: strerror(errno)))") }
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw failure("open") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure("read") }
        let size = Int(info.st_size)
        var end = size
        var block = [UInt8](repeating: 0, count: 64 * 1024)
        // Backwards one block at a time, to the last line feed or the start of the file.
        while end > 0 {
            let start = max(0, end - block.count), wanted = end - start
            let read = block.withUnsafeMutableBytes { pread(fd, $0.baseAddress, wanted, off_t(start)) }
            guard read == wanted else { throw failure("read") }
            if let lf = block[0..<wanted].lastIndex(of: 0x0A) {
                end = start + lf + 1
                break
            }
            end = start
        }
        guard end < size else { return 0 }
        guard ftruncate(fd, off_t(end)) == 0 else { throw failure("cut") }
        return size - end
    }
}

/// How a captured program ended.
struct CapturedRun {
    /// Its exit status, 128 + the signal when a signal ended it.
    let status: Int32
    /// The signal capture received and passed on to it, if any.
    let forwardedSignal: Int32?
}

nonisolated(unsafe) private var captureSignalPipe: Int32 = -1
nonisolated(unsafe) private var captureSignal: sig_atomic_t = 0
nonisolated(unsafe) private var captureSignalFromTerminal: sig_atomic_t = 0

extension SecbridgeCLI {
    /// The longest wait for the program after passing a signal on, before SIGKILL.
    static let forwardedSignalGrace: Int32 = 10_000

    /// Runs `arguments` and waits for it; SIGINT, SIGTERM and SIGHUP sent to capture are passed on
    /// to the program (except a terminal's Ctrl-C, which its process group, the program included,
    /// already received), so it never outlives capture. Waits in `poll` on a pipe the signal
    /// handlers (SIGCHLD included) write to: no polling sleep.
    static func runForwardingSignals(_ arguments: [String], environment: [String: String]) throws(CLIError) -> CapturedRun {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw .failure("pipe: \(String(cString: strerror(errno)))") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        captureSignalPipe = ends[1]
        let signals = [SIGINT, SIGTERM, SIGHUP, SIGCHLD]
        var previous = [Glibc.sigaction](repeating: Glibc.sigaction(), count: signals.count)
        var action = Glibc.sigaction()
        action.__sigaction_handler.sa_sigaction = { number, info, _ in
            if number != SIGCHLD {
                captureSignal = number
                // SI_KERNEL (0x80): sent by the terminal driver to the whole foreground group.
                captureSignalFromTerminal = info?.pointee.si_code == 0x80 ? 1 : 0
            }
            var byte: UInt8 = 1
            _ = write(captureSignalPipe, &byte, 1)
        }
        action.sa_flags = SA_SIGINFO | SA_RESTART
        sigemptyset(&action.sa_mask)
        for (index, number) in signals.enumerated() { sigaction(number, &action, &previous[index]) }
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for number in signals { sigaddset(&unblock, number) }
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        defer {
            for (index, number) in signals.enumerated() { sigaction(number, &previous[index], nil) }
            captureSignalPipe = -1
            close(ends[0])
            close(ends[1])
        }
        let pid = try spawn(arguments, environment: environment, standardOutput: nil)
        // The program never outlives capture, not even a SIGKILLed one (CapturedProgramWatcher).
        var watcher: CapturedProgramWatcher?
        do {
            watcher = try CapturedProgramWatcher(watching: pid)
        } catch {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            throw error
        }
        defer { watcher?.finish() }
        var forwarded: Int32?
        var killAt: ContinuousClock.Instant?
        while true {
            var status: Int32 = 0
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid { return CapturedRun(status: exitStatus(status), forwardedSignal: forwarded) }
            if done < 0 && errno != EINTR { throw .failure("waitpid: \(String(cString: strerror(errno)))") }
            if forwarded == nil && captureSignal != 0 {
                forwarded = captureSignal
                if captureSignalFromTerminal == 0 { kill(pid, captureSignal) }
                killAt = ContinuousClock.now + .milliseconds(Int(forwardedSignalGrace))
            }
            var timeout: Int32 = -1
            if let killAt {
                let left = killAt - ContinuousClock.now
                if left <= .zero {
                    kill(pid, SIGKILL)
                    timeout = -1
                } else {
                    timeout = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1
                }
            }
            var fds = [pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 1, timeout) > 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(ends[0], &drain, drain.count) > 0 {}
            }
        }
    }

    /// SIGINT, SIGTERM, … by number.
    static func signalName(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: "signal \(number)"
        }
    }
}

/// How `capture` runs pcsc-spy's viewer so that its output has whole lines.
///
/// pcsc-spy (pcsc-lite 1.9.9, /usr/bin/pcsc-spy) gives each thread of the spied program a Python
/// thread of its own, and each prints its lines independently; Python's `print` writes the text
/// and the line feed as two writes, so a line of one thread can land between another's text and
/// its line feed (`" i hContext: 0x6BDE4C8A    SCardCancel"`, then an empty line). A program that
/// calls SCardCancel from a second thread when it is stopped (as `monitor` does on SIGTERM) got
/// such glued lines in about 1 capture in 6, and the import refused them. The viewer is run
/// under its own interpreter with `print` replaced by one that writes text and end as one string
/// under a lock; its code and output format are otherwise untouched.
enum SpyViewer {
    /// The Python run with `-c`: `sys.argv[1]` is the viewer's path, the rest its arguments.
    static let wholeLinePrint = """
        import builtins, runpy, sys, threading
        lock = threading.Lock()
        original = builtins.print
        def whole_line_print(*values, sep=" ", end="\\n", file=None, flush=False):
            text = (" " if sep is None else sep).join(map(str, values)) + ("\\n" if end is None else end)
            with lock:
                original(text, end="", file=file, flush=flush)
        builtins.print = whole_line_print
        sys.argv = sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name="__main__")
        """

    /// The command line that runs `viewer` with `arguments`: through the interpreter its `#!`
    /// line names when that is an executable python (`#! /usr/bin/python3`, `#!/usr/bin/env
    /// python3`), with ``wholeLinePrint``; otherwise the viewer itself.
    static func commandLine(viewer: String, arguments: [String]) -> [String] {
        guard let bytes = try? readRegularFile(viewer, limit: 1 << 20),
              let firstLine = bytes.split(separator: 0x0A, maxSplits: 1).first,
              firstLine.starts(with: Array("#!".utf8))
        else { return [viewer] + arguments }
        let words = String(decoding: firstLine.dropFirst(2), as: UTF8.self).split(separator: " ").map(String.init)
        var interpreter: [String] = []
        if let first = words.first, first.hasSuffix("/env"), words.count == 2 {
            interpreter = [first, words[1]]
        } else if words.count == 1 {
            interpreter = [words[0]]
        }
        guard let program = interpreter.last, program.split(separator: "/").last?.hasPrefix("python") == true,
              access(interpreter[0], X_OK) == 0
        else { return [viewer] + arguments }
        return interpreter + ["-c", wholeLinePrint, viewer] + arguments
    }
}
