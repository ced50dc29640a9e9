/// One difference between two transcripts, as ``TranscriptDiff/compare(_:_:options:)`` finds it.
public struct TranscriptDifference: Sendable, Hashable, CustomStringConvertible {
    /// What kind of difference: a header key added, removed or changed, or a record added, removed or
    /// changed.
    public enum Kind: String, Sendable, Hashable {
        /// A header key only the right file has.
        case headerAdded = "header-added"
        /// A header key only the left file has.
        case headerRemoved = "header-removed"
        /// A header key with another value.
        case headerChanged = "header-changed"
        /// A record only the left file has.
        case removed
        /// A record only the right file has.
        case added
        /// A record of the same kind with other bytes or attributes (a removed line facing an added one).
        case changed
    }

    /// What kind of difference this is.
    public var kind: Kind
    /// 1-based line in the left file, when the difference has a left side.
    public var leftLine: Int?
    /// 1-based line in the right file.
    public var rightLine: Int?
    /// The left text (a header `key: value` or a record without offset and note by default).
    public var left: String?
    /// The right text, in the same form as ``left``.
    public var right: String?
    /// For `changed` payload lines: the index of the first differing byte.
    public var firstDifferentByte: Int?

    /// A difference of `kind` with the lines (1-based) and texts of the sides it has.
    public init(kind: Kind, leftLine: Int? = nil, rightLine: Int? = nil, left: String? = nil, right: String? = nil, firstDifferentByte: Int? = nil) {
        self.kind = kind
        self.leftLine = leftLine
        self.rightLine = rightLine
        self.left = left
        self.right = right
        self.firstDifferentByte = firstDifferentByte
    }

    /// `-12 > 00 A4 …` / `+13 > 00 A4 …` / `~12/13 …` lines, as a unified diff would put them.
    public var description: String {
        switch kind {
        case .headerAdded: "+header \(right ?? "")"
        case .headerRemoved: "-header \(left ?? "")"
        case .headerChanged: "~header \(left ?? "")  →  \(right ?? "")"
        case .removed: "-\(leftLine ?? 0): \(left ?? "")"
        case .added: "+\(rightLine ?? 0): \(right ?? "")"
        case .changed:
            "~\(leftLine ?? 0)/\(rightLine ?? 0)\(firstDifferentByte.map { " (byte \($0))" } ?? ""):\n  - \(left ?? "")\n  + \(right ?? "")"
        }
    }
}

/// What ``TranscriptDiff`` compares.
public struct TranscriptDiffOptions: Sendable, Hashable {
    /// Compare time offsets too (off by default: two runs never take the same time).
    public var compareTiming: Bool
    /// Compare trailing `; notes` too (off by default).
    public var compareNotes: Bool
    /// Header keys left out of the comparison (by default `date` and `tool`, which differ between runs).
    public var ignoredHeaderKeys: Set<String>

    /// Options; by default offsets and notes are not compared and the `date` and `tool` header keys
    /// are left out.
    public init(compareTiming: Bool = false, compareNotes: Bool = false, ignoredHeaderKeys: Set<String> = ["date", "tool"]) {
        self.compareTiming = compareTiming
        self.compareNotes = compareNotes
        self.ignoredHeaderKeys = ignoredHeaderKeys
    }
}

/// A structural diff of two transcripts: header fields by key, then the records (comments and
/// blank lines do not count) aligned by pairing exchanges by their commands, with Myers' O((N+M)·D)
/// algorithm in linear space (`MyersDiff`) for the stretches the pairing leaves, each search with a
/// cost bound (`RecordAlignment`; docs/transcript-diff.md §2a). Two changed records are two
/// differences however long the transcripts are, and the time stays linear when every answer
/// differs.
public enum TranscriptDiff {
    /// The differences, header first, then records in file order. Empty when the files agree.
    public static func compare(_ left: Transcript, _ right: Transcript, options: TranscriptDiffOptions = TranscriptDiffOptions()) -> [TranscriptDifference] {
        let a = records(left, options), b = records(right, options)
        func answers(_ keyed: [Keyed]) -> RecordAlignment.Bits {
            var bits = RecordAlignment.Bits(), previous: TranscriptRecord?
            for k in keyed { bits.append(isAnswer(k.record, to: previous)); previous = k.record }
            return bits
        }
        let hunks = RecordAlignment.align(a.map { key($0.key) }, b.map { key($0.key) }, answersA: answers(a), answersB: answers(b)).hunks
        var ia = a.makeIterator(), ib = b.makeIterator()
        return headerDifferences(left.header, right.header, options)
            + recordDifferences(hunks: hunks, leftCount: a.count, nextLeft: { ia.next() }, nextRight: { ib.next() })
    }

    /// Compares two transcript files of any size, reading each twice line by line: memory holds an
    /// 8-byte digest per record of each file (about 16 MB per million exchanges) while the records
    /// are aligned, then the alignment's hunks and the differences, never the transcripts.
    /// - Throws: ``TranscriptParseError`` for a file that cannot be read or parsed.
    public static func compare(contentsOfFile leftPath: String, _ rightPath: String,
                               options: TranscriptDiffOptions = TranscriptDiffOptions()) throws(TranscriptParseError) -> [TranscriptDifference] {
        func digests(_ path: String) throws(TranscriptParseError) -> (TranscriptHeader, [UInt64], RecordAlignment.Bits) {
            let reader = try TranscriptFileReader(contentsOfFile: path)
            var keys: [UInt64] = [], answers = RecordAlignment.Bits()
            var previous: AnswerShape?
            while let (number, line) = try reader.next() {
                if let r = line.record {
                    keys.append(key(keyed(r, line: number, options).key))
                    answers.append(previous?.isAnswered(by: r) ?? false)
                    previous = AnswerShape(r)
                }
            }
            return (reader.header, keys, answers)
        }
        // The digests live only inside this function: they are freed before the second pass builds
        // the differences (with every 10th answer of a million exchanges changed, the 32 MB of
        // digests and the 100 000 differences together went past the 64 MB goal).
        func alignment() throws(TranscriptParseError) -> (TranscriptHeader, TranscriptHeader, hunks: [MyersDiff.Hunk], leftCount: Int) {
            let (leftHeader, a, answersA) = try digests(leftPath)
            let (rightHeader, b, answersB) = try digests(rightPath)
            return (leftHeader, rightHeader, RecordAlignment.align(a, b, answersA: answersA, answersB: answersB).hunks, a.count)
        }
        let (leftHeader, rightHeader, hunks, leftCount) = try alignment()
        let left = try TranscriptFileReader(contentsOfFile: leftPath), right = try TranscriptFileReader(contentsOfFile: rightPath)
        func next(_ reader: TranscriptFileReader) throws(TranscriptParseError) -> Keyed? {
            while let (number, line) = try reader.next() {
                if let r = line.record { return keyed(r, line: number, options) }
            }
            return nil
        }
        return headerDifferences(leftHeader, rightHeader, options)
            + (try recordDifferences(hunks: hunks, leftCount: leftCount, nextLeft: { () throws(TranscriptParseError) in try next(left) },
                                     nextRight: { () throws(TranscriptParseError) in try next(right) }))
    }

    /// Header fields compared by key, the ignored keys left out.
    static func headerDifferences(_ left: TranscriptHeader, _ right: TranscriptHeader, _ options: TranscriptDiffOptions) -> [TranscriptDifference] {
        var result: [TranscriptDifference] = []
        let leftFields = left.fields.filter { !options.ignoredHeaderKeys.contains($0.key) }
        let rightFields = right.fields.filter { !options.ignoredHeaderKeys.contains($0.key) }
        for field in leftFields {
            if let other = rightFields.first(where: { $0.key == field.key }) {
                if other.value != field.value {
                    result.append(TranscriptDifference(kind: .headerChanged, left: "\(field.key): \(field.value)", right: "\(other.key): \(other.value)"))
                }
            } else {
                result.append(TranscriptDifference(kind: .headerRemoved, left: "\(field.key): \(field.value)"))
            }
        }
        for field in rightFields where !leftFields.contains(where: { $0.key == field.key }) {
            result.append(TranscriptDifference(kind: .headerAdded, right: "\(field.key): \(field.value)"))
        }
        return result
    }

    /// One record as the diff compares it.
    struct Keyed {
        /// The record's text without offset and note (unless compared): what equality means.
        var key: [UInt8]
        /// 1-based line in its file.
        var line: Int
        var record: TranscriptRecord
        var text: String { String(decoding: key, as: UTF8.self) }
    }

    static func records(_ t: Transcript, _ options: TranscriptDiffOptions) -> [Keyed] {
        t.lines.enumerated().compactMap { index, line in
            guard let r = line.record else { return nil }
            return keyed(r, line: t.lineNumber(ofBodyIndex: index), options)
        }
    }

    static func keyed(_ record: TranscriptRecord, line: Int, _ options: TranscriptDiffOptions) -> Keyed {
        var r = record
        if !options.compareTiming { r.offset = nil }
        if !options.compareNotes { r.note = nil }
        return Keyed(key: Array(r.serialized().utf8), line: line, record: record)
    }

    /// A 64-bit digest of a record's key. Equal keys give equal digests; the rare unequal keys with
    /// one digest are caught when the aligned records are compared in full (``recordDifferences``).
    static func key(_ bytes: [UInt8]) -> UInt64 {
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        hasher.combine(bytes.count)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }

    /// Walks both sides once, in order, along `hunks` (the alignment of the records' digests;
    /// `nextLeft` and `nextRight` hand out the records, `leftCount` of them on the left): records
    /// aligned as equal are compared in full, the others become removed, added or changed differences.
    static func recordDifferences<E: Error>(
        hunks: [MyersDiff.Hunk], leftCount: Int, nextLeft: () throws(E) -> Keyed?, nextRight: () throws(E) -> Keyed?
    ) throws(E) -> [TranscriptDifference] {
        var out: [TranscriptDifference] = []
        var i = 0, j = 0
        func take(_ count: Int, _ next: () throws(E) -> Keyed?, _ index: inout Int) throws(E) -> [Keyed] {
            var taken: [Keyed] = []
            for _ in 0..<count {
                guard let k = try next() else { break }
                taken.append(k)
                index += 1
            }
            return taken
        }
        func matched(until leftEnd: Int) throws(E) {
            while i < leftEnd {
                guard let l = try nextLeft(), let r = try nextRight() else { return }
                i += 1; j += 1
                // Equal digests of unequal keys: report the pair instead of hiding it.
                if l.key != r.key { out += pairChanges(removed: [l], added: [r]) }
            }
        }
        for hunk in hunks {
            try matched(until: hunk.left.lowerBound)
            let removed = try take(hunk.left.count, nextLeft, &i)
            let added = try take(hunk.right.count, nextRight, &j)
            out += pairChanges(removed: removed, added: added)
        }
        try matched(until: leftCount)
        return out
    }

    /// A run of removed lines facing a run of added lines: pairs of the same line kind on the same
    /// channel become `changed`, with the first differing byte for payloads.
    static func pairChanges(removed: [Keyed], added: [Keyed]) -> [TranscriptDifference] {
        var out: [TranscriptDifference] = []
        var k = 0
        while k < removed.count || k < added.count {
            let l = k < removed.count ? removed[k] : nil, r = k < added.count ? added[k] : nil
            if let l, let r, l.record.channel == r.record.channel, sameKind(l.record.entry, r.record.entry) {
                var byte: Int?
                if let lp = l.record.entry.payload, let rp = r.record.entry.payload {
                    byte = firstDifference(lp, rp)
                }
                out.append(TranscriptDifference(kind: .changed, leftLine: l.line, rightLine: r.line,
                                                left: l.text, right: r.text, firstDifferentByte: byte))
            } else {
                if let l { out.append(TranscriptDifference(kind: .removed, leftLine: l.line, left: l.text)) }
                if let r { out.append(TranscriptDifference(kind: .added, rightLine: r.line, right: r.text)) }
            }
            k += 1
        }
        return out
    }

    /// Whether `record` answers `command`, the record before it: a reply of the command's kind on
    /// its channel (`<` after `>`, `ctl` `<` after `ctl` `>` with the same code, `tgt >` after
    /// `tgt <`, `ini <` after `ini >`), or a `!` failure after any command.
    static func isAnswer(_ record: TranscriptRecord, to command: TranscriptRecord?) -> Bool {
        guard let command else { return false }
        return AnswerShape(command)?.isAnswered(by: record) ?? false
    }

    /// What a command expects as its answer, kept instead of the command record while streaming.
    struct AnswerShape {
        var channel: String?
        var entry: UInt8
        var code: UInt32

        /// Nil for a record that is not a command.
        init?(_ command: TranscriptRecord) {
            guard command.entry.isCommand else { return nil }
            channel = command.channel
            switch command.entry {
            case .transmit: entry = 0; code = 0
            case .control(let c, _, _): entry = 1; code = c
            case .target: entry = 2; code = 0
            case .initiator: entry = 3; code = 0
            case .failure, .event, .reader: return nil
            }
        }

        func isAnswered(by record: TranscriptRecord) -> Bool {
            guard record.channel == channel else { return false }
            switch record.entry {
            case .transmit(let d, _): return entry == 0 && d == .incoming
            case .control(let c, let d, _): return entry == 1 && c == code && d == .incoming
            case .target(let d, _): return entry == 2 && d == .outgoing
            case .initiator(let d, _): return entry == 3 && d == .incoming
            case .failure: return true
            case .event, .reader: return false
            }
        }
    }

    static func sameKind(_ a: TranscriptEntry, _ b: TranscriptEntry) -> Bool {
        switch (a, b) {
        case (.transmit(let x, _), .transmit(let y, _)), (.target(let x, _), .target(let y, _)), (.initiator(let x, _), .initiator(let y, _)):
            x == y
        case (.control(let c, let x, _), .control(let d, let y, _)): c == d && x == y
        case (.failure, .failure), (.reader, .reader): true
        case (.event(let x), .event(let y)): x.kind == y.kind
        default: false
        }
    }

    /// The index of the first item that differs, or the shorter length.
    static func firstDifference(_ a: TranscriptBytes, _ b: TranscriptBytes) -> Int? {
        let x = a.items, y = b.items
        let n = min(x.count, y.count)
        for i in 0..<n where x[i] != y[i] { return i }
        return x.count == y.count ? nil : n
    }
}
