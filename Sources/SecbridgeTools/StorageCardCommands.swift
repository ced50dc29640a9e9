// `secbridge read` on PC/SC part 3 storage cards, and `secbridge write-ndef` (NFC Forum Type 2
// Tags), through the reader's pseudo-APDUs (ACR122U API v2.04 §5; docs/iso14443-t4t-ndef.md §6).
import SecbridgeCLI
import ISO7816
import PCSC
import NFCTags
import Transcript

extension SecbridgeCLI {
    // MARK: read (storage cards)

    /// What `read` asks of a storage card, from the command line.
    struct StorageReadRequest {
        var key: MifareKey?
        var keyType: MifareKeyType = .a
        var blocks: [Int]?
        /// The --blocks text as given, for messages.
        var blocksText: String?
        var json = false

        /// - Throws: `CLIError.usage` for a bad key or block range, or one given without the other.
        init(_ arguments: ParsedArguments) throws(CLIError) {
            json = arguments.has("json")
            keyType = arguments.has("key-b") ? .b : .a
            if let text = arguments.value("key") {
                do { key = try MifareKey(hex: text) } catch { throw .usage("--key: \(error.reason)") }
            }
            if let text = arguments.value("blocks") {
                blocksText = text
                do { blocks = try MifareClassicReader.blocks(parsing: text) } catch { throw .usage("--blocks: \(error.reason)") }
            }
            if key != nil, blocks == nil { throw .usage("--key needs --blocks N[-M]: the blocks to read (e.g. --blocks 4-7)") }
            if blocks != nil, key == nil { throw .usage("--blocks needs --key HEX12: the sector key (12 hex digits; --key-b to use it as key B)") }
            if arguments.has("key-b"), key == nil { throw .usage("--key-b needs --key HEX12") }
        }
    }

    /// `read` for a card whose ATR names a PC/SC part 3 storage card: connect shared (recording
    /// with --record), then ``readStorageCard(channel:atr:reader:request:out:)``.
    static func runStorageCardRead(_ invocation: Invocation, context: any PCSCClientContext, reader: String) throws -> Int32 {
        let request = try StorageReadRequest(invocation.arguments)
        let session: CardSession
        do {
            session = try CardSession.open(context: context, reader: reader, record: invocation.arguments.value("record"), command: "read", recordings: invocation.recordings)
        } catch {
            // A card taken away between listing and connecting: pcscd answers SCARD_W_UNRESPONSIVE_CARD.
            if case .failure(let message) = error, message.contains("SCARD_W_UNRESPONSIVE_CARD") {
                throw CLIError.failure(message + " (was the card removed?)")
            }
            throw error
        }
        defer { session.close() }
        // One PC/SC transaction: no other program's command lands between the reads (and the
        // key loading and authentication they depend on).
        return try withCardTransaction(session.handle, reader: reader) {
            try readStorageCard(channel: session.channel, atr: session.atr, reader: reader, request: request) { invocation.out($0) }
        }
    }

    /// Reads a storage card through `channel` and prints what it holds: the UID and card name, then
    /// for a Type 2 Tag its NDEF message, for MIFARE Classic the requested blocks. Exchanges are
    /// printed redacted (``Redactor/default``: no key ever shows).
    /// - Returns: 0 (success), or throws.
    /// - Throws: `CLIError.failure` naming the command and SW when the card cannot be read;
    ///   `CLIError.usage` for --key/--blocks on a card that is not MIFARE Classic.
    static func readStorageCard(
        channel: any CardChannel, atr: [UInt8], reader: String, request: StorageReadRequest, out: (String) -> Void
    ) throws -> Int32 {
        guard let storage = StorageCard.identify(atr: atr) else {
            throw CLIError.failure("the ATR \(atr.hexString) does not name a PC/SC part 3 storage card")
        }
        let kind = StorageCardKind(cardName: storage.cardName)
        if request.key != nil, !kind.isMifareClassic {
            throw CLIError.usage("--key and --blocks are for MIFARE Classic cards; the card in '\(reader)' is \(kind)")
        }
        if let wanted = request.blocks, let count = kind.classicBlockCount, let outside = wanted.first(where: { $0 >= count }) {
            throw CLIError.usage("--blocks \(request.blocksText ?? String(outside)): block \(outside) is not on a \(kind), which has blocks 0–\(count - 1)")
        }
        // The exchanges go through the transcript recorder into memory, redacted as any recording
        // (``Redactor/default``: no key ever shows), to be printed below.
        let log: TranscriptBuffer
        do { log = try TranscriptBuffer() } catch { throw CLIError.failure("\(error)") }
        let card = StorageCard(channel: RecordingChannel(wrapping: channel, recorder: TranscriptRecorder(sink: log)))
        let nameBytes = [UInt8(storage.cardName >> 8), UInt8(storage.cardName & 0xFF)]
        var uid: [UInt8]?
        var uidError: String?
        var ndef: Type2TagReader.Result?
        var identification: Type2TagIdentification?
        var blocks: [MifareClassicReader.Block] = []
        var failure: String?
        var hint: String?
        // Any error of the channel (PC/SC: the card taken away, pcscd gone, a timeout) ends the
        // reading; what was read and the exchanges are still printed, then exit 1.
        do {
            do { uid = try card.uid() } catch let error as StorageCardError { uidError = error.description }
            if kind == .type2Tag {
                do { ndef = try Type2TagReader.read(card) } catch let error as Type2TagError {
                    failure = "not readable as an NFC Forum Type 2 Tag: \(error)"
                } catch let error as StorageCardError {
                    failure = "not readable as an NFC Forum Type 2 Tag: \(error)"
                }
                // After the reads: a tag that does not know GET_VERSION (MIFARE Ultralight) may stop
                // answering until it is selected again, which must not cost the NDEF message.
                identification = try card.type2Version()
            } else if kind.isMifareClassic {
                if let key = request.key, let wanted = request.blocks {
                    do {
                        try MifareClassicReader.read(blocks: wanted, key: key, keyType: request.keyType, kind: kind, from: card) { blocks.append($0) }
                    } catch let error as StorageCardError {
                        failure = error.description
                    }
                } else {
                    hint = "\(kind) blocks are behind sector keys: add --key HEX12 (key A; --key-b for key B) and --blocks N[-M] to read them"
                }
            } else {
                hint = "reading the memory of a \(kind) is not supported here; the UID and the name come from the reader"
            }
        } catch {
            failure = "the reader or card stopped answering: \(channelErrorText(error)); what was read before is shown"
        }
        let cardText = cardLine(storage: storage, kind: kind, identification: identification)
        let note = identification?.note

        // Each SCardTransmit as (command, answer): the answer line, or the `!` line of a failed call.
        var exchanges: [(TranscriptBytes, TranscriptBytes?, TranscriptFailure?)] = []
        for entry in log.transcript.lines.compactMap({ $0.record?.entry }) {
            switch entry {
            case .transmit(.outgoing, let command): exchanges.append((command, nil, nil))
            case .transmit(.incoming, let answer) where !exchanges.isEmpty: exchanges[exchanges.count - 1].1 = answer
            case .failure(let failure) where !exchanges.isEmpty: exchanges[exchanges.count - 1].2 = failure
            default: break
            }
        }
        if request.json {
            var cardMembers: [(String, JSONValue)] = [
                ("name", .hex(nameBytes)), ("text", .string(storage.cardNameText ?? kind.description)),
                ("standard", .hex([storage.standard])),
            ]
            if let product = identification?.product { cardMembers.append(("model", .string(product.description))) }
            if let version = identification?.version { cardMembers.append(("version", .hex(version))) }
            var members: [(String, JSONValue)] = [
                ("reader", .string(reader)),
                ("card", .object(cardMembers)),
                ("uid", uid.map { .hex($0) } ?? .null),
                ("exchanges", .array(exchanges.map { command, answer, failure in
                    .object([("command", SecretDisplay.jsonBytes(command)), ("response", answer.map(SecretDisplay.jsonBytes) ?? .null)]
                        + (failure.map { [("error", .string($0.name))] } ?? []))
                })),
            ]
            if let ndef {
                members.append(("capabilityContainer", .hex(ndef.capabilityContainer.bytes)))
                members.append(("ndef", .array((ndef.message?.records ?? []).map(recordJSON))))
            }
            if !blocks.isEmpty || (kind.isMifareClassic && request.key != nil) {
                members.append(("blocks", .array(blocks.map { block in
                    .object([("block", .int(block.number)), ("sector", .int(block.sector)), ("trailer", .bool(block.isSectorTrailer)),
                             ("data", SecretDisplay.jsonBytes(maskedBlock(block)))])
                })))
            }
            if let error = failure ?? uidError { members.append(("error", .string(error))) }
            if let note { members.append(("note", .string(note))) }
            if let hint { members.append(("hint", .string(hint))) }
            out(JSONValue.object(members).prettySerialized())
        } else {
            out("reader: \(reader)")
            out("card: \(cardText)")
            if let uid { out("UID \(uid.hexString)") }
            for (command, answer, failure) in exchanges {
                out("> \(command)")
                if let answer { out("< \(answer)") }
                if let failure { out("! \(failure.name)\(failure.code.map { " " + ReaderRestore.hex32($0) } ?? "")") }
            }
            if let ndef {
                let cc = ndef.capabilityContainer
                out("capability container: \(cc.bytes.hexString) (version \(cc.version >> 4).\(cc.version & 0x0F), \(cc.dataAreaSize) data bytes, \(cc.isReadOnly ? "read-only" : "read/write"))")
                if let message = ndef.message {
                    for line in message.lines { out(line) }
                } else {
                    out("NDEF: the tag holds no message (empty NDEF TLV 03 00)")
                }
            }
            for block in blocks { out(blockLine(block)) }
            if let note { out("note: \(note)") }
            if let hint { out("note: \(hint)") }
        }
        if let failure { throw CLIError.failure(failure) }
        if let uidError, ndef == nil, blocks.isEmpty { throw CLIError.failure(uidError) }
        return exitSuccess
    }

    /// `NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03; PC/SC part 3 name 00 03, ISO/IEC 14443 A, part 3)`
    /// when GET_VERSION named the model, else `MIFARE Ultralight (PC/SC part 3 name 00 03, …)`.
    static func cardLine(storage: ContactlessStorageCard, kind: StorageCardKind, identification: Type2TagIdentification?) -> String {
        let nameBytes = [UInt8(storage.cardName >> 8), UInt8(storage.cardName & 0xFF)]
        let pcsc = "PC/SC part 3 name \(nameBytes.hexString), \(storage.standardText ?? "standard \([storage.standard].hexString)")"
        if let product = identification?.product, let version = identification?.version {
            return "\(product) (GET_VERSION \(version.hexString); \(pcsc))"
        }
        return "\(storage.cardNameText ?? kind.description) (\(pcsc))"
    }

    /// A channel error in words; SCARD_W_UNRESPONSIVE_CARD and SCARD_W_REMOVED_CARD ask whether the
    /// card was removed.
    static func channelErrorText(_ error: any Error) -> String {
        guard let pcsc = error as? PCSCError else { return "\(error)" }
        var text = describe(pcsc)
        if pcsc == .unresponsiveCard { text += " (was the card removed?)" }
        return text
    }

    /// A block's bytes with a trailer's key B masked (key A reads as zeros anyway).
    static func maskedBlock(_ block: MifareClassicReader.Block) -> TranscriptBytes {
        guard block.isSectorTrailer, block.data.count == 16 else { return TranscriptBytes(block.data) }
        return TranscriptBytes(items: block.data.prefix(10).map { .byte($0) } + [.redacted(count: 6)])
    }

    /// `block   4 (sector  1): 00 01 … 0F  |................|`; a trailer masks key B.
    static func blockLine(_ block: MifareClassicReader.Block) -> String {
        let label = "block \(padBlockNumber(block.number, 3)) (sector \(padBlockNumber(block.sector, 2))\(block.isSectorTrailer ? ", trailer" : ""))"
        let shown = block.isSectorTrailer ? Array(block.data.prefix(10)) : block.data
        let ascii = String(shown.map { (0x20...0x7E).contains($0) ? Character(Unicode.Scalar($0)) : "." })
        if block.isSectorTrailer {
            return "\(label): \(maskedBlock(block))  |\(ascii)......|  key A reads as zeros; key B masked"
        }
        return "\(label): \(block.data.hexString)  |\(ascii)|"
    }

    static func padBlockNumber(_ n: Int, _ width: Int) -> String {
        let text = String(n)
        return String(repeating: " ", count: max(0, width - text.count)) + text
    }

    static func recordJSON(_ record: NDEFRecord) -> JSONValue {
        var fields: [(String, JSONValue)] = [("tnf", .int(Int(record.tnf.rawValue))), ("type", .hex(record.type)), ("payload", .hex(record.payload))]
        if let uri = try? record.uriValue() { fields.append(("uri", .string(uri))) }
        if let text = try? record.textValue() { fields.append(("text", .string(text.text))); fields.append(("language", .string(text.language))) }
        // The words the text output prints (NDEFRecord.summary and, for a Smart Poster, its parts).
        fields.append(("summary", .string(record.summary)))
        if !record.details.isEmpty { fields.append(("details", .array(record.details.map { .string($0) }))) }
        return .object(fields)
    }

    // MARK: write-ndef

    static let writeNDEFCommand = Command(
        name: "write-ndef",
        abstract: SecbridgeCLI.toolAbstract("write-ndef"),
        usage: "[--reader NAME|INDEX] (--uri URI | --text TEXT [--lang en]) [--wait SECONDS] [--record FILE] [--yes] [--json]",
        discussion: """
            Writes one URI record or one UTF-8 text record to the NFC Forum Type 2 Tag (MIFARE
            Ultralight, NTAG213/215/216) on a PC/SC part 3 reader such as the ACR122U: reads the
            model with GET_VERSION through Direct Transmit (FF 00 00 00 03 D4 42 60; a tag or reader
            that does not answer is noted and the capability container used), the capability
            container (page 3; refuses a tag that is not NDEF formatted, is read-only, or whose CC
            claims more than its model has: NTAG213 144, NTAG215 504, NTAG216 888 bytes of user
            memory), checks that the message fits, and the static lock bytes (page 2; refuses when a
            page the message needs is locked). Only then does it ask (unless --yes) and write, in
            the NFC Forum order that leaves a valid tag if interrupted: page 4 as an empty NDEF
            message (03 00 FE), then `03 len message FE` from page 5 on with Update Binary
            (FF D6 00 <page> 04, the last page padded with 00), then page 4 with the message's start;
            then it reads the pages back to verify. A failed write says what the tag holds now.
            Other cards (Type 4 tags, MIFARE Classic, phones) are refused.

            Example:
              $ secbridge write-ndef --uri https://example.com --yes
              reader: ACS ACR122U PICC Interface 00 00
              card: NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03; PC/SC part 3 name 00 03, ISO/IEC 14443 A, part 3)  UID 04 A1 B2 C3 D4 E5 F6
              capability container: E1 10 12 00 (144 data bytes, read/write)
              wrote 19 bytes (16 bytes of NDEF) to pages 4–8 and read them back
              NDEF record 1: URI https://example.com
            """,
        options: [
            .reader("The reader: an index from `secbridge readers` or part of its name."),
            .value("uri", "URI", "Write one URI record (the prefix abbreviated, e.g. https:// → 04)."),
            .value("text", "TEXT", "Write one UTF-8 text record."),
            .value("lang", "CODE", "The text record's language code (default en)."),
            .value("record", "FILE", "Record the exchanges to a transcript FILE."),
            .flag("yes", "Write without asking."),
            .waitForCard,
            .flag("json", "Print a JSON object {reader, card, uid, capabilityContainer, dataAreaSize, readOnly, written: {bytes, ndefBytes, firstPage, lastPage}, ndef}; the prompt goes to standard error."),
        ],
        run: runWriteNDEF
    )

    @Sendable static func runWriteNDEF(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.isEmpty else {
            throw CLIError.usage("write-ndef takes no arguments, got '\(invocation.arguments.positional[0])'")
        }
        let message = try writeNDEFMessage(invocation.arguments)
        let context = try openContext(invocation)
        var (readers, states) = try listReadersWithStates(context)
        if let wait = invocation.arguments.seconds("wait") {
            (readers, states) = try waitForCard(context: context, reader: invocation.arguments.value("reader"), upTo: wait)
        }
        let withCard = Set(states.filter(\.hasCard).map(\.readerName))
        let reader = try selectReader(invocation.arguments.value("reader"), in: readers, preferring: { withCard.contains($0) })
        guard withCard.contains(reader) else {
            throw CLIError.failure("no card in '\(reader)': place an NFC Forum Type 2 Tag (NTAG21x, MIFARE Ultralight) on the reader")
        }
        let atr = states.first { $0.readerName == reader }?.atr ?? []
        try requireType2Tag(atr: atr, reader: reader)
        let session = try CardSession.open(context: context, reader: reader, record: invocation.arguments.value("record"), command: "write-ndef", recordings: invocation.recordings, work: "the tag write")
        defer { session.close() }
        let confirm = consoleConfirmation(invocation)
        // One PC/SC transaction from the first read to the read-back, the prompt included: the
        // checks made before the prompt (size, lock bits) still hold when the write comes.
        return try withCardTransaction(session.handle, reader: reader) {
            try writeNDEF(
                message: message, channel: session.channel, atr: session.atr, reader: reader, out: { invocation.out($0) },
                json: invocation.json, reactivate: { try reselect(session, reason: "no answer to GET_VERSION: select the tag again") },
                confirm: confirm, tagLeft: { tagLeft(session.handle) })
        }
    }

    /// The y/N question of a command that writes to a card: true with --yes, else the answer on
    /// standard input ("y" or "yes"); no answer (end of input) says how to write without asking.
    /// With --json the question goes to standard error: standard output carries only the JSON.
    static func consoleConfirmation(_ invocation: Invocation) -> (String) -> Bool {
        let console = invocation.console
        let approve = invocation.arguments.has("yes")
        let prompting: (String) -> Void = invocation.json ? { console.err($0) } : { console.out($0) }
        return { prompt in
            if approve { return true }
            prompting("\(prompt) [y/N] ")
            switch console.readLine()?.lowercased() {
            case "y", "yes": return true
            case nil:
                prompting("\nno answer on standard input: not written (use --yes to write without asking)\n")
                return false
            default: return false
            }
        }
    }

    /// A record's text goes on one line: a control character (newline, tab, …) in `--option` is a
    /// usage error naming it, e.g. U+000A.
    static func refuseControlCharacters(_ option: String, _ value: String) throws(CLIError) {
        guard let control = value.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) else { return }
        let code = String(control.value, radix: 16, uppercase: true)
        throw .usage("--\(option) contains a control character (U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code)): give it on one line without control characters")
    }

    /// The message of --uri or --text [--lang].
    /// - Throws: `CLIError.usage` unless exactly one of --uri and --text is given (and --lang only with --text).
    static func writeNDEFMessage(_ arguments: ParsedArguments) throws(CLIError) -> NDEFMessage {
        let uri = arguments.value("uri"), text = arguments.value("text")
        if let lang = arguments.value("lang"), lang.isEmpty {
            throw .usage("--lang is empty: give a language code such as en or de-CH")
        }
        if let uri, uri.isEmpty { throw .usage("--uri is empty: give the URI to write, e.g. https://example.com") }
        for (option, value) in [("uri", uri), ("text", text), ("lang", arguments.value("lang"))] {
            if let value { try refuseControlCharacters(option, value) }
        }
        switch (uri, text) {
        case (let uri?, nil):
            if arguments.value("lang") != nil { throw .usage("--lang is for --text records") }
            do { return try NDEFMessage(records: [.uri(uri)]) } catch { throw .usage("--uri: \(error.reason)") }
        case (nil, let text?):
            do {
                return try NDEFMessage(records: [NDEFRecord.text(text, language: arguments.value("lang") ?? "en")])
            } catch { throw .usage("--lang: \(error.reason)") }
        case (nil, nil): throw .usage("give the record to write: --uri URI or --text TEXT [--lang en]")
        default: throw .usage("give either --uri or --text, not both (write-ndef writes one record)")
        }
    }

    /// Refuses a card whose ATR does not name a Type 2 Tag (PC/SC part 3 name 00 03).
    static func requireType2Tag(atr: [UInt8], reader: String) throws(CLIError) {
        guard let kind = StorageCard.kind(atr: atr) else {
            throw .failure("write-ndef writes NFC Forum Type 2 Tags (NTAG21x, MIFARE Ultralight); the card in '\(reader)' is not a PC/SC part 3 storage card (ATR \(atr.hexString)): an ISO 14443-4 card, a Type 4 Tag or a phone")
        }
        guard kind == .type2Tag else {
            throw .failure("write-ndef writes NFC Forum Type 2 Tags (NTAG21x, MIFARE Ultralight); the card in '\(reader)' is a \(kind)")
        }
    }

    /// Writes `message` to the Type 2 Tag on `channel`: every check first (GET_VERSION for the
    /// model, the capability container, the static lock bits; ``Type2TagWriter/prepare(message:card:identification:)``),
    /// then `confirm`, then the write (page 4 empty first and last) and the read-back; prints the
    /// outcome as lines, or with `json` as one JSON object at the end (`write-ndef --json`).
    /// - Throws: `CLIError.failure` for a card that is not a Type 2 Tag, the writer's refusals
    ///   (read-only, locked, a CC claiming more than the model has, does not fit), a declined prompt,
    ///   and failures (63 00, a card taken away, read-back mismatch) saying what the tag holds now.
    /// - Parameter reactivate: selects the tag again after it did not answer GET_VERSION (a MIFARE
    ///   Ultralight that does not know a command goes back to IDLE and ignores what follows, as
    ///   libnfc knows; ISO/IEC 14443-3 §6.3): SCardReconnect with reset, so the reader activates it anew.
    /// Whether the card of `handle` left the reader: SCardStatus reports no card present, or
    /// fails with SCARD_W_REMOVED_CARD or SCARD_E_NO_SMARTCARD. Asked after a command failed: the
    /// ACR122U answers 63 00 both for a page the tag refused and for a tag that is gone (ACR122U
    /// API v2.04 §5.4), so only the reader's presence can tell them apart. pcscd sees a removal in
    /// its next presence poll (every 400 ms for a reader in use; docs/acr122-units.md §6): a
    /// failure asked about in the same moment may still find the card present, and then keeps
    /// the message of a refusal.
    static func tagLeft(_ handle: any PCSCConnection) -> Bool {
        do {
            let status = try handle.status()
            return !status.state.contains(.present)
        } catch {
            return error == .removedCard || error == .noSmartcard
        }
    }

    /// write-ndef's failure when the tag left before its first write.
    static let tagLeftBeforeWriting = CLIError.failure(
        "the tag left the reader before anything was written; it holds its old NDEF message; place the tag on the reader again and run write-ndef again")

    /// - Parameter tagLeft: asked after a failed command: whether the tag left the reader, which
    ///   the message then says instead of the remedies for a refusal.
    static func writeNDEF(
        message: NDEFMessage, channel: any CardChannel, atr: [UInt8], reader: String, out: (String) -> Void,
        json: Bool = false, reactivate: () throws -> Void = {}, confirm: (String) -> Bool, tagLeft: () -> Bool = { false }
    ) throws -> Int32 {
        try requireType2Tag(atr: atr, reader: reader)
        let storage = StorageCard.identify(atr: atr)!
        let card = StorageCard(channel: channel)
        var members: [(String, JSONValue)] = [("reader", .string(reader))]
        func line(_ text: String) { if !json { out(text) } }
        line("reader: \(reader)")
        do {
            let uid = try? card.uid()
            let identification = try card.type2Version()
            if case .refused = identification { try reactivate() }
            let cardText = cardLine(storage: storage, kind: .type2Tag, identification: identification)
            line("card: \(cardText)" + (uid.map { "  UID \($0.hexString)" } ?? ""))
            members += [("card", .string(cardText)), ("uid", uid.map { .hex($0) } ?? .null)]
            if let note = identification.note {
                line("note: \(note)")
                members.append(("note", .string(note)))
            }
            let plan = try Type2TagWriter.prepare(message: message, card: card, identification: identification)
            let cc = plan.capabilityContainer
            line("capability container: \(cc.bytes.hexString) (\(cc.dataAreaSize) data bytes, \(cc.isReadOnly ? "read-only" : "read/write"))")
            members += [("capabilityContainer", .hex(cc.bytes)), ("dataAreaSize", .int(cc.dataAreaSize)), ("readOnly", .bool(cc.isReadOnly))]
            let tlv = Type2TagWriter.tlvBytes(for: message)
            let records = message.records.map(\.summary).joined(separator: ", ")
            guard confirm("Write \(records) (\(tlv.count) bytes) to the tag\(uid.map { " \($0.hexString)" } ?? "") on \(reader), replacing its NDEF message?") else {
                throw CLIError.failure("not written: the write was not confirmed")
            }
            let result = try Type2TagWriter.execute(plan, on: card)
            line("wrote \(tlv.count) bytes (\(message.serialized().count) bytes of NDEF) to pages \(result.pages.lowerBound)–\(result.pages.upperBound) and read them back")
            for text in message.lines { line(text) }
            if json {
                members.append(("written", .object([
                    ("bytes", .int(tlv.count)), ("ndefBytes", .int(message.serialized().count)),
                    ("firstPage", .int(result.pages.lowerBound)), ("lastPage", .int(result.pages.upperBound)),
                ])))
                members.append(("ndef", .array(message.records.map(recordJSON))))
                out(JSONValue.object(members).prettySerialized())
            }
            return exitSuccess
        } catch let error as CLIError {
            throw error
        } catch let error as Type2TagError {
            if tagLeft() { throw tagLeftBeforeWriting }
            throw CLIError.failure("\(error)")
        } catch let error as StorageCardError {
            if tagLeft() { throw tagLeftBeforeWriting }
            throw CLIError.failure("\(error)")
        } catch let error as Type2TagWriteFailure {
            let doing = error.state == .writtenNotVerified ? "reading back" : "writing"
            if tagLeft() {
                throw CLIError.failure(
                    "\(doing) page \(error.page) failed: the tag left the reader; \(error.state); place the tag on the reader again and run write-ndef again")
            }
            let cause = (error.underlying as? StorageCardError).map(\.description) ?? channelErrorText(error.underlying)
            throw CLIError.failure("\(doing) page \(error.page) failed: \(cause); \(error.state)")
        } catch {
            if tagLeft() { throw tagLeftBeforeWriting }
            throw CLIError.failure("the reader or card stopped answering before anything was written: \(channelErrorText(error))")
        }
    }
}
