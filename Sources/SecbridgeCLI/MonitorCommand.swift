import ISO7816
import PCSC
import PCSCCore

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    package static let monitorCommand = Command(
        name: "monitor",
        abstract: "Show reader and card events as they happen.",
        usage: "[--count N] [--timeout SECONDS] [--liveness SECONDS] [--json] [--record FILE]",
        discussion: """
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
            """,
        options: [
            .value("count", "N", "Stop after N events (1–1000000).", .integer(1...1_000_000)),
            .value("timeout", "SECONDS", "Stop after SECONDS (at most 86400); exit 0.", .seconds(limit: 86_400)),
            .value("liveness", "SECONDS", "Ask pcscd every SECONDS (default 10, 0.1 to 3600) and say so when it gives no answer within that time.", .seconds(limit: 3600, atLeast: 0.1)),
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
            try TranscriptRecording.startEvents(
                path: path, command: "monitor", console: invocation.console, recordings: invocation.recordings, stopsCommand: true)
        }
        // With no reader at all the event stream stays empty, which looks like a hang: say what
        // monitor waits for (pcsc_scan too says it waits for the first reader).
        if hasNoReader(invocation.client) { invocation.console.err(noReaderYetLine) }
        let monitor = ReaderMonitor(client: invocation.client)
        let done = Completion()
        let start = ContinuousClock.now
        let console = invocation.console
        let json = invocation.json
        // Read events on a task; the main thread waits with a bound (the timeout) or until Ctrl-C.
        let task = Task.detached {
            var seen = 0
            for await event in monitor.events {
                let elapsed = ContinuousClock.now - start
                // An event the file cannot take ends the monitor (shown, then exit 1): a recording
                // with a silent hole would look complete.
                let recorded = recorder?.record(event) ?? true
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
                if !recorded { break }
                if let count, seen >= count { break }
            }
            done.signal()
        }
        installInterruptHandler()
        let liveness = invocation.arguments.seconds("liveness") ?? .seconds(10)
        let client = invocation.client
        let probes = CallGate()
        _ = startThread(name: "pcscd-liveness") {
            watchLiveness(of: client, every: liveness, until: done, probes: probes) { kind, detail in
                if json {
                    console.out(JSONValue.object([("event", .string(kind)), ("reader", .null), ("detail", .string(detail)),
                                                  ("time", .string(formatSeconds(ContinuousClock.now - start)))]).serialized() + "\n")
                } else {
                    console.out("\(kind) (\(detail))\n")
                }
            }
        }
        // Sleeps in poll(2) until the task signals, a signal arrives or the timeout passes.
        done.waitSignalledOrInterrupted(until: timeout.map { ContinuousClock.now + $0 })
        // Nothing of the monitor may still call into PC/SC once this returns (the binary's exit
        // runs libpcsclite's destructor): no new probe, the watch thread's context released, the
        // probe in progress returned. Each wait is bounded; what a stopped pcscd still holds is
        // left to the binary's exit (`SecbridgeCLI.exitProcess`), which does not run the destructor then.
        done.signal()
        let stopping = ContinuousClock.now
        monitor.stop(waitingAtMost: stopBound)
        probes.close(waitingAtMost: stopBound - (ContinuousClock.now - stopping))
        task.cancel()
        recorder?.finish()
        if recorder?.stoppedBy != nil {
            // The error line came when the write failed; this says what the file holds.
            console.err("secbridge: error: monitoring stopped: the recording holds every event before the one it could not take\n")
            return exitFailure
        }
        return exitSuccess
    }

    /// The note `monitor` prints on standard error when pcscd lists no reader at its start.
    package static let noReaderYetLine =
        "secbridge: note: no reader is connected to pcscd yet; waiting for the first one (plug one in, or start one with `secbridge simulate`)\n"

    /// Whether pcscd answers and lists no reader now (SCardEstablishContext, SCardListReaders and
    /// SCardReleaseContext, each bounded by the watchdog). False when pcscd does not answer: the
    /// monitor's own `service-lost` says that.
    static func hasNoReader(_ client: any PCSCClient) -> Bool {
        guard let context = try? CallWatchdog.shared.guarding("SCardEstablishContext", { () throws(PCSCError) in try client.establishContext() })
        else { return false }
        defer { try? context.release() }
        return (try? listReaders(context))?.isEmpty == true
    }

    /// How long `monitor` waits, once it stops, for its watch thread to release its context and
    /// for a liveness probe in progress to return (both together): a poll interval (500 ms) and
    /// the release, with room to spare.
    static let stopBound = Duration.seconds(1)

    /// Every `interval`, until `done` is signalled or a signal arrives: SCardEstablishContext,
    /// SCardListReaders and SCardReleaseContext on a thread of their own, counted in `probes`
    /// (none starts once `probes` is closed). No answer within `interval` reports
    /// `service-unresponsive` (once), and the late answer `service-answering`;
    /// a pcscd that is gone answers at once with an error, which the monitor's own
    /// `service-lost` covers. While a probe hangs no other is started. Blocking calls run on
    /// threads of this function's own, never on Swift's shared pool; the waits sleep in poll(2).
    static func watchLiveness(
        of client: any PCSCClient, every interval: Duration, until done: Completion, probes: CallGate,
        report: @escaping (String, String) -> Void
    ) {
        let seconds = formatSeconds(interval)
        while !done.isSignalled && !interrupted() {
            done.waitSignalledOrInterrupted(until: ContinuousClock.now + interval)
            if done.isSignalled || interrupted() { return }
            let answered = Completion()
            guard probes.enter() else { return }
            let started = startThread(name: "pcscd-probe") {
                if let context = try? client.establishContext() {
                    _ = try? context.listReaders()
                    try? context.release()
                }
                probes.leave()
                answered.signal()
            }
            guard started else {
                probes.leave()
                return
            }
            answered.waitSignalledOrInterrupted(until: ContinuousClock.now + interval)
            guard !answered.isSignalled else { continue }
            if done.isSignalled || interrupted() { return }
            report("service-unresponsive", "pcscd gave no answer within \(seconds) s: stopped, or stuck in a driver; events resume when it answers")
            answered.waitSignalledOrInterrupted(until: nil)
            if answered.isSignalled && !done.isSignalled { report("service-answering", "pcscd answers again") }
        }
    }

    package static func formatSeconds(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}

/// A one-shot flag set from another thread, that a thread can sleep on together with the
/// interrupt signals (``installInterruptHandler()``): no polling.
package final class Completion: @unchecked Sendable {
    private let lock = ConsoleLock()
    private var value = false
    /// A pipe ``signal()`` writes one byte to; -1 when it could not be made.
    private let wake: (read: Int32, write: Int32)
    private var wakes = 0

    package init() { wake = makeWakePipe() }

    deinit {
        if wake.read >= 0 { close(wake.read) }
        if wake.write >= 0 { close(wake.write) }
    }

    package func signal() {
        lock.withLock { value = true }
        if wake.write >= 0 {
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }
    }

    package var isSignalled: Bool { lock.withLock { value } }

    /// How often ``waitSignalledOrInterrupted(until:)`` woke from poll(2) (tests read it).
    package var wakeCount: Int { lock.withLock { wakes } }

    /// poll(2)'s timeout until `deadline` in milliseconds, rounded up so the last wait does not end
    /// just short of it; nil once the deadline has passed.
    private static func pollTimeout(until deadline: ContinuousClock.Instant) -> Int32? {
        let left = deadline - ContinuousClock.now
        if left <= .zero { return nil }
        let (seconds, attoseconds) = left.components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    /// Sleeps until ``signal()`` or `deadline`, whatever signals arrive meanwhile (poll(2) on the
    /// wake pipe alone).
    package func waitSignalled(until deadline: ContinuousClock.Instant) {
        while !isSignalled {
            guard var timeout = Self.pollTimeout(until: deadline) else { return }
            if wake.read < 0 { timeout = min(timeout, 100) }  // no pipe: a bounded step (pipe(2) failed)
            var poller = pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, wake.read < 0 ? 0 : 1, timeout)
            lock.withLock { wakes += 1 }
        }
    }

    /// Sleeps until ``signal()``, an interrupt signal (SIGINT, SIGTERM, SIGHUP once
    /// ``installInterruptHandler()`` ran) or `deadline` (nil: no bound but the other two).
    package func waitSignalledOrInterrupted(until deadline: ContinuousClock.Instant?) {
        while !isSignalled && !interrupted() {
            var timeout: Int32 = -1
            if let deadline {
                guard let left = Self.pollTimeout(until: deadline) else { return }
                timeout = left
            }
            var pollers = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: interruptWake.read, events: Int16(POLLIN), revents: 0)]
            if wake.read < 0 || interruptWake.read < 0 {
                // No pipe: a bounded step keeps the wait finite (only when pipe(2) failed).
                timeout = timeout < 0 ? 100 : min(timeout, 100)
            }
            _ = poll(&pollers, 2, timeout)
            lock.withLock { wakes += 1 }
        }
    }
}

/// A non-blocking, close-on-exec pipe; (-1, -1) when pipe(2) fails.
private func makeWakePipe() -> (read: Int32, write: Int32) {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { return (-1, -1) }
    for end in ends {
        _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
    }
    return (ends[0], ends[1])
}

nonisolated(unsafe) private var interruptFlag: sig_atomic_t = 0
/// The pipe the signal handler writes to (write(2) is async-signal-safe), so that waits in
/// poll(2) wake at once; never read, so it stays readable once a signal came.
nonisolated(unsafe) private var interruptWake: (read: Int32, write: Int32) = makeWakePipe()

private func noteInterrupt(_ number: Int32) {
    interruptFlag = number
    if interruptWake.write >= 0 {
        var byte: UInt8 = 1
        _ = write(interruptWake.write, &byte, 1)
    }
}

/// Makes SIGINT, SIGTERM and SIGHUP (the terminal closed) set a flag that long-running commands
/// poll, so they can restore the reader and flush transcripts before exiting.
/// The signals are also unblocked: a process started from a thread that blocks them (test
/// runners do) inherits that mask, and would otherwise never see Ctrl-C.
package func installInterruptHandler() {
    _ = interruptWake  // made before a handler can need it
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
package func interruptDescriptor() -> Int32 { interruptWake.read }

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
