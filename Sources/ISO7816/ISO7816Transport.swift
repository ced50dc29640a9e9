/// Sends card APDUs over a `CardChannel` and resolves what ISO/IEC 7816-4 leaves to the terminal:
/// 61 XX (GET RESPONSE), 6C XX (send again with the right Le), command chaining and the choice of
/// extended length. The caller sees one command and one response, the same on T=0 and T=1.
///
/// **Card APDUs only.** A reader pseudo-APDU (CLA FF, PC/SC part 3 and ACR122U API v2.04 §4–§6)
/// is passed through untouched: the exact bytes of `serialized()`, no T=0 mapping, no 61 XX or
/// 6C XX handling, no chaining. Its answer is split as data + SW1 SW2 if it has at least 2 bytes;
/// for reader commands whose answer has no status word (the ACR122U firmware string "ACR122U207"
/// ends in 30 37, which is not a SW) call `channel.transmit` directly (docs/acr122-pn532.md §2).
///
/// What it does, for a card APDU:
/// 1. Length: Nc > 255 (or Ne > 256) is sent as one extended APDU when the card announces extended
///    Lc/Le, the reader's maximum input fits it and the protocol is not T=0; otherwise Nc > 255 is
///    sent as command chaining (CLA | 10 on all blocks but the last, ISO/IEC 7816-4 §5.1.1.1) when
///    the card announces chaining; otherwise it throws `commandTooLong` before sending anything
///    (docs/cases.md P06). Ne > 256 without extended length is sent as a short Le 00 and the rest arrives through
///    61 XX.
/// 2. T=0: the command goes as its C-TPDU (`CommandAPDU.serializedForT0()`): case 4 sends no Le.
/// 3. 6C XX: the same command is sent again, once, with Le = XX (ISO/IEC 7816-3 §12.2.2 /
///    7816-4 §5.6).
/// 4. 61 XX: GET RESPONSE `| CLA' | C0 | 00 | 00 | P3 |` with P3 = min(Ne still wanted, XX), or XX
///    once Ne has arrived (XX = 00 means 256, sent as 00), repeated while the card answers 61 XX,
///    at most `maxGetResponses` times; each answer's data is appended (P01, P02). By default (`responseChain = .toTheEnd`) the chain is followed
///    to its end whatever Ne the command said, as OpenSC's `sc_get_response`, javax.smartcardio and
///    pcsc-sharp do: a 2847-byte object read with Le 00 arrives whole. With `.stopAtNe` the chain
///    stops once Ne bytes arrived and the response returns with the card's last 61 XX: the card has more than was asked for.
/// 5. A GET RESPONSE answered with an error status word (anything but 61 XX, 90 00 and the
///    warnings 62 XX / 63 XX) ends the chain with ``GetResponseChainError``, which carries the
///    data that came before it as partial, never as the answer.
/// 6. Any other status word is returned as it is: a status word is a value, not an error.
/// 7. An answer of 0 bytes (a mute card: the reader reports success and no bytes) throws
///    `ISO7816Error` `noResponse`.
///
/// Not thread-safe (it holds the channel, which blocks): use it from the thread that owns the
/// PC/SC card handle.
public struct ISO7816Transport {
    /// The link to the card.
    public let channel: any CardChannel
    /// What the card can do with lengths (from its ATR, `ATR.cardCapabilities`).
    public var capabilities: CardCapabilities
    /// The reader's largest command in bytes (SCARD_ATTR_MAXINPUT, 0x0007A007; 271 on an
    /// ACR122U); nil when unknown, which counts as short APDUs only (261 bytes). A reader counts
    /// as extended-capable only when this is above 271 (a short APDU plus the 10-byte CCID
    /// header) and at least the extended APDU's length.
    public var readerMaxInput: Int?
    /// The most GET RESPONSE commands sent for one command (default 256: enough for Ne = 65 536
    /// in 256-byte pieces).
    public var maxGetResponses: Int
    /// How far a 61 XX chain is followed (default ``ResponseChain/toTheEnd``).
    public var responseChain: ResponseChain

    /// How far GET RESPONSE follows the card's 61 XX.
    public enum ResponseChain: Sendable, Hashable {
        /// Until the card stops answering 61 XX (bounded by `maxGetResponses`), whatever Ne said.
        case toTheEnd
        /// Until Ne bytes arrived; the card's remaining 61 XX is left in the response.
        case stopAtNe
    }

    /// The longest short APDU: case 4S with Nc = 255.
    public static let shortAPDUMaxLength = 4 + 1 + 255 + 1

    /// A transport over `channel`.
    /// - Parameters:
    ///   - channel: where the APDUs go (a pcsc-lite card handle, the in-process client, a test double).
    ///   - capabilities: what the card accepts (chaining, extended length); short APDUs only by default.
    ///   - readerMaxInput: the reader's largest command in bytes (SCARD_ATTR_MAXINPUT); nil if unknown.
    ///   - maxGetResponses: the most GET RESPONSE commands sent for one command (default 256).
    ///   - responseChain: how far a 61 XX chain is followed (default ``ResponseChain/toTheEnd``).
    public init(
        channel: any CardChannel,
        capabilities: CardCapabilities = .shortOnly,
        readerMaxInput: Int? = nil,
        maxGetResponses: Int = 256,
        responseChain: ResponseChain = .toTheEnd
    ) {
        self.channel = channel
        self.capabilities = capabilities
        self.readerMaxInput = readerMaxInput
        self.maxGetResponses = maxGetResponses
        self.responseChain = responseChain
    }

    /// How the transport will send a command, decided before anything is sent.
    public enum Plan: Sendable, Hashable {
        /// Reader pseudo-APDU, sent untouched.
        case passThrough
        /// One APDU (short, or extended when allowed).
        case single(CommandAPDU)
        /// Command chaining: the blocks in order, the last with the plain CLA.
        case chained([CommandAPDU])
    }

    /// Decides how `command` would be sent, without sending it.
    /// - Throws: `ISO7816Error` `commandTooLong` when Nc > 255 and neither extended length (card
    ///   and reader, not T=0) nor chaining (card) is available.
    public func plan(for command: CommandAPDU) throws(ISO7816Error) -> Plan {
        if command.isReaderPseudoAPDU { return .passThrough }
        let isT0 = channel.transmissionProtocol == .t0
        let maxInput = readerMaxInput ?? Self.shortAPDUMaxLength
        let needsExtended = command.isExtended
        if !needsExtended { return .single(command) }
        // Extended: the card says it can, T=0 is not in use, and the reader is extended-capable: its
        // limit is above a short APDU even counting the 10-byte CCID header (261 + 10 = 271, the
        // ACR122U's value) and it takes the whole encoding.
        let readerExtended = maxInput > Self.shortAPDUMaxLength + 10
        if capabilities.supportsExtendedLength && !isT0 && readerExtended {
            let extended = try CommandAPDU(
                cla: command.cla, ins: command.ins, p1: command.p1, p2: command.p2,
                data: command.data, ne: command.ne, extended: true)
            if extended.encodedLength <= maxInput { return .single(extended) }
        }
        // Short from here on: Ne > 256 becomes Le 00 and the rest comes through 61 XX.
        let shortNe = min(command.ne, 256)
        if command.data.count <= 255 {
            return .single(try CommandAPDU(cla: command.cla, ins: command.ins, p1: command.p1, p2: command.p2, data: command.data, ne: shortNe))
        }
        guard capabilities.supportsCommandChaining else {
            let why: String
            if !capabilities.supportsExtendedLength {
                why = "the card announces neither extended length nor command chaining (card capabilities, ATR tag 73)"
            } else if isT0 {
                why = "the channel is T=0, which cannot carry extended APDUs, and the card announces no command chaining"
            } else {
                let extendedLength = 4 + 3 + command.data.count + (command.ne > 0 ? 2 : 0)
                why = "the reader is not extended-capable (SCARD_ATTR_MAXINPUT \(readerMaxInput.map(String.init) ?? "unknown, assumed short-only"); the extended APDU is \(extendedLength) bytes) and the card announces no command chaining"
            }
            throw ISO7816Error(
                .commandTooLong,
                "the command carries \(command.data.count) data bytes, more than a short APDU's 255, and \(why); nothing was sent")
        }
        // Each block must fit the reader too: | header | Lc | ≤255 data | Le |.
        let blockSize = min(255, maxInput - 6)
        guard blockSize > 0 else {
            throw ISO7816Error(.commandTooLong, "the reader's maximum input (\(maxInput) bytes) cannot hold a chained block; nothing was sent")
        }
        var blocks: [CommandAPDU] = []
        blocks.reserveCapacity((command.data.count + blockSize - 1) / blockSize)
        var start = 0
        while start < command.data.count {  // bounded: start grows by blockSize > 0
            let end = min(start + blockSize, command.data.count)
            let isLast = end == command.data.count
            blocks.append(
                try CommandAPDU(
                    cla: isLast ? command.cla : command.cla | 0x10, ins: command.ins, p1: command.p1, p2: command.p2,
                    data: Array(command.data[start..<end]), ne: isLast ? shortNe : 0))
            start = end
        }
        return .chained(blocks)
    }

    /// Sends a command and returns the resolved response.
    ///
    /// - Parameter command: a card APDU, or a reader pseudo-APDU (CLA FF) which is passed through.
    /// - Returns: all response data collected (through GET RESPONSE if needed) and the last SW.
    /// - Throws: `ISO7816Error` (`commandTooLong` before sending, `noResponse` for an answer of
    ///   0 bytes, `responseTooShort`, `getResponseLimit`), ``GetResponseChainError`` when a GET
    ///   RESPONSE fails mid-chain, or whatever the channel throws.
    public func transmit(_ command: CommandAPDU) throws -> ResponseAPDU {
        switch try plan(for: command) {
        case .passThrough:
            return try ResponseAPDU(parsing: channel.transmit(command.serialized()))
        case .single(let apdu):
            return try exchange(apdu, wantedNe: command.ne)
        case .chained(let blocks):
            for block in blocks.dropLast() {
                let answer = try exchange(block, wantedNe: 0)
                // A block not accepted ends the chain: the card's answer is the result.
                guard answer.statusWord.isSuccess else { return answer }
            }
            return try exchange(blocks[blocks.count - 1], wantedNe: command.ne)
        }
    }

    /// Sends the command APDU encoded as `bytes` and returns the resolved response: the same as
    /// `transmit(CommandAPDU(parsing: bytes))`. A short card APDU on a channel other than T=0,
    /// which the transport would send unchanged, goes out as the very bytes given (a short
    /// encoding is canonical, ``CommandAPDU/shortNe(ofEncoded:)``), without being copied into a
    /// ``CommandAPDU`` first; the command is decoded only when the card answers 6C XX or 61 XX.
    ///
    /// - Parameter bytes: a command APDU, or a reader pseudo-APDU (CLA FF) which is passed through.
    /// - Returns: all response data collected (through GET RESPONSE if needed) and the last SW.
    /// - Throws: the errors of `CommandAPDU(parsing:)` and ``transmit(_:)``.
    public func transmit(encoded bytes: [UInt8]) throws -> ResponseAPDU {
        guard let ne = CommandAPDU.shortNe(ofEncoded: bytes), bytes[0] != 0xFF, channel.transmissionProtocol != .t0 else {
            return try transmit(CommandAPDU(parsing: bytes))
        }
        let answer = try channel.transmit(bytes)
        if answer.isEmpty { throw Self.noResponse(to: bytes) }
        let response = try ResponseAPDU(parsing: answer)
        if response.statusWord.correctLe == nil && response.statusWord.sw1 != 0x61 { return response }
        return try exchange(CommandAPDU(parsing: bytes), wantedNe: ne, first: response)
    }

    /// Sends raw command bytes: CLA FF goes through untouched (raw answer); anything else is parsed
    /// as a command APDU and sent with `transmit(_:)`, the answer serialized back.
    /// - Throws: the errors of `CommandAPDU(parsing:)` and `transmit(_:)`.
    public func transmit(bytes: [UInt8]) throws -> [UInt8] {
        if bytes.first == 0xFF { return try channel.transmit(bytes) }
        return try transmit(CommandAPDU(parsing: bytes)).serialized()
    }

    // MARK: One exchange with 6C XX and 61 XX resolved

    func send(_ apdu: CommandAPDU) throws -> ResponseAPDU {
        let bytes = channel.transmissionProtocol == .t0 ? try apdu.serializedForT0() : apdu.serialized()
        let answer = try channel.transmit(bytes)
        if answer.isEmpty { throw Self.noResponse(to: bytes) }
        return try ResponseAPDU(parsing: answer)
    }

    /// The `noResponse` error for a command answered with 0 bytes (a mute card).
    public static func noResponse(to command: [UInt8]) -> ISO7816Error {
        ISO7816Error(
            .noResponse,
            "the card answered \(command.hexString) with no bytes at all, not even SW1 SW2 (the reader reported success): the card is mute. Take it out of the field and present it again; if it stays mute, it does not handle this command")
    }

    /// One command with 6C XX and 61 XX resolved; `first` is the card's answer when the command
    /// was already sent.
    func exchange(_ apdu: CommandAPDU, wantedNe: Int, first: ResponseAPDU? = nil) throws -> ResponseAPDU {
        var response = try first ?? send(apdu)
        // 6C XX: wrong Le, send the same command once more with Le = XX.
        if let le = response.statusWord.correctLe {
            response = try send(apdu.with(ne: le))
        }
        guard response.statusWord.sw1 == 0x61 else { return response }

        var data = response.data
        var sw = response.statusWord
        let getResponseCLA = Self.getResponseCLA(for: apdu.cla)
        var iterations = 0
        // Bounded by maxGetResponses.
        while let available = sw.bytesAvailable {
            // Up to Ne, ask for what is still wanted; past Ne (.toTheEnd), for what the card offers.
            let wanted = wantedNe == 0 ? available : wantedNe - data.count
            if wanted <= 0 && responseChain == .stopAtNe { break }  // Ne reached; the 61 XX stays in the result
            let remaining = wanted <= 0 ? available : wanted
            guard iterations < maxGetResponses else {
                throw ISO7816Error(
                    .getResponseLimit,
                    "the card still answers \(sw.bytes.hexString) after \(iterations) GET RESPONSE commands (\(data.count) bytes so far); the limit is maxGetResponses = \(maxGetResponses)")
            }
            iterations += 1
            var p3 = min(remaining, available)
            var next = try send(CommandAPDU(uncheckedCLA: getResponseCLA, ins: 0xC0, p1: 0x00, p2: 0x00, data: [], ne: p3, isExtended: false))
            if let le = next.statusWord.correctLe, iterations < maxGetResponses {
                // The card wants another P3 for GET RESPONSE: one more try, counted.
                iterations += 1
                p3 = le
                next = try send(CommandAPDU(uncheckedCLA: getResponseCLA, ins: 0xC0, p1: 0x00, p2: 0x00, data: [], ne: p3, isExtended: false))
            }
            if next.statusWord.bytesAvailable == nil, next.statusWord.category != .normal, next.statusWord.category != .warning {
                throw GetResponseChainError(partialData: data, statusWord: next.statusWord, getResponses: iterations)
            }
            data.append(contentsOf: next.data)
            sw = next.statusWord
        }
        return ResponseAPDU(data: data, statusWord: sw)
    }

    /// The CLA for GET RESPONSE after a command with `cla`: the interindustry class with the same
    /// logical channel (ISO/IEC 7816-4 §5.4.1), without chaining or secure messaging; 00 after a
    /// proprietary class.
    static func getResponseCLA(for cla: UInt8) -> UInt8 {
        switch cla {
        case 0x00...0x3F: cla & 0x03  // first interindustry: channel in b2-b1
        case 0x40...0x7F: cla & 0x4F  // further interindustry: b7 set, channel - 4 in b4-b1
        default: 0x00
        }
    }
}

/// A GET RESPONSE chain that a card ended with an error status word: the bytes collected before it
/// are partial, not the answer (ISO/IEC 7816-4 §5.1.3: the response is complete only when the last
/// GET RESPONSE is answered 90 00 or a warning).
public struct GetResponseChainError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The data that arrived before the failing GET RESPONSE (the first answer's and the chain's).
    public let partialData: [UInt8]
    /// The status word that ended the chain.
    public let statusWord: StatusWord
    /// How many GET RESPONSE commands were sent, the failing one included.
    public let getResponses: Int

    /// Records a chain that ended in `statusWord` after `getResponses` GET RESPONSE commands, with the
    /// data collected before it.
    public init(partialData: [UInt8], statusWord: StatusWord, getResponses: Int) {
        self.partialData = partialData
        self.statusWord = statusWord
        self.getResponses = getResponses
    }

    public var description: String {
        "GET RESPONSE \(getResponses) was answered \(statusWord.bytes.hexString) (\(statusWord.meaning)): the response is incomplete; \(partialData.count) bytes arrived before it (partial data, not the answer)"
    }
}
