import ISO7816
import PCSCCore
// MARK: - Reading the viewer's lines into blocks

/// One parameter line: ` i text` or ` o text`.
struct SpyParameter {
    var incoming: Bool  // " i ": an input of the call
    var text: String
    var line: Int
}

/// The ` => ` line of a block.
struct SpyResult {
    var name: String
    var code: UInt32
    var message: String?
    /// Microseconds the call took; nil in the diffable mode.
    var durationMicros: UInt64?
    var line: Int
    var newerFormat: Bool
}

/// One function call as the viewer printed it.
struct SpyBlock {
    var function: String
    var thread: Int
    var line: Int
    var parameters: [SpyParameter] = []
    var result: SpyResult?
}

/// What the whole log says about its own form, known once every line was read.
struct SpyLog {
    /// Blocks without a result line at the end of the log, in the order they started.
    var open: [SpyBlock]
    var threadTags: Bool
    var colour: Bool
    var diffable: Bool
    var newerFormat: Bool?
    var threads: Int
}

/// Reads the viewer's output one line at a time (``accept(_:)``), handing out each function block
/// when its result line comes: memory holds the blocks still open (one per thread), never the log.
struct SpyLogReader {
    let fileName: String
    private var open: [Int: SpyBlock] = [:]
    private var completed = 0
    private var colour = false, tags = false, diffable = false
    private var newer: Bool?
    private var inSummary = false
    private var threads: Set<Int> = []
    /// Lines read so far.
    private(set) var lineCount = 0

    init(fileName: String) { self.fileName = fileName }

    func fail(_ code: SpyImportError.Code, _ line: Int, _ reason: String) -> SpyImportError {
        SpyImportError(code: code, file: fileName, line: line, reason: reason)
    }

    /// Reads a whole log held in memory: `body` gets each completed block in the order its result
    /// line appears.
    mutating func read(_ bytes: [UInt8], _ body: (SpyBlock) throws(SpyImportError) -> Void) throws(SpyImportError) -> SpyLog {
        var start = 0
        var i = 0
        while i < bytes.count {
            if bytes[i] == 0x0A {
                if let block = try accept(bytes[start..<i]) { try body(block) }
                start = i + 1
            }
            i += 1
        }
        if start < bytes.count, let block = try accept(bytes[start...]) { try body(block) }
        return try finish()
    }

    /// Reads one line of the log (without its LF); the block it completes, if any.
    mutating func accept(_ raw: ArraySlice<UInt8>) throws(SpyImportError) -> SpyBlock? {
        let index = lineCount
        lineCount += 1
        let number = index + 1
        var line = Array(raw)
        if line.last == 0x0D { line.removeLast() }
        if line.contains(0x1B) {
            colour = true
            line = Self.strippingEscapes(line)
        }
        let text = String(decoding: line, as: UTF8.self)
        if text.allSatisfy({ $0 == " " }) { return nil }
        if index == 0 || completed == 0 && open.isEmpty, Self.isRawLibraryLine(line) {
            throw fail(.rawLibraryFormat, number,
                       "this is the spy library's raw log, not pcsc-spy's output: convert it first with `pcsc-spy -n \(fileName) > spy.log`, then import spy.log")
        }
        if text.hasPrefix("Thread "), Self.isSummaryHeading(text) {
            inSummary = true
            return nil
        }
        if inSummary { return nil }
        if text.hasPrefix("fifo ") || text.hasPrefix("Garbage:") || text.hasPrefix("Unknown function:")
            || text.hasPrefix("Ctrl-C") {
            return nil
        }
        // Indentation: 4 spaces per thread; parameter and result lines add one; with -t the
        // tag "(tN) " follows the indentation. 2 or 3 spaces: the viewer's own decoding of
        // some SCardControl results (not part of any block).
        var spaces = 0
        while spaces < line.count && line[spaces] == 0x20 { spaces += 1 }
        var content = Array(line[spaces...])
        var thread: Int
        if let (tag, length) = Self.threadTag(content) {
            tags = true
            thread = tag
            content.removeFirst(length)
        } else if spaces % 4 == 0 {
            thread = spaces / 4
        } else if spaces % 4 == 1 {
            thread = spaces / 4
            content.insert(0x20, at: 0)
        } else {
            return nil
        }
        threads.insert(thread)
        let body = String(decoding: content, as: UTF8.self)
        if body.hasPrefix(" i ") || body.hasPrefix(" o ") {
            guard open[thread] != nil else {
                throw fail(.badSequence, number, "a parameter line outside any function block: the log is cut at its start or the lines are out of order; start the import at a function name line (SCard…)")
            }
            open[thread]!.parameters.append(SpyParameter(incoming: body.hasPrefix(" i "), text: String(body.dropFirst(3)), line: number))
            if body.contains("0x????") { diffable = true }
        } else if body.hasPrefix(" => ") {
            guard var block = open.removeValue(forKey: thread) else {
                throw fail(.badSequence, number, "a result line (=>) outside any function block: the log is cut at its start; start the import at a function name line (SCard…)")
            }
            let result = try parseResult(String(body.dropFirst(4)), line: number)
            if result.durationMicros == nil { diffable = true }
            if let newer, newer != result.newerFormat {
                throw fail(.badResult, number, "this result line is in the \(result.newerFormat ? "newer" : "older") form, earlier ones in the \(newer ? "newer" : "older"): import one pcsc-spy output at a time")
            }
            newer = result.newerFormat
            block.result = result
            completed += 1
            return block
        } else if Self.isFunctionName(body) {
            if let previous = open[thread] {
                throw fail(.badSequence, number, "\(body) starts before \(previous.function) (line \(previous.line)) has its result line (=>): the log is damaged there")
            }
            open[thread] = SpyBlock(function: body, thread: thread, line: number)
        } else {
            throw fail(.unknownLine, number, "not pcsc-spy output: expected a function name (SCardTransmit, …), an ' i '/' o ' parameter line or a ' => ' result line")
        }
        return nil
    }

    /// The end of the log: what it says about its form, and the blocks still open.
    /// - Throws: `notASpyLog` when no function block was found.
    func finish() throws(SpyImportError) -> SpyLog {
        guard completed > 0 || !open.isEmpty else {
            let what = lineCount == 0 ? "the log is empty (0 bytes): " : "the log holds only blank lines or pcsc-spy's own notes: "
            throw fail(.notASpyLog, lineCount == 0 ? 0 : 1, what + "no pcsc-spy function block found: give the output of `pcsc-spy -n` (see `secbridge capture` to record one)")
        }
        return SpyLog(open: open.values.sorted { $0.line < $1.line }, threadTags: tags, colour: colour,
                      diffable: diffable, newerFormat: newer, threads: threads.count)
    }

    /// ` => ` and what follows, in either form:
    /// older `Command successful. (SCARD_S_SUCCESS [0x00000000])  [0.000730]`,
    /// newer `SCARD_S_SUCCESS [0x00000000]  [0.000730]`; the time may be `[??.??]`.
    func parseResult(_ text: String, line: Int) throws(SpyImportError) -> SpyResult {
        let hint = "expected ' => Command successful. (SCARD_S_SUCCESS [0x00000000])  [0.000730]' or ' => SCARD_S_SUCCESS [0x00000000]  [0.000730]'"
        var status = Substring(text)
        while status.last == " " { status.removeLast() }
        var duration: UInt64?
        guard status.hasSuffix("]"), let open = status.lastRange(of: " [") else {
            throw fail(.badResult, line, "a result line without its time: \(hint)")
        }
        let time = status[open.upperBound..<status.index(before: status.endIndex)]
        status = status[..<open.lowerBound]
        if time != "??.??" {
            guard let micros = Self.parseSeconds(time) else {
                throw fail(.badResult, line, "'[\(time)]' is not a call time in seconds: \(hint)")
            }
            duration = micros
        }
        while status.last == " " { status.removeLast() }
        var newer = true
        if status.hasSuffix(")") {
            newer = false
            status.removeLast()
        }
        guard status.hasSuffix("]"), let codeStart = status.lastRange(of: " [0x") else {
            throw fail(.badResult, line, "no return code '[0x…]': \(hint)")
        }
        let digits = status[codeStart.upperBound..<status.index(before: status.endIndex)]
        guard digits.count == 8, let code = UInt32(digits, radix: 16) else {
            throw fail(.badResult, line, "'0x\(digits)' is not an eight-digit return code: \(hint)")
        }
        var name = status[..<codeStart.lowerBound]
        var message: String?
        if !newer {
            guard let paren = name.lastRange(of: " (") else {
                throw fail(.badResult, line, "the older form puts the name in parentheses: \(hint)")
            }
            message = String(name[..<paren.lowerBound])
            name = name[paren.upperBound...]
        }
        let nameText = String(name)
        guard TextScanner.isFailureName(nameText) else {
            throw fail(.badResult, line, "'\(nameText)' is not a PC/SC return code name: \(hint)")
        }
        return SpyResult(name: nameText, code: code, message: message, durationMicros: duration, line: line, newerFormat: newer)
    }

    /// `0.000730` → 730 µs (six digits after the point, as the viewer prints them).
    static func parseSeconds(_ s: Substring) -> UInt64? {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].count <= 9, parts[1].count == 6,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let whole = UInt64(parts[0]), let fraction = UInt64(parts[1])
        else { return nil }
        return whole * 1_000_000 + fraction
    }

    /// Removes ANSI CSI sequences (`ESC [ params letter`) and stray ESC bytes.
    static func strippingEscapes(_ line: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(line.count)
        var i = 0
        while i < line.count {
            if line[i] == 0x1B {
                i += 1
                if i < line.count && line[i] == UInt8(ascii: "[") {
                    i += 1
                    while i < line.count && !((0x40...0x7E).contains(line[i])) { i += 1 }
                    i += 1  // the final letter
                }
                continue
            }
            out.append(line[i])
            i += 1
        }
        return out
    }

    /// `(tN) ` at the start of `content`: N and the tag's length with its space.
    static func threadTag(_ content: [UInt8]) -> (Int, Int)? {
        guard content.count >= 5, content[0] == UInt8(ascii: "("), content[1] == UInt8(ascii: "t") else { return nil }
        var i = 2
        var value = 0
        while i < content.count, i < 8, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(content[i]) {
            value = value * 10 + Int(content[i] - UInt8(ascii: "0"))
            i += 1
        }
        guard i > 2, i + 1 < content.count, content[i] == UInt8(ascii: ")"), content[i + 1] == 0x20 else { return nil }
        return (value, i + 2)
    }

    /// `Thread 1/2`, the start of the viewer's closing statistics.
    static func isSummaryHeading(_ text: String) -> Bool {
        let rest = text.dropFirst("Thread ".count).split(separator: "/", omittingEmptySubsequences: false)
        return rest.count == 2 && rest.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }

    static func isFunctionName(_ s: String) -> Bool {
        s.hasPrefix("SCar") && s.utf8.allSatisfy { c in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(c) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
        }
    }

    /// `7F1B8377C8C0@>|…`: a thread id, `@`, then a raw record.
    static func isRawLibraryLine(_ line: [UInt8]) -> Bool {
        guard let at = line.firstIndex(of: UInt8(ascii: "@")), at > 0, at + 1 < line.count else { return false }
        let isHex = line[..<at].allSatisfy { c in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(c)
                || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(c)
        }
        return isHex && (line[at + 1] == UInt8(ascii: ">") || line[at + 1] == UInt8(ascii: "<"))
    }
}
