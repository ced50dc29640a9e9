import ISO7816
import PCSC

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    package static let monitorCommand = Command(
        name: "monitor",
        abstract: "Show reader and card events as they happen.",
        usage: "[--count N] [--timeout SECONDS] [--json] [--record FILE]",
        discussion: """
            Prints readers and cards already present, then each reader attach/detach and card
            insert/remove until interrupted (Ctrl-C), until N events were shown (--count), or until
            SECONDS passed (--timeout). When pcscd stops or restarts, monitoring reports it and resumes
            by itself once pcscd is back.

            Example:
              $ secbridge monitor --count 2
              reader-attached "Virtual PCD 00 00"
              card-inserted "Virtual PCD 00 00" ATR 3B 80 80 01 01
            """,
        options: [
            .value("count", "N", "Stop after N events (1–1000000).", .integer(1...1_000_000)),
            .value("timeout", "SECONDS", "Stop after SECONDS (at most 86400); exit 0.", .seconds(limit: 86_400)),
            .flag("json", "Print one JSON object per line: {event, reader, atr, time}."),
            .value("record", "FILE", "Record the events to a transcript FILE."),
        ],
        run: runMonitor
    )

    @Sendable package static func runMonitor(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.isEmpty else {
            throw CLIError.usage("monitor takes no arguments, got '\(invocation.arguments.positional[0])'")
        }
        let count = invocation.arguments.integer("count")
        let timeout = invocation.arguments.seconds("timeout")
        let recorder = try invocation.arguments.value("record").map { path throws(CLIError) in
            try TranscriptRecording.startEvents(path: path, command: "monitor", console: invocation.console)
        }
        let monitor = ReaderMonitor()
        let done = Completion()
        let start = ContinuousClock.now
        let console = invocation.console
        let json = invocation.json
        // Read events on a task; the main thread waits with a bound (the timeout) or until Ctrl-C.
        let task = Task.detached {
            var seen = 0
            for await event in monitor.events {
                let elapsed = ContinuousClock.now - start
                recorder?.record(event)
                if json {
                    var members: [(String, JSONValue)] = [("event", .string(event.kind))]
                    members.append(("reader", event.reader.map { .string($0) } ?? .null))
                    if case .cardInserted(_, let atr) = event { members.append(("atr", .hex(atr))) }
                    if case .serviceLost(let error) = event { members.append(("error", .string(error.name))) }
                    members.append(("time", .string(formatSeconds(elapsed))))
                    console.out(JSONValue.object(members).serialized() + "\n")
                } else {
                    console.out(event.description + "\n")
                }
                seen += 1
                if let count, seen >= count { break }
            }
            done.signal()
        }
        installInterruptHandler()
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while !done.isSignalled && !interrupted() {
            if let deadline, ContinuousClock.now >= deadline { break }
            sleepMilliseconds(20)
        }
        monitor.stop()
        task.cancel()
        recorder?.finish()
        return exitSuccess
    }

    package static func formatSeconds(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}

/// A one-shot flag set from another thread.
package final class Completion: @unchecked Sendable {
    private let lock = ConsoleLock()
    private var value = false
    package func signal() { lock.withLock { value = true } }
    package var isSignalled: Bool { lock.withLock { value } }
}

nonisolated(unsafe) private var interruptFlag: sig_atomic_t = 0
/// The pipe the signal handler writes one byte to, so a command waiting in `poll` wakes at once
/// (write is async-signal-safe); [-1, -1] until `installInterruptHandler` made it.
nonisolated(unsafe) private var interruptPipe: [Int32] = [-1, -1]
nonisolated(unsafe) private var interruptPipeWriteEnd: Int32 = -1

private func noteInterrupt(_ number: Int32) {
    interruptFlag = number
    if interruptPipeWriteEnd >= 0 {
        var byte: UInt8 = 1
        _ = write(interruptPipeWriteEnd, &byte, 1)
    }
}

/// Makes SIGINT, SIGTERM and SIGHUP (the terminal closed) set a flag that long-running commands
/// poll, so they can restore the reader and flush transcripts before exiting.
/// The signals are also unblocked: a process started from a thread that blocks them (test
/// runners do) inherits that mask, and would otherwise never see Ctrl-C.
package func installInterruptHandler() {
    if interruptPipe[0] < 0 {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, O_NONBLOCK)
            }
            interruptPipe = ends
            interruptPipeWriteEnd = ends[1]
        }
    }
    signal(SIGINT) { number in noteInterrupt(number) }
    signal(SIGTERM) { number in noteInterrupt(number) }
    signal(SIGHUP) { number in noteInterrupt(number) }
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGINT)
    sigaddset(&set, SIGTERM)
    sigaddset(&set, SIGHUP)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
}

package func interrupted() -> Bool { interruptFlag != 0 }

/// A descriptor that becomes readable when SIGINT, SIGTERM or SIGHUP arrives after
/// ``installInterruptHandler()``, for waits in `poll`; -1 when no pipe could be made.
package func interruptDescriptor() -> Int32 { interruptPipe[0] }

/// The exit status after the signal that interrupted the command: 128 + its number (130 for
/// SIGINT, 143 for SIGTERM), as shells report a process ended by that signal.
package func interruptedExitStatus() -> Int32 { 128 + (interruptFlag != 0 ? interruptFlag : SIGINT) }

package func sleepMilliseconds(_ milliseconds: Int) {
    var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR {
        if interruptFlag != 0 { return }
        request = remaining
    }
}
