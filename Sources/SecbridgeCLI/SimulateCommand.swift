import ISO7816
import PCSC
import PCSCTestSupport

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    static let simulateCommand = Command(
        name: "simulate",
        abstract: "Run simulated ACR122U readers in a private pcscd, for any PC/SC program to use.",
        usage: "[--readers 1|2] [--personality NAME] [--card UID] [--applet NAME] [--tag UID] [--terminal SCRIPT] [--timeout SECONDS]",
        discussion: """
            Starts a private pcscd (its own mount namespace; the system pcscd and USB readers are not
            touched) with one or two simulated ACR122U readers sharing one RF field, prints the
            `export PCSCLITE_CSOCK_NAME=…` line that points other programs (secbridge, pcsc_scan,
            opensc-tool, libnfc's tools) at it, and runs until Ctrl-C (or --timeout).

            Peers are placed in the field with the options, or while it runs by typing control
            requests on standard input, prefixed with the reader (a or b):
              a place-card uid=04A1B2C3 applet=t4t-ndef     an ISO 14443-4 card (applet ok, echo, t4t-ndef)
              a place-tag uid=04A1B2C3                      an ISO 14443-3 tag (UID only)
              b place-terminal script=android-t4t-read      a terminal that reads an emulated Type 4 Tag
              a remove all=yes        a status        a events        a help
            Each control socket is printed too, for programs that place peers themselves.

            Personalities: ccid-escape-enabled (default), ccid-escape-disabled, acs-driver, legacy-t0,
            atr-whole-ats. Needs root, or unprivileged user namespaces; otherwise it says why and exits 1.

            Example:
              $ secbridge simulate --card 04A1B2C3 &
              export PCSCLITE_CSOCK_NAME=/tmp/secbridge-pcscd.1234.AB12CD34/run/pcscd.comm
              …
              $ export PCSCLITE_CSOCK_NAME=…; secbridge send 00 A4 04 00 07 D2 76 00 00 85 01 01 00
            """,
        options: [
            .value("readers", "1|2", "How many simulated readers (default 2, sharing one field)."),
            .value("personality", "NAME", "The readers' personality (driver and firmware quirks)."),
            .value("card", "UID", "Place an ISO 14443-4 card with this UID (4, 7 or 10 bytes of hex)."),
            .value("applet", "NAME", "The placed card's applet: ok (default), echo or t4t-ndef."),
            .value("tag", "UID", "Place an ISO 14443-3 tag (no ISO-DEP) with this UID."),
            .value("terminal", "SCRIPT", "Place a terminal running android-t4t-read or ios-t4t-read."),
            .value("timeout", "SECONDS", "Stop after SECONDS (at most 86400) instead of waiting for Ctrl-C."),
        ],
        run: runSimulate
    )

    static let personalities = ["ccid-escape-enabled", "ccid-escape-disabled", "acs-driver", "legacy-t0", "atr-whole-ats"]
    static let applets = ["ok", "echo", "t4t-ndef"]
    static let terminalScripts = ["android-t4t-read", "ios-t4t-read"]

    @Sendable static func runSimulate(_ invocation: Invocation) throws -> Int32 {
        let arguments = invocation.arguments
        guard arguments.positional.isEmpty else {
            throw CLIError.usage("simulate takes no arguments, got '\(arguments.positional[0])'")
        }
        let readerCount = try arguments.integer("readers", in: 1...2) ?? 2
        let timeout = try arguments.seconds("timeout", limit: 86_400)
        if let personality = arguments.value("personality"), !personalities.contains(personality) {
            throw CLIError.usage("unknown personality '\(personality)'; use one of \(personalities.joined(separator: ", "))")
        }
        if let applet = arguments.value("applet"), !applets.contains(applet) {
            throw CLIError.usage("unknown applet '\(applet)'; use one of \(applets.joined(separator: ", "))")
        }
        if let script = arguments.value("terminal"), !terminalScripts.contains(script) {
            throw CLIError.usage("unknown terminal script '\(script)'; use one of \(terminalScripts.joined(separator: ", "))")
        }
        for option in ["card", "tag"] {
            guard let text = arguments.value(option) else { continue }
            let uid: [UInt8]
            do { uid = try HexBytes.parse(text) } catch { throw CLIError.usage("--\(option) is not hex: \(error.reason)") }
            guard [4, 7, 10].contains(uid.count) else {
                throw CLIError.usage("--\(option) takes a UID of 4, 7 or 10 bytes (ISO/IEC 14443-3), not \(uid.count)")
            }
        }

        let entries = Array(SimulatedReaders.readerConfEntries.prefix(readerCount))
        let pcscd: PrivatePCSCD
        let names: [String]
        do {
            pcscd = try PrivatePCSCD(readers: entries)
            names = try pcscd.start()
        } catch let error as HarnessError {
            throw CLIError.failure("cannot start a private pcscd for the simulated readers: \(error.reason)"
                + (error.code == .notPermitted ? "; run as root, or allow unprivileged user namespaces" : "")
                + (error.code == .missingDependency ? "" : ""))
        }
        defer { pcscd.stop() }
        let controls = [("a", SimulatedReaders.controlA), ("b", SimulatedReaders.controlB)].prefix(readerCount)
        func request(_ control: SimulatedReaderControl, _ line: String) throws -> SimulatedReaderReply {
            do {
                return try control.send(line, timeout: .seconds(10))
            } catch {
                throw CLIError.failure("the simulated reader refused '\(line)': \(error)")
            }
        }
        if let personality = arguments.value("personality"), personality != "ccid-escape-enabled" {
            for (_, control) in controls { _ = try request(control, "personality name=\(personality)") }
        }
        if let uid = arguments.value("card") {
            _ = try request(SimulatedReaders.controlA, "place-card uid=\(uid.filter { $0 != " " }) applet=\(arguments.value("applet") ?? "ok") id=card")
        }
        if let uid = arguments.value("tag") {
            _ = try request(SimulatedReaders.controlA, "place-tag uid=\(uid.filter { $0 != " " }) id=tag")
        }
        if let script = arguments.value("terminal") {
            _ = try request(SimulatedReaders.controlA, "place-terminal script=\(script) id=terminal")
        }

        invocation.out("export PCSCLITE_CSOCK_NAME=\(pcscd.socketPath)")
        for ((letter, control), name) in zip(controls, readerNamesInOrder(names, controls: Array(controls))) {
            invocation.out("reader \(letter): \(name)  (control socket \(control.socketPath))")
        }
        invocation.out("type control requests as `a <verb> key=value…` (a help), Ctrl-C stops")

        installInterruptHandler()
        let deadline = timeout.map { ContinuousClock.now + $0 }
        var stdinOpen = true
        var pending: [UInt8] = []
        while !interrupted() {
            if let deadline, ContinuousClock.now >= deadline { break }
            if !pcscd.isRunning {
                throw CLIError.failure("the private pcscd exited: \(pcscd.logTail(lines: 5))")
            }
            guard stdinOpen else {
                sleepMilliseconds(100)
                continue
            }
            var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(STDIN_FILENO, &buffer, buffer.count)
            if count <= 0 {
                stdinOpen = false
                continue
            }
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                handleControlLine(line, controls: Array(controls), console: invocation.console)
            }
            if pending.count > 8192 {
                invocation.console.err("secbridge: a control request is longer than 8192 bytes; it was dropped\n")
                pending.removeAll()
            }
        }
        invocation.out("stopping the simulated readers")
        return exitSuccess
    }

    /// The PC/SC names of readers a, b: the driver's `open-order` tells which was named first.
    static func readerNamesInOrder(_ names: [String], controls: [(String, SimulatedReaderControl)]) -> [String] {
        let simulated = names.filter { $0.hasPrefix(SimulatedReaders.friendlyName + " ") }.sorted()
        let orders = controls.map { (try? $0.1.send("ping", timeout: .seconds(2)))?["open-order"].flatMap { Int($0) } ?? 0 }
        return orders.map { order in simulated.indices.contains(order) ? simulated[order] : "?" }
    }

    static func handleControlLine(_ line: String, controls: [(String, SimulatedReaderControl)], console: any Console) {
        let trimmed = Substring(line).trimmingCharacters(in: " \t\r")
        guard !trimmed.isEmpty else { return }
        let parts = trimmed.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let control = controls.first(where: { $0.0 == parts[0].lowercased() })?.1 else {
            console.err("secbridge: start a request with the reader (\(controls.map(\.0).joined(separator: " or "))), e.g. `a status`\n")
            return
        }
        do {
            console.out(try control.exchange(String(parts[1]), timeout: .seconds(60)) + "\n")
        } catch {
            console.err("secbridge: \(error)\n")
        }
    }
}
