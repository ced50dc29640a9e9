import ISO7816

/// One frame of the PN532 host interface as it travels on the high-speed UART (HSU), with its
/// preamble, start code, length, checksums and postamble (PN532 UM0701-02 §6.2; docs/pn532-uart.md §1).
///
/// Byte layouts (every frame starts with the preamble 00 and the start code 00 FF, and ends with
/// the postamble 00):
///
/// - Normal information frame, 1 … 255 bytes of TFI and data:
///   `| 00 | 00 FF | LEN | LCS | TFI | PD0 … PDn | DCS | 00 |`, LEN = 1 + n + 1 (TFI and the PD bytes),
///   LEN + LCS ≡ 0 (mod 256), TFI + PD0 + … + PDn + DCS ≡ 0 (mod 256).
/// - Extended information frame, up to 265 bytes of TFI and data:
///   `| 00 | 00 FF | FF FF | LENm | LENl | LCS | TFI | PD0 … PDn | DCS | 00 |`,
///   LENm + LENl + LCS ≡ 0 (mod 256).
/// - ACK `00 00 FF 00 FF 00`, NACK `00 00 FF FF 00 00`.
/// - Error frame (the chip detected an application-level error, e.g. a syntax error in the
///   command): `00 00 FF 01 FF 7F 81 00`, a normal frame of LEN 1 whose TFI is 7F.
public enum PN532UARTFrame: Sendable, Hashable, CustomStringConvertible {
    /// ACK `00 00 FF 00 FF 00`: the chip took a command; from the host, an abort of the pending one.
    case ack
    /// NACK `00 00 FF FF 00 00`: asks the other side to send its last frame again.
    case nack
    /// The error frame `00 00 FF 01 FF 7F 81 00`: an application-level error (UM0701-02 §6.2).
    case applicationError
    /// An information frame: TFI D4 (host to chip) or D5 (chip to host), then the PD bytes (the
    /// command or response code first).
    case information(tfi: UInt8, data: [UInt8])

    /// TFI of a host-to-chip frame.
    public static let hostTFI: UInt8 = 0xD4
    /// TFI of a chip-to-host frame.
    public static let chipTFI: UInt8 = 0xD5
    /// TFI of the error frame.
    public static let errorTFI: UInt8 = 0x7F
    /// The most TFI + PD bytes of a normal frame (LEN is one byte, LEN FF and 00 excluded by the
    /// NACK and ACK codes).
    public static let maximumNormalLength = 255
    /// The most TFI + PD bytes of an extended frame: 265 (264 PD bytes; libnfc's
    /// `PN53x_EXTENDED_FRAME__DATA_MAX_LEN`; docs/pn532-uart.md §1).
    public static let maximumExtendedLength = 265
    /// ACK's bytes.
    public static let ackBytes: [UInt8] = [0x00, 0x00, 0xFF, 0x00, 0xFF, 0x00]
    /// NACK's bytes.
    public static let nackBytes: [UInt8] = [0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00]
    /// The error frame's bytes.
    public static let applicationErrorBytes: [UInt8] = [0x00, 0x00, 0xFF, 0x01, 0xFF, 0x7F, 0x81, 0x00]

    /// A host command `D4 cmd params`.
    public static func command(_ code: PN532CommandCode, _ parameters: [UInt8] = []) -> PN532UARTFrame {
        .information(tfi: hostTFI, data: [code.rawValue] + parameters)
    }

    /// The bytes on the wire. An information frame of at most 255 TFI + PD bytes is a normal frame,
    /// a longer one an extended frame (as libnfc and nfcpy choose).
    /// - Throws: `PN532UARTFrameError.tooLong` above 265 TFI + PD bytes.
    public func serialized() throws(PN532UARTFrameError) -> [UInt8] {
        switch self {
        case .ack: return Self.ackBytes
        case .nack: return Self.nackBytes
        case .applicationError: return Self.applicationErrorBytes
        case .information(let tfi, let data):
            let length = data.count + 1
            guard length <= Self.maximumExtendedLength else { throw .tooLong(length: length) }
            var bytes: [UInt8] = [0x00, 0x00, 0xFF]
            if length <= Self.maximumNormalLength {
                bytes += [UInt8(length), Self.checksum([UInt8(length)])]
            } else {
                let high = UInt8(length >> 8), low = UInt8(length & 0xFF)
                bytes += [0xFF, 0xFF, high, low, Self.checksum([high, low])]
            }
            bytes.append(tfi)
            bytes += data
            bytes += [Self.checksum([tfi] + data), 0x00]
            return bytes
        }
    }

    /// The byte that makes `bytes` sum to 0 modulo 256 (LCS, DCS).
    public static func checksum(_ bytes: [UInt8]) -> UInt8 {
        0 &- bytes.reduce(0, &+)
    }

    public var description: String {
        switch self {
        case .ack: "ACK"
        case .nack: "NACK"
        case .applicationError: "error frame (application-level error)"
        case .information(let tfi, let data): "\(HexBytes.format(tfi)) \(HexBytes.format(data))"
        }
    }
}

/// What is wrong with a frame on the PN532 serial line (UM0701-02 §6.2; docs/pn532-uart.md §1).
///
/// The parser that throws it has already skipped the frame's start code, so the next call goes on
/// with the bytes after it: a host answers a corrupted response with NACK and reads on.
public enum PN532UARTFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// LEN + LCS (normal) or LENm + LENl + LCS (extended) is not 0 modulo 256.
    case badLengthChecksum(length: [UInt8], lcs: UInt8)
    /// TFI + PD + DCS is not 0 modulo 256.
    case badDataChecksum(expected: UInt8, found: UInt8)
    /// The TFI is not the one this side receives (D5 on the host, D4 on the chip).
    case wrongTFI(expected: UInt8, found: UInt8)
    /// The byte after DCS is not the postamble 00.
    case badPostamble(found: UInt8)
    /// LEN is 0: a frame must carry at least its TFI.
    case emptyFrame
    /// An information frame longer than the 265 bytes of an extended frame.
    case tooLong(length: Int)

    public var description: String {
        switch self {
        case .badLengthChecksum(let length, let lcs):
            "PN532 frame length checksum wrong: LEN \(HexBytes.format(length)) with LCS \(HexBytes.format(lcs)) does not sum to 00 (line noise or a wrong baud rate: the link asks for the frame again with NACK)"
        case .badDataChecksum(let expected, let found):
            "PN532 frame data checksum wrong: DCS should be \(HexBytes.format(expected)) but is \(HexBytes.format(found)) (line noise: the link asks for the frame again with NACK)"
        case .wrongTFI(let expected, let found):
            "PN532 frame identifier (TFI) should be \(HexBytes.format(expected)) but is \(HexBytes.format(found)): the frame goes the other way, or the line echoes what is sent"
        case .badPostamble(let found):
            "PN532 frame postamble should be 00 but is \(HexBytes.format(found))"
        case .emptyFrame:
            "PN532 frame with LEN 00 carries no TFI"
        case .tooLong(let length):
            "a PN532 information frame carries at most \(PN532UARTFrame.maximumExtendedLength) TFI and data bytes (extended frame), not \(length)"
        }
    }
}

/// Finds PN532 frames in a byte stream: noise, wake-up bytes (55) and extra preamble bytes before
/// a start code `00 FF` are skipped (UM0701-02 §6.2; docs/pn532-uart.md §1, §3).
///
/// Feed bytes with ``append(_:)`` and take frames with ``next()`` until it returns nil (more
/// bytes needed). The buffer never holds more than one frame (at most 274 bytes) plus the bytes
/// appended since: what precedes a start code is dropped as it is scanned.
///
///     var parser = PN532UARTFrameParser(receiving: PN532UARTFrame.chipTFI)
///     parser.append(bytesFromTheLine)
///     while let frame = try parser.next() { … }
public struct PN532UARTFrameParser: Sendable {
    /// The TFI information frames must carry (D5 on the host side, D4 on the device side), nil for any.
    public let expectedTFI: UInt8?
    private var buffer: [UInt8] = []
    /// Bytes skipped before start codes so far (noise, wake-up and preamble bytes).
    public private(set) var skippedBytes = 0

    /// - Parameter expectedTFI: D5 for a host reading the chip's frames, D4 for a chip reading the
    ///   host's; nil accepts any TFI. The error frame (TFI 7F, LEN 1) is always accepted.
    public init(receiving expectedTFI: UInt8? = nil) {
        self.expectedTFI = expectedTFI
    }

    /// Bytes waiting for the rest of their frame.
    public var bufferedCount: Int { buffer.count }

    /// Adds bytes read from the line.
    public mutating func append(_ bytes: some Sequence<UInt8>) { buffer.append(contentsOf: bytes) }

    /// Drops everything buffered (the host does so before it sends a command, as libnfc does).
    public mutating func reset() { buffer.removeAll() }

    /// The next complete frame, or nil when more bytes are needed.
    /// - Throws: ``PN532UARTFrameError`` for a frame whose length checksum, data checksum, TFI or
    ///   postamble is wrong; the bytes up to its start code are consumed, so calling again goes on
    ///   after it.
    public mutating func next() throws(PN532UARTFrameError) -> PN532UARTFrame? {
        while true {
            guard let start = startCodeIndex() else {
                // Keep a trailing 00: it may be the first byte of a start code.
                let keep = buffer.last == 0x00 ? 1 : 0
                skippedBytes += buffer.count - keep
                buffer.removeFirst(buffer.count - keep)
                return nil
            }
            skippedBytes += start
            buffer.removeFirst(start)
            // buffer: 00 FF …
            guard buffer.count >= 4 else { return nil }
            let (first, second) = (buffer[2], buffer[3])
            if first == 0x00 && second == 0xFF {
                guard buffer.count >= 5 else { return nil }
                let post = buffer[4]
                buffer.removeFirst(5)
                guard post == 0x00 else { throw .badPostamble(found: post) }
                return .ack
            }
            if first == 0xFF && second == 0x00 {
                guard buffer.count >= 5 else { return nil }
                let post = buffer[4]
                buffer.removeFirst(5)
                guard post == 0x00 else { throw .badPostamble(found: post) }
                return .nack
            }
            let length: Int
            let header: Int
            if first == 0xFF && second == 0xFF {
                guard buffer.count >= 7 else { return nil }
                let (high, low, lcs) = (buffer[4], buffer[5], buffer[6])
                guard high &+ low &+ lcs == 0 else {
                    buffer.removeFirst(2)
                    throw .badLengthChecksum(length: [high, low], lcs: lcs)
                }
                length = Int(high) << 8 | Int(low)
                header = 7
            } else {
                guard first &+ second == 0 else {
                    buffer.removeFirst(2)
                    throw .badLengthChecksum(length: [first], lcs: second)
                }
                length = Int(first)
                header = 4
            }
            guard length > 0 else {
                buffer.removeFirst(2)
                throw .emptyFrame
            }
            guard length <= PN532UARTFrame.maximumExtendedLength else {
                buffer.removeFirst(2)
                throw .tooLong(length: length)
            }
            let total = header + length + 2
            guard buffer.count >= total else { return nil }
            let body = Array(buffer[header..<header + length])
            let dcs = buffer[header + length]
            let post = buffer[header + length + 1]
            let expectedDCS = PN532UARTFrame.checksum(body)
            guard dcs == expectedDCS else {
                buffer.removeFirst(2)
                throw .badDataChecksum(expected: expectedDCS, found: dcs)
            }
            buffer.removeFirst(total)
            guard post == 0x00 else { throw .badPostamble(found: post) }
            let tfi = body[0]
            if tfi == PN532UARTFrame.errorTFI && length == 1 { return .applicationError }
            if let expectedTFI, tfi != expectedTFI { throw .wrongTFI(expected: expectedTFI, found: tfi) }
            return .information(tfi: tfi, data: Array(body.dropFirst()))
        }
    }

    private func startCodeIndex() -> Int? {
        guard buffer.count >= 2 else { return nil }
        for index in 0..<buffer.count - 1 where buffer[index] == 0x00 && buffer[index + 1] == 0xFF {
            return index
        }
        return nil
    }
}
