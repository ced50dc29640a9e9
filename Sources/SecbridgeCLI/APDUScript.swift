import ISO7816
import Transcript

/// The language of `secbridge run` scripts and `secbridge shell`: one statement per line, as
/// pcsc-tools' `scriptor` reads its files, plus the shell's commands. Lines are parsed as bytes,
/// one at a time (``Lines``), so a script's first APDU goes out before the rest is read.
///
/// Grammar (one line each; keywords in any case):
/// - blank, or a comment: `#` (scriptor) or `//` to the end of the line;
/// - an APDU in hex, bytes separated by spaces or not (`00 A4 04 00 00` or `00A4040000`), with an
///   optional trailing comment; `FF …` is a reader pseudo-APDU (PC/SC part 3, ACR122U API);
/// - `control HEX…`: an escape command (SCardControl with the reader's escape code);
/// - `reset`: reset the card (SCardReconnect with SCARD_RESET_CARD), as scriptor does;
/// - `reader` or `reader NAME|INDEX`: show the reader, or change to another;
/// - `record FILE` or `record off`: start or stop recording a transcript;
/// - `help`: list the statements;
/// - `exit` or `quit`: stop reading.
/// Anything else is an error naming the file, the line and the offending text.
package struct APDUScript {
    package enum Step: Equatable {
        case apdu([UInt8], line: Int)
        case reset(line: Int)
        case control([UInt8], line: Int)
        /// `reader`: nil shows the reader; a name or index changes to that reader.
        case reader(String?, line: Int)
        /// `record FILE`; nil is `record off`.
        case record(String?, line: Int)
        case help(line: Int)

        /// The number of the script line the step is on (1 for the first).
        package var line: Int {
            switch self {
            case .apdu(_, let line), .reset(let line), .control(_, let line), .reader(_, let line), .record(_, let line), .help(let line):
                return line
            }
        }
    }

    package let steps: [Step]

    /// The longest script file read: 16 MiB.
    package static let maximumFileSize = 16 << 20

    /// The whole script, parsed up to its `exit` (for tests and callers that want every step).
    package init(parsing text: String, fileName: String) throws(CLIError) {
        var lines = Lines(Array(text.utf8), fileName: fileName)
        var steps: [Step] = []
        while let step = try lines.next() { steps.append(step) }
        self.steps = steps
    }

    /// A script file's lines, read whole (at most ``maximumFileSize``) and parsed as they are taken.
    /// - Throws: `CLIError.failure` when the file cannot be read or is not UTF-8 text.
    package static func lines(ofFile path: String) throws(CLIError) -> Lines {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path, limit: Self.maximumFileSize)
        } catch {
            throw .failure("cannot read the script: \(error.reason.replacingTranscriptWording())")
        }
        // Checked at once (a fast scan, no String): a script is text.
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw .failure("\(path) is not UTF-8 text; a script holds one APDU in hex per line")
        }
        return Lines(bytes, fileName: path)
    }

    /// The lines of a script in memory, split on LF, CR LF or a lone CR, parsed one at a time.
    package struct Lines {
        private let bytes: [UInt8]
        private var offset = 0
        private var lineNumber = 0
        private var ended = false
        package let fileName: String

        package init(_ bytes: [UInt8], fileName: String) {
            self.bytes = bytes
            self.fileName = fileName
        }

        /// The next step, nil after the last line or at `exit`.
        /// - Throws: `CLIError.failure` naming the file and line of a malformed line.
        package mutating func next() throws(CLIError) -> Step? {
            while !ended && offset < bytes.count {
                let start = offset
                var end = bytes.withUnsafeBufferPointer { all in
                    var end = start
                    while end < all.count && all[end] != 0x0A && all[end] != 0x0D { end += 1 }
                    return end
                }
                let line = bytes[offset..<end]
                if end < bytes.count && bytes[end] == 0x0D && end + 1 < bytes.count && bytes[end + 1] == 0x0A { end += 1 }
                offset = end + 1
                lineNumber += 1
                switch try ScriptLine.parse(line, fileName: fileName, line: lineNumber) {
                case .none: continue
                case .exit: ended = true
                case .step(let step): return step
                }
            }
            return nil
        }
    }
}

/// One line of the script language, parsed from its bytes.
package enum ScriptLine {
    package enum Parsed: Equatable {
        /// Blank or a comment.
        case none
        case exit
        case step(APDUScript.Step)
    }

    /// Parses one line (without its line end).
    /// - Throws: `CLIError.failure` "FILE:LINE: …" saying what is wrong and what a line may hold.
    package static func parse(_ raw: ArraySlice<UInt8>, fileName: String, line lineNumber: Int) throws(CLIError) -> Parsed {
        var start = raw.startIndex
        var end = raw.endIndex
        // A byte order mark (EF BB BF).
        if end - start >= 3 && raw[start] == 0xEF && raw[start + 1] == 0xBB && raw[start + 2] == 0xBF { start += 3 }
        // Comments: `#`, or `//`, to the end of the line.
        var index = start
        while index < end {
            let byte = raw[index]
            if byte == 0x23 || (byte == 0x2F && index + 1 < end && raw[index + 1] == 0x2F) {
                end = index
                break
            }
            index += 1
        }
        while start < end && isBlank(raw[start]) { start += 1 }
        while end > start && isBlank(raw[end - 1]) { end -= 1 }
        if start == end { return .none }
        let content = raw[start..<end]
        // The first word, for a keyword.
        var wordEnd = start
        while wordEnd < end && !isBlank(raw[wordEnd]) { wordEnd += 1 }
        if let keyword = Keyword(raw[start..<wordEnd]) {
            var argumentStart = wordEnd
            while argumentStart < end && isBlank(raw[argumentStart]) { argumentStart += 1 }
            let argument = argumentStart < end ? String(decoding: raw[argumentStart..<end], as: UTF8.self) : nil
            func alone(_ step: Parsed) throws(CLIError) -> Parsed {
                guard argument == nil else {
                    throw .failure("\(fileName):\(lineNumber): '\(keyword.rawValue)' takes nothing after it, got '\(argument!)'")
                }
                return step
            }
            switch keyword {
            case .reset: return try alone(.step(.reset(line: lineNumber)))
            case .exit, .quit: return try alone(.exit)
            case .help: return try alone(.step(.help(line: lineNumber)))
            case .reader: return .step(.reader(argument, line: lineNumber))
            case .record:
                guard let argument else {
                    throw .failure("\(fileName):\(lineNumber): 'record' needs a transcript file to write, or 'off' to stop recording")
                }
                return .step(.record(argument.lowercased() == "off" ? nil : argument, line: lineNumber))
            case .control:
                guard argumentStart < end else {
                    throw .failure("\(fileName):\(lineNumber): 'control' needs the escape command in hex, e.g. control FF 00 48 00 00")
                }
                let bytes = try hexBytes(raw[argumentStart..<end], fileName: fileName, line: lineNumber)
                return .step(.control(bytes, line: lineNumber))
            }
        }
        let bytes = try hexBytes(content, fileName: fileName, line: lineNumber)
        guard bytes.count >= 4 else {
            throw .failure("\(fileName):\(lineNumber): '\(String(decoding: content, as: UTF8.self))' has \(bytes.count) bytes; an APDU has at least 4 (CLA INS P1 P2)")
        }
        if bytes[0] != 0xFF {
            do {
                try CommandAPDU.validate(bytes)
            } catch {
                throw .failure("\(fileName):\(lineNumber): malformed APDU \(SecretDisplay.masked.text(bytes)): \(error.reason)")
            }
        }
        return .step(.apdu(bytes, line: lineNumber))
    }

    private enum Keyword: String {
        case reset, exit, quit, help, reader, record, control

        init?(_ word: ArraySlice<UInt8>) {
            // Keywords are 4 to 7 ASCII letters; anything else (every hex APDU) is not one.
            guard (4...7).contains(word.count), let first = word.first, (first | 0x20) >= 0x63 else { return nil }
            var lowered = ""
            for byte in word {
                guard (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) else { return nil }
                lowered.unicodeScalars.append(Unicode.Scalar(byte | 0x20))
            }
            self.init(rawValue: lowered)
        }
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// For each byte value: its value as a hex digit (0…15), `separator` for the separators
    /// `hexBytes` skips between groups, 0xFF for anything else.
    private static let hexClasses: [UInt8] = (0...255).map { value in
        switch UInt8(value) {
        case 0x30...0x39: return UInt8(value) - 0x30
        case 0x41...0x46: return UInt8(value) - 0x41 + 10
        case 0x61...0x66: return UInt8(value) - 0x61 + 10
        case 0x20, 0x09, 0x3A, 0x2C, 0x2D, 0x5F, 0x3B: return separator
        default: return 0xFF
        }
    }
    private static let separator: UInt8 = 0x10

    /// Hex digits separated by blanks, `:`, `,`, `-`, `_` or `;`, each group of even length;
    /// anything else (a `0x` prefix, an error) goes to ``HexBytes/parse(_:)``, whose rules these are.
    private static func hexBytes(_ text: ArraySlice<UInt8>, fileName: String, line: Int) throws(CLIError) -> [UInt8] {
        // One pass over the line's bytes in place, by table, writing at most count / 2 bytes.
        var simple = true
        let separator = Self.separator
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 2)
        hexClasses.withUnsafeBufferPointer { classes in
            text.withUnsafeBufferPointer { input in
                var high = -1  // the pending high nibble, -1 when none
                for byte in input {
                    let value = classes[Int(byte)]
                    if value < 0x10 {
                        if high < 0 {
                            high = Int(value)
                        } else {
                            bytes.append(UInt8(high << 4) | value)
                            high = -1
                        }
                    } else if value != separator || high >= 0 {
                        simple = false
                        return
                    }
                }
                if high >= 0 { simple = false }
            }
        }
        if simple { return bytes }
        let string = String(decoding: text, as: UTF8.self)
        do {
            return try HexBytes.parse(string)
        } catch {
            // A mistyped VERIFY is not echoed with its PIN (SecretDisplay.argumentText).
            throw .failure("\(fileName):\(line): '\(SecretDisplay.masked.argumentText(string))' is not an APDU in hex (\(error.reason)); write one APDU per line, or reset, exit, or a # comment")
        }
    }
}

extension Substring {
    package func trimmingCharacters(in set: String) -> String {
        var slice = self[...]
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}

extension String {
    /// The file reader's messages speak of transcripts; for other files, say what they hold
    /// (`file`: "a script file", `content`: "a script").
    package func replacingTranscriptWording(file: String = "a script file", content: String = "a script") -> String {
        var text = self
        for (old, new) in [("give the path of a transcript file", "give the path of \(file)"),
                           ("not a transcript this tool reads", "not \(content) this tool reads")] {
            if let range = text.firstRange(of: old) { text.replaceSubrange(range, with: new) }
        }
        return text
    }
}
