// `secbridge read --dump FILE` and `secbridge write-dump FILE`: storage-card dumps in libnfc's
// `.mfd` layout (MIFARE Classic, MIFARE Ultralight / NTAG21x) through the reader's pseudo-APDUs
// (ACR122U API v2.04 §5; docs/storage-card-dumps.md).
import Foundation
import SecbridgeCLI
import ISO7816
import PCSC
import NFCTags
import Transcript

extension SecbridgeCLI {
    /// The keys a dump or restore uses: one key for every sector (--key), a keys file's trailers
    /// (--keys), or (restore only) the dump's own trailers.
    struct DumpKeys {
        var key: MifareKey?
        var keysFile: String?
        var keyType: MifareKeyType

        init(_ arguments: ParsedArguments) throws(CLIError) {
            keyType = arguments.has("key-b") ? .b : .a
            if let text = arguments.value("key") {
                do { key = try MifareKey(hex: text) } catch { throw .usage("--key: \(error.reason)") }
            }
            keysFile = arguments.value("keys")
            if key != nil, keysFile != nil { throw .usage("give --key HEX12 (one key for every sector) or --keys FILE (a dump whose trailers hold the keys), not both") }
        }

        /// The key of each sector: --key, else the keys file's trailers, else `dump`'s, else `fallback`.
        func resolve(kind: StorageCardKind, dump: MifareClassicDump?, fallback: MifareKey?) throws -> (Int) -> MifareKey {
            if let key { return { _ in key } }
            if let keysFile {
                let keys = try readDumpFile(keysFile, option: "--keys") { bytes throws(StorageDumpError) in try MifareClassicDump(kind: kind, bytes: bytes, file: keysFile) }
                return { [keyType] in keys.key(keyType, sector: $0) }
            }
            if let dump { return { [keyType] in dump.key(keyType, sector: $0) } }
            let key = fallback!
            return { _ in key }
        }
    }

    /// Reads a dump file and parses it with `parse`.
    /// - Throws: `CLIError.failure` naming the file: missing, unreadable, or the wrong size.
    static func readDumpFile<T>(_ path: String, option: String, _ parse: ([UInt8]) throws(StorageDumpError) -> T) throws(CLIError) -> T {
        guard let data = FileManager.default.contents(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw .failure("\(option) \(path): \(exists ? "cannot be read (a directory, or no permission)" : "no such file")")
        }
        do { return try parse([UInt8](data)) } catch { throw .failure("\(option) \(error.reason)") }
    }

    /// Which Type 2 Tag the card is, from GET_VERSION: an NTAG213/215/216, or a MIFARE Ultralight
    /// when the tag does not answer (then it is selected again: a tag that does not know a command
    /// ignores what follows until reselected, ISO/IEC 14443-3 §6.3).
    /// - Throws: `CLIError.failure` for a GET_VERSION answer naming another model.
    static func type2Layout(card: StorageCard, session: CardSession) throws -> (Type2TagLayout, Type2TagIdentification) {
        let identification = try card.type2Version()
        switch identification {
        case .version(let bytes):
            guard let product = Type2TagProduct(version: bytes) else {
                throw CLIError.failure("GET_VERSION answered \(bytes.hexString), which names no NTAG213/215/216: dumps and restores know MIFARE Ultralight and NTAG213/215/216 only")
            }
            return (Type2TagLayout(product: product), identification)
        case .refused:
            try reselect(session, reason: "no answer to GET_VERSION: select the tag again")
            return (Type2TagLayout(product: nil), identification)
        }
    }

    /// Why a dump or restore starts with the card activated anew: a program that drove the reader
    /// before (libnfc's tools end with InRelease, `chips/pn53x.c` pn53x_idle) leaves no selected
    /// target, and the reader's pseudo-APDUs then fail until the card is activated again
    /// (docs/storage-card-dumps.md §4).
    static let activateAnew = "activate the card anew: a program before may have released it (InRelease)"

    /// SCardReconnect with reset, so the reader activates the tag anew (recorded as a card reset).
    static func reselect(_ session: CardSession, reason: String) throws(CLIError) {
        try? session.recorder?.recordEvent(.cardReset, [TranscriptAttribute("reason", reason)])
        do throws(PCSCError) {
            try CallWatchdog.shared.guarding("SCardReconnect") { () throws(PCSCError) in
                try session.handle.reconnect(share: .shared, protocols: .any, initialization: .reset)
            }
        } catch {
            throw CLIError.failure("could not activate the card again (SCardReconnect; \(reason)): \(describe(error)); lift it off the reader, put it back and try again")
        }
    }

    /// The storage card in the session, activated anew (``reselect(_:reason:)``, ``activateAnew``)
    /// and named by the ATR the reader gives after that (not the one pcscd saw at connect time: a
    /// card swapped in between would be taken for the old one): its PC/SC part 3 description and
    /// kind, refusing other cards.
    static func dumpableCard(_ session: CardSession, command: String) throws(CLIError) -> (ContactlessStorageCard, StorageCardKind) {
        try reselect(session, reason: activateAnew)
        let atr = (try? session.handle.status().atr) ?? session.atr
        guard let storage = StorageCard.identify(atr: atr) else {
            throw .failure("\(command) is for storage cards (MIFARE Classic, MIFARE Ultralight, NTAG21x); the card in '\(session.reader)' is not a PC/SC part 3 storage card (ATR \(atr.hexString))")
        }
        let kind = StorageCardKind(cardName: storage.cardName)
        guard kind.isMifareClassic || kind == .type2Tag else {
            throw .failure("\(command) is for MIFARE Classic, MIFARE Ultralight and NTAG21x; the card in '\(session.reader)' is a \(kind)")
        }
        return (storage, kind)
    }

    /// A storage-card error, a dump refusal or a channel error in words.
    static func dumpFailure(_ error: any Error, doing: String) -> CLIError {
        switch error {
        case let error as CLIError: error
        case let error as StorageCardError: .failure("\(doing): \(error)")
        case let error as StorageDumpError: .failure("\(doing): \(error)")
        default: .failure("\(doing): the reader or card stopped answering: \(channelErrorText(error))")
        }
    }

    // MARK: read --dump

    /// `read --dump FILE`: every block (MIFARE Classic) or page (Type 2 Tag) into FILE in libnfc's
    /// layout. Nothing is written when a block cannot be read; FILE is written whole or not at all.
    static func runDumpRead(_ invocation: Invocation, context: any PCSCClientContext, reader: String, path: String) throws -> Int32 {
        let arguments = invocation.arguments
        if arguments.value("blocks") != nil { throw CLIError.usage("--dump reads every block; drop --blocks") }
        if FileManager.default.fileExists(atPath: path) {
            throw CLIError.failure("--dump \(path): the file exists; give a new file name (a dump is never written over)")
        }
        let keys = try DumpKeys(arguments)
        let session = try CardSession.open(context: context, reader: reader, record: arguments.value("record"), command: "read", recordings: invocation.recordings)
        defer { session.close() }
        let (storage, kind) = try dumpableCard(session, command: "read --dump")
        if kind == .type2Tag, keys.key != nil || keys.keysFile != nil || arguments.has("key-b") {
            throw CLIError.usage("--key, --keys and --key-b are for MIFARE Classic cards; the card in '\(reader)' is \(kind)")
        }
        let json = arguments.has("json")
        return try withCardTransaction(session.handle, reader: reader) {
            let card = StorageCard(channel: session.channel)
            let uid = try? card.uid()
            let bytes: [UInt8]
            let cardText: String
            let summary: String
            do {
                if kind.isMifareClassic {
                    let keyFor = try keys.resolve(kind: kind, dump: nil, fallback: try! MifareKey(bytes: [UInt8](repeating: 0xFF, count: 6)))
                    let dump = try MifareClassicDump.read(kind: kind, keyType: keys.keyType, keyForSector: keyFor, from: card)
                    bytes = dump.bytes
                    cardText = cardLine(storage: storage, kind: kind, identification: nil)
                    summary = "read \(dump.blocks.count) blocks (\(dump.sectorCount) sectors) with key \(keys.keyType)\(keys.key == nil && keys.keysFile == nil ? " (the transport key: give --key or --keys for others)" : "")"
                } else {
                    let (layout, identification) = try type2Layout(card: card, session: session)
                    let dump = try Type2TagDump.read(layout: layout, from: card)
                    bytes = dump.bytes
                    cardText = cardLine(storage: storage, kind: kind, identification: identification)
                    summary = "read \(layout.pageCount) pages of the \(layout)"
                }
            } catch {
                throw dumpFailure(error, doing: "not dumped")
            }
            try writeNewFile(bytes, to: path)
            let layoutText = kind.isMifareClassic
                ? "libnfc's .mfd layout: 16 bytes per block; trailers hold key A as used, the access bits read, key B where the card showed it, else 00 × 6"
                : "libnfc's layout: 4 bytes per page from page 0; PWD and PACK read as 00"
            if json {
                invocation.out(JSONValue.object([
                    ("reader", .string(reader)), ("card", .string(cardText)), ("uid", uid.map { .hex($0) } ?? .null),
                    ("file", .string(path)), ("bytes", .int(bytes.count)),
                    (kind.isMifareClassic ? "blocks" : "pages", .int(bytes.count / (kind.isMifareClassic ? 16 : 4))),
                ]).prettySerialized())
            } else {
                invocation.out("reader: \(reader)")
                invocation.out("card: \(cardText)")
                if let uid { invocation.out("UID \(uid.hexString)") }
                invocation.out(summary)
                invocation.out("wrote \(path): \(bytes.count) bytes (\(layoutText))")
            }
            return exitSuccess
        }
    }

    /// Writes `bytes` to a new file at `path`, whole or not at all, mode 0600 (a dump holds the
    /// card's keys by design): into a temporary file beside it, created 0600 by open(2) itself
    /// (never readable by others, even for a moment), flushed (fsync), then hard-linked to `path`
    /// (which fails if `path` exists: a dump is never written over).
    /// - Throws: `CLIError.failure` naming the file and the cause (strerror).
    static func writeNewFile(_ bytes: [UInt8], to path: String) throws(CLIError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !base.isEmpty else { throw .failure("--dump \(path): names a directory; give a file name") }
        let temporary = "\(directory).\(base).\(getpid()).partial"
        func failure(_ what: String, _ e: Int32) -> CLIError {
            .failure("--dump \(path): \(what): \(String(cString: strerror(e))) (errno \(e)); nothing was written")
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode_t(0o600))
        guard fd >= 0 else { throw failure("cannot create \(temporary)", errno) }
        defer { _ = unlink(temporary) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let e = n < 0 ? errno : EIO
                _ = close(fd)
                throw failure("could not write the file", e)
            }
            done += n
        }
        if fsync(fd) != 0 {
            let e = errno
            _ = close(fd)
            throw failure("could not flush the file to disk", e)
        }
        if close(fd) != 0 { throw failure("could not write the file", errno) }
        if link(temporary, path) != 0 {
            let e = errno
            if e == EEXIST { throw .failure("--dump \(path): the file exists; give a new file name (a dump is never written over)") }
            throw failure("could not write the file", e)
        }
    }

    // MARK: write-dump

    static let writeDumpCommand = Command(
        name: "write-dump",
        abstract: SecbridgeCLI.toolAbstract("write-dump"),
        usage: "FILE [--reader NAME|INDEX] [--key HEX12 | --keys FILE] [--key-b] [--write-trailers] [--lock-bytes] [--config] [--wait SECONDS] [--record FILE] [--yes] [--json]",
        discussion: """
            Restores a dump in libnfc's layout (from `secbridge read --dump`, nfc-mfclassic or
            nfc-mfultralight) to the storage card on a PC/SC part 3 reader such as the ACR122U. The
            file must be exactly the card's size (MIFARE Mini 320, 1K 1024, 4K 4096 bytes;
            Ultralight 64, NTAG213 180, NTAG215 540, NTAG216 924 bytes). Every block or page is
            checked against the card before anything is written; one refusal and nothing is written.

            MIFARE Classic: each sector is authenticated with the dump's own key A (key B with
            --key-b), or --key for every sector, or the trailers of --keys FILE; its trailer's
            access bits are read and decoded, and a data block that differs from the card is written
            only if its access conditions let the key held write it. Block 0 (the manufacturer
            block) is never written: it is read-only on a genuine card. A sector trailer is written
            only with --write-trailers, and only when the dump's access bits are consistent (each
            bit of bytes 6-8 the inverse of its copy: others would block the sector for good) and
            the card's trailer conditions let the key held write the keys and any changed access
            bits. A dump made with key A by nfc-mfclassic holds key B as 00 00 00 00 00 00.

            MIFARE Ultralight / NTAG21x: pages 0-1 and bytes 0-1 of page 2 (UID, check bytes,
            internal byte) are never written; a page a lock bit protects is refused; page 3 (the
            capability container) is one-time programmable, so a dump that would clear one of its
            bits is refused; lock bytes (page 2 bytes 2-3, the NTAG dynamic lock page) only with
            --lock-bytes, written last and never clearing a bit; NTAG CFG0/CFG1 only with --config;
            PWD and PACK never (they read as 00, so a dump does not hold them).

            Keys never appear in the output or in transcripts.

            Example:
              $ secbridge read --dump card.mfd --key FFFFFFFFFFFF
              $ secbridge write-dump card.mfd --yes
            """,
        options: [
            .reader("The reader: an index from `secbridge readers` or part of its name."),
            .value("key", "HEX12", "MIFARE Classic: authenticate every sector with this key (12 hex digits) instead of the dump's.").secret(),
            .value("keys", "FILE", "MIFARE Classic: take each sector's key from the trailers of this .mfd dump."),
            .flag("key-b", "MIFARE Classic: authenticate with key B instead of key A."),
            .flag("write-trailers", "MIFARE Classic: also write the sector trailers (keys and access bits), after checking the access bits."),
            .flag("lock-bytes", "Ultralight/NTAG: also write the lock bytes (page 2 bytes 2-3, the dynamic lock page); lock bits are permanent."),
            .flag("config", "NTAG: also write CFG0 and CFG1 when they differ."),
            .value("record", "FILE", "Record the exchanges to a transcript FILE."),
            .flag("yes", "Write without asking."),
            .waitForCard,
            .flag("json", "Print a JSON object {reader, card, uid, file, unit (block or page), written: [numbers], unchanged, notes}; the question goes to standard error."),
        ],
        run: runWriteDump
    )

    @Sendable static func runWriteDump(_ invocation: Invocation) throws -> Int32 {
        let arguments = invocation.arguments
        guard arguments.positional.count == 1 else {
            throw CLIError.usage(arguments.positional.isEmpty ? "give the dump FILE to write" : "write-dump takes one FILE, got \(arguments.positional.count) arguments")
        }
        let path = arguments.positional[0]
        let keys = try DumpKeys(arguments)
        // The file is checked for existence before any card is touched; its size once the card is known.
        guard FileManager.default.fileExists(atPath: path) else { throw CLIError.failure("\(path): no such file") }
        if let record = arguments.value("record") {
            // The transcript's size is bounded by the dump's: a disk without that room is refused
            // before the card is touched, so that the card write never outruns its recording.
            let dumpBytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
            try RecordingRoom.check(path: record, needed: writeDumpRecordingBound(dumpBytes: dumpBytes ?? 4096), command: "write-dump --record")
        }
        let context = try openContext(invocation)
        let session = try CardSession.open(
            context: context, reader: arguments.value("reader"), record: arguments.value("record"), command: "write-dump",
            wait: arguments.seconds("wait"), recordings: invocation.recordings, work: "the card write")
        defer { session.close() }
        let (storage, kind) = try dumpableCard(session, command: "write-dump")
        if kind == .type2Tag, keys.key != nil || keys.keysFile != nil || arguments.has("key-b") || arguments.has("write-trailers") {
            throw CLIError.usage("--key, --keys, --key-b and --write-trailers are for MIFARE Classic cards; the card in '\(session.reader)' is \(kind)")
        }
        if kind.isMifareClassic, arguments.has("lock-bytes") || arguments.has("config") {
            throw CLIError.usage("--lock-bytes and --config are for MIFARE Ultralight / NTAG21x; the card in '\(session.reader)' is a \(kind)")
        }
        let confirm = consoleConfirmation(invocation)
        let json = invocation.json
        // With --json the lines are kept for the one object printed at the end.
        var lines: [String] = []
        var unit = "block", written: [Int] = [], unchanged = 0, cardText: String?
        let out = { (line: String) in if json { lines.append(line) } else { invocation.out(line) } }
        var uid: [UInt8]?
        let status = try withCardTransaction(session.handle, reader: session.reader) {
            let card = StorageCard(channel: session.channel)
            uid = try? card.uid()
            out("reader: \(session.reader)")
            do {
                if kind.isMifareClassic {
                    let dump = try readDumpFile(path, option: "write-dump") { bytes throws(StorageDumpError) in try MifareClassicDump(kind: kind, bytes: bytes, file: path) }
                    cardText = cardLine(storage: storage, kind: kind, identification: nil)
                    out("card: \(cardText!)" + (uid.map { "  UID \($0.hexString)" } ?? ""))
                    let keyFor = try keys.resolve(kind: kind, dump: dump, fallback: nil)
                    let plan = try dump.plan(keyType: keys.keyType, keyForSector: keyFor, writeTrailers: arguments.has("write-trailers"), on: card)
                    out("note: block 0 (the manufacturer block: UID, BCC, SAK, ATQA) is never written: it is read-only on a genuine card" + (plan.blockZeroDiffers ? "; the dump's block 0 differs from the card's (a dump of another card)" : ""))
                    if !plan.trailersSkipped.isEmpty {
                        out("note: \(plan.trailersSkipped.count) sector trailer\(plan.trailersSkipped.count == 1 ? "" : "s") differ\(plan.trailersSkipped.count == 1 ? "s" : "") from the card's and \(plan.trailersSkipped.count == 1 ? "was" : "were") not written (blocks \(plan.trailersSkipped.map(String.init).joined(separator: ", "))); add --write-trailers to write keys and access bits")
                    }
                    let blocks = plan.writes.map(\.block)
                    unchanged = plan.unchanged.count
                    guard !blocks.isEmpty else {
                        out("nothing to write: the card already holds the dump's blocks (\(plan.unchanged.count) unchanged)")
                        return exitSuccess
                    }
                    guard confirm("Write \(blocks.count) block\(blocks.count == 1 ? "" : "s") to the card\(uid.map { " \($0.hexString)" } ?? "") on \(session.reader)?") else {
                        throw CLIError.failure("not written: the write was not confirmed")
                    }
                    try MifareClassicDump.execute(plan, keyType: keys.keyType, keyForSector: keyFor, on: card)
                    written = blocks
                    out("wrote \(blocks.count) block\(blocks.count == 1 ? "" : "s") (\(ranges(blocks))); \(plan.unchanged.count) unchanged")
                } else {
                    let (layout, identification) = try type2Layout(card: card, session: session)
                    cardText = cardLine(storage: storage, kind: kind, identification: identification)
                    out("card: \(cardText!)" + (uid.map { "  UID \($0.hexString)" } ?? ""))
                    let dump = try readDumpFile(path, option: "write-dump") { bytes throws(StorageDumpError) in try Type2TagDump(layout: layout, bytes: bytes, file: path) }
                    let current = try Type2TagDump.read(layout: layout, from: card)
                    let plan = try dump.plan(onCard: current, lockBytes: arguments.has("lock-bytes"), configuration: arguments.has("config"))
                    unit = "page"
                    unchanged = plan.unchanged.count
                    if !plan.neverWritten.isEmpty {
                        out("note: pages \(ranges(plan.neverWritten)) differ from the tag's and are never written (UID and check bytes, internal byte, PWD, PACK)")
                    }
                    if !plan.locksSkipped.isEmpty {
                        out("note: the lock bytes (page\(plan.locksSkipped.count == 1 ? "" : "s") \(ranges(plan.locksSkipped))) differ from the tag's and were not written; add --lock-bytes to set them (lock bits are permanent)")
                    }
                    guard !plan.pages.isEmpty else {
                        out("nothing to write: the tag already holds the dump's pages (\(plan.unchanged.count) unchanged)")
                        return exitSuccess
                    }
                    guard confirm("Write \(plan.pages.count) page\(plan.pages.count == 1 ? "" : "s") to the tag\(uid.map { " \($0.hexString)" } ?? "") on \(session.reader)?") else {
                        throw CLIError.failure("not written: the write was not confirmed")
                    }
                    try Type2TagDump.execute(plan, on: card)
                    written = plan.pages.sorted()
                    out("wrote \(plan.pages.count) page\(plan.pages.count == 1 ? "" : "s") (\(ranges(plan.pages.sorted()))); \(plan.unchanged.count) unchanged")
                }
            } catch {
                throw dumpFailure(error, doing: "write-dump \(path)")
            }
            return exitSuccess
        }
        if json {
            invocation.out(JSONValue.object([
                ("reader", .string(session.reader)),
                ("card", cardText.map { .string($0) } ?? .null),
                ("uid", uid.map { .hex($0) } ?? .null),
                ("file", .string(path)),
                ("unit", .string(unit)),
                ("written", .array(written.map { .int($0) })),
                ("unchanged", .int(unchanged)),
                ("notes", .array(lines.filter { $0.hasPrefix("note: ") || $0.hasPrefix("nothing to write") }.map { .string($0) })),
            ]).prettySerialized())
        }
        return status
    }

    /// The most a `write-dump --record` transcript of a dump of `dumpBytes` bytes takes: 16 KiB
    /// (header, identification) and 32 bytes per dump byte (each 16-byte block read for the plan
    /// and written, with its sector's key load and authentication). Measured: 12 388 bytes for a
    /// MIFARE Classic 1K with all 47 data blocks written, against 48 KiB here
    /// (`SecbridgeCLITests/RecordingFailureTests.swift`).
    static func writeDumpRecordingBound(dumpBytes: Int) -> UInt64 {
        UInt64(16 * 1024 + 32 * max(dumpBytes, 0))
    }

    /// `4–6, 8, 12–14`: numbers as ranges of consecutive runs.
    static func ranges(_ numbers: [Int]) -> String {
        var parts: [String] = []
        var i = 0
        while i < numbers.count {
            var j = i
            while j + 1 < numbers.count, numbers[j + 1] == numbers[j] + 1 { j += 1 }
            parts.append(i == j ? "\(numbers[i])" : "\(numbers[i])–\(numbers[j])")
            i = j + 1
        }
        return parts.joined(separator: ", ")
    }
}
