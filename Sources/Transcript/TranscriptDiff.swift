/// One difference between two transcripts, as ``TranscriptDiff/compare(_:_:options:)`` finds it.
public struct TranscriptDifference: Sendable, Hashable, CustomStringConvertible {
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

    public var kind: Kind
    /// 1-based line in the left file, when the difference has a left side.
    public var leftLine: Int?
    /// 1-based line in the right file.
    public var rightLine: Int?
    /// The left text (a header `key: value` or a record without offset and note by default).
    public var left: String?
    public var right: String?
    /// For `changed` payload lines: the index of the first differing byte.
    public var firstDifferentByte: Int?

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

    public init(compareTiming: Bool = false, compareNotes: Bool = false, ignoredHeaderKeys: Set<String> = ["date", "tool"]) {
        self.compareTiming = compareTiming
        self.compareNotes = compareNotes
        self.ignoredHeaderKeys = ignoredHeaderKeys
    }
}

/// A structural diff of two transcripts: header fields by key, then the records (comments and
/// blank lines do not count) aligned by a longest common subsequence.
public enum TranscriptDiff {
    /// The most cells of the alignment table (left × right records after trimming the common
    /// start and end); beyond it the differing middle is reported as removed then added.
    public static let maximumAlignmentCells = 4_000_000

    /// The differences, header first, then records in file order. Empty when the files agree.
    public static func compare(_ left: Transcript, _ right: Transcript, options: TranscriptDiffOptions = TranscriptDiffOptions()) -> [TranscriptDifference] {
        var result: [TranscriptDifference] = []
        let leftFields = left.header.fields.filter { !options.ignoredHeaderKeys.contains($0.key) }
        let rightFields = right.header.fields.filter { !options.ignoredHeaderKeys.contains($0.key) }
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

        let a = records(left, options), b = records(right, options)
        var prefix = 0
        while prefix < a.count, prefix < b.count, a[prefix].text == b[prefix].text { prefix += 1 }
        var suffix = 0
        while suffix < a.count - prefix, suffix < b.count - prefix,
              a[a.count - 1 - suffix].text == b[b.count - 1 - suffix].text { suffix += 1 }
        let midA = Array(a[prefix..<(a.count - suffix)]), midB = Array(b[prefix..<(b.count - suffix)])

        var raw: [TranscriptDifference?] = []  // nil: a common record (ends a run)
        if midA.count * midB.count > maximumAlignmentCells || midA.isEmpty || midB.isEmpty {
            raw += midA.map { TranscriptDifference(kind: .removed, leftLine: $0.line, left: $0.text) }
            raw += midB.map { TranscriptDifference(kind: .added, rightLine: $0.line, right: $0.text) }
        } else {
            // lcs[i][j]: the common length of midA[i...] and midB[j...].
            let n = midA.count, m = midB.count
            var lcs = [[Int32]](repeating: [Int32](repeating: 0, count: m + 1), count: n + 1)
            for i in stride(from: n - 1, through: 0, by: -1) {
                for j in stride(from: m - 1, through: 0, by: -1) {
                    lcs[i][j] = midA[i].text == midB[j].text ? lcs[i + 1][j + 1] + 1 : max(lcs[i + 1][j], lcs[i][j + 1])
                }
            }
            var i = 0, j = 0
            while i < n || j < m {
                if i < n, j < m, midA[i].text == midB[j].text {
                    raw.append(nil)
                    i += 1; j += 1
                } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
                    raw.append(TranscriptDifference(kind: .removed, leftLine: midA[i].line, left: midA[i].text))
                    i += 1
                } else {
                    raw.append(TranscriptDifference(kind: .added, rightLine: midB[j].line, right: midB[j].text))
                    j += 1
                }
            }
        }
        result += pairChanges(raw, a: midA, b: midB)
        return result
    }

    struct Keyed {
        var text: String
        var line: Int
        var record: TranscriptRecord
    }

    static func records(_ t: Transcript, _ options: TranscriptDiffOptions) -> [Keyed] {
        t.lines.enumerated().compactMap { index, line in
            guard var r = line.record else { return nil }
            let original = r
            if !options.compareTiming { r.offset = nil }
            if !options.compareNotes { r.note = nil }
            return Keyed(text: r.serialized(), line: t.lineNumber(ofBodyIndex: index), record: original)
        }
    }

    /// A run of removed lines followed by a run of added lines: pairs of the same line kind on the
    /// same channel become `changed`, with the first differing byte for payloads.
    static func pairChanges(_ raw: [TranscriptDifference?], a: [Keyed], b: [Keyed]) -> [TranscriptDifference] {
        let left = Dictionary(a.map { ($0.line, $0.record) }, uniquingKeysWith: { x, _ in x })
        let right = Dictionary(b.map { ($0.line, $0.record) }, uniquingKeysWith: { x, _ in x })
        var out: [TranscriptDifference] = []
        var i = 0
        while i < raw.count {
            var removed: [TranscriptDifference] = []
            while i < raw.count, let d = raw[i], d.kind == .removed { removed.append(d); i += 1 }
            var added: [TranscriptDifference] = []
            while i < raw.count, let d = raw[i], d.kind == .added { added.append(d); i += 1 }
            var k = 0
            while k < removed.count || k < added.count {
                if k < removed.count, k < added.count,
                   let l = left[removed[k].leftLine ?? 0], let r = right[added[k].rightLine ?? 0],
                   l.channel == r.channel, sameKind(l.entry, r.entry) {
                    var byte: Int?
                    if let lp = l.entry.payload, let rp = r.entry.payload {
                        byte = firstDifference(lp, rp)
                    }
                    out.append(TranscriptDifference(kind: .changed, leftLine: removed[k].leftLine, rightLine: added[k].rightLine,
                                                    left: removed[k].left, right: added[k].right, firstDifferentByte: byte))
                } else {
                    if k < removed.count { out.append(removed[k]) }
                    if k < added.count { out.append(added[k]) }
                }
                k += 1
            }
            if removed.isEmpty && added.isEmpty { i += 1 }  // a common record
        }
        return out
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
        let n = min(a.items.count, b.items.count)
        for i in 0..<n where a.items[i] != b.items[i] { return i }
        return a.items.count == b.items.count ? nil : n
    }
}
