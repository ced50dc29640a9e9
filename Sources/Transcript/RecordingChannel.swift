import ISO7816
import Synchronization

/// An error that knows how it is written on a `!` line. `PCSCError` conforms (name
/// `SCARD_E_NO_SMARTCARD`, code 0x8010000C), so recordings carry the exact code.
public protocol TranscriptDescribableError: Error {
    /// The `!` line for this error.
    var transcriptFailure: TranscriptFailure { get }
}

/// Stamps, redacts and appends lines to a sink; one recorder per file, shared by every channel
/// recorded into it (one time base for all).
///
/// Offsets come from an injectable clock giving the time since the recording started (tests pass
/// a manual clock). Commands are redacted by ``redactor`` before they reach the sink. Lines from
/// several threads are appended in the order of their time stamps.
public final class TranscriptRecorder: Sendable {
    /// Where lines go.
    public let sink: any TranscriptSink
    /// Applied to every command line before it is written.
    public let redactor: Redactor
    private let clock: @Sendable () -> Duration
    private let describe: @Sendable (any Error) -> TranscriptFailure
    private let order = Mutex(())

    /// - Parameters:
    ///   - sink: a ``TranscriptWriter`` (streaming to a file) or a ``TranscriptBuffer``.
    ///   - redactor: the redaction policy, ``Redactor/default`` unless told otherwise.
    ///   - clock: the time since the start of the recording; by default a monotonic clock started now.
    ///   - describeFailure: how a thrown error becomes a `!` line; by default
    ///     ``defaultFailureDescription(_:)``.
    public init(
        sink: any TranscriptSink,
        redactor: Redactor = .default,
        clock: (@Sendable () -> Duration)? = nil,
        describeFailure: @escaping @Sendable (any Error) -> TranscriptFailure = TranscriptRecorder.defaultFailureDescription
    ) {
        self.sink = sink
        self.redactor = redactor
        if let clock {
            self.clock = clock
        } else {
            let start = ContinuousClock.now
            self.clock = { ContinuousClock.now - start }
        }
        describe = describeFailure
    }

    /// A ``TranscriptDescribableError``'s own line; otherwise the error's type name (characters a
    /// name may not hold become `_`) and its description as the message.
    public static func defaultFailureDescription(_ error: any Error) -> TranscriptFailure {
        if let known = error as? any TranscriptDescribableError { return known.transcriptFailure }
        var name = String(String(describing: type(of: error)).unicodeScalars.map { c -> Character in
            c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_" || c == ".") ? Character(c) : "_"
        })
        if name.isEmpty || name.first!.isNumber || name.first == "." { name = "_" + name }
        let message = String(String(describing: error).unicodeScalars.map { c -> Character in
            c.value < 0x20 || c.value == 0x7F ? " " : Character(c)
        })
        return TranscriptFailure(name: name, message: message)
    }

    /// How `error` is written on a `!` line.
    public func failure(for error: any Error) -> TranscriptFailure { describe(error) }

    /// Appends one entry stamped with the current offset; command payloads are redacted first,
    /// and so are answers when `command` (the bytes they answer) is given (the redactor's answer
    /// rules, e.g. key B in a MIFARE sector trailer read).
    /// - Throws: ``TranscriptWriteError`` from the sink (`invalidLine`: the entry breaks a rule).
    public func record(
        _ entry: TranscriptEntry, channel: String? = nil, note: String? = nil, answering command: [UInt8]? = nil
    ) throws(TranscriptWriteError) {
        try order.withLock { (_: inout ()) throws(TranscriptWriteError) in
            let record = TranscriptRecord(entry, offset: TranscriptOffset(elapsed: clock()), channel: channel, note: note)
            try sink.append(.record(redactor.redact(record, answering: command)))
        }
    }

    /// Appends the payload line `entry(bytes)` of an exchange, as ``record(_:channel:note:answering:)``
    /// does with `.transmit` or `.control` of `bytes`: a command (`answering` nil) redacted by the
    /// command rules, an answer by the answer rules with the command it answers. The rules are
    /// asked about the raw bytes first, so a line with nothing to mask is not redacted into a copy.
    /// - Parameters:
    ///   - bytes: the bytes sent or received.
    ///   - command: the command `bytes` answer; nil when `bytes` are the command.
    ///   - channel: the `@id` of the line; nil for the default channel.
    ///   - entry: the entry of the (redacted) bytes, e.g. `{ .transmit(.outgoing, $0) }`.
    /// - Throws: ``TranscriptWriteError`` from the sink.
    public func recordPayload(
        _ bytes: [UInt8], answering command: [UInt8]? = nil, channel: String? = nil, _ entry: (TranscriptBytes) -> TranscriptEntry
    ) throws(TranscriptWriteError) {
        let payload: TranscriptBytes
        if let command {
            payload = redactor.masksAny(ofResponse: bytes, answering: command)
                ? redactor.redact(response: bytes, answering: command) : TranscriptBytes(bytes)
        } else {
            payload = redactor.masksAny(of: bytes) ? redactor.redact(bytes) : TranscriptBytes(bytes)
        }
        try order.withLock { (_: inout ()) throws(TranscriptWriteError) in
            try sink.appendRecord(TranscriptRecord(entry(payload), offset: TranscriptOffset(elapsed: clock()), channel: channel))
        }
    }

    /// Appends an `event` line, e.g. `recordEvent(.cardInserted, [TranscriptAttribute("atr", "3B 80 80 01 01")])`.
    public func recordEvent(_ kind: TranscriptEventKind, _ attributes: [TranscriptAttribute] = [], channel: String? = nil) throws(TranscriptWriteError) {
        try record(.event(TranscriptEvent(kind, attributes)), channel: channel)
    }

    /// Appends a `!` line for `error`, answering the last command on `channel`.
    public func recordFailure(_ error: any Error, channel: String? = nil) throws(TranscriptWriteError) {
        try record(.failure(describe(error)), channel: channel)
    }

    /// Appends a `; text` comment line (no time stamp).
    public func recordComment(_ text: String) throws(TranscriptWriteError) {
        try order.withLock { (_: inout ()) throws(TranscriptWriteError) in
            try sink.append(.comment(text))
        }
    }
}

/// A `CardChannel` that records every exchange of the channel it wraps.
///
/// For each call it writes the command line first (so a crash or a hang inside the reader still
/// leaves the command in the file), then the answer, or a `!` line when the wrapped channel throws:
///
///     +12.345ms > 00 A4 04 00 07 D2 76 00 00 85 01 01 00
///     +12.410ms < 90 00
///     +13.002ms ctl 0x42000001 > FF 00 48 00 00
///     +13.950ms ctl 0x42000001 < 41 43 52 31 32 32 55 32 30 37
///     +20.000ms > 00 B0 00 00 00
///     +20.120ms ! SCARD_E_NO_SMARTCARD 0x8010000C
///
/// Answers pass through the recorder's redactor with the command they answer, so answer rules
/// (a MIFARE sector trailer's key B) apply; the caller always gets the real answer.
///
/// Errors: when the command line cannot be written, the call throws ``TranscriptWriteError`` and
/// nothing is sent. When the answer cannot be written, the call throws ``TranscriptWriteError``
/// although the command was sent. When the wrapped channel throws, its error is rethrown unchanged
/// (even if writing the `!` line failed; the next call then reports the broken file).
public final class RecordingChannel: CardChannel {
    /// The channel being recorded.
    public let base: any CardChannel
    /// Where the exchanges are written.
    public let recorder: TranscriptRecorder
    /// The `@id` written on this channel's lines; nil for the default channel.
    public let channelID: String?

    /// Records every exchange of `base` to `recorder`: `>` for what is sent, `<` for the answer, `!`
    /// for an error the channel threw (which is thrown on unchanged), with `@channelID` on each line
    /// when given (Fixtures/README.md, "Channels: several readers and card handles").
    public init(wrapping base: any CardChannel, recorder: TranscriptRecorder, channelID: String? = nil) {
        self.base = base
        self.recorder = recorder
        self.channelID = channelID
    }

    public var transmissionProtocol: TransmissionProtocol { base.transmissionProtocol }

    public func transmit(_ command: [UInt8]) throws -> [UInt8] {
        try recorder.recordPayload(command, channel: channelID) { .transmit(.outgoing, $0) }
        let response: [UInt8]
        do {
            response = try base.transmit(command)
        } catch {
            try? recorder.recordFailure(error, channel: channelID)
            throw error
        }
        try recorder.recordPayload(response, answering: command, channel: channelID) { .transmit(.incoming, $0) }
        return response
    }

    public func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        try recorder.recordPayload(command, channel: channelID) { .control(code: code, .outgoing, $0) }
        let response: [UInt8]
        do {
            response = try base.control(code: code, command)
        } catch {
            try? recorder.recordFailure(error, channel: channelID)
            throw error
        }
        try recorder.recordPayload(response, answering: command, channel: channelID) { .control(code: code, .incoming, $0) }
        return response
    }

    /// Records an event on this channel, e.g. `.cardRemoved` or `.fieldOff`.
    public func recordEvent(_ kind: TranscriptEventKind, _ attributes: [TranscriptAttribute] = []) throws(TranscriptWriteError) {
        try recorder.recordEvent(kind, attributes, channel: channelID)
    }
}

extension PCSCError: TranscriptDescribableError {
    /// `! SCARD_E_NO_SMARTCARD 0x8010000C "SCardTransmit failed"`: a PC/SC failure keeps its exact
    /// name and code.
    public var transcriptFailure: TranscriptFailure {
        TranscriptFailure(name: name, code: code, message: function.map { "\($0) failed" })
    }
}
