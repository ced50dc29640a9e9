import ISO7816

/// Reader names that suggest an ACR122U, and the check that confirms one (docs/acr122-pn532.md §1).
///
/// libnfc matches these prefixes; we match them as case-insensitive substrings. A name is only a
/// hint: clones present other names ("RFCARD / RF1258V603 PICC Interface") with the same USB IDs,
/// so `ACR122Link.open(channel:readerName:)` decides by the firmware string, whatever the name.
public enum ACR122Detection {
    /// "ACS ACR122", "ACS ACR 38U-CCID" (Touchatag), "ACS ACR38U-CCID", "ACS AET65", "    CCID USB".
    public static let readerNamePatterns = [
        "ACS ACR122", "ACS ACR 38U-CCID", "ACS ACR38U-CCID", "ACS AET65", "    CCID USB",
    ]

    /// True when `readerName` contains one of `readerNamePatterns`, ignoring case.
    public static func nameSuggestsACR122(_ readerName: String) -> Bool {
        let name = readerName.lowercased()
        return readerNamePatterns.contains { name.contains($0.lowercased()) }
    }
}

/// Carries ACR122U pseudo-APDUs over a `CardChannel` (docs/acr122-pn532.md §1, §2; ACR122U API v2.04).
///
/// - With a card present (protocol T=0, T=1 or RAW) pseudo-APDUs go through `transmit`
///   (SCardTransmit). A T=0 unit first answers `61 xx`; the link then fetches the answer with
///   `FF C0 00 00 xx`, at most `maximumGetResponseRounds` times.
/// - On a direct connection (protocol `.undefined`, no card) they go through `control(code:)`
///   (SCardControl) with the escape code.
///
/// Reader commands never go through ISO/IEC 7816-4 card transport logic: no 6Cxx resend, no
/// GET RESPONSE with CLA 00, and the firmware-version reply, which has no status word, is returned
/// as is.
///
/// Escape refusal (docs/cases.md P09): when `control` fails on code 0x42000001 with an error conforming to
/// `PCSCCodedError` whose code is 0x80100016 (`SCARD_E_NOT_TRANSACTED`), before any escape
/// command has succeeded on this link, the link throws `ACR122Error.escapeCommandsNotEnabled`.
/// After a success the same code means libccid's 30 s escape timeout, and the channel's error is
/// passed through unchanged.
///
/// Not thread-safe: use a link from one thread, the one that owns the PC/SC context. Every call
/// blocks until the reader answers.
public final class ACR122Link {
    /// The most `FF C0` rounds after `61 xx` on a T=0 unit.
    public static let maximumGetResponseRounds = 4

    /// The channel to the reader: a direct connection (escape commands through SCardControl) or a
    /// connection with a card (pseudo-APDUs through SCardTransmit).
    public let channel: any CardChannel
    /// The SCardControl code used on a direct connection.
    public let escapeCode: UInt32
    /// The firmware string, once `firmwareVersion()` or `open(channel:readerName:)` has read it.
    public private(set) var firmware: ACR122FirmwareVersion?

    private var escapeHasSucceeded = false

    /// How pseudo-APDUs reach the reader.
    public enum Path: Sendable, Hashable {
        /// SCardControl with the escape code (a DIRECT connection).
        case escape
        /// SCardTransmit (a connection to a card, T=0 or T=1).
        case transmit

        /// What a channel's protocol suggests: `.escape` when no protocol is active.
        static func guessed(for channel: any CardChannel) -> Path {
            channel.transmissionProtocol == .undefined ? .escape : .transmit
        }
    }

    /// How this link sends pseudo-APDUs.
    public let path: Path

    /// - Parameters:
    ///   - channel: the card handle, connected SHARED/EXCLUSIVE with a card or DIRECT without one.
    ///   - escapeCode: the control code for a direct connection, e.g. from `discoverEscapeCodes(on:)`.
    ///   - path: `.escape` for a DIRECT connection. Give it: pcsc-lite reports a DIRECT handle's
    ///     protocol as the card's (T=1) when a card was negotiated before (winscard.c SCardConnect
    ///     sets the active protocol from the reader's card protocol; docs/acr122-pn532.md §1),
    ///     and guessing from the protocol (nil) would then send pseudo-APDUs to the card path,
    ///     which turning automatic polling off tears down (SCARD_W_REMOVED_CARD).
    public init(channel: any CardChannel, escapeCode: UInt32 = ACR122ControlCode.ccidEscape, path: Path? = nil) {
        self.channel = channel
        self.escapeCode = escapeCode
        self.path = path ?? .guessed(for: channel)
    }

    /// Whether pseudo-APDUs go through SCardControl (direct connection) rather than SCardTransmit.
    public var usesEscapeCommands: Bool { path == .escape }

    /// Sends one pseudo-APDU and returns the reader's raw reply (status word, if any, included).
    ///
    /// - Throws: `ACR122Error.escapeCommandsNotEnabled` (P09), `.tooManyGetResponses`, or the
    ///   channel's own error.
    public func exchange(_ command: ACR122Command) throws -> [UInt8] {
        let bytes = command.serialized()
        if usesEscapeCommands { return try control(bytes) }
        var reply = try channel.transmit(bytes)
        var rounds = 0
        while reply.count == 2, reply[0] == 0x61 {
            guard rounds < Self.maximumGetResponseRounds else {
                throw ACR122Error.tooManyGetResponses(limit: Self.maximumGetResponseRounds)
            }
            rounds += 1
            reply = try channel.transmit(ACR122Command.getResponse(length: reply[1]).serialized())
        }
        return reply
    }

    private func control(_ bytes: [UInt8]) throws -> [UInt8] {
        do {
            let reply = try channel.control(code: escapeCode, bytes)
            escapeHasSucceeded = true
            return reply
        } catch let error as any PCSCCodedError
            where error.pcscCode == PCSCError.notTransacted.code
            && escapeCode == ACR122ControlCode.ccidEscape && !escapeHasSucceeded
        {
            throw ACR122Error.escapeCommandsNotEnabled
        }
    }

    /// Sends a PN532 frame with Direct Transmit and returns the chip's bytes, `D5 cmd+1 …`, with the
    /// trailing 90 00 removed. The echo is not checked here; see `PN532.send(_:)`.
    ///
    /// `| FF | 00 | 00 | 00 | Lc | D4 cmd params |` → `| D5 cmd+1 data | 90 | 00 |`
    /// - Throws: `ACR122Error.operationFailed` (63 00: the chip did not answer), `.unsupported`,
    ///   `.unexpectedStatusWord`, `.malformedReply` (fewer than 2 bytes), and `exchange`'s errors.
    public func transmitPN532(_ frame: PN532HostFrame) throws -> [UInt8] {
        try Self.checked(try exchange(.directTransmit(frame)))
    }

    /// Reads the firmware string: `FF 00 48 00 00` → e.g. "ACR122U207", no status word.
    /// - Throws: `ACR122Error.operationFailed` (63 00), `.malformedReply` (not printable ASCII).
    public func firmwareVersion() throws -> ACR122FirmwareVersion {
        let reply = try exchange(.firmwareVersion)
        if reply == [0x63, 0x00] { throw ACR122Error.operationFailed }
        do {
            let version = try ACR122FirmwareVersion(parsing: reply)
            firmware = version
            return version
        } catch {
            throw ACR122Error.malformedReply(error)
        }
    }

    /// Drives the LEDs and buzzer: `FF 00 40 P2 04 T1 T2 Rep Link` → `90 ss`.
    /// - Returns: the LEDs' state after the command.
    public func setLEDAndBuzzer(_ control: ACR122LEDBuzzerControl) throws -> ACR122LEDState {
        try ACR122LEDState(parsingReply: exchange(.ledAndBuzzer(control)))
    }

    /// `FF 00 50 00 00` → `90 pp`.
    public func piccOperatingParameter() throws -> ACR122PICCOperatingParameter {
        try ACR122PICCOperatingParameter(parsingReply: exchange(.getPICCOperatingParameter))
    }

    /// `FF 00 51 pp 00` → `90 pp` (or `pp` alone on some units (U)).
    /// - Returns: the value the reader reports back.
    @discardableResult
    public func setPICCOperatingParameter(_ parameter: ACR122PICCOperatingParameter) throws -> ACR122PICCOperatingParameter {
        try ACR122PICCOperatingParameter(parsingReply: exchange(.setPICCOperatingParameter(parameter)))
    }

    /// `FF 00 41 TO 00` → `90 00`.
    /// - Throws: `ACR122Error.operationFailed` for 63 00.
    public func setMCUTimeout(_ timeout: ACR122MCUTimeout) throws {
        try Self.checkedEmpty(try exchange(.setMCUTimeout(timeout)))
    }

    /// `FF 00 52 00/FF 00` → `90 00`.
    public func setBuzzerOnDetection(_ on: Bool) throws {
        try Self.checkedEmpty(try exchange(.setBuzzerOnDetection(on)))
    }

    /// `FF CA 00 00 00` → `UID 90 00`.
    /// - Throws: `ACR122Error.operationFailed` (63 00), `.unsupported` (6A 81).
    public func uid() throws -> [UInt8] { try Self.checked(try exchange(.getUID)) }

    /// `FF CA 01 00 00` → `ATS 90 00`.
    /// - Throws: `ACR122Error.unsupported` (6A 81) for a card that is not ISO 14443-4 Type A.
    public func ats() throws -> [UInt8] { try Self.checked(try exchange(.getATS)) }

    static func checked(_ reply: [UInt8]) throws(ACR122Error) -> [UInt8] {
        if reply.isEmpty { throw .emptyReply }
        let parsed: ACR122Reply
        do {
            parsed = try ACR122Reply(parsing: reply)
        } catch {
            throw .malformedReply(error)
        }
        return try parsed.checkedData()
    }

    static func checkedEmpty(_ reply: [UInt8]) throws(ACR122Error) {
        let data = try checked(reply)
        guard data.isEmpty else {
            throw .malformedReply(PN53xParseError(
                .trailingBytes, at: 0, "expected 90 00 alone, got \(HexBytes.format(reply))"))
        }
    }
}

extension ACR122Link {
    /// The escape codes to try on a direct connection, in order.
    ///
    /// Asks `CM_IOCTL_GET_FEATURE_REQUEST` (0x42000D48) first; a code listed under
    /// `FEATURE_CCID_ESC_COMMAND` (tag 0x13) comes first, then the known codes 0x42000001 and
    /// 0x42000DAC that are not already listed. A failing or malformed feature request is ignored.
    public static func discoverEscapeCodes(on channel: any CardChannel) -> [UInt32] {
        var codes: [UInt32] = []
        if let reply = try? channel.control(code: ACR122ControlCode.getFeatureRequest, []),
           let code = (try? PCSCFeatureList(parsing: reply))?.escapeCommandCode {
            codes.append(code)
        }
        for code in ACR122ControlCode.fallbackEscapeCodes where !codes.contains(code) {
            codes.append(code)
        }
        return codes
    }

    /// Opens an ACR122U link on `channel` and confirms the device by its firmware string.
    ///
    /// With a card (T=0/T=1) the firmware version goes through `transmit`. On a direct connection the
    /// escape codes from `discoverEscapeCodes(on:)` are tried in order until one answers. The reader
    /// name is not required to match `ACR122Detection`: a clone with another name works when its
    /// firmware string contains "ACR122U", as libnfc checks (docs/acr122-pn532.md §1).
    ///
    /// - Throws: `ACR122Error.escapeCommandsNotEnabled` when libccid refused 0x42000001 and no other
    ///   code answered (P09); `.noEscapeCode` when no code answered; `.notAnACR122` when the firmware
    ///   string does not name an ACR122U; on a card connection, `firmwareVersion()`'s errors.
    /// - Parameters:
    ///   - channel: a connection to the reader: direct (no card) or with a card.
    ///   - readerName: the reader's PC/SC name, for messages; it need not match `ACR122Detection`.
    ///   - path: `.escape` for a DIRECT connection (see ``init(channel:escapeCode:path:)``);
    ///     nil guesses from the channel's protocol.
    public static func open(channel: any CardChannel, readerName: String, path: Path? = nil) throws -> ACR122Link {
        let link: ACR122Link
        let firmware: ACR122FirmwareVersion
        if (path ?? .guessed(for: channel)) == .transmit {
            link = ACR122Link(channel: channel, path: .transmit)
            firmware = try link.firmwareVersion()
        } else {
            let candidates = discoverEscapeCodes(on: channel)
            var found: (ACR122Link, ACR122FirmwareVersion)?
            var refusedByCCID = false
            for code in candidates {
                let candidate = ACR122Link(channel: channel, escapeCode: code, path: .escape)
                do {
                    found = (candidate, try candidate.firmwareVersion())
                    break
                } catch ACR122Error.escapeCommandsNotEnabled {
                    refusedByCCID = true
                } catch {
                    continue
                }
            }
            guard let found else {
                if refusedByCCID { throw ACR122Error.escapeCommandsNotEnabled }
                throw ACR122Error.noEscapeCode(tried: candidates)
            }
            (link, firmware) = found
        }
        guard firmware.isACR122U else {
            throw ACR122Error.notAnACR122(readerName: readerName, firmware: firmware.text)
        }
        return link
    }
}
