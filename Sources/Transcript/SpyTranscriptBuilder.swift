import ISO7816
import PCSCCore

// MARK: - Blocks into a transcript

/// Turns function blocks, one at a time, into items: exchanges and events with the connection
/// (card handle) they belong to. Channel ids and the header need the whole log, so an import
/// reads the log twice (``SpyLogImporter``): once to learn its form and its connections
/// (``SpyTranscriptLayout``), once to write the lines.
struct SpyTranscriptBuilder {
    let fileName: String
    let options: SpyImportOptions
    /// False in the diffable mode (no call times): no offsets.
    let timed: Bool
    private var state = BuildState()

    init(fileName: String, options: SpyImportOptions, timed: Bool) {
        self.fileName = fileName
        self.options = options
        self.timed = timed
    }

    /// The card handles seen so far, in order of appearance.
    var connections: [Connection] { state.connections }

    /// One card handle from SCardConnect (or first seen in a call).
    struct Connection {
        var handle: String
        var reader: String?
        var share: String?
        var transmissionProtocol: TransmissionProtocol?
        var atr: [UInt8]?
    }

    func fail(_ code: SpyImportError.Code, _ line: Int, _ reason: String) -> SpyImportError {
        SpyImportError(code: code, file: fileName, line: line, reason: reason)
    }

    /// What one block contributes, before channel ids are known.
    enum Item {
        case exchange(connection: Int, control: UInt32?, command: [UInt8], answer: Result<[UInt8], SpyFailure>?, start: UInt64?, end: UInt64?, line: Int)
        case event(connection: Int?, TranscriptEvent, at: UInt64?)
        case comment(String)
    }

    struct SpyFailure: Error {
        var failure: TranscriptFailure
    }

    /// The mutable state the per-function handlers thread through.
    private struct BuildState {
        var connections: [Connection] = []
        var current: [String: Int] = [:]  // handle text → connection
        var lastOnThread: [Int: Int] = [:]
        var items: [Item] = []
        var clock: UInt64 = 0
        var readerATR: [String: [UInt8]] = [:]

        /// The connection of a handle: the thread's last one for `0x????`, else the open one, else a new one.
        mutating func connection(for handle: String, thread: Int) -> Int {
            if handle == "0x????" {
                if let c = lastOnThread[thread] ?? connections.indices.last { return c }
            } else if let c = current[handle] {
                return c
            }
            connections.append(Connection(handle: handle))
            current[handle] = connections.count - 1
            lastOnThread[thread] = connections.count - 1
            return connections.count - 1
        }
    }

    /// The items of one completed block (in log order of result lines).
    mutating func add(_ block: SpyBlock) throws(SpyImportError) -> [Item] {
        guard let result = block.result else { return [] }
        let start: UInt64? = timed ? state.clock : nil
        if timed, let d = result.durationMicros { state.clock += d }
        let end: UInt64? = timed ? state.clock : nil
        switch Self.kind(of: block.function) {
        case .transmit, .control:
            try handleTransmitOrControl(block, result: result, start: start, end: end, into: &state)
        case .connect:
            try handleConnect(block, result: result, end: end, into: &state)
        case .reconnect:
            try handleReconnect(block, result: result, end: end, into: &state)
        case .disconnect:
            try handleDisconnect(block, result: result, end: end, into: &state)
        case .status:
            try handleStatus(block, result: result, into: &state)
        case .transaction(let began):
            try handleTransaction(block, result: result, began: began, end: end, into: &state)
        case .statusChange:
            try handleStatusChange(block, result: result, end: end, into: &state)
        case .other:
            break
        }
        defer { state.items.removeAll(keepingCapacity: true) }
        return state.items
    }

    /// The items of the blocks still open at the end: the program stopped inside the call.
    /// - Throws: a damaged buffer (one cut short is expected there).
    mutating func finish(open: [SpyBlock]) throws(SpyImportError) -> [Item] {
        var trailing: [Item] = []
        for block in open {
            let kind = Self.kind(of: block.function)
            // A buffer cut short at the end is expected here; a damaged one is still an error.
            var sent: [UInt8]?
            if kind == .transmit || kind == .control, parameter(block, "bSendBuffer", incoming: true) != nil {
                do {
                    sent = try buffer(block, "bSendBuffer", lengthLabel: "bSendLength", incoming: true)
                } catch where error.code == .lengthMismatch {
                    sent = nil
                }
            }
            if kind == .transmit || kind == .control,
               let handle = try? value(block, "hCard", incoming: true),
               let command = sent {
                var code: UInt32?
                if kind == .control, let text = try? value(block, "dwControlCode", incoming: true), let open = text.lastIndex(of: "(") {
                    code = Self.hexValue(text[text.index(after: open)...].dropLast())
                }
                if kind == .transmit || code != nil {
                    trailing.append(.comment("the log ends inside \(block.function) (log line \(block.line)): the call had not returned"))
                    trailing.append(.exchange(connection: state.connection(for: handle, thread: block.thread), control: code, command: command,
                                              answer: nil, start: timed ? state.clock : nil, end: nil, line: block.line))
                    continue
                }
            }
            trailing.append(.comment("the log ends inside \(block.function) (log line \(block.line)): the call had not returned"))
        }
        return trailing
    }
}

/// What the first pass over a log fixes: the header, the channel id of each connection (none for
/// a single card handle, else h1, h2, … in order of appearance) and their `reader` declarations;
/// then each item becomes its lines.
struct SpyTranscriptLayout {
    let fileName: String
    let options: SpyImportOptions
    let connections: [SpyTranscriptBuilder.Connection]
    let header: TranscriptHeader
    private let single: Bool

    init(log: SpyLog, connections: [SpyTranscriptBuilder.Connection], fileName: String, options: SpyImportOptions) {
        self.fileName = fileName
        self.options = options
        self.connections = connections
        single = connections.count <= 1
        var header = TranscriptHeader(tool: options.tool, origin: .imported, date: options.date)
        if single, let c = connections.first {
            header.reader = c.reader
            header.atr = c.atr
            header.transmissionProtocol = c.transmissionProtocol
        }
        header["source"] = options.redactor.redact(TranscriptHeader(fields: [.init(key: "source", value: options.source ?? "pcsc-spy output \(fileName)")]))["source"]
        var format: [String] = [log.newerFormat == true ? "result lines of pcsc-lite 2.2 or later" : "result lines of pcsc-lite 2.1 or earlier"]
        if log.threadTags { format.append("thread tags") }
        if log.threads > 1 { format.append("\(log.threads) threads") }
        if log.diffable { format.append("diffable") }
        if log.colour { format.append("colour codes") }
        header["spy-format"] = format.joined(separator: ", ")
        header["timing"] = log.diffable
            ? "none: the diffable mode prints no call times"
            : "offsets add up pcsc-spy's call durations in log order; idle time between calls is not in the log"
        self.header = header
    }

    /// The channel id of connection `c`; nil for a single card handle.
    private func channel(_ c: Int) -> String? { single ? nil : "h\(c + 1)" }

    /// The `@hN reader` declarations (and a blank line after them) that open the body; none for a
    /// single card handle.
    var declarations: [TranscriptLine] {
        guard !single else { return [] }
        var lines: [TranscriptLine] = []
        for (i, c) in connections.enumerated() {
            var attributes: [TranscriptAttribute] = []
            if let reader = c.reader { attributes.append(TranscriptAttribute("name", reader)) }
            if c.handle != "0x????" { attributes.append(TranscriptAttribute("handle", c.handle)) }
            if let p = c.transmissionProtocol { attributes.append(TranscriptAttribute("protocol", p.rawValue)) }
            if let atr = c.atr { attributes.append(TranscriptAttribute("atr", HexText.string(atr))) }
            lines.append(.record(TranscriptRecord(.reader(attributes), channel: channel(i))))
        }
        if !connections.isEmpty { lines.append(.blank) }
        return lines
    }

    /// The lines of one item, commands and answers redacted by the options' redactor.
    /// - Throws: `badSequence` when the item names a connection the first pass did not see (the
    ///   log changed while it was read).
    func lines(of item: SpyTranscriptBuilder.Item) throws(SpyImportError) -> [TranscriptLine] {
        func offset(_ micros: UInt64?) -> TranscriptOffset? {
            micros.map { TranscriptOffset(mantissa: $0, fractionDigits: 0, unit: .microseconds) }
        }
        func known(_ c: Int) throws(SpyImportError) -> Int {
            guard c < connections.count else {
                throw SpyImportError(code: .badSequence, file: fileName, line: 0,
                                     reason: "the log changed while it was imported (a card handle the first reading did not see): import it again once it is complete")
            }
            return c
        }
        switch item {
        case .comment(let text):
            return [.comment(text)]
        case .event(let c, let event, let at):
            let channel = try c.map { (c) throws(SpyImportError) in try known(c) }.flatMap(channel)
            return [.record(TranscriptRecord(.event(event), offset: offset(at), channel: channel))]
        case .exchange(let c, let code, let command, let answer, let start, let end, _):
            let channel = channel(try known(c))
            let commandEntry: TranscriptEntry = code.map { .control(code: $0, .outgoing, TranscriptBytes(command)) }
                ?? .transmit(.outgoing, TranscriptBytes(command))
            var lines: [TranscriptLine] = [.record(options.redactor.redact(TranscriptRecord(commandEntry, offset: offset(start), channel: channel)))]
            switch answer {
            case .success(let bytes)?:
                let entry: TranscriptEntry = code.map { .control(code: $0, .incoming, TranscriptBytes(bytes)) }
                    ?? .transmit(.incoming, TranscriptBytes(bytes))
                lines.append(.record(options.redactor.redact(
                    TranscriptRecord(entry, offset: offset(end), channel: channel), answering: command)))
            case .failure(let f)?:
                lines.append(.record(TranscriptRecord(.failure(f.failure), offset: offset(end), channel: channel)))
            case nil:
                break
            }
            return lines
        }
    }
}

extension SpyTranscriptBuilder {
    // MARK: - One handler per PC/SC function

    /// SCardTransmit / SCardControl: adds the command and its answer (or failure) as an exchange.
    private func handleTransmitOrControl(_ block: SpyBlock, result: SpyResult, start: UInt64?, end: UInt64?,
                                         into state: inout BuildState) throws(SpyImportError) {
        let ok = result.code == 0
        let failure = TranscriptFailure(name: result.name, code: result.code, message: result.message)
        let isControl = Self.kind(of: block.function) == .control
        let handle = try value(block, "hCard", incoming: true)
        let c = state.connection(for: handle, thread: block.thread)
        var code: UInt32?
        if isControl {
            let text = try value(block, "dwControlCode", incoming: true)
            guard let open = text.lastIndex(of: "("), text.hasSuffix(")"),
                  let v = Self.hexValue(text[text.index(after: open)..<text.index(before: text.endIndex)])
            else { throw fail(.badParameter, block.line, "the SCardControl block has no control code '(0x42000001)'") }
            code = v
        }
        guard let command = try buffer(block, "bSendBuffer", lengthLabel: "bSendLength", incoming: true) else {
            state.items.append(.comment("\(block.function) at log line \(block.line) sent no buffer (NULL); left out"))
            return
        }
        var answer: Result<[UInt8], SpyFailure>
        if ok {
            answer = .success(try buffer(block, "bRecvBuffer", lengthLabel: "bRecvLength", incoming: false) ?? [])
        } else {
            answer = .failure(SpyFailure(failure: failure))
        }
        state.items.append(.exchange(connection: c, control: code, command: command, answer: answer, start: start, end: end, line: block.line))
    }

    /// SCardConnect: adds a new connection and a `connected` event (or a comment when it failed).
    private func handleConnect(_ block: SpyBlock, result: SpyResult, end: UInt64?,
                               into state: inout BuildState) throws(SpyImportError) {
        let ok = result.code == 0
        let reader = try value(block, "szReader", incoming: true)
        guard ok else {
            state.items.append(.comment("SCardConnect to '\(reader)' failed: \(result.name) (log line \(block.line))"))
            return
        }
        let handle = try value(block, "phCard", incoming: false)
        let handleValue = String(handle.split(separator: " ").first ?? "")
        state.connections.append(Connection(handle: handleValue, reader: reader))
        let c = state.connections.count - 1
        state.current[handleValue] = c
        state.lastOnThread[block.thread] = c
        let share = Self.shareName((try? value(block, "dwShareMode", incoming: true)) ?? "")
        let proto = Self.protocolName((try? value(block, "dwActiveProtocol", incoming: false)) ?? "")
        state.connections[c].share = share
        state.connections[c].transmissionProtocol = proto
        if let atr = state.readerATR[reader] { state.connections[c].atr = atr }
        var attributes: [TranscriptAttribute] = []
        if let share { attributes.append(TranscriptAttribute("share", share)) }
        if let proto { attributes.append(TranscriptAttribute("protocol", proto.rawValue)) }
        if handleValue != "0x????" { attributes.append(TranscriptAttribute("handle", handleValue)) }
        state.items.append(.event(connection: c, TranscriptEvent(.connected, attributes), at: end))
    }

    /// SCardReconnect: adds a `card-reset` event when it reset or unpowered the card.
    private func handleReconnect(_ block: SpyBlock, result: SpyResult, end: UInt64?,
                                 into state: inout BuildState) throws(SpyImportError) {
        guard result.code == 0 else { return }
        let c = state.connection(for: try value(block, "hCard", incoming: true), thread: block.thread)
        let initialization = (try? value(block, "dwInitialization", incoming: true)).flatMap { Self.hexValue($0.split(separator: " ").first ?? "") } ?? 0
        let proto = Self.protocolName((try? value(block, "dwActiveProtocol", incoming: false)) ?? "")
        if let proto { state.connections[c].transmissionProtocol = state.connections[c].transmissionProtocol ?? proto }
        if initialization == 1 || initialization == 2 {
            var attributes: [TranscriptAttribute] = []
            if let proto { attributes.append(TranscriptAttribute("protocol", proto.rawValue)) }
            state.items.append(.event(connection: c, TranscriptEvent(.cardReset, attributes), at: end))
        }
    }

    /// SCardDisconnect: adds a `disconnected` event with the disposition.
    private func handleDisconnect(_ block: SpyBlock, result: SpyResult, end: UInt64?,
                                  into state: inout BuildState) throws(SpyImportError) {
        let handle = try value(block, "hCard", incoming: true)
        let c = state.connection(for: handle, thread: block.thread)
        guard result.code == 0 else { return }
        let disposition = (try? value(block, "dwDisposition", incoming: true)).map(Self.dispositionName)
        state.items.append(.event(connection: c, TranscriptEvent(.disconnected, disposition.map { [TranscriptAttribute("disposition", $0)] } ?? []), at: end))
        if handle != "0x????" { state.current[handle] = nil }
    }

    /// SCardStatus: adds no line; fills in the connection's reader name, ATR and protocol.
    private func handleStatus(_ block: SpyBlock, result: SpyResult,
                              into state: inout BuildState) throws(SpyImportError) {
        guard result.code == 0 else { return }
        let c = state.connection(for: try value(block, "hCard", incoming: true), thread: block.thread)
        if let name = try? value(block, "mszReaderName", incoming: false), name != "NULL", state.connections[c].reader == nil {
            state.connections[c].reader = name
        }
        if let text = try? value(block, "bAtr", incoming: false), let atr = Self.spacedHex(text), !atr.isEmpty {
            state.connections[c].atr = atr
        }
        if let text = try? value(block, "dwProtocol", incoming: false),
           let p = Self.hexValue(text.split(separator: " ").first ?? "") {
            state.connections[c].transmissionProtocol = state.connections[c].transmissionProtocol ?? Self.protocolFromBits(p)
        }
    }

    /// SCardBeginTransaction / SCardEndTransaction: adds a `transaction-began` or `transaction-ended` event.
    private func handleTransaction(_ block: SpyBlock, result: SpyResult, began: Bool, end: UInt64?,
                                   into state: inout BuildState) throws(SpyImportError) {
        guard result.code == 0 else { return }
        let c = state.connection(for: try value(block, "hCard", incoming: true), thread: block.thread)
        state.items.append(.event(connection: c, TranscriptEvent(began ? .transactionBegan : .transactionEnded), at: end))
    }

    /// SCardGetStatusChange: adds a reader event per changed reader and remembers each reader's ATR.
    private func handleStatusChange(_ block: SpyBlock, result: SpyResult, end: UInt64?,
                                    into state: inout BuildState) throws(SpyImportError) {
        guard result.code == 0 else { return }
        for (reader, event) in try statusChanges(block) {
            if let atr = event["atr"].flatMap({ try? TextScanner.concreteBytes($0) }) { state.readerATR[reader] = atr }
            state.items.append(.event(connection: nil, event, at: end))
        }
    }

    enum Kind: Equatable {
        case transmit, control, connect, reconnect, disconnect, status, statusChange, other
        case transaction(began: Bool)
    }

    static func kind(of function: String) -> Kind {
        switch function {
        case "SCardTransmit": .transmit
        case "SCarControl", "SCardControl", "SCardControl132": .control
        case "SCardConnect": .connect
        case "SCardReconnect": .reconnect
        case "SCardDisconnect": .disconnect
        case "SCardStatus": .status
        case "SCardGetStatusChange": .statusChange
        case "SCardBeginTransaction": .transaction(began: true)
        case "SCardEndTransaction": .transaction(began: false)
        default: .other
        }
    }

    /// The text after `label` (followed by `:` or a space) of the first matching parameter line.
    func value(_ block: SpyBlock, _ label: String, incoming: Bool) throws(SpyImportError) -> String {
        guard let p = parameter(block, label, incoming: incoming) else {
            throw fail(.badParameter, block.line, "the \(block.function) block has no '\(incoming ? "i" : "o") \(label)' line: the log is damaged or not from pcsc-spy")
        }
        return p.value
    }

    func parameter(_ block: SpyBlock, _ label: String, incoming: Bool) -> (value: String, index: Int)? {
        for (i, p) in block.parameters.enumerated() where p.incoming == incoming {
            guard p.text.hasPrefix(label) else { continue }
            var rest = p.text.dropFirst(label.count)
            if rest.isEmpty { return ("", i) }
            guard rest.first == ":" || rest.first == " " else { continue }
            if rest.first == ":" { rest = rest.dropFirst() }
            if rest.first == " " { rest = rest.dropFirst() }
            return (String(rest), i)
        }
        return nil
    }

    /// A hexdump buffer after its label line; nil when the buffer is NULL.
    ///
    /// Each line is `OOOO HH HH … ascii`: a 4-digit offset, up to 16 bytes at fixed columns (three
    /// characters each), then the bytes as ASCII. The byte count must equal the length line.
    func buffer(_ block: SpyBlock, _ label: String, lengthLabel: String, incoming: Bool) throws(SpyImportError) -> [UInt8]? {
        guard let (_, index) = parameter(block, label, incoming: incoming) else {
            throw fail(.badParameter, block.line, "the \(block.function) block has no '\(incoming ? "i" : "o") \(label)' line")
        }
        var bytes: [UInt8] = []
        var lastLine = block.parameters[index].line
        var shortLineSeen: Int?
        for p in block.parameters[(index + 1)...] {
            guard p.incoming == incoming, p.text.hasPrefix(" ") else { break }
            let text = Array(p.text.utf8.dropFirst())
            if text == Array("NULL".utf8) { return nil }
            if let short = shortLineSeen {
                throw fail(.badHex, p.line, "a hexdump line after the short line \(short): only the last line of a buffer may hold fewer than 16 bytes")
            }
            guard text.count >= 4, let offset = Self.hexValue(Substring(String(decoding: text[0..<4], as: UTF8.self))) else {
                throw fail(.badHex, p.line, "a hexdump line starts with a 4-digit offset (0000, 0010, …)")
            }
            guard Int(offset) == bytes.count else {
                throw fail(.badHex, p.line, "hexdump offset \(String(decoding: text[0..<4], as: UTF8.self)) where \(Self.offsetText(bytes.count)) was due: a line is missing or repeated")
            }
            var count = 0
            for k in 0..<16 {
                let at = 5 + 3 * k
                guard at < text.count, text[at - 1] == 0x20, text[at] != 0x20 else { break }
                guard at + 1 < text.count else {
                    throw fail(.badHex, p.line, "the hexdump line ends inside a byte at column \(at + 5): the log is cut short or damaged; it is not a hex byte")
                }
                guard let hi = Self.hexDigit(text[at]), let lo = Self.hexDigit(text[at + 1]),
                      at + 2 == text.count || text[at + 2] == 0x20
                else {
                    throw fail(.badHex, p.line, "'\(String(decoding: text[at..<min(at + 2, text.count)], as: UTF8.self))' at column \(at + 5) is not a hex byte: the hexdump line is damaged")
                }
                bytes.append(hi << 4 | lo)
                count += 1
            }
            guard count > 0 else { throw fail(.badHex, p.line, "a hexdump line with no bytes") }
            if count < 16 { shortLineSeen = p.line }
            lastLine = p.line
        }
        if let lengthText = try? value(block, lengthLabel, incoming: incoming),
           let length = Self.hexValue(lengthText.split(separator: " ").first ?? ""),
           let expected = Int(exactly: length) {
            // A length the buffer cannot match (a failed call) is only checked for successes.
            if bytes.count != expected && (block.result?.code ?? 0) == 0 {
                throw fail(.lengthMismatch, lastLine, "\(label) holds \(bytes.count) byte\(bytes.count == 1 ? "" : "s") but \(lengthLabel) says \(expected): the hexdump is cut short or damaged")
            }
        }
        return bytes
    }

    /// The events of one SCardGetStatusChange: per reader whose output state has CHANGED (0x2),
    /// `card-inserted`/`card-removed` when PRESENT (0x20) differs from the state the caller
    /// knew, else `state-changed` (PC/SC Part 5 / pcsclite.h SCARD_STATE_* bits).
    func statusChanges(_ block: SpyBlock) throws(SpyImportError) -> [(String, TranscriptEvent)] {
        struct ReaderState { var name = ""; var current: UInt32 = 0; var event: UInt32 = 0; var atr: [UInt8] = [] }
        var outputs: [ReaderState] = []
        var inputs: [String: ReaderState] = [:]
        var pending: ReaderState?
        var incomingPending = true
        func flush() {
            guard let p = pending else { return }
            if incomingPending { inputs[p.name] = p } else { outputs.append(p) }
            pending = nil
        }
        for p in block.parameters {
            let t = p.text
            if t.hasPrefix("szReader:") {
                flush()
                pending = ReaderState(name: String(t.dropFirst("szReader:".count).drop { $0 == " " }))
                incomingPending = p.incoming
            } else if t.hasPrefix(" dwCurrentState:") {
                pending?.current = Self.parenthesisedHex(t) ?? 0
            } else if t.hasPrefix(" dwEventState:") {
                pending?.event = Self.parenthesisedHex(t) ?? 0
            } else if t.hasPrefix(" Atr:") {
                pending?.atr = Self.spacedHex(String(t.dropFirst(" Atr:".count))) ?? []
            }
        }
        flush()
        var events: [(String, TranscriptEvent)] = []
        for o in outputs where o.event & 0x2 != 0 {
            let known = inputs[o.name]?.current ?? o.current
            let wasPresent = known & 0x20 != 0, isPresent = o.event & 0x20 != 0
            let atr = o.atr.isEmpty ? nil : HexText.string(o.atr)
            let readerAttribute = TranscriptAttribute("reader", o.name)
            if known & 0x30 != 0 && isPresent && !wasPresent {
                events.append((o.name, TranscriptEvent(.cardInserted, [readerAttribute] + (atr.map { [TranscriptAttribute("atr", $0)] } ?? []))))
            } else if wasPresent && !isPresent && o.event & 0x10 != 0 {
                events.append((o.name, TranscriptEvent(.cardRemoved, [readerAttribute])))
            } else {
                var attributes = [readerAttribute, TranscriptAttribute("state", HexText.code(o.event))]
                if let atr { attributes.append(TranscriptAttribute("atr", atr)) }
                events.append((o.name, TranscriptEvent(.stateChanged, attributes)))
            }
        }
        return events
    }

    static func offsetText(_ n: Int) -> String {
        var s = ""
        for shift in stride(from: 12, through: 0, by: -4) {
            s.append(Character(Unicode.Scalar(UInt8(ascii: "0") + UInt8((n >> shift) & 0xF) + ((n >> shift) & 0xF > 9 ? 7 : 0))))
        }
        return s
    }

    static func hexDigit(_ c: UInt8) -> UInt8? {
        HexText.value(ofUppercaseDigit: c) ?? (HexText.isLowercaseHexDigit(c) ? c - UInt8(ascii: "a") + 10 : nil)
    }

    /// `0x0000000C`, `0000` or `0x00000002` → the value.
    static func hexValue<S: StringProtocol>(_ s: S) -> UInt32? {
        var text = Substring(s)
        if text.hasPrefix("0x") { text = text.dropFirst(2) }
        guard !text.isEmpty, text.count <= 8 else { return nil }
        return UInt32(text, radix: 16)
    }

    /// `... (0x00000012)` → 0x12.
    static func parenthesisedHex(_ s: String) -> UInt32? {
        guard let open = s.lastIndex(of: "("), s.hasSuffix(")") else { return nil }
        return hexValue(s[s.index(after: open)..<s.index(before: s.endIndex)])
    }

    /// `3B 95 13` → bytes; empty text → []; anything else → nil.
    static func spacedHex(_ s: String) -> [UInt8]? {
        var out: [UInt8] = []
        for word in s.split(separator: " ") {
            guard word.count == 2, let b = UInt8(word, radix: 16) else { return nil }
            out.append(b)
        }
        return out
    }

    /// `SCARD_SHARE_SHARED (0x00000002)` → `shared`.
    static func shareName(_ s: String) -> String? {
        switch parenthesisedHex(s) {
        case 1: "exclusive"
        case 2: "shared"
        case 3: "direct"
        default: nil
        }
    }

    /// `T=1 (0x00000002)` → T=1; `UNKNOWN (0x00000000)` → undefined (a DIRECT connection).
    static func protocolName(_ s: String) -> TransmissionProtocol? {
        parenthesisedHex(s).flatMap(protocolFromBits)
    }

    /// SCARD_PROTOCOL_* bits: 1 T=0, 2 T=1, 4 RAW, 0 undefined.
    static func protocolFromBits(_ bits: UInt32) -> TransmissionProtocol? {
        switch bits {
        case 0: .undefined
        case 1: .t0
        case 2: .t1
        case 4: .raw
        default: nil
        }
    }

    /// `SCARD_LEAVE_CARD (0x00000000)` → `leave`.
    static func dispositionName(_ s: String) -> String {
        switch parenthesisedHex(s) {
        case 0: "leave"
        case 1: "reset"
        case 2: "unpower"
        case 3: "eject"
        default: "unknown"
        }
    }
}

extension Substring {
    /// The range of the last occurrence of `pattern`, or nil (Foundation-free).
    func lastRange(of pattern: String) -> Range<Substring.Index>? {
        let p = Array(pattern)
        guard !p.isEmpty, count >= p.count else { return nil }
        var end = endIndex
        while true {
            guard let start = index(end, offsetBy: -p.count, limitedBy: startIndex) else { return nil }
            if self[start..<end].elementsEqual(p) { return start..<end }
            if end == startIndex { return nil }
            end = index(before: end)
        }
    }
}
