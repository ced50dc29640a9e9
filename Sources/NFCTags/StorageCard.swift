import ISO7816
import PCSCCore

/// A reason a PC/SC part 3 storage-card command failed: the command, what came back, why, and
/// what to do (ACR122U API v2.04 §5; PC/SC part 3 supplement).
///
/// Keys never appear: the command of a Load Keys failure is shown as `FF 82 00 <slot> 06
/// [REDACTED 6]`, and no other command carries a key.
public struct StorageCardError: CodedError {
    /// What went wrong, as an open code so callers can branch without parsing text.
    public struct Code: ErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// SW 63 00: the operation failed (no card, wrong key, block not readable or writable).
        public static let operationFailed = Code(rawValue: "operationFailed")
        /// SW 6A 81: the reader or card does not support the function.
        public static let notSupported = Code(rawValue: "notSupported")
        /// Any other status word.
        public static let unexpectedStatus = Code(rawValue: "unexpectedStatus")
        /// The answer has no status word (fewer than 2 bytes).
        public static let noStatusWord = Code(rawValue: "noStatusWord")
        /// A success answer with the wrong number of data bytes.
        public static let wrongDataLength = Code(rawValue: "wrongDataLength")
        /// A parameter the command cannot carry (a key that is not 6 bytes, Le above 16, a block
        /// outside the card).
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// General Authenticate answered 63 00: wrong key or access conditions.
        public static let authenticationFailed = Code(rawValue: "authenticationFailed")
    }

    /// The command's name, e.g. "Read Binary block 4".
    public var operation: String
    /// The command bytes as sent, except that secret bytes are left out (see ``redactedByteCount``).
    public var command: [UInt8]
    /// How many secret bytes followed ``command`` and are shown as `[REDACTED n]` (6 for Load Keys).
    public var redactedByteCount: Int
    /// The whole answer, status word included; nil when there was none to show.
    public var response: [UInt8]?
    public var code: Code
    /// Why, in words.
    public var reason: String
    /// What to do next, in words; empty when there is nothing useful to say.
    public var remedy: String

    /// - Parameters:
    ///   - code: what went wrong.
    ///   - operation: the command's name, e.g. "Read Binary block 4".
    ///   - command: the bytes sent, without the secret ones; `redactedByteCount` secret bytes (a key) followed them and are shown as `[REDACTED n]`.
    ///   - redactedByteCount: how many secret bytes followed `command` (0 when none).
    ///   - response: the reader's answer, SW1-SW2 included; nil when none came.
    ///   - reason: why, in words.
    ///   - remedy: what to do next, in words; empty when there is nothing useful to say.
    public init(
        _ code: Code, operation: String, command: [UInt8], redactedByteCount: Int = 0, response: [UInt8]? = nil,
        reason: String, remedy: String = ""
    ) {
        self.code = code
        self.operation = operation
        self.command = command
        self.redactedByteCount = redactedByteCount
        self.response = response
        self.reason = reason
        self.remedy = remedy
    }

    /// The command shown in house hex, secrets as `[REDACTED n]`.
    public var commandText: String {
        var text = command.hexString
        if redactedByteCount > 0 { text += (text.isEmpty ? "" : " ") + "[REDACTED \(redactedByteCount)]" }
        return text
    }

    /// `Read Binary block 4 failed: SW 63 00: … (> FF B0 00 04 10, < 63 00); what to do`.
    /// A check made before anything is sent (``command`` empty, no response) has no parenthesis:
    /// `block range failed: 'x' is not a block number …`.
    public var description: String {
        var text = "\(operation) failed: \(reason)"
        var exchange: [String] = []
        if !commandText.isEmpty { exchange.append("> \(commandText)") }
        if let response { exchange.append("< \(response.isEmpty ? "nothing" : response.hexString)") }
        if !exchange.isEmpty { text += " (\(exchange.joined(separator: ", ")))" }
        if !remedy.isEmpty { text += "; \(remedy)" }
        return text
    }
}

/// What kind of storage card a PC/SC part 3 ATR names (the C0 C1 bytes; ACR122U API v2.04 §3,
/// docs/acr122-pn532.md §3).
public enum StorageCardKind: Sendable, Hashable, CustomStringConvertible {
    /// 00 01: MIFARE Classic 1K, 16 sectors of 4 blocks (64 blocks of 16 bytes).
    case mifareClassic1K
    /// 00 02: MIFARE Classic 4K, 32 sectors of 4 blocks then 8 sectors of 16 blocks (256 blocks).
    case mifareClassic4K
    /// 00 26: MIFARE Mini, 5 sectors of 4 blocks (20 blocks).
    case mifareMini
    /// 00 03: MIFARE Ultralight, and the NTAG21x family the ACR122U reports the same way: an NFC
    /// Forum Type 2 Tag (4-byte pages).
    case type2Tag
    /// F0 04: Topaz (NFC Forum Type 1 Tag).
    case topaz
    /// F0 11 / F0 12: FeliCa at 212 or 424 kbit/s.
    case felica
    /// Any other name; the 16-bit C0 C1 value.
    case other(UInt16)

    /// The kind a C0 C1 card name stands for.
    public init(cardName: UInt16) {
        switch cardName {
        case 0x0001: self = .mifareClassic1K
        case 0x0002: self = .mifareClassic4K
        case 0x0026: self = .mifareMini
        case 0x0003: self = .type2Tag
        case 0xF004: self = .topaz
        case 0xF011, 0xF012: self = .felica
        default: self = .other(cardName)
        }
    }

    /// Whether this is a MIFARE Classic card (1K, 4K or Mini): blocks behind keys.
    public var isMifareClassic: Bool {
        switch self {
        case .mifareClassic1K, .mifareClassic4K, .mifareMini: true
        default: false
        }
    }

    /// The number of 16-byte blocks of a MIFARE Classic card; nil for other kinds.
    public var classicBlockCount: Int? {
        switch self {
        case .mifareClassic1K: 64
        case .mifareClassic4K: 256
        case .mifareMini: 20
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .mifareClassic1K: "MIFARE Classic 1K"
        case .mifareClassic4K: "MIFARE Classic 4K"
        case .mifareMini: "MIFARE Mini"
        case .type2Tag: "MIFARE Ultralight / NTAG21x (NFC Forum Type 2 Tag)"
        case .topaz: "Topaz (NFC Forum Type 1 Tag)"
        case .felica: "FeliCa"
        case .other(let name): "storage card name \([UInt8(name >> 8), UInt8(name & 0xFF)].hexString)"
        }
    }
}

/// A contactless storage card (MIFARE Classic, Ultralight/NTAG, …) behind a PC/SC part 3 reader
/// such as the ACR122U, driven with the reader's pseudo-APDUs (class FF) through a `CardChannel`
/// (ACR122U API v2.04 §5; PC/SC part 3 supplement; docs/acr122-pn532.md §2, docs/iso14443-t4t-ndef.md §6).
///
/// Each method sends one command and checks its answer. Reader pseudo-APDUs are not card APDUs:
/// no GET RESPONSE handling applies (docs/acr122-pn532.md §2); the only retry is Get Data's `6C xx`.
///
/// | Command | Bytes | Answer |
/// |---|---|---|
/// | Get Data (UID) | `FF CA 00 00 00` | UID `90 00`; `63 00` failed; `6A 81` unsupported; `6C xx` resend with Le xx |
/// | Load Keys | `FF 82 00 <slot> 06 <key 6>` | `90 00`; `63 00` failed |
/// | General Authenticate | `FF 86 00 00 05 01 00 <block> <60 A / 61 B> <slot>` | `90 00`; `63 00` wrong key |
/// | Read Binary | `FF B0 00 <block> <Le>` | Le bytes `90 00`; `63 00` failed |
/// | Update Binary | `FF D6 00 <block> <Lc> <data>` | `90 00`; `63 00` failed |
///
/// Errors are ``StorageCardError``s naming the command, the SW and what to do; the channel's own
/// errors (PC/SC, transcript) pass through unchanged.
public final class StorageCard {
    /// The channel to the reader (a PC/SC card handle, a recording, a test double).
    public let channel: any CardChannel

    /// A storage card reached through `channel`; nothing is sent until a command is called.
    public init(channel: any CardChannel) {
        self.channel = channel
    }

    /// The PC/SC part 3 storage-card description of an ATR `3B 8F 80 01 80 4F 0C A0 00 00 03 06 SS
    /// C0 C1 00 00 00 00 TCK` (PC/SC part 3 §3.1.3.2.3.2), decoded by `ATR` and `HistoricalBytes`.
    /// - Returns: nil unless the ATR parses (a wrong TCK is tolerated), its historical bytes have
    ///   category 80 with the `4F 0C` form and the RID is A0 00 00 03 06.
    public static func identify(atr: [UInt8]) -> ContactlessStorageCard? {
        guard let parsed = try? ATR(parsing: atr, requireValidChecksum: false),
              let storage = (try? parsed.decodedHistoricalBytes())?.contactlessStorageCard,
              storage.rid == ContactlessStorageCard.pcscRID
        else { return nil }
        return storage
    }

    /// The kind of card an ATR names, or nil when it is not a PC/SC part 3 storage card ATR.
    public static func kind(atr: [UInt8]) -> StorageCardKind? {
        identify(atr: atr).map { StorageCardKind(cardName: $0.cardName) }
    }

    // MARK: The reader's T=0 answers

    /// How many `FF C0` a pseudo-APDU may take before the answer is given up on.
    public static let maximumGetResponseRounds = 4

    /// Sends a pseudo-APDU and returns its answer. An early T=0 ACR122U (firmware 1.x, the
    /// Touchatag) announces an answer with data as `61 LL` and hands it over on Get Response
    /// `FF C0 00 00 LL` (ACR122U API v2.04 §6, T=0 mode; docs/acr122-pn532.md §2), which is
    /// followed here, at most ``maximumGetResponseRounds`` times.
    func transmit(_ command: [UInt8]) throws -> [UInt8] {
        var response = try channel.transmit(command)
        var rounds = 0
        while response.count == 2, response[0] == 0x61, rounds < Self.maximumGetResponseRounds {
            rounds += 1
            response = try channel.transmit([0xFF, 0xC0, 0x00, 0x00, response[1]])
        }
        return response
    }

    // MARK: Get Data

    /// Get Data, UID: `FF CA 00 00 00` → `UID 90 00` (ACR122U API v2.04 §5, Get Data).
    ///
    /// A `6C xx` answer is followed once by `FF CA 00 00 xx`, as the reader asks.
    /// - Returns: the UID (4, 7 or 10 bytes for ISO/IEC 14443 A).
    /// - Throws: ``StorageCardError`` `operationFailed` (63 00), `notSupported` (6A 81),
    ///   `unexpectedStatus`, `noStatusWord`, `wrongDataLength` (an empty UID).
    public func uid() throws -> [UInt8] {
        var command: [UInt8] = [0xFF, 0xCA, 0x00, 0x00, 0x00]
        var data = try exchange("Get Data (UID)", command, remedyFor63: "keep the card on the reader and try again")
        if case .resend(let le) = data {
            command[4] = le
            data = try exchange("Get Data (UID) with Le \([le].hexString)", command, remedyFor63: "keep the card on the reader and try again")
        }
        guard case .data(let uid) = data, !uid.isEmpty else {
            throw StorageCardError(.wrongDataLength, operation: "Get Data (UID)", command: command, response: [0x90, 0x00],
                                   reason: "the reader answered 90 00 without a UID")
        }
        return uid
    }

    // MARK: GET_VERSION

    /// `FF 00 00 00 03 D4 42 60`: GET_VERSION (60) sent to the activated tag with the ACR122U's
    /// Direct Transmit of the PN532's InCommunicateThru (D4 42; ACR122U API v2.04 §6,
    /// docs/acr122-pn532.md §2; NXP NTAG213/215/216 data sheet §10.1).
    public static let getVersionCommand: [UInt8] = [0xFF, 0x00, 0x00, 0x00, 0x03, 0xD4, 0x42, 0x60]

    /// Asks a Type 2 Tag for its GET_VERSION answer through the reader: ``getVersionCommand`` →
    /// `D5 43 00 <8 bytes> 90 00` (status 00, then `00 vendor type subtype major minor storage
    /// protocol`, e.g. `00 04 04 02 01 00 0F 03` for an NTAG213).
    ///
    /// - Returns: `.version` with the 8 bytes, or `.refused` saying why there are none: the tag did
    ///   not answer (PN532 status other than 00: a MIFARE Ultralight does not know GET_VERSION), or
    ///   the reader does not carry Direct Transmit (any other answer).
    /// - Throws: only the channel's errors (PC/SC, card removed), unchanged.
    public func type2Version() throws -> Type2TagIdentification {
        let command = Self.getVersionCommand
        let response = try transmit(command)
        let sent = "> \(command.hexString), < \(response.isEmpty ? "nothing" : response.hexString)"
        let ok = response.count >= 2 && response.suffix(2).elementsEqual([0x90, 0x00])
        guard ok, response.count >= 5, response[0] == 0xD5, response[1] == 0x43 else {
            return .refused("the reader did not carry GET_VERSION (Direct Transmit of InCommunicateThru; \(sent))")
        }
        guard response[2] == 0x00 else {
            return .refused("the tag did not answer GET_VERSION (PN532 status \([response[2]].hexString); \(sent)); a MIFARE Ultralight does not know the command")
        }
        let version = Array(response[3..<(response.count - 2)])
        guard version.count == 8 else {
            return .refused("the GET_VERSION answer has \(version.count) bytes, not 8 (\(sent))")
        }
        return .version(version)
    }

    // MARK: Keys

    /// Load Keys into the reader's volatile memory: `| FF | 82 | 00 (key structure: volatile) |
    /// slot | 06 | key (6) |` → `90 00` (ACR122U API v2.04 §5, Load Authentication Keys).
    /// - Parameters:
    ///   - key: the 6-byte MIFARE key (never shown in errors).
    ///   - slot: the key location, 00 or 01.
    /// - Throws: ``StorageCardError`` `invalidArgument` (slot not 0 or 1), `operationFailed` (63 00),
    ///   `notSupported`, `unexpectedStatus`, `noStatusWord`.
    public func loadKey(_ key: MifareKey, slot: UInt8 = 0) throws {
        let header: [UInt8] = [0xFF, 0x82, 0x00, slot, 0x06]
        guard slot <= 1 else {
            throw StorageCardError(.invalidArgument, operation: "Load Keys", command: header, redactedByteCount: 6,
                                   reason: "the ACR122U has key slots 00 and 01; got \([slot].hexString)")
        }
        let response = try transmit(header + key.bytes)
        _ = try check("Load Keys into slot \([slot].hexString)", header, redacted: 6, response,
                      remedyFor63: "the reader refused the key; check the slot (00 or 01) and reconnect the reader")
    }

    /// General Authenticate for one block with a loaded key: `| FF | 86 | 00 | 00 | 05 | 01 (version)
    /// | 00 | block | 60 (key A) or 61 (key B) | slot |` → `90 00`, or `63 00` for a wrong key or
    /// access conditions that refuse it (ACR122U API v2.04 §5, Authentication).
    ///
    /// Authenticating one block opens its whole sector until another sector is authenticated.
    /// - Throws: ``StorageCardError`` `authenticationFailed` (63 00), `notSupported`,
    ///   `unexpectedStatus`, `noStatusWord`.
    public func authenticate(block: UInt8, keyType: MifareKeyType, slot: UInt8 = 0) throws {
        let command: [UInt8] = [0xFF, 0x86, 0x00, 0x00, 0x05, 0x01, 0x00, block, keyType.rawValue, slot]
        let response = try transmit(command)
        let sector = MifareClassicLayout.sector(ofBlock: Int(block))
        let operation = "General Authenticate block \(block) (sector \(sector)) with key \(keyType)"
        if response == [0x63, 0x00] {
            throw StorageCardError(
                .authenticationFailed, operation: operation, command: command, response: response,
                reason: "authentication failed for sector \(sector) with key \(keyType): wrong key or access conditions",
                remedy: "check the key and whether the sector's access bits allow key \(keyType) (try --key-b or the other key), and keep the card still on the reader")
        }
        _ = try check(operation, command, redacted: 0, response, remedyFor63: "")
    }

    // MARK: Binary

    /// Read Binary: `| FF | B0 | 00 | block | Le |` → `Le bytes 90 00` (ACR122U API v2.04 §5).
    ///
    /// Le is 16 for a MIFARE Classic block (authenticate its sector first); for a Type 2 Tag a
    /// multiple of 4 up to 16, giving the pages from `block` on (READ 30 answers four pages).
    /// Longer answers are cut to Le (some readers return the tag's whole 16-byte READ answer).
    /// - Throws: ``StorageCardError`` `invalidArgument` (Le 0 or above 16), `operationFailed`
    ///   (63 00), `notSupported`, `unexpectedStatus`, `noStatusWord`, `wrongDataLength` (fewer than Le bytes).
    public func readBinary(block: UInt8, length: Int) throws -> [UInt8] {
        let command: [UInt8] = [0xFF, 0xB0, 0x00, block, UInt8(truncatingIfNeeded: length)]
        let operation = "Read Binary block \(block)"
        guard (1...16).contains(length) else {
            throw StorageCardError(.invalidArgument, operation: operation, command: command,
                                   reason: "Le is 1 to 16 bytes (one block or four pages); got \(length)")
        }
        let response = try transmit(command)
        let data = try check(operation, command, redacted: 0, response,
                             remedyFor63: "the block is not readable: authenticate its sector first (MIFARE Classic), check the block number, and keep the card on the reader")
        guard data.count >= length else {
            throw StorageCardError(.wrongDataLength, operation: operation, command: command, response: response,
                                   reason: "asked for \(length) bytes, got \(data.count) (a truncated read)",
                                   remedy: "keep the card still on the reader and read again")
        }
        return Array(data.prefix(length))
    }

    /// Update Binary: `| FF | D6 | 00 | block | Lc | data (Lc) |` → `90 00` (ACR122U API v2.04 §5).
    ///
    /// 16 bytes for a MIFARE Classic block, 4 bytes for a Type 2 Tag page.
    /// - Throws: ``StorageCardError`` `invalidArgument` (data not 4 or 16 bytes), `operationFailed`
    ///   (63 00), `notSupported`, `unexpectedStatus`, `noStatusWord`.
    public func updateBinary(block: UInt8, data: [UInt8]) throws {
        let header: [UInt8] = [0xFF, 0xD6, 0x00, block, UInt8(truncatingIfNeeded: data.count)]
        let operation = "Update Binary block \(block)"
        guard data.count == 4 || data.count == 16 else {
            throw StorageCardError(.invalidArgument, operation: operation, command: header,
                                   reason: "Update Binary writes 4 bytes (a Type 2 Tag page) or 16 bytes (a MIFARE Classic block); got \(data.count)")
        }
        // A MIFARE Classic sector trailer's data holds keys A and B: never show it.
        let hidden = data.count == 16 && MifareClassicLayout.isSectorTrailer(Int(block))
        let command = header + data
        let response = try transmit(command)
        _ = try check(operation, hidden ? header : command, redacted: hidden ? 16 : 0, response,
                      remedyFor63: "the block is not writable: check that it is not locked or read-only, authenticate its sector first (MIFARE Classic), and keep the card on the reader")
    }

    // MARK: Answer checking

    private enum Outcome {
        case data([UInt8])
        case resend(UInt8)
    }

    private func exchange(_ operation: String, _ command: [UInt8], remedyFor63: String) throws -> Outcome {
        let response = try transmit(command)
        if response.count == 2, response[0] == 0x6C {
            return .resend(response[1])
        }
        return .data(try check(operation, command, redacted: 0, response, remedyFor63: remedyFor63))
    }

    /// The data of a `… 90 00` answer, or the error for any other.
    private func check(
        _ operation: String, _ shown: [UInt8], redacted: Int, _ response: [UInt8], remedyFor63: String
    ) throws(StorageCardError) -> [UInt8] {
        guard response.count >= 2 else {
            throw StorageCardError(.noStatusWord, operation: operation, command: shown, redactedByteCount: redacted,
                                   response: response, reason: "the answer has no status word",
                                   remedy: "check that the reader is a PC/SC part 3 reader (e.g. an ACR122U) and that a storage card is present")
        }
        let sw = StatusWord(sw1: response[response.count - 2], sw2: response[response.count - 1])
        switch sw.value {
        case 0x9000:
            return Array(response.dropLast(2))
        case 0x6300:
            throw StorageCardError(.operationFailed, operation: operation, command: shown, redactedByteCount: redacted,
                                   response: response, reason: "SW 63 00: the operation failed", remedy: remedyFor63)
        case 0x6A81:
            throw StorageCardError(.notSupported, operation: operation, command: shown, redactedByteCount: redacted,
                                   response: response, reason: "SW 6A 81: the function is not supported by this reader or card",
                                   remedy: "the card may not be a storage card of the kind the command is for; check `secbridge readers` for its ATR")
        default:
            throw StorageCardError(.unexpectedStatus, operation: operation, command: shown, redactedByteCount: redacted,
                                   response: response, reason: "SW \(sw.bytes.hexString): \(sw.meaning)")
        }
    }
}

/// Which MIFARE Classic key a General Authenticate uses: the byte it sends (ACR122U API v2.04 §5).
public enum MifareKeyType: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// 60: key A.
    case a = 0x60
    /// 61: key B.
    case b = 0x61
    /// "A" or "B".
    public var description: String { self == .a ? "A" : "B" }
}

/// A 6-byte MIFARE Classic key. It never shows itself: `description`, `debugDescription` and
/// reflection (`dump`, string interpolation) all give `[REDACTED 6]`.
public struct MifareKey: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key bytes, for the Load Keys command only.
    public let bytes: [UInt8]

    /// - Throws: ``StorageCardError`` `invalidArgument` unless `bytes` has 6 bytes (the bytes are not shown).
    public init(bytes: [UInt8]) throws(StorageCardError) {
        guard bytes.count == 6 else {
            throw StorageCardError(.invalidArgument, operation: "MIFARE key", command: [],
                                   reason: "a MIFARE Classic key is 6 bytes (12 hex digits); got \(bytes.count) bytes")
        }
        self.bytes = bytes
    }

    /// A key from 12 hex digits (spaces allowed), e.g. "FFFFFFFFFFFF".
    /// - Throws: ``StorageCardError`` `invalidArgument` for text that is not 6 bytes of hex (the text is not shown).
    public init(hex: String) throws(StorageCardError) {
        let parsed: [UInt8]
        do { parsed = try HexBytes.parse(hex) } catch {
            // Only counts are shown, never the text: it may be most of a key.
            let digits = hex.unicodeScalars.filter { $0 != " " }
            let reason = error.code == .oddHexDigitCount || (digits.allSatisfy(\.properties.isASCIIHexDigit) && digits.count % 2 != 0)
                ? "a MIFARE Classic key is 12 hex digits; got \(digits.count), an odd number of hex digits"
                : "a MIFARE Classic key is 12 hex digits; the text given is not hex"
            throw StorageCardError(.invalidArgument, operation: "MIFARE key", command: [], reason: reason)
        }
        try self.init(bytes: parsed)
    }

    /// `[REDACTED 6]`.
    public var description: String { "[REDACTED 6]" }
    /// `[REDACTED 6]`.
    public var debugDescription: String { "[REDACTED 6]" }
    /// A mirror without children, so `dump` shows no bytes.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// The block and sector layout of MIFARE Classic cards (NXP MF1S50yyX / MF1S70yyX data sheets):
/// 16-byte blocks; sectors 0–31 have 4 blocks (blocks 0–127), sectors 32–39 of a 4K card have 16
/// (blocks 128–255). The last block of each sector is its trailer:
/// `| key A (6) | access bits (3) | GPB (1) | key B (6) |`.
///
/// The one home of this arithmetic: the reader (``MifareClassicReader``, ``StorageCard``) and the
/// transcript redactor (Transcript's MIFARE trailer rules) use it. The simulator
/// (`MIFAREClassicModel` in ACR122Simulator) keeps an independent copy on purpose, as an oracle of
/// the card; `TagArithmeticCrossCheckTests` (ACR122SimulatorTests) keeps the two from drifting.
public enum MifareClassicLayout {
    /// The sector holding `block` (0…255).
    public static func sector(ofBlock block: Int) -> Int {
        block < 128 ? block / 4 : 32 + (block - 128) / 16
    }

    /// The first block of `sector` (0…39): the block General Authenticate names.
    public static func firstBlock(ofSector sector: Int) -> Int {
        sector < 32 ? sector * 4 : 128 + (sector - 32) * 16
    }

    /// Whether `block` is a sector trailer: block < 128 with block % 4 == 3, or block ≥ 128 with
    /// block % 16 == 15.
    public static func isSectorTrailer(_ block: Int) -> Bool {
        block < 128 ? block % 4 == 3 : block % 16 == 15
    }
}
