import ISO7816
import PCSC

#if canImport(Glibc)
import Glibc
#endif

/// Establishes a context with the invocation's client, turning failure into an error that says
/// what to do.
package func openContext(_ invocation: Invocation) throws(CLIError) -> any PCSCClientContext {
    let client = invocation.client
    do {
        return try CallWatchdog.shared.guarding("SCardEstablishContext") { () throws(PCSCError) in try client.establishContext() }
    } catch {
        throw .failure(describe(error))
    }
}

/// The context of a long-running command (``ReestablishingContext``): established now like
/// ``openContext(_:)``, and again, bounded by the watchdog, at the first call after pcscd went away
/// (SCARD_E_NO_SERVICE, SCARD_E_SERVICE_STOPPED), with one line on standard error when it is back.
package func openReestablishingContext(_ invocation: Invocation) throws(CLIError) -> ReestablishingContext {
    let context = deferredReestablishingContext(invocation)
    do {
        try context.establishNow()
    } catch {
        throw .failure(describe(error))
    }
    return context
}

/// ``openReestablishingContext(_:)``'s context, established at its first call instead of now: a
/// shell on a serial PN532 board (`--device`) runs without pcscd until it changes to a PC/SC reader.
package func deferredReestablishingContext(_ invocation: Invocation) -> ReestablishingContext {
    let client = invocation.client
    let console = invocation.console
    return ReestablishingContext(
        establishingAtFirstCall: { () throws(PCSCError) in
            try CallWatchdog.shared.guarding("SCardEstablishContext") { () throws(PCSCError) in try client.establishContext() }
        },
        restored: { console.err(pcscdCameBackLine) })
}

/// The line a long-running command prints when pcscd answers again after it went away.
package let pcscdCameBackLine = "secbridge: note: pcscd came back; a new PC/SC context was established\n"

/// A PC/SC error in the CLI's words: the failing call, the code's name and meaning, and the remedy.
///
/// A pcscd that dies during a call does not come back as SCARD_E_NO_SERVICE: libpcsclite's client
/// decodes whatever its broken socket gave it, SCARD_F_COMM_ERROR (measured here with pcsc-lite
/// 1.9.9 on SCardTransmit and SCardControl) or SCARD_W_SECURITY_VIOLATION (issue reports, same
/// version). For those codes the daemon's socket is tried once: when nothing listens on it any more,
/// the message says that pcscd went away instead of the code's own meaning.
package func describe(_ error: PCSCError, socketAnswers: (String) -> Bool = unixSocketAnswers) -> String {
    let socket = environmentValue("PCSCLITE_CSOCK_NAME")
    if error == .commError || error == .securityViolation || error == .internalError {
        let path = socket ?? PCSCLiteClient.defaultSocketPath
        if !socketAnswers(path) {
            let function = error.function.map { "\($0) failed: " } ?? ""
            return function + "pcscd went away during the call (\(error.name), and nothing listens on \(path) any more); "
                + "start pcscd again (e.g. `systemctl start pcscd`, or `secbridge simulate` for a simulated reader) and retry"
        }
    }
    var text = error.description
    // A bounded wait for another program's transaction (the in-process client's SCardConnect and
    // SCardBeginTransaction give up with SCARD_E_TIMEOUT; pcsc-lite's wait until the call bound).
    if error == .timeout, error.function == "SCardConnect" || error.function == "SCardBeginTransaction" {
        text += "; another program holds a PC/SC transaction on the reader and did not let go: close that program (pcsc_scan, a browser or a middleware that keeps the card) and retry"
    }
    if error.isServiceLost, let socket {
        text += " (PCSCLITE_CSOCK_NAME=\(socket))"
    }
    return text
}


/// Whether a Unix stream socket at `path` accepts a connection now (connect(2), closed at once).
///
/// A daemon killed a moment ago may still hold its listening socket while its client connections
/// are already closed (the kernel closes a dying process's descriptors one by one), so connect(2)
/// can succeed into the backlog of a listener that is going: the connection is then hung up when
/// the listener closes. So after a successful connect the connection is watched for a hang-up
/// (poll(2), at most 200 ms); a hang-up means nothing listens any more.
package func unixSocketAnswers(_ path: String) -> Bool {
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return true }  // Cannot tell: keep the code's own meaning.
    defer { close(descriptor) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard bytes.count < capacity else { return true }
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
        buffer.copyBytes(from: bytes)
        buffer[bytes.count] = 0
    }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard result == 0 else { return false }
    var watched = pollfd(fd: descriptor, events: 0, revents: 0)  // POLLHUP and POLLERR are always reported
    let ready = poll(&watched, 1, 200)
    return !(ready > 0 && watched.revents & Int16(POLLHUP | POLLERR) != 0)
}

/// Picks a reader by `--reader`: a 0-based index into the list, or a case-insensitive substring of
/// exactly one reader's name (names are opaque strings, docs/cases.md P13). Without `--reader`, the first
/// reader whose state satisfies `preferring` (e.g. has a card), else the first reader. An empty
/// `--reader` never gets here: the parser refuses it (``ValueKind/reader``).
package func selectReader(
    _ argument: String?, in readers: [String], preferring: ((String) -> Bool)? = nil
) throws(CLIError) -> String {
    guard !readers.isEmpty else {
        throw .failure("no readers are connected to pcscd; plug in a reader (or start one with `secbridge simulate`) and check `secbridge readers`")
    }
    let listing = readers.enumerated().map { "  \($0.offset): \($0.element)" }.joined(separator: "\n")
    guard let argument else {
        if let preferring, let match = readers.first(where: preferring) { return match }
        return readers[0]
    }
    if let index = Int(argument) {
        guard readers.indices.contains(index) else {
            throw .failure("no reader has index \(index); the readers are:\n\(listing)")
        }
        return readers[index]
    }
    let needle = argument.lowercased()
    if let exact = readers.first(where: { $0 == argument }) { return exact }
    let matches = readers.filter { $0.lowercased().contains(needle) }
    switch matches.count {
    case 1: return matches[0]
    case 0: throw .failure("no reader name contains '\(argument)'; the readers are:\n\(listing)")
    default:
        let matching = readers.enumerated().filter { matches.contains($0.element) }
            .map { "  \($0.offset): \($0.element)" }.joined(separator: "\n")
        throw .failure("'\(argument)' matches \(matches.count) readers; give more of the name or an index:\n\(matching)")
    }
}

/// The readers pcscd knows (SCardListReaders, bounded by the watchdog), as a CLI error on failure.
package func listReaders(_ context: any PCSCClientContext) throws(CLIError) -> [String] {
    do {
        return try CallWatchdog.shared.guarding("SCardListReaders") { () throws(PCSCError) in try context.listReaders() }
    } catch {
        throw .failure(describe(error))
    }
}

/// The readers and their states (presence, ATR), as a CLI error on failure.
package func listReadersWithStates(_ context: any PCSCClientContext) throws(CLIError) -> (readers: [String], states: [ReaderState]) {
    let readers = try listReaders(context)
    do {
        return (readers, try readerStates(context, readers))
    } catch {
        throw .failure(describe(error))
    }
}

/// The state and ATR of every reader, asked without connecting (SCardGetStatusChange from UNAWARE).
package func readerStates(_ context: any PCSCClientContext, _ readers: [String]) throws(PCSCError) -> [ReaderState] {
    var states = readers.map { ReaderState(readerName: $0) }
    guard !states.isEmpty else { return [] }
    _ = try CallWatchdog.shared.guarding("SCardGetStatusChange") { () throws(PCSCError) in
        try context.getStatusChange(&states, timeout: .zero)
    }
    return states
}

/// A channel that shows each raw exchange (`> …` / `< …`) as it happens.
package final class TracingChannel: CardChannel {
    package let inner: any CardChannel
    package let trace: (String) -> Void
    /// How the traced bytes are written: secrets masked unless `--show-secrets` (``SecretDisplay``).
    package let display: SecretDisplay
    /// Called after each complete exchange with the real bytes (for `--json`, which masks them itself).
    /// Set once after init and only read later, on the thread that owns the channel: the run-time
    /// exclusivity check (two per read, per APDU) is left out, as for ``lineSink``.
    @exclusivity(unchecked) package var onExchange: ((_ command: [UInt8], _ answer: [UInt8]) -> Void)?
    /// When set, the `>` / `<` lines of ``transmit(_:)`` are written straight into this buffer
    /// (no string made per line) instead of going to `trace`.
    @exclusivity(unchecked) package var lineSink: BufferedConsole?
    package init(_ inner: any CardChannel, display: SecretDisplay = .masked, trace: @escaping (String) -> Void) {
        self.inner = inner
        self.display = display
        self.trace = trace
    }
    package var transmissionProtocol: TransmissionProtocol { inner.transmissionProtocol }
    package func transmit(_ command: [UInt8]) throws -> [UInt8] {
        if let lineSink {
            lineSink.outLine { display.appendLine("> ", command, to: &$0) }
        } else {
            trace(display.line("> ", command))
        }
        let answer = try inner.transmit(command)
        if let lineSink {
            lineSink.outLine { display.appendLine("< ", response: answer, answering: command, to: &$0) }
        } else {
            trace(display.line("< ", response: answer, answering: command))
        }
        if let note = Self.longerThanNeNote(command: command, answer: answer) {
            if let lineSink { lineSink.outLine(note) } else { trace(note) }
        }
        onExchange?(command, answer)
        return answer
    }
    /// The remark shown under an answer whose data field is longer than the command's Ne: Ne is
    /// the most response data bytes a command asks for (its Le; ISO/IEC 7816-4 §5.1), so a card
    /// that sends more broke the command's contract. The answer is still shown and returned whole.
    ///
    /// nil for a reader pseudo-APDU (CLA FF), for a command without Le (Ne 0: cards on T=1 often
    /// answer a case 3 SELECT with its FCI, and the field takes that as normal), for bytes that are
    /// no command APDU, and for data within Ne. The line: `  note: the card answered 300 data bytes,
    /// more than Ne 4 of the command's Le (ISO/IEC 7816-4 §5.1); shown whole`.
    package static func longerThanNeNote(command: [UInt8], answer: [UInt8]) -> String? {
        let dataCount = answer.count - 2
        guard dataCount > 0, command.first != 0xFF else { return nil }
        let ne: Int
        if let short = CommandAPDU.shortNe(ofEncoded: command) {
            ne = short
        } else if let parsed = try? CommandAPDU(parsing: command) {
            ne = parsed.ne
        } else {
            return nil
        }
        guard ne > 0, dataCount > ne else { return nil }
        return "  note: the card answered \(dataCount) data bytes, more than Ne \(ne) of the command's Le"
            + " (ISO/IEC 7816-4 §5.1); shown whole"
    }
    package func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        trace("ctl 0x" + String(code, radix: 16, uppercase: true) + " > " + display.text(command))
        let answer = try inner.control(code: code, command)
        trace("ctl < " + display.text(response: answer, answering: command))
        onExchange?(command, answer)
        return answer
    }
}
