import ISO7816
import PCSC

extension SecbridgeCLI {
    package static let readersCommand = Command(
        name: "readers",
        abstract: "List the readers pcscd knows, with card state, ATR and protocol.",
        usage: "[--json] [--record FILE]",
        discussion: """
            Each reader is shown with its index (usable as --reader INDEX in other commands), its
            state, and for a present card its ATR and the protocol a shared connection negotiates
            (decided from the ATR as pcscd does: T=1 when offered, else T=0; nothing is connected).

            Example:
              $ secbridge readers
              0: Virtual PCD 00 00
                 state: present  protocol: T=1
                 ATR: 3B 80 80 01 01
            """,
        options: [
            .flag("json", "Print a JSON array of {index, name, state, atr, protocol}."),
            .value("record", "FILE", "Record what was seen (reader-added and card-inserted events) to a transcript FILE."),
        ],
        run: runReaders
    )

    @Sendable package static func runReaders(_ invocation: Invocation) throws -> Int32 {
        guard invocation.arguments.positional.isEmpty else {
            throw CLIError.usage("readers takes no arguments, got '\(invocation.arguments.positional[0])'")
        }
        let context = try openContext(invocation)
        let (readers, states) = try listReadersWithStates(context)
        let recording = try invocation.arguments.value("record").map { path throws(CLIError) in
            try TranscriptRecording.startEvents(
                path: path, command: "readers", console: invocation.console, recordings: invocation.recordings, stopsCommand: false)
        }
        defer { recording?.finish() }
        var entries: [JSONValue] = []
        for (index, state) in states.enumerated() {
            let flags = state.eventFlags
            // The protocol a shared connection gets, decided from the ATR the way pcscd decides
            // it (T=1 when the card offers it, else T=0; pcsc-lite prothandler.c), without
            // connecting: no card is powered or disturbed, and listing stays as fast as
            // `pcsc_scan -r`.
            var protocolName: String?
            if flags.contains(.present) && !flags.contains(.mute) {
                protocolName = negotiatedProtocol(atr: state.atr)
            }
            let stateWords = stateDescription(flags)
            recording?.record(.readerAttached(reader: state.readerName))
            if flags.contains(.present) { recording?.record(.cardInserted(reader: state.readerName, atr: state.atr)) }
            if invocation.json {
                entries.append(.object([
                    ("index", .int(index)),
                    ("name", .string(state.readerName)),
                    ("state", .array(stateWords.map { .string($0) })),
                    ("atr", state.atr.isEmpty ? .null : .hex(state.atr)),
                    ("protocol", protocolName.map { .string($0) } ?? .null),
                ]))
            } else {
                invocation.out("\(index): \(state.readerName)")
                var line = "   state: " + stateWords.joined(separator: ",")
                if let protocolName { line += "  protocol: \(protocolName)" }
                invocation.out(line)
                if !state.atr.isEmpty { invocation.out("   ATR: " + state.atr.hexString) }
            }
        }
        if invocation.json {
            invocation.out(JSONValue.array(entries).prettySerialized())
        } else if readers.isEmpty {
            invocation.console.err("no readers (pcscd is running but reports none)\n")
        }
        return SecbridgeCLI.exitSuccess
    }

    /// "T=1" when the ATR offers T=1 (a TDi with protocol 1), "T=0" when it offers only T=0, nil
    /// for an ATR that does not parse.
    package static func negotiatedProtocol(atr: [UInt8]) -> String? {
        guard let parsed = try? ATR(parsing: atr, requireValidChecksum: false) else { return nil }
        if parsed.protocols.contains(1) { return TransmissionProtocol.t1.rawValue }
        return TransmissionProtocol.t0.rawValue
    }

    package static func stateDescription(_ flags: ReaderStateFlags) -> [String] {
        var words: [String] = []
        if flags.contains(.present) { words.append("present") }
        if flags.contains(.empty) { words.append("empty") }
        if flags.contains(.mute) { words.append("mute") }
        if flags.contains(.exclusive) { words.append("exclusive") }
        if flags.contains(.inUse) { words.append("in-use") }
        if flags.contains(.unavailable) { words.append("unavailable") }
        if flags.contains(.unpowered) { words.append("unpowered") }
        if words.isEmpty { words.append("unknown") }
        return words
    }
}
