/// Counts and timing of a transcript, for `secbridge transcript stats`.
///
/// Exchange times are the offset of the answer line (`<`, `ctl … <` or `!`) minus that of its
/// command line, on the same channel; exchanges without both offsets are left out of the timing.
/// The span is the last offset minus the first.
public struct TranscriptStatistics: Sendable, Equatable {
    /// How often one status word ended a `<` answer.
    public struct StatusWordCount: Sendable, Hashable {
        /// SW1-SW2, e.g. 0x9000.
        public var statusWord: UInt16
        /// How many responses ended with ``statusWord``.
        public var count: Int
    }

    /// Body lines that are records (not blank lines or comments).
    public var records = 0
    /// SCardTransmit commands (`>`).
    public var transmitCommands = 0
    /// SCardControl commands (`ctl … >`).
    public var controlCommands = 0
    /// Commands answered by `!`.
    public var failures = 0
    /// Commands with no answer at all (the recording was cut short).
    public var unanswered = 0
    /// `tgt <` C-APDUs a terminal sent to the emulated target.
    public var targetCommands = 0
    /// `ini >` C-APDUs the host sent as initiator.
    public var initiatorCommands = 0
    /// Command lines holding `[REDACTED n]`.
    public var redactedCommands = 0
    /// Payload lines holding `??`.
    public var wildcardLines = 0
    /// Bytes in command payloads (`>`, `ctl … >`), a redaction mark counting its length.
    public var bytesSent = 0
    /// Bytes in answer payloads (`<`, `ctl … <`).
    public var bytesReceived = 0
    /// Event kinds and their counts, in order of first appearance.
    public var events: [(kind: String, count: Int)] = []
    /// Channel ids in order of first appearance (`""` for the default channel).
    public var channels: [String] = []
    /// Status words of `<` answers (the last two bytes), most frequent first.
    public var statusWords: [StatusWordCount] = []
    /// Last offset minus first offset; nil without offsets.
    public var span: Duration?
    /// How many exchanges are timed (both their lines have offsets).
    public var timedExchanges: Int { times.count }
    /// The timed exchanges' times, in constant memory (``DurationSketch``).
    private var times = DurationSketch()

    public static func == (a: Self, b: Self) -> Bool {
        a.records == b.records && a.transmitCommands == b.transmitCommands && a.controlCommands == b.controlCommands
            && a.failures == b.failures && a.unanswered == b.unanswered && a.targetCommands == b.targetCommands
            && a.initiatorCommands == b.initiatorCommands && a.redactedCommands == b.redactedCommands
            && a.wildcardLines == b.wildcardLines && a.bytesSent == b.bytesSent && a.bytesReceived == b.bytesReceived
            && a.events.map(\.kind) == b.events.map(\.kind) && a.events.map(\.count) == b.events.map(\.count)
            && a.channels == b.channels && a.statusWords == b.statusWords && a.span == b.span
            && a.times == b.times
    }

    /// Total time of the timed exchanges.
    public var exchangeTimeTotal: Duration { Duration(attoseconds: times.total) }
    /// Shortest and longest exchange; nil when none is timed.
    public var exchangeTimeRange: ClosedRange<Duration>? {
        guard times.count > 0 else { return nil }
        return Duration(attoseconds: times.minimum)...Duration(attoseconds: times.maximum)
    }
    /// The median exchange time (the lower middle for an even count); nil when none is timed.
    /// Exact for times that are whole microseconds below 65.536 ms (what a recorder writes),
    /// else within 0.5 %: the times are kept in constant memory (a count per microsecond below
    /// 65.536 ms and a histogram of 1 % buckets above).
    public var exchangeTimeMedian: Duration? { times.median }

    // The running state of ``add(_:)``.
    // The unanswered command's offset per channel.
    private var pending = PerChannel<TranscriptOffset?>()
    private var eventIndex: [String: Int] = [:]
    /// Answers per status word, indexed by SW1-SW2 (allocated at the first one).
    private var swCounts: [Int] = []
    private var swOrder: [UInt16] = []
    /// True once a record without a channel id was counted (its channel is `""`).
    private var sawDefaultChannel = false
    /// The smallest and largest offset so far.
    private var first: TranscriptOffset?
    private var last: TranscriptOffset?

    /// Counts everything in one pass over the lines.
    public init(_ transcript: Transcript) {
        self.init()
        for line in transcript.lines {
            if case .record(let r) = line { add(r) }
        }
        finish()
    }

    /// Empty counts, to be fed one line or one record at a time with `add(_:)` (a transcript
    /// streamed from a file, ``TranscriptFileReader``) and completed with ``finish()``.
    public init() {}

    /// Counts one body line, in file order: a record as `add(_:)` with a record does;
    /// blank lines and comments count nothing.
    /// - Parameter line: the next body line, e.g. from ``TranscriptFileReader/forEachLine(_:)``.
    public mutating func add(_ line: consuming TranscriptLine) {
        switch consume line {
        case .record(let r): add(r)
        case .blank, .comment: break
        }
    }

    /// Counts one record, in file order.
    /// - Parameter r: the next record.
    public mutating func add(_ r: TranscriptRecord) {
        records += 1
        if let channel = r.channel {
            if !channels.contains(channel) { channels.append(channel) }
        } else if !sawDefaultChannel {
            sawDefaultChannel = true
            channels.append("")
        }
        let offset = r.offset
        if let o = offset {
            if first.map({ Self.precedes(o, $0) }) ?? true { first = o }
            if last.map({ Self.precedes($0, o) }) ?? true { last = o }
        }
        // The entry is read once, through a borrow, into trivial values: matching it here with
        // payload bindings while counting copied the whole entry (its outlined copy and destroy,
        // a retain and a release: about 70 instructions a record).
        let facts = EntryFacts(r.entry)
        if facts.wildcard { wildcardLines += 1 }
        switch facts.kind {
        case .transmit(.outgoing):
            transmitCommands += 1
            command(facts, offset: offset, channel: r.channel)
        case .transmit(.incoming):
            bytesReceived += facts.count
            if let sw = facts.statusWord {
                if swCounts.isEmpty { swCounts = [Int](repeating: 0, count: 1 << 16) }
                if swCounts[Int(sw)] == 0 { swOrder.append(sw) }
                swCounts[Int(sw)] += 1
            }
            answered(offset: offset, channel: r.channel)
        case .control(.outgoing):
            controlCommands += 1
            command(facts, offset: offset, channel: r.channel)
        case .control(.incoming):
            bytesReceived += facts.count
            answered(offset: offset, channel: r.channel)
        case .failure:
            failures += 1
            answered(offset: offset, channel: r.channel)
        case .target(let d):
            if d == .incoming {
                targetCommands += 1
                if facts.redaction { redactedCommands += 1 }
            }
        case .initiator(let d):
            if d == .outgoing {
                initiatorCommands += 1
                if facts.redaction { redactedCommands += 1 }
            }
        case .event:
            guard case .event(let e) = r.entry else { break }
            if let i = eventIndex[e.kind.rawValue] {
                events[i].count += 1
            } else {
                eventIndex[e.kind.rawValue] = events.count
                events.append((e.kind.rawValue, 1))
            }
        case .reader:
            break
        }
    }

    /// What the counts need of an entry, as trivial values.
    private struct EntryFacts {
        /// The line kind and direction (the pairing check's shape, without the control code).
        var kind: Kind
        /// The payload's byte count, a redaction mark counting its length; 0 without a payload.
        var count = 0
        /// The payload's last two bytes when it is concrete and has two.
        var statusWord: UInt16?
        /// The payload holds `??`.
        var wildcard = false
        /// The payload holds `[REDACTED n]`.
        var redaction = false

        enum Kind {
            case transmit(TranscriptDirection), control(TranscriptDirection), failure
            case target(TranscriptDirection), initiator(TranscriptDirection), event, reader
        }

        /// Borrows `entry` (an initializer's arguments are otherwise passed owned: a copy).
        init(_ entry: borrowing TranscriptEntry) {
            switch entry {
            case .transmit(let d, let b): self.init(.transmit(d), payload: b)
            case .control(_, let d, let b): self.init(.control(d), payload: b)
            case .target(let d, let b): self.init(.target(d), payload: b)
            case .initiator(let d, let b): self.init(.initiator(d), payload: b)
            case .failure: self.init(.failure)
            case .event: self.init(.event)
            case .reader: self.init(.reader)
            }
        }

        private init(_ kind: Kind) {
            self.kind = kind
        }

        private init(_ kind: Kind, payload: borrowing TranscriptBytes) {
            self.kind = kind
            count = payload.count
            statusWord = payload.trailingStatusWord
            wildcard = payload.containsWildcard
            redaction = payload.containsRedaction
        }
    }

    /// A command (`>`, `ctl … >`) with a payload described by `b`, at `offset` on `channel`.
    private mutating func command(_ b: EntryFacts, offset: TranscriptOffset?, channel: String?) {
        if b.redaction { redactedCommands += 1 }
        bytesSent += b.count
        if pending.updateValue(offset, for: channel) != nil { unanswered += 1 }
    }

    /// An answer (`<`, `ctl … <`, `!`) at `offset` on `channel`: the exchange is timed when both
    /// it and its command have offsets.
    private mutating func answered(offset: TranscriptOffset?, channel: String?) {
        if let started = pending.removeValue(for: channel), let s = started, let e = offset {
            times.add(Self.elapsed(from: s, to: e))
        }
    }

    /// Completes the counts after the last record: commands still waiting count as unanswered,
    /// status words are ordered, the span is set.
    public mutating func finish() {
        unanswered += pending.count
        pending = PerChannel()
        statusWords = swOrder.enumerated()
            .sorted { (swCounts[Int($0.element)], -$0.offset) > (swCounts[Int($1.element)], -$1.offset) }
            .map { StatusWordCount(statusWord: $0.element, count: swCounts[Int($0.element)]) }
        if let first, let last { span = Self.elapsed(from: first, to: last) }
    }

    /// `a` before `b`: by the written digits when both have one unit and one number of fraction
    /// digits (what a recorder writes), else by their durations.
    private static func precedes(_ a: TranscriptOffset, _ b: TranscriptOffset) -> Bool {
        if a.unit == b.unit && a.fractionDigits == b.fractionDigits { return a.mantissa < b.mantissa }
        return a.duration < b.duration
    }

    /// `end` minus `start`, from the written digits when both are written alike, else from their
    /// durations (negative when the end comes first).
    private static func elapsed(from start: TranscriptOffset, to end: TranscriptOffset) -> Duration {
        if start.unit == end.unit && start.fractionDigits == end.fractionDigits && end.mantissa >= start.mantissa {
            return TranscriptOffset(mantissa: end.mantissa - start.mantissa, fractionDigits: end.fractionDigits, unit: end.unit).duration
        }
        return end.duration - start.duration
    }
}
