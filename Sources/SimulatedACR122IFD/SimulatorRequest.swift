import ACR122Simulator

/// One request to a simulated ACR122U, typed: what a control line (``ControlRequest``) says once
/// it is parsed, and what an in-process test hands the driver without any text
/// (`SimulatedDesk.control(_:reader:)` in SecbridgeTesting).
///
/// The text protocol is the table of ``ControlProtocol`` (verbs, arguments, reply fields); each
/// case here names its verb. A line becomes a request in one place, ``init(parsing:)``, which the
/// control socket and the `control-line` fuzz target both go through, and ``line`` gives the text
/// form back (``init(parsing:)`` of it is the same value: `SimulatorRequestTests`). Both paths end
/// in the same handler, `ControlProtocol.handle(_:binding:)`, which checks again what a typed value
/// can hold wrongly (a UID's length, a number's range, a peer id's characters), with the error the
/// text gives, then acts. Errors are ``ControlError``s; their reasons are the text protocol's.
///
/// Units: byte strings are bytes in the order they go on air (UIDs, ATS, IDm, PUPI, keys, NDEF
/// messages); ATQA is 16 bits, most significant byte first as libnfc prints it (`00 04` is
/// `0x0004`); times are simulated milliseconds; counts are 1-based where the table says `n-th`.
///
/// Error precedence: a line with several errors gets the same first error as before this type,
/// but for one: `place-terminal transcript=<path>` with a phone behaviour (`leave-after=`,
/// `taps=`, `host-delay-ms=`, `wtx=`) reports that the behaviour applies to a model before it
/// reads the transcript file (a transcript cannot carry a behaviour here), where it used to report
/// an unreadable file first. And `tag-memory`'s `first=`/`count=` that are not numbers at all get
/// `… is not a number (decimal, or hex with 0x)` (their range depends on the tag, known only when
/// the request is handled); a number out of the tag's range gets the message it always had.
package enum SimulatorRequest: Sendable, Hashable {
    /// `ping`: the driver, protocol version, reader directory, field and open order.
    case ping
    /// `help`: the verbs.
    case help
    /// `status`: personality, firmware, card presence, LED, PICC parameter, MCU timeout, RF, peers, busy.
    case status
    /// `place-card`: an ISO/IEC 14443-4 card.
    case placeCard(Card)
    /// `place-tag`: an ISO/IEC 14443-3 tag, without memory or with a Type 2 / MIFARE Classic memory.
    case placeTag(Tag)
    /// `place-target`: a FeliCa, ISO/IEC 14443-B or Topaz/Jewel target.
    case placeTarget(Target)
    /// `place-terminal`: an external terminal (a phone model, a recording or a transcript's commands).
    case placeTerminal(Terminal)
    /// `remove peer=<id>`: one peer out of the field.
    case remove(peer: String)
    /// `remove all=yes`: every peer out of the field.
    case removeAll
    /// `peers`: the peers in the field.
    case peers
    /// `personality name= [firmware=]`: the device replaced by one of another personality;
    /// `firmware` 10 printable ASCII characters (e.g. `ACR122U215`), nil for the personality's own.
    case personality(name: String, firmware: String? = nil)
    /// `fault late-reply=<n>`: the next n (1…16) Direct Transmit commands answer late.
    case fault(lateReplies: Int)
    /// `events [after=<n>]`: the field's events after sequence number n (0…2³¹−1).
    case events(after: Int = 0)
    /// `terminal-result peer=<id> [wait-ms=]`: a terminal's result, waiting at most
    /// `waitMilliseconds` (0…60 000, wall-clock milliseconds) for its run to end.
    case terminalResult(peer: String, waitMilliseconds: Int = 0)
    /// `card-log peer=<id>`: the C-APDUs a placed card received.
    case cardLog(peer: String)
    /// `tag-memory peer=<id> [first=] [count=]`: a tag's memory from unit `first` (default 0),
    /// `count` units (default all), a unit being a 4-byte page or a 16-byte block.
    case tagMemory(peer: String, first: Int? = nil, count: Int? = nil)
    /// `timescale`: the field's time scale (wall-clock seconds per simulated second; 0 on virtual time).
    case timescale
    /// `timescale value=`: sets the field's time scale, 0…1000 (1 is real time).
    case setTimescale(Double)
    /// `unplug`: the USB cable pulled.
    case unplug
    /// `replug`: plugged in again.
    case replug
    /// `pn532-serial`: a bare PN532 board in the field on a new pseudo-terminal.
    case pn532Serial
    /// `pn532-serial list=yes`: the boards already there.
    case pn532SerialList

    /// The arguments of `place-card`.
    package struct Card: Sendable, Hashable {
        /// 4, 7 or 10 bytes (ISO/IEC 14443-3).
        package var uid: [UInt8]
        /// ATQA, most significant byte first (`00 04` is 0x0004).
        package var atqa: UInt16
        /// SAK, one byte.
        package var sak: UInt8
        /// The whole ATS, TL (its length) first, 2…20 bytes.
        package var ats: [UInt8]
        /// What answers the card's C-APDUs.
        package var answers: CardAnswers
        /// The peer id (1…64 letters, digits, `-`, `_`), nil for the next `card-N`.
        package var id: String?

        /// ATQA `00 04` (ISO/IEC 14443-3, single-size UID), as the ACS example card.
        package static let defaultATQA: UInt16 = 0x0004
        /// SAK `20`: ISO/IEC 14443-4 compliant.
        package static let defaultSAK: UInt8 = 0x20
        /// ATS `05 78 80 70 02`: TL 5, T0 78, TA 80, TB 70, TC 02.
        package static let defaultATS: [UInt8] = [0x05, 0x78, 0x80, 0x70, 0x02]

        package init(uid: [UInt8], atqa: UInt16 = defaultATQA, sak: UInt8 = defaultSAK, ats: [UInt8] = defaultATS,
                     answers: CardAnswers = .applet(.ok), id: String? = nil) {
            self.uid = uid
            self.atqa = atqa
            self.sak = sak
            self.ats = ats
            self.answers = answers
            self.id = id
        }
    }

    /// What answers a placed card's C-APDUs.
    package enum CardAnswers: Sendable, Hashable {
        /// A built-in applet; `ndef` (for `t4t-ndef`, `t4t-ndef-v1`, at most 32 765 bytes) the NDEF
        /// message it holds; `leaveAfter` n: the card leaves the field during its n-th C-APDU.
        case applet(BuiltInApplet, ndef: [UInt8]? = nil, leaveAfter: Int? = nil)
        /// The answers of a transcript file (an absolute path), of its channel `channel`.
        case transcript(path: String, channel: String? = nil)
    }

    /// The arguments of `place-tag`.
    package struct Tag: Sendable, Hashable {
        /// 4, 7 or 10 bytes; a Type 2 tag's 7, a MIFARE Classic's 4 or 7.
        package var uid: [UInt8]
        /// What kind of tag.
        package var kind: TagKind
        /// A tag with memory leaves the field during its n-th command on air; nil: it stays.
        package var leaveAfter: Int?
        /// The peer id, nil for the next `tag-N`.
        package var id: String?

        package init(uid: [UInt8], kind: TagKind = .plain(), leaveAfter: Int? = nil, id: String? = nil) {
            self.uid = uid
            self.kind = kind
            self.leaveAfter = leaveAfter
            self.id = id
        }
    }

    /// The kind of a placed ISO/IEC 14443-3 tag.
    package enum TagKind: Sendable, Hashable {
        /// No memory: anticollision and any-key MIFARE authentication only (default ATQA `00 04`, SAK `08`).
        case plain(atqa: UInt16 = 0x0004, sak: UInt8 = 0x08)
        /// An NFC Forum Type 2 tag; `ndef` the raw NDEF message, nil for an empty NDEF tag.
        case type2(Type2TagModel, ndef: [UInt8]? = nil)
        /// A MIFARE Classic card; `key` (6 bytes) key A and key B of every sector.
        case classic(MIFAREClassicModel, key: [UInt8] = MIFAREClassicMemory.transportKey)
    }

    /// The arguments of `place-target`.
    package struct Target: Sendable, Hashable {
        /// The target's family and identity.
        package var family: TargetFamily
        /// The peer id, nil for the next `target-N`.
        package var id: String?

        package init(_ family: TargetFamily, id: String? = nil) {
            self.family = family
            self.id = id
        }
    }

    /// A target of another family than ISO/IEC 14443-A (docs/acr122-clones.md §4, §4b).
    package enum TargetFamily: Sendable, Hashable {
        /// FeliCa: `idm` 8 bytes, `memory` service 000B's blocks; `highSpeed` 424 kbit/s (`felica424`), else 212.
        case felica(idm: [UInt8] = defaultIDm, memory: [UInt8] = [], highSpeed: Bool = false)
        /// ISO/IEC 14443-B: `pupi` 4 bytes in ACS's example ATQB; `applet` answers its C-APDUs, nil: mute.
        case typeB(pupi: [UInt8] = defaultPUPI, applet: BuiltInApplet? = nil)
        /// Topaz/Jewel: `jewelID` 4 bytes, `memory` the tag's bytes.
        case jewel(jewelID: [UInt8] = defaultJewelID, memory: [UInt8] = [])

        /// IDm `01 01 05 01 86 04 02 02`.
        package static let defaultIDm: [UInt8] = [0x01, 0x01, 0x05, 0x01, 0x86, 0x04, 0x02, 0x02]
        /// PUPI `12 23 45 56`, bytes 1…4 of ACS's example ATQB `50 12 23 45 56 12 53 54 4E 33 81 C3`.
        package static let defaultPUPI: [UInt8] = [0x12, 0x23, 0x45, 0x56]
        /// Jewel ID `B5 7A 2C 00`.
        package static let defaultJewelID: [UInt8] = [0xB5, 0x7A, 0x2C, 0x00]

        /// The `family=` value.
        package var name: String {
            switch self {
            case .felica(_, _, let highSpeed): highSpeed ? "felica424" : "felica"
            case .typeB: "typeb"
            case .jewel: "jewel"
            }
        }
    }

    /// The arguments of `place-terminal`.
    package struct Terminal: Sendable, Hashable {
        /// What the terminal sends.
        package var source: TerminalSource
        /// The peer id, nil for the next `terminal-N`.
        package var id: String?

        package init(_ source: TerminalSource = .model(), id: String? = nil) {
            self.source = source
            self.id = id
        }
    }

    /// What a placed terminal sends.
    package enum TerminalSource: Sendable, Hashable {
        /// A model of ``ExternalTerminal/catalog`` (a `…-recording` replays a recording and takes no
        /// behaviour), with its ``PhoneBehaviour`` changed as `behaviour` says.
        case model(String = "android-t4t-read", behaviour: PhoneBehaviourChange = PhoneBehaviourChange())
        /// The commands of a transcript file (an absolute path), of its channel `channel`.
        case transcript(path: String, channel: String? = nil)
    }

    /// Changes to a terminal model's ``PhoneBehaviour`` (docs/terminal-models.md §6); nil leaves the
    /// model's own.
    package struct PhoneBehaviourChange: Sendable, Hashable {
        /// Leaves the field after its n-th exchange (1…10 000).
        package var leaveAfter: Int?
        /// Comes back this many simulated milliseconds (0…60 000) after it left; needs `leaveAfter`.
        package var returnAfterMilliseconds: Int?
        /// Reads this many times (1…16).
        package var taps: Int?
        /// The host's answer to C-APDU `hostDelayAt` comes this many simulated milliseconds (0…60 000) late.
        package var hostDelayMilliseconds: Int?
        /// The C-APDU (1…10 000, default 1) that `hostDelayMilliseconds` delays; needs it.
        package var hostDelayAt: Int?
        /// false: the PN532 sends no S(WTX) while its host works (default true).
        package var wtx: Bool?

        package init(leaveAfter: Int? = nil, returnAfterMilliseconds: Int? = nil, taps: Int? = nil,
                     hostDelayMilliseconds: Int? = nil, hostDelayAt: Int? = nil, wtx: Bool? = nil) {
            self.leaveAfter = leaveAfter
            self.returnAfterMilliseconds = returnAfterMilliseconds
            self.taps = taps
            self.hostDelayMilliseconds = hostDelayMilliseconds
            self.hostDelayAt = hostDelayAt
            self.wtx = wtx
        }

        /// Whether it changes anything the model would act on (`return-after-ms` and
        /// `host-delay-at` alone are refused before this is asked).
        var isEmpty: Bool { leaveAfter == nil && taps == nil && hostDelayMilliseconds == nil && wtx == nil }
    }
}

// MARK: Shorthands for tests

extension SimulatorRequest {
    /// `place-card` with a built-in applet.
    package static func placeCard(
        uid: [UInt8], atqa: UInt16 = Card.defaultATQA, sak: UInt8 = Card.defaultSAK, ats: [UInt8] = Card.defaultATS,
        applet: BuiltInApplet = .ok, ndef: [UInt8]? = nil, leaveAfter: Int? = nil, id: String? = nil
    ) -> Self {
        .placeCard(Card(uid: uid, atqa: atqa, sak: sak, ats: ats, answers: .applet(applet, ndef: ndef, leaveAfter: leaveAfter), id: id))
    }

    /// `place-card` answering from a transcript file.
    package static func placeCard(
        uid: [UInt8], atqa: UInt16 = Card.defaultATQA, sak: UInt8 = Card.defaultSAK, ats: [UInt8] = Card.defaultATS,
        transcript path: String, channel: String? = nil, id: String? = nil
    ) -> Self {
        .placeCard(Card(uid: uid, atqa: atqa, sak: sak, ats: ats, answers: .transcript(path: path, channel: channel), id: id))
    }

    /// `place-tag`.
    package static func placeTag(uid: [UInt8], _ kind: TagKind = .plain(), leaveAfter: Int? = nil, id: String? = nil) -> Self {
        .placeTag(Tag(uid: uid, kind: kind, leaveAfter: leaveAfter, id: id))
    }

    /// `place-target`.
    package static func placeTarget(_ family: TargetFamily, id: String? = nil) -> Self {
        .placeTarget(Target(family, id: id))
    }

    /// `place-terminal` with a model (default `android-t4t-read`).
    package static func placeTerminal(
        script: String = "android-t4t-read", _ behaviour: PhoneBehaviourChange = PhoneBehaviourChange(), id: String? = nil
    ) -> Self {
        .placeTerminal(Terminal(.model(script, behaviour: behaviour), id: id))
    }

    /// `place-terminal` sending a transcript's commands.
    package static func placeTerminal(transcript path: String, channel: String? = nil, id: String? = nil) -> Self {
        .placeTerminal(Terminal(.transcript(path: path, channel: channel), id: id))
    }
}

// MARK: Text

extension SimulatorRequest {
    /// The typed request a control line asks for.
    /// - Throws: ``ControlError`` `syntax` for a line that is not `verb key=value …`, and as
    ///   ``init(_:)``.
    package init(parsing line: String) throws(ControlError) {
        try self.init(try ControlRequest(parsing: line))
    }

    /// The typed request of a parsed line: every check that needs neither the device, the field
    /// nor a file (verbs, argument names, hex, numbers, names of applets, types, families, and
    /// which arguments go together).
    /// - Throws: ``ControlError`` `unknown-verb`, `missing-argument`, `bad-argument`, with the
    ///   reasons of the table in ``ControlProtocol``.
    init(_ request: ControlRequest) throws(ControlError) {
        switch request.verb {
        case "ping", "help", "status", "peers", "unplug", "replug":
            try request.allowOnly([])
            self = switch request.verb {
            case "ping": .ping
            case "help": .help
            case "status": .status
            case "peers": .peers
            case "unplug": .unplug
            default: .replug
            }
        case "place-card": self = .placeCard(try Self.card(request))
        case "place-tag": self = .placeTag(try Self.tag(request))
        case "place-target": self = .placeTarget(try Self.target(request))
        case "place-terminal": self = .placeTerminal(try Self.terminal(request))
        case "remove":
            try request.allowOnly(["peer", "all"])
            let id = request.value("peer")
            guard (id == nil) != (request.value("all") == nil) else {
                throw ControlError(.missingArgument, "remove needs peer=<id> or all=yes")
            }
            self = id.map { .remove(peer: $0) } ?? .removeAll
        case "personality":
            try request.allowOnly(["name", "firmware"])
            self = .personality(name: try request.required("name"), firmware: request.value("firmware"))
        case "timescale":
            try request.allowOnly(["value"])
            guard let text = request.value("value") else {
                self = .timescale
                return
            }
            guard let scale = DeviceName.timeScale(text) else { throw Self.badTimescale(text) }
            self = .setTimescale(scale)
        case "fault":
            try request.allowOnly(["late-reply"])
            guard let count = try request.integer("late-reply", in: Self.lateReplies) else {
                throw ControlError(.missingArgument, "fault needs late-reply=<1…16>")
            }
            self = .fault(lateReplies: count)
        case "events":
            try request.allowOnly(["after"])
            self = .events(after: try request.integer("after", in: Self.eventSequence) ?? 0)
        case "terminal-result":
            try request.allowOnly(["peer", "wait-ms"])
            let id = try request.required("peer")
            self = .terminalResult(peer: id, waitMilliseconds: try request.integer("wait-ms", in: Self.resultWait) ?? 0)
        case "card-log":
            try request.allowOnly(["peer"])
            self = .cardLog(peer: try request.required("peer"))
        case "tag-memory":
            try request.allowOnly(["peer", "id", "first", "count"])
            guard let id = request.value("peer") ?? request.value("id") else {
                throw ControlError(.missingArgument, "tag-memory needs peer=<id>")
            }
            // Their ranges depend on the tag (checked when handled); here only that they are numbers.
            func number(_ key: String) throws(ControlError) -> Int? {
                guard let text = request.value(key) else { return nil }
                guard let number = ControlRequest.number(text) else {
                    throw ControlError(.badArgument, "\(key)='\(text)' is not a number (decimal, or hex with 0x)")
                }
                return number
            }
            self = .tagMemory(peer: id, first: try number("first"), count: try number("count"))
        case "pn532-serial":
            try request.allowOnly(["list"])
            self = request.value("list") != nil ? .pn532SerialList : .pn532Serial
        default:
            throw ControlError(.unknownVerb, "no verb '\(request.verb)'; verbs: \(ControlProtocol.verbs.joined(separator: ", "))")
        }
    }

    /// The request as a control line (``ControlRequest``); arguments at their defaults are left out.
    var controlRequest: ControlRequest {
        var arguments: [(String, String)] = []
        func add(_ key: String, _ value: String?) { if let value { arguments.append((key, value)) } }
        func add(_ key: String, bytes: [UInt8]?) { add(key, bytes.map { ControlHex.format($0) }) }
        func add(_ key: String, _ number: Int?) { add(key, number.map { String($0) }) }
        let verb: String
        switch self {
        case .ping: verb = "ping"
        case .help: verb = "help"
        case .status: verb = "status"
        case .peers: verb = "peers"
        case .unplug: verb = "unplug"
        case .replug: verb = "replug"
        case .placeCard(let card):
            verb = "place-card"
            add("uid", bytes: card.uid)
            if card.atqa != Card.defaultATQA { add("atqa", bytes: [UInt8(card.atqa >> 8), UInt8(card.atqa & 0xFF)]) }
            if card.sak != Card.defaultSAK { add("sak", bytes: [card.sak]) }
            if card.ats != Card.defaultATS { add("ats", bytes: card.ats) }
            switch card.answers {
            case .applet(let applet, let ndef, let leaveAfter):
                if applet != .ok { add("applet", applet.rawValue) }
                add("ndef", bytes: ndef)
                add("leave-after", leaveAfter)
            case .transcript(let path, let channel):
                add("transcript", path)
                add("channel", channel)
            }
            add("id", card.id)
        case .placeTag(let tag):
            verb = "place-tag"
            add("uid", bytes: tag.uid)
            switch tag.kind {
            case .plain(let atqa, let sak):
                if atqa != 0x0004 { add("atqa", bytes: [UInt8(atqa >> 8), UInt8(atqa & 0xFF)]) }
                if sak != 0x08 { add("sak", bytes: [sak]) }
            case .type2(let model, let ndef):
                add("type", model.rawValue)
                add("ndef", bytes: ndef)
            case .classic(let model, let key):
                add("type", model.rawValue)
                if key != MIFAREClassicMemory.transportKey { add("key", bytes: key) }
            }
            add("leave-after", tag.leaveAfter)
            add("id", tag.id)
        case .placeTarget(let target):
            verb = "place-target"
            add("family", target.family.name)
            switch target.family {
            case .felica(let idm, let memory, _):
                if idm != TargetFamily.defaultIDm { add("idm", bytes: idm) }
                if !memory.isEmpty { add("memory", bytes: memory) }
            case .typeB(let pupi, let applet):
                if pupi != TargetFamily.defaultPUPI { add("pupi", bytes: pupi) }
                add("applet", applet?.rawValue)
            case .jewel(let jewelID, let memory):
                if jewelID != TargetFamily.defaultJewelID { add("jewel-id", bytes: jewelID) }
                if !memory.isEmpty { add("memory", bytes: memory) }
            }
            add("id", target.id)
        case .placeTerminal(let terminal):
            verb = "place-terminal"
            switch terminal.source {
            case .model(let script, let change):
                if script != "android-t4t-read" { add("script", script) }
                add("leave-after", change.leaveAfter)
                add("return-after-ms", change.returnAfterMilliseconds)
                add("taps", change.taps)
                add("host-delay-ms", change.hostDelayMilliseconds)
                add("host-delay-at", change.hostDelayAt)
                add("wtx", change.wtx.map { $0 ? "yes" : "no" })
            case .transcript(let path, let channel):
                add("transcript", path)
                add("channel", channel)
            }
            add("id", terminal.id)
        case .remove(let peer):
            verb = "remove"
            add("peer", peer)
        case .removeAll:
            verb = "remove"
            add("all", "yes")
        case .personality(let name, let firmware):
            verb = "personality"
            add("name", name)
            add("firmware", firmware)
        case .fault(let count):
            verb = "fault"
            add("late-reply", count)
        case .events(let after):
            verb = "events"
            if after != 0 { add("after", after) }
        case .terminalResult(let peer, let wait):
            verb = "terminal-result"
            add("peer", peer)
            if wait != 0 { add("wait-ms", wait) }
        case .cardLog(let peer):
            verb = "card-log"
            add("peer", peer)
        case .tagMemory(let peer, let first, let count):
            verb = "tag-memory"
            add("peer", peer)
            add("first", first)
            add("count", count)
        case .timescale: verb = "timescale"
        case .setTimescale(let scale):
            verb = "timescale"
            add("value", String(scale))
        case .pn532Serial: verb = "pn532-serial"
        case .pn532SerialList:
            verb = "pn532-serial"
            add("list", "yes")
        }
        return ControlRequest(verb: verb, arguments: arguments.map { ControlRequest.Argument(key: $0.0, value: $0.1) })
    }

    /// The request as one control line, without `\n` (``init(parsing:)`` of it gives this request back).
    package var line: String { controlRequest.serialized }

    // MARK: Ranges and checks, shared by the text and the typed path

    static let lateReplies = 1...16
    static let eventSequence = 0...Int(Int32.max)
    static let resultWait = 0...ControlProtocol.maximumWait
    static let cardLeaveAfter = 1...1_000_000
    static let terminalLeaveAfter = 1...10_000
    static let simulatedMilliseconds = 0...60_000
    static let tapCount = 1...16
    static let commandNumber = 1...10_000

    static func badTimescale(_ text: String) -> ControlError {
        ControlError(.badArgument, "timescale value '\(text)' must be a decimal number from 0 to 1000, e.g. value=0.01 (1 is real time)")
    }

    /// `value` (of the typed path) in `range`, with the text path's message.
    static func check(_ key: String, _ value: Int?, in range: ClosedRange<Int>) throws(ControlError) {
        guard let value, !range.contains(value) else { return }
        throw ControlError(.badArgument, "\(key)='\(value)' must be a number in \(range.lowerBound)…\(range.upperBound)")
    }

    static func checkUID(_ uid: [UInt8]) throws(ControlError) {
        guard [4, 7, 10].contains(uid.count) else {
            throw ControlError(.badArgument, "uid must be 4, 7 or 10 bytes (ISO/IEC 14443-3), got \(uid.count)")
        }
    }

    static func checkATS(_ ats: [UInt8]) throws(ControlError) {
        guard !ats.isEmpty, Int(ats[0]) == ats.count, ats.count <= 20 else {
            throw ControlError(.badArgument, "ats must be a whole ATS whose first byte TL is its length (2…20 bytes), e.g. \"05 78 80 70 02\"")
        }
    }

    /// A card's applet and NDEF message go together, and the message fits a Type 4 Tag's NDEF file.
    static func checkCardNDEF(_ ndef: [UInt8]?, applet: BuiltInApplet) throws(ControlError) {
        guard ndef == nil || applet == .t4tNDEF || applet == .t4tNDEFVersion1 else {
            throw ControlError(.badArgument, "ndef= goes with applet=t4t-ndef or applet=t4t-ndef-v1")
        }
        guard (ndef?.count ?? 0) <= 0x7FFD else {
            throw ControlError(.badArgument, "ndef= holds at most 32765 bytes (a Type 4 Tag's NDEF file is at most 7FFF, NLEN included)")
        }
    }

    static func checkLength(_ key: String, _ bytes: [UInt8], _ count: Int) throws(ControlError) {
        guard bytes.count == count else {
            throw ControlError(.badArgument, "\(key) must be \(count) hex bytes, got \(bytes.count)")
        }
    }

    static let plainLeaveAfter = ControlError(
        .badArgument, "leave-after= needs a tag with memory (type=ntag213|ntag215|ntag216|ultralight|classic1k|classic4k|mini)")

    /// The checks of a phone behaviour, in the text's order.
    static func check(_ change: PhoneBehaviourChange) throws(ControlError) {
        try check("leave-after", change.leaveAfter, in: terminalLeaveAfter)
        try check("return-after-ms", change.returnAfterMilliseconds, in: simulatedMilliseconds)
        if change.returnAfterMilliseconds != nil, change.leaveAfter == nil {
            throw ControlError(.missingArgument, "return-after-ms (how long the phone stays away, simulated) needs leave-after=<n>")
        }
        try check("taps", change.taps, in: tapCount)
        try check("host-delay-ms", change.hostDelayMilliseconds, in: simulatedMilliseconds)
        try check("host-delay-at", change.hostDelayAt, in: commandNumber)
        if change.hostDelayAt != nil, change.hostDelayMilliseconds == nil {
            throw ControlError(.missingArgument, "host-delay-at needs host-delay-ms=<simulated milliseconds>")
        }
    }

    static func checkRecording(_ name: String, _ change: PhoneBehaviourChange) throws(ControlError) {
        if !change.isEmpty, name.hasSuffix("-recording") {
            throw ControlError(.badArgument, "leave-after, taps, host-delay-ms and wtx apply to a model, not to the recording '\(name)'")
        }
    }

    static func unknownApplet(_ name: String) -> ControlError {
        ControlError(.badArgument, "unknown applet '\(name)'; known: \(BuiltInApplet.allCases.map(\.rawValue).joined(separator: ", "))")
    }

    // MARK: Parsing the place- verbs

    private static func uid(_ request: ControlRequest) throws(ControlError) -> [UInt8] {
        guard let uid = try request.bytes("uid") else {
            throw ControlError(.missingArgument, "\(request.verb) needs uid=<4, 7 or 10 hex bytes>")
        }
        try checkUID(uid)
        return uid
    }

    /// ATQA as libnfc prints it, most significant byte first: `atqa="00 04"`.
    private static func atqa(_ request: ControlRequest) throws(ControlError) -> UInt16? {
        guard let bytes = try request.bytes("atqa") else { return nil }
        guard bytes.count == 2 else {
            throw ControlError(.badArgument, "atqa must be 2 bytes, most significant first (e.g. \"00 04\")")
        }
        return UInt16(bytes[0]) << 8 | UInt16(bytes[1])
    }

    private static func byte(_ request: ControlRequest, _ key: String) throws(ControlError) -> UInt8? {
        guard let bytes = try request.bytes(key) else { return nil }
        guard bytes.count == 1 else { throw ControlError(.badArgument, "\(key) must be one hex byte (e.g. 20)") }
        return bytes[0]
    }

    private static func card(_ request: ControlRequest) throws(ControlError) -> Card {
        try request.allowOnly(["uid", "atqa", "sak", "ats", "applet", "transcript", "channel", "id", "leave-after", "ndef"])
        let leaveAfter = try request.integer("leave-after", in: cardLeaveAfter)
        let uid = try uid(request)
        let atqa = try atqa(request) ?? Card.defaultATQA
        let sak = try byte(request, "sak") ?? Card.defaultSAK
        let ats = try request.bytes("ats") ?? Card.defaultATS
        try checkATS(ats)
        let answers: CardAnswers
        if let path = request.value("transcript") {
            guard request.value("applet") == nil else {
                throw ControlError(.badArgument, "give applet= or transcript=, not both")
            }
            guard leaveAfter == nil else {
                throw ControlError(.badArgument, "leave-after= goes with applet=, not with transcript=")
            }
            answers = .transcript(path: path, channel: request.value("channel"))
        } else {
            let name = request.value("applet") ?? BuiltInApplet.ok.rawValue
            guard let applet = BuiltInApplet(rawValue: name) else { throw unknownApplet(name) }
            let ndef = try request.bytes("ndef")
            try checkCardNDEF(ndef, applet: applet)
            answers = .applet(applet, ndef: ndef, leaveAfter: leaveAfter)
        }
        return Card(uid: uid, atqa: atqa, sak: sak, ats: ats, answers: answers, id: request.value("id"))
    }

    private static func tag(_ request: ControlRequest) throws(ControlError) -> Tag {
        try request.allowOnly(["uid", "atqa", "sak", "id", "type", "ndef", "key", "leave-after"])
        let uid = try uid(request)
        let leaveAfter = try request.integer("leave-after", in: cardLeaveAfter)
        guard let typeName = request.value("type"), typeName != "plain" else {
            guard leaveAfter == nil else { throw plainLeaveAfter }
            guard request.value("ndef") == nil, request.value("key") == nil else {
                throw ControlError(.badArgument, "ndef= needs type=ntag213|ntag215|ntag216|ultralight; key= needs type=classic1k|classic4k|mini")
            }
            let kind = TagKind.plain(atqa: try atqa(request) ?? 0x0004, sak: try byte(request, "sak") ?? 0x08)
            return Tag(uid: uid, kind: kind, id: request.value("id"))
        }
        guard request.value("atqa") == nil, request.value("sak") == nil else {
            throw ControlError(.badArgument, "atqa= and sak= come from type=\(typeName); leave them out")
        }
        let kind: TagKind
        if let model = Type2TagModel(rawValue: typeName) {
            guard request.value("key") == nil else {
                throw ControlError(.badArgument, "key= is for MIFARE Classic (type=classic1k|classic4k|mini), not \(typeName)")
            }
            kind = .type2(model, ndef: try request.bytes("ndef"))
        } else if let model = MIFAREClassicModel(rawValue: typeName) {
            guard request.value("ndef") == nil else {
                throw ControlError(.badArgument, "ndef= is for Type 2 tags (type=ntag213|ntag215|ntag216|ultralight), not \(typeName)")
            }
            kind = .classic(model, key: try request.bytes("key") ?? MIFAREClassicMemory.transportKey)
        } else {
            throw ControlError(.badArgument, "unknown type '\(typeName)'; known: plain, \(ControlProtocol.tagTypeNames.joined(separator: ", "))")
        }
        return Tag(uid: uid, kind: kind, leaveAfter: leaveAfter, id: request.value("id"))
    }

    private static func target(_ request: ControlRequest) throws(ControlError) -> Target {
        try request.allowOnly(["family", "id", "idm", "pupi", "jewel-id", "memory", "applet"])
        func sized(_ key: String, _ count: Int, default value: [UInt8]) throws(ControlError) -> [UInt8] {
            guard let bytes = try request.bytes(key) else { return value }
            try checkLength(key, bytes, count)
            return bytes
        }
        let family = try request.required("family")
        let allowed: Set<String> = switch family {
        case "felica", "felica424": ["family", "id", "idm", "memory"]
        case "typeb": ["family", "id", "pupi", "applet"]
        case "jewel": ["family", "id", "jewel-id", "memory"]
        default: throw ControlError(.badArgument, "unknown family '\(family)'; known: felica, felica424, typeb, jewel")
        }
        if let extra = ["idm", "pupi", "jewel-id", "memory", "applet"].first(where: { request.value($0) != nil && !allowed.contains($0) }) {
            throw ControlError(.badArgument, "\(extra)= does not go with family=\(family)")
        }
        let memory = try request.bytes("memory") ?? []
        let kind: TargetFamily
        switch family {
        case "felica", "felica424":
            kind = .felica(idm: try sized("idm", 8, default: TargetFamily.defaultIDm), memory: memory, highSpeed: family == "felica424")
        case "typeb":
            let pupi = try sized("pupi", 4, default: TargetFamily.defaultPUPI)
            var applet: BuiltInApplet?
            if let name = request.value("applet") {
                guard let named = BuiltInApplet(rawValue: name) else { throw unknownApplet(name) }
                applet = named
            }
            kind = .typeB(pupi: pupi, applet: applet)
        default:
            kind = .jewel(jewelID: try sized("jewel-id", 4, default: TargetFamily.defaultJewelID), memory: memory)
        }
        return Target(kind, id: request.value("id"))
    }

    private static func terminal(_ request: ControlRequest) throws(ControlError) -> Terminal {
        try request.allowOnly(["script", "transcript", "channel", "id", "leave-after", "return-after-ms", "taps", "host-delay-ms", "host-delay-at", "wtx"])
        var change = PhoneBehaviourChange()
        change.leaveAfter = try request.integer("leave-after", in: terminalLeaveAfter)
        change.returnAfterMilliseconds = try request.integer("return-after-ms", in: simulatedMilliseconds)
        try check(change)  // return-after-ms without leave-after, before the later numbers (the text's order)
        change.taps = try request.integer("taps", in: tapCount)
        change.hostDelayMilliseconds = try request.integer("host-delay-ms", in: simulatedMilliseconds)
        change.hostDelayAt = try request.integer("host-delay-at", in: commandNumber)
        try check(change)
        if let wtx = request.value("wtx") {
            guard wtx == "yes" || wtx == "no" else {
                throw ControlError(.badArgument, "wtx='\(wtx)' must be yes (the PN532 sends S(WTX) while its host works, the default) or no")
            }
            change.wtx = wtx == "yes"
        }
        let source: TerminalSource
        if let path = request.value("transcript") {
            guard request.value("script") == nil else {
                throw ControlError(.badArgument, "give script= or transcript=, not both")
            }
            guard change.isEmpty else { throw transcriptBehaviour }
            source = .transcript(path: path, channel: request.value("channel"))
        } else {
            let name = request.value("script") ?? "android-t4t-read"
            try checkRecording(name, change)
            source = .model(name, behaviour: change)
        }
        return Terminal(source, id: request.value("id"))
    }

    static let transcriptBehaviour = ControlError(
        .badArgument, "leave-after, taps, host-delay-ms and wtx apply to a model (script=), not to a transcript")
}

// MARK: In process

extension SimulatorRequest {
    /// Handles this request for the reader the driver opened on `lun` (IFDHCreateChannelByName),
    /// in this process and on the caller's thread, as its control socket would: the same handler,
    /// the same reply fields (values read back as a socket's client reads them:
    /// ``ControlReply/readBack``), the same errors. A `terminal-result` with `wait-ms` blocks the
    /// caller (bounded by it, at most 60 s): call it from a thread of your own, not from Swift's
    /// concurrency pool.
    /// - Throws: ``ControlError`` as the socket replies it, or code `connect` when no reader is
    ///   open on `lun`.
    package func handled(byReaderOn lun: UInt) throws(ControlError) -> [(key: String, value: String)] {
        guard let reader = ReaderTable.reader(lun) else {
            throw ControlError(ControlError.Code(rawValue: "connect"), "no simulated reader is open on Lun \(lun)")
        }
        return try ControlProtocol.handle(self, binding: reader.binding).readBack
    }
}
