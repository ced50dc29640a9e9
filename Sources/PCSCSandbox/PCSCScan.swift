import Foundation

/// A reader as `pcsc_scan -c -n` reports it: its name, card state and the card's ATR.
public struct ReaderStatus: Sendable, Hashable {
    /// The reader name as PC/SC clients see it, e.g. `Virtual PCD 00 00`.
    public var name: String
    /// The state words after `Card state:`, e.g. `Card inserted` or `Card removed`.
    public var state: String
    /// The card's ATR (ISO/IEC 7816-3 §8), when a card is present.
    public var atr: [UInt8]?

    /// A reader as `pcsc_scan` printed it: its name, its state word, and the ATR when a card is in.
    public init(name: String, state: String, atr: [UInt8]? = nil) {
        self.name = name
        self.state = state
        self.atr = atr
    }

    /// Whether pcscd reports a card in the reader (`SCARD_STATE_PRESENT`, shown as `Card inserted`).
    public var isCardPresent: Bool { state.contains("Card inserted") }
}

/// Reads pcscd's view through `pcsc_scan` (Debian package `pcsc-tools`), without linking PC/SC:
/// the harness must not make this process's first PC/SC call.
public enum PCSCScan {
    /// Reader names from `pcsc_scan -r` output: lines `N: NAME`; `No reader found.` gives `[]`.
    public static func parseReaderList(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).compactMap { line -> String? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let index = line[..<colon]
            guard !index.isEmpty, index.allSatisfy(\.isNumber) else { return nil }
            let name = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            return name.isEmpty ? nil : name
        }
    }

    /// Reader states from `pcsc_scan -c -n` output:
    ///
    ///      Reader 0: Virtual PCD 00 00
    ///       Event number: 1
    ///       Card state: Card inserted,
    ///       ATR: 3B 95 13 81 01 80 73 FF 01 00 0B
    ///
    /// Unknown lines are skipped; an ATR line that is not hex bytes leaves ``ReaderStatus/atr`` `nil`.
    public static func parseCardReport(_ text: String) -> [ReaderStatus] {
        var readers: [ReaderStatus] = []
        for rawLine in text.split(whereSeparator: { $0.isNewline || $0 == "\r" }) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("Reader "), let colon = line.firstIndex(of: ":") {
                let name = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                readers.append(ReaderStatus(name: name, state: ""))
            } else if line.hasPrefix("Card state:"), !readers.isEmpty {
                var state = line.dropFirst("Card state:".count).trimmingCharacters(in: .whitespaces)
                while state.hasSuffix(",") { state = String(state.dropLast()).trimmingCharacters(in: .whitespaces) }
                readers[readers.count - 1].state = state
            } else if line.hasPrefix("ATR:"), !readers.isEmpty {
                readers[readers.count - 1].atr = parseHex(line.dropFirst("ATR:".count))
            }
        }
        return readers
    }

    /// Bytes from space-separated hex pairs (`3B 95 13`), or `nil` when any token is not one byte.
    static func parseHex(_ text: Substring) -> [UInt8]? {
        let tokens = text.split(separator: " ")
        guard !tokens.isEmpty else { return nil }
        var bytes: [UInt8] = []
        for token in tokens {
            guard token.count == 2, let byte = UInt8(token, radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    /// The readers pcscd lists (`pcsc_scan -r`), talking to the pcscd named by `environment`'s
    /// `PCSCLITE_CSOCK_NAME`.
    /// - Throws: ``HarnessError/Code/launchFailed`` when pcscd does not answer (with pcsc_scan's
    ///   message), ``HarnessError/Code/timeout`` after `timeout`, or ``HarnessError/Code/missingDependency``.
    public static func readers(environment: [String: String], timeout: Duration = .seconds(3)) throws -> [String] {
        let output = try run(["-r"], environment: environment, timeout: timeout)
        return parseReaderList(output)
    }

    /// Every reader's card state (`pcsc_scan -c -n`).
    /// - Throws: as ``readers(environment:timeout:)``.
    public static func status(environment: [String: String], timeout: Duration = .seconds(3)) throws -> [ReaderStatus] {
        parseCardReport(try run(["-c", "-n"], environment: environment, timeout: timeout))
    }

    static func run(_ arguments: [String], environment: [String: String], timeout: Duration) throws -> String {
        let tool = try HarnessPaths.requireTool("pcsc_scan", package: "pcsc-tools")
        let result = try Tool.run(tool, arguments, environment: environment, timeout: timeout)
        // pcsc_scan exits 255 with "SCardEstablishContext: Service not available." without a pcscd.
        guard result.status == 0, !result.output.contains("Service not available") else {
            throw HarnessError(code: .launchFailed,
                               reason: "pcsc_scan \(arguments.joined(separator: " ")) failed with status \(result.status): "
                                   + result.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return result.output
    }
}
