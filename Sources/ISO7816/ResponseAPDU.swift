/// A response APDU (ISO/IEC 7816-4 §5.1): `| data (Nr bytes) | SW1 | SW2 |`.
public struct ResponseAPDU: Sendable, Hashable {
    /// The response data field (Nr bytes, possibly none).
    public let data: [UInt8]
    /// The trailer SW1-SW2.
    public let statusWord: StatusWord

    /// A response of `data` (Nr bytes, possibly none) and the trailer `statusWord`; serialized as
    /// `| data | SW1 | SW2 |` (ISO/IEC 7816-4 §5.1).
    public init(data: [UInt8] = [], statusWord: StatusWord) {
        self.data = data
        self.statusWord = statusWord
    }

    /// Parses a response: every byte but the last two is data, the last two are SW1-SW2.
    ///
    /// Use this for card answers only: some reader pseudo-APDU answers have no status word at all
    /// (the ACR122U firmware string, ACR122U API v2.04 §4).
    /// - Parameter bytes: the whole answer, 2…65 538 bytes.
    /// - Throws: `ISO7816Error` `responseTooShort` for fewer than 2 bytes, `oversize` for more
    ///   than 65 538.
    public init(parsing bytes: [UInt8]) throws(ISO7816Error) {
        let count = bytes.count
        guard count >= 2 else {
            throw ISO7816Error(
                .responseTooShort, offset: count,
                "a response APDU ends with the 2 status bytes SW1 SW2; got \(count) bytes")
        }
        guard count <= 65_538 else {
            throw ISO7816Error(
                .oversize, offset: 65_538, "a response APDU is at most 65536 data bytes plus SW1 SW2; got \(count) bytes")
        }
        self.data = count == 2 ? [] : Array(bytes[0..<(count - 2)])
        self.statusWord = StatusWord(sw1: bytes[count - 2], sw2: bytes[count - 1])
    }

    /// The response as bytes: data then SW1 SW2.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 2)
        out.append(contentsOf: data)
        out.append(statusWord.sw1)
        out.append(statusWord.sw2)
        return out
    }

    /// Returns this response when it reports success, throws otherwise.
    ///
    /// Success is 90 00, and 61 XX: after the transport resolved 61 XX up to Ne, a remaining 61 XX
    /// means "done, and the card has more" (ISO/IEC 7816-4 §5.6 puts both in normal processing).
    /// Warnings (62 XX, 63 XX) throw: ask for them with `checked(accepting:)`.
    /// - Throws: `CheckedResponseError` carrying the status word and the data.
    @discardableResult
    public func checked() throws(CheckedResponseError) -> ResponseAPDU {
        try checked(accepting: [])
    }

    /// Returns this response when its status word is 90 00, 61 XX or one of `accepted`; throws
    /// otherwise.
    /// - Throws: `CheckedResponseError` carrying the status word and the data.
    @discardableResult
    public func checked(accepting accepted: Set<StatusWord>) throws(CheckedResponseError) -> ResponseAPDU {
        if statusWord.isSuccess || statusWord.sw1 == 0x61 || accepted.contains(statusWord) {
            return self
        }
        throw CheckedResponseError(response: self)
    }
}

extension ResponseAPDU: CustomStringConvertible {
    public var description: String { serialized().hexString }
}

/// A response whose status word is not success, thrown by `ResponseAPDU.checked()`.
public struct CheckedResponseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The whole response, data included (some errors carry data).
    public let response: ResponseAPDU

    /// Wraps a response whose status word is not success (ISO/IEC 7816-4 §5.6).
    public init(response: ResponseAPDU) { self.response = response }

    /// The status word that was not success.
    public var statusWord: StatusWord { response.statusWord }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.statusWord == rhs.statusWord }

    public var description: String {
        "the card answered \(statusWord.bytes.hexString): \(statusWord.meaning)"
    }
}
