import ISO7816
import Transcript

/// An APDU script: one command per line, as `secbridge run` and pcsc-tools' `scriptor` read them.
///
/// Grammar (one line each):
/// - blank, or a comment: `#` (scriptor) or `//` to the end of the line;
/// - `reset`: reset the card (SCardReconnect with SCARD_RESET_CARD), as scriptor does;
/// - `exit` or `quit`: stop reading;
/// - an APDU in hex, bytes separated by spaces or not (`00 A4 04 00 00` or `00A4040000`), with an
///   optional trailing comment.
/// Anything else is an error naming the file, the line and the offending text.
package struct APDUScript {
    package enum Step: Equatable {
        case apdu([UInt8], line: Int)
        case reset(line: Int)
    }

    package let steps: [Step]

    /// The longest script file read: 16 MiB.
    package static let maximumFileSize = 16 << 20

    package init(parsing text: String, fileName: String) throws(CLIError) {
        var steps: [Step] = []
        var lineNumber = 0
        // CR LF (Windows, scriptor files written there) and lone CR end lines too: "\r\n" is one
        // Character in Swift, and both are newlines.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            var line = Substring(rawLine)
            if line.first == "\u{FEFF}" { line = line.dropFirst() }  // a byte order mark
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            if let slashes = line.indices.first(where: { line[$0...].hasPrefix("//") }) { line = line[..<slashes] }
            let content = line.trimmingCharacters(in: " \t")
            if content.isEmpty { continue }
            switch content.lowercased() {
            case "reset":
                steps.append(.reset(line: lineNumber))
                continue
            case "exit", "quit":
                self.steps = steps
                return
            default:
                break
            }
            let bytes: [UInt8]
            do {
                bytes = try HexBytes.parse(content)
            } catch {
                throw .failure("\(fileName):\(lineNumber): '\(content)' is not an APDU in hex (\(error.reason)); write one APDU per line, or reset, exit, or a # comment")
            }
            guard bytes.count >= 4 else {
                throw .failure("\(fileName):\(lineNumber): '\(content)' has \(bytes.count) bytes; an APDU has at least 4 (CLA INS P1 P2)")
            }
            if bytes[0] != 0xFF {
                do {
                    _ = try CommandAPDU(parsing: bytes)
                } catch {
                    throw .failure("\(fileName):\(lineNumber): malformed APDU \(bytes.hexString): \(error.reason)")
                }
            }
            steps.append(.apdu(bytes, line: lineNumber))
        }
        self.steps = steps
    }

    package init(contentsOfFile path: String) throws(CLIError) {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path, limit: Self.maximumFileSize)
        } catch {
            throw .failure("cannot read the script: \(error.reason.replacingTranscriptWording())")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .failure("\(path) is not UTF-8 text; a script holds one APDU in hex per line")
        }
        try self.init(parsing: text, fileName: path)
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
    /// The file reader's messages speak of transcripts; for scripts, say script.
    package func replacingTranscriptWording() -> String {
        var text = self
        for (old, new) in [("give the path of a transcript file", "give the path of a script file"),
                           ("not a transcript this tool reads", "not a script this tool reads")] {
            if let range = text.firstRange(of: old) { text.replaceSubrange(range, with: new) }
        }
        return text
    }
}
