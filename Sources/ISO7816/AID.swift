/// An application identifier (ISO/IEC 7816-4 §8.2.1.2 / ISO/IEC 7816-5): 5 to 16 bytes,
/// `| RID (5) | PIX (0…11) |`.
public struct AID: Sendable, Hashable, CustomStringConvertible {
    /// The AID bytes.
    public let bytes: [UInt8]

    /// Makes an AID.
    /// - Throws: `ISO7816Error` `valueOutOfRange` unless 5…16 bytes.
    public init(_ bytes: [UInt8]) throws(ISO7816Error) {
        guard (5...16).contains(bytes.count) else {
            throw ISO7816Error(
                .valueOutOfRange,
                "an AID is 5 to 16 bytes (RID of 5, PIX of up to 11); got \(bytes.count)")
        }
        self.bytes = bytes
    }

    /// Makes an AID from hex text, e.g. `"D2 76 00 00 85 01 01"`.
    /// - Throws: the errors of `HexBytes.parse(_:)` and of `init(_:)`.
    public init(hex: String) throws(ISO7816Error) {
        try self.init(HexBytes.parse(hex))
    }

    /// The registered application provider identifier, the first 5 bytes.
    public var rid: ArraySlice<UInt8> { bytes[0..<5] }
    /// The proprietary application identifier extension, after the RID (0…11 bytes).
    public var pix: ArraySlice<UInt8> { bytes[5...] }

    public var description: String { bytes.hexString }
}

extension CommandAPDU {
    /// SELECT by DF name, first or only occurrence, returning the FCI (ISO/IEC 7816-4 §11.2.2):
    /// `00 A4 04 00 Lc AID 00`, Ne = 256.
    ///
    /// P2 00 with Le is the form cards accept most widely (docs/cases.md P14: a card rejects P2 0C with 6D 00).
    public static func select(aid: AID) -> CommandAPDU {
        CommandAPDU(uncheckedCLA: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: aid.bytes, ne: 256, isExtended: false)
    }
}

/// How the AID in a SELECT response relates to the AID asked for.
public enum SelectedAIDMatch: Sendable, Hashable {
    /// The response names no AID (no data, or no 6F/84 or 61/4F object).
    case notReported
    /// The response names exactly the requested AID.
    case exact
    /// The response names a longer AID that starts with the requested one (selection by partial AID).
    case extendsRequest(AID)
    /// The response names only a PIX which, after the requested RID, equals or extends the
    /// requested AID (PIV: 4F 06 00 00 10 00 01 00 for A0 00 00 03 08 00 00 10 00).
    case pixOnly([UInt8])
}

/// The AID a SELECT response names does not belong to the AID asked for (docs/cases.md P14).
public struct SelectedAIDMismatchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The AID sent in the SELECT command.
    public let requested: AID
    /// The AID (or PIX) the response named.
    public let returned: [UInt8]

    /// Records a mismatch: `requested` as sent in SELECT, `returned` as the response's FCI named it
    /// (tag 84, the DF name).
    public init(requested: AID, returned: [UInt8]) {
        self.requested = requested
        self.returned = returned
    }

    public var description: String {
        "SELECT asked for \(requested) but the card answered with AID \(returned.hexString), which is neither that AID, an extension of it, nor its PIX"
    }
}

/// Checks the AID a SELECT response reports against the requested AID.
///
/// Looks at the response data as BER-TLV: an FCI template 6F with a DF name 84, or an application
/// property template 61 with an application identifier 4F (ISO/IEC 7816-4 §7.4.1, §8.2.1.3). Accepts
/// the full AID, an AID that extends the requested one, or a PIX that, put after the requested RID,
/// equals or extends the requested AID. The status word is not looked at: check it first.
/// - Parameters:
///   - requested: the AID sent.
///   - responseData: the response data field (no SW).
/// - Returns: how the reported AID relates to the request; `.notReported` when there is none.
/// - Throws: `SelectedAIDMismatchError` when an AID is reported and does not match;
///   `ISO7816Error` when the data does not parse as BER-TLV.
public func checkSelectedAID(requested: AID, responseData: [UInt8]) throws -> SelectedAIDMatch {
    if responseData.isEmpty { return .notReported }
    let objects = try BERTLV.parseAll(responseData)
    var reported: [UInt8]? = nil
    for object in objects {
        if object.tag == BERTag(0x6F), let name = object.child(BERTag(0x84)) {
            reported = name.value
            break
        }
        if object.tag == BERTag(0x61), let id = object.child(BERTag(0x4F)) {
            reported = id.value
            break
        }
    }
    guard let returned = reported else { return .notReported }
    if returned == requested.bytes { return .exact }
    if returned.count > requested.bytes.count, returned.starts(with: requested.bytes) {
        if let aid = try? AID(returned) { return .extendsRequest(aid) }
    }
    if returned.count <= 11 {
        let completed = Array(requested.rid) + returned
        if completed.starts(with: requested.bytes) { return .pixOnly(returned) }
    }
    throw SelectedAIDMismatchError(requested: requested, returned: returned)
}
