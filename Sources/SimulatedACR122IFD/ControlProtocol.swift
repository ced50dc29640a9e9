import ACR122Simulator
import ISO7816
import Transcript
#if canImport(Glibc)
import Glibc
#endif

/// The control protocol of a simulated ACR122U: one request line, one reply line, on the Unix
/// stream socket `<DEVICENAME directory>/control.sock` (see ``DeviceName``, ``ControlServer``).
///
/// Requests: `verb key=value key="value with spaces" …` (``ControlRequest``). Replies:
/// `ok key=value …` or `error <code> <reason>` (codes in ``ControlError/Code``). Byte strings are
/// hex, uppercase with a space between bytes in replies (`uid="04 A1 B2 C3"`); requests also accept
/// them without spaces. Peers are shared by every reader of the same field, whichever socket placed
/// them.
///
/// | Verb and arguments | Reply fields | Effect |
/// |---|---|---|
/// | `ping` | `driver protocol reader field open-order` | — (`open-order` 0 for the first reader pcscd opened on this driver: it is named `… 00 00`, the next `… 01 00`) |
/// | `help` | `verbs` | — |
/// | `status` | `personality firmware card led picc mcu-timeout rf peers busy` | — (`card` = present/absent as pcscd sees it; `led`, `picc`, `mcu-timeout` one hex byte; `busy` the first 7 bytes of the command under way, e.g. `FF 00 00 00 27 D4 8C` for a TgInitAsTarget waiting for a terminal, or `no`) |
/// | `place-card uid= [atqa=] [sak=] [ats=] [applet=] [ndef=] [transcript=] [channel=] [id=] [leave-after=]` | `peer` | an ISO/IEC 14443-4 card: `applet` one of ``BuiltInApplet`` (default `ok`: `t4t-ndef`, `t4t-ndef-v1`, `ok`, `echo`, `mute`, `long-object`, `broken-chain`, `desfire-ev1`), or answers from a transcript file; `ndef=` (hex; a request line holds 4096 bytes, so about 2 000 bytes) the NDEF message a `t4t-ndef`/`t4t-ndef-v1` card holds instead of the worked example's; ATQA default `00 04`, SAK `20`, ATS `05 78 80 70 02`; `leave-after=n`: the card leaves the field during its n-th C-APDU |
/// | `place-tag uid= [atqa=] [sak=] [id=]` | `peer` | an ISO/IEC 14443-3 tag without memory (default ATQA `00 04`, SAK `08`): anticollision and any-key MIFARE authentication only |
/// | `place-tag type=ntag213\|ntag215\|ntag216\|ultralight uid=<7 bytes> [ndef=<hex>] [id=]` | `peer type` | an NFC Forum Type 2 tag with memory (``Type2TagMemory``); `ndef` = the raw NDEF message bytes, written as TLV `03 len msg FE` from page 4 (default: an empty NDEF tag `03 00 FE`) |
/// | `place-tag type=classic1k\|classic4k\|mini uid=<4 or 7 bytes> [key=<6 bytes>] [id=]` | `peer type` | a MIFARE Classic card with memory (``MIFAREClassicMemory``); `key` sets key A and key B of every sector (default `FF FF FF FF FF FF`) |
/// | `place-target family=felica\|felica424\|typeb\|jewel [id=] [idm=] [pupi=] [jewel-id=] [memory=] [applet=]` | `peer family` | a target of another family (``PassiveTargetPeer``, docs/acr122-clones.md §4, §4b): FeliCa at 212 or 424 kbit/s (`idm` 8 bytes, default `01 01 05 01 86 04 02 02`; `memory` service 000B's blocks), ISO/IEC 14443-B (`pupi` 4 bytes in ACS's example ATQB `50 12 23 45 56 12 53 54 4E 33 81 C3`; `applet` one of ``BuiltInApplet`` answers its C-APDUs, none: mute), Topaz/Jewel (`jewel-id` 4 bytes, default `B5 7A 2C 00`; `memory` the tag's bytes) |
/// | `tag-memory peer=<id> [first=<n>] [count=<n>]` (`id=` accepted for `peer=`) | `type unit first count data` | the memory of a placed tag with memory, from page/block `first` (default 0), `count` units (default all): `unit` 4 (pages) or 16 (blocks); MIFARE Classic keys are shown as 00 bytes |
/// | `place-terminal [script=] [transcript=] [channel=] [id=] [leave-after=] [return-after-ms=] [taps=] [host-delay-ms=] [host-delay-at=] [wtx=]` | `peer` | an external terminal; `script` one of ``ExternalTerminal/catalog`` (default `android-t4t-read`, the model of Android's reader; `…-recording` replays a recording), or the commands of a transcript (checked whole when placed, then read from the file as they are sent: docs/transcript-diff.md, "§7"). A model's ``PhoneBehaviour`` (docs/terminal-models.md §6): `leave-after=n` leaves the field after its n-th exchange and comes back at the next activation (with `return-after-ms=d`, d simulated ms after it left); `taps=n` reads n times; `host-delay-ms=d` (simulated) delays the host's answer to C-APDU `host-delay-at` (default 1); `wtx=no`: the PN532 sends no S(WTX) meanwhile |
/// | `remove peer=<id> \| all=yes` | `removed` | takes peers out of the field |
/// | `peers` | `count list` | — |
/// | `personality name= [firmware=]` | `personality firmware` | replaces the device (as replugged behind another driver) |
/// | `fault late-reply=<n>` | `armed` | the next n Direct Transmit commands answer late (docs/acr122-pn532.md §5b) |
/// | `unplug` | `plugged` (`no`) | the USB cable pulled: the device leaves the field, and the driver answers IFD_NO_SUCH_DEVICE to pcscd (presence, power, transmit, control) until `replug` (docs/faults.md, "What pcscd 1.9.9 does when a reader.conf reader goes away") |
/// | `replug` | `plugged` (`yes`) | plugged in again: a fresh device with the same personality, at its power-up settings; refused while plugged in |
/// | `pn532-serial [list=yes]` | `board path` (`count list`) | a bare PN532 board in the field behind the serial framing on a new pseudo-terminal, `path` its device node (/dev/pts/N); boards leave with the field's last reader (docs/pn532-uart.md §6) |
/// | `events [after=<n>]` | `last count events` | the field's events after sequence n, `; `-separated |
/// | `terminal-result peer=<id> [wait-ms=<0…60000>]` | `result step [expected actual] [stage reason] [read ndef items] exchanges activations [activation-results]` | waits (bounded) until the terminal's run ends; `result` waiting, running, passed, mismatch (a recording's step differed), failed (a model gave up at `stage` for `reason`), target-left, left-field (the phone left by itself and comes back), ignored (a peer-to-peer initiator found no NFC-DEP target: `reason`); `read` what a model read, `ndef` the NDEF message, `items` its records; `activation-results` one entry per activation that ended, `; `-separated |
/// | `card-log peer=<id>` | `count dropped last all` | C-APDUs a placed card received: `count` in all, `all` the latest ones kept (``ISO14443_4Card/logCapacity``, oldest first, `; `-separated), `dropped` how many older ones it no longer holds |
enum ControlProtocol {
    static let version = "1"

    static let verbs = [
        "ping", "help", "status", "place-card", "place-tag", "place-target", "place-terminal", "remove", "peers",
        "personality", "fault", "events", "terminal-result", "card-log", "tag-memory", "timescale",
        "unplug", "replug", "pn532-serial",
    ]

    /// Handles one request for the reader of `binding`.
    /// - Throws: ``ControlError`` with a reason that says what to send instead.
    static func handle(_ request: ControlRequest, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        switch request.verb {
        case "ping":
            try request.allowOnly([])
            return ControlReply([("driver", "secbridge-acr122"), ("protocol", version),
                                 ("reader", binding.deviceName.directory), ("field", binding.deviceName.field),
                                 ("open-order", String(binding.openOrder))])
        case "help":
            try request.allowOnly([])
            return ControlReply([("verbs", verbs.joined(separator: " "))])
        case "status":
            try request.allowOnly([])
            let device = binding.device
            return ControlReply([
                ("personality", binding.personalityName),
                ("firmware", device.personality.firmware),
                // Unplugged, pcscd hears IFD_NO_SUCH_DEVICE, never a card.
                ("card", !binding.isUnplugged && device.cardWouldBeReportedPresent ? "present" : "absent"),
                ("led", ControlHex.format([device.ledState])),
                ("picc", ControlHex.format([device.piccOperatingParameter])),
                ("mcu-timeout", ControlHex.format([device.mcuTimeout])),
                ("rf", device.isRFFieldOn ? "on" : "off"),
                ("peers", String(binding.field.list.count)),
                // The first 7 bytes name a Direct Transmit's PN532 command (`FF 00 00 00 Lc D4 cmd`).
                ("busy", device.commandInFlight.map { ControlHex.format(Array($0.prefix(7))) } ?? "no"),
            ])
        case "place-card":
            return try placeCard(request, binding: binding)
        case "place-tag":
            return try placeTag(request, binding: binding)
        case "place-target":
            return try placeTarget(request, binding: binding)
        case "place-terminal":
            return try placeTerminal(request, binding: binding)
        case "remove":
            try request.allowOnly(["peer", "all"])
            let id = request.value("peer")
            guard (id == nil) != (request.value("all") == nil) else {
                throw ControlError(.missingArgument, "remove needs peer=<id> or all=yes")
            }
            let removed = binding.field.remove(id)
            if let id, removed.isEmpty {
                throw ControlError(.refused, "no peer '\(id)' in the field; send 'peers' for the list")
            }
            return ControlReply([("removed", removed.joined(separator: " "))])
        case "peers":
            try request.allowOnly([])
            let list = binding.field.list
            return ControlReply([("count", String(list.count)),
                                 ("list", list.map { "\($0.id): \($0.description)" }.joined(separator: "; "))])
        case "personality":
            try request.allowOnly(["name", "firmware"])
            let name = try request.required("name")
            let personality = try PersonalityName.personality(name, firmware: request.value("firmware"))
            binding.switchPersonality(to: personality, named: name)
            return ControlReply([("personality", name), ("firmware", personality.firmware)])
        case "timescale":
            // `timescale` reports the field's time scale; `timescale value=1` sets it for every
            // reader of the field (real time for a check that must see a device wait whole).
            try request.allowOnly(["value"])
            if let text = request.value("value") {
                guard let scale = DeviceName.timeScale(text) else {
                    throw ControlError(.badArgument, "timescale value '\(text)' must be a decimal number from 0 to 1000, e.g. value=0.01 (1 is real time)")
                }
                binding.field.field.setClock(SimulationClock(scale: scale))
            }
            return ControlReply([("timescale", String(binding.field.field.clock.scale))])
        case "unplug":
            try request.allowOnly([])
            binding.unplug()
            return ControlReply([("plugged", "no")])
        case "replug":
            try request.allowOnly([])
            guard binding.isUnplugged else {
                throw ControlError(.refused, "the reader is plugged in; send unplug first (personality name=… replaces a plugged-in unit)")
            }
            binding.replug()
            return ControlReply([("plugged", "yes")])
        case "fault":
            try request.allowOnly(["late-reply"])
            guard let count = try request.integer("late-reply", in: 1...16) else {
                throw ControlError(.missingArgument, "fault needs late-reply=<1…16>")
            }
            binding.device.injectLateReply(count: count)
            return ControlReply([("armed", "late-reply \(count)")])
        case "events":
            try request.allowOnly(["after"])
            let after = try request.integer("after", in: 0...Int(Int32.max)) ?? 0
            let events = binding.field.field.events(after: after)
            return ControlReply([("last", String(binding.field.field.lastEventSequence)),
                                 ("count", String(events.count)),
                                 ("events", events.map(\.description).joined(separator: "; "))])
        case "terminal-result":
            return try terminalResult(request, binding: binding)
        case "card-log":
            try request.allowOnly(["peer"])
            let id = try request.required("peer")
            guard let card = binding.field.peer(id) as? ISO14443_4Card else {
                throw ControlError(.refused, "no ISO 14443-4 card '\(id)' in the field")
            }
            let log = card.receivedLog
            return ControlReply([("count", String(log.total)), ("dropped", String(log.dropped)),
                                 ("last", ControlHex.format(log.last ?? [])),
                                 ("all", log.elements.map { ControlHex.format($0) }.joined(separator: "; "))])
        case "tag-memory":
            return try tagMemory(request, binding: binding)
        case "pn532-serial":
            // A bare PN532 board in this reader's field on a pseudo-terminal (docs/pn532-uart.md §6);
            // `list=yes` names the boards already there.
            try request.allowOnly(["list"])
            if request.value("list") != nil {
                let boards = binding.field.serialBoards
                return ControlReply([("count", String(boards.count)),
                                     ("list", boards.map { "\($0.id): \($0.terminal.devicePath)" }.joined(separator: "; "))])
            }
            let board = try binding.field.addSerialBoard()
            return ControlReply([("board", board.id), ("path", board.terminal.devicePath)])
        default:
            throw ControlError(.unknownVerb, "no verb '\(request.verb)'; verbs: \(verbs.joined(separator: ", "))")
        }
    }

    // MARK: Peers

    private static func placeCard(_ request: ControlRequest, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        try request.allowOnly(["uid", "atqa", "sak", "ats", "applet", "transcript", "channel", "id", "leave-after", "ndef"])
        let leavesAfter = try request.integer("leave-after", in: 1...1_000_000)
        let uid = try uid(request)
        let atqa = try atqa(request) ?? 0x0004
        let sak = try byte(request, "sak") ?? 0x20
        let ats = try request.bytes("ats") ?? [0x05, 0x78, 0x80, 0x70, 0x02]
        guard !ats.isEmpty, Int(ats[0]) == ats.count, ats.count <= 20 else {
            throw ControlError(.badArgument, "ats must be a whole ATS whose first byte TL is its length (2…20 bytes), e.g. \"05 78 80 70 02\"")
        }
        let card: ISO14443_4Card
        if let path = request.value("transcript") {
            guard request.value("applet") == nil else {
                throw ControlError(.badArgument, "give applet= or transcript=, not both")
            }
            guard leavesAfter == nil else {
                throw ControlError(.badArgument, "leave-after= goes with applet=, not with transcript=")
            }
            // Checked whole here (its errors in the reply), then read as the APDUs come: the card
            // holds one exchange, not the file (docs/transcript-diff.md, "§7").
            let file = try transcriptFile(path, channel: request.value("channel"))
            do {
                card = try ISO14443_4Card(uid: uid, atqa: atqa, sak: sak, ats: ats, transcriptFile: file)
            } catch {
                throw ControlError(.badArgument, "transcript \(path): \(error)")
            }
        } else {
            let name = request.value("applet") ?? BuiltInApplet.ok.rawValue
            guard let applet = BuiltInApplet(rawValue: name) else {
                throw ControlError(.badArgument, "unknown applet '\(name)'; known: \(BuiltInApplet.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let ndef = try request.bytes("ndef")
            guard ndef == nil || applet == .t4tNDEF || applet == .t4tNDEFVersion1 else {
                throw ControlError(.badArgument, "ndef= goes with applet=t4t-ndef or applet=t4t-ndef-v1")
            }
            guard (ndef?.count ?? 0) <= 0x7FFD else {
                throw ControlError(.badArgument, "ndef= holds at most 32765 bytes (a Type 4 Tag's NDEF file is at most 7FFF, NLEN included)")
            }
            card = ISO14443_4Card(uid: uid, atqa: atqa, sak: sak, ats: ats, leavesAfter: leavesAfter, handler: applet.makeHandler(ndef: ndef))
        }
        return ControlReply([("peer", try binding.field.place(card, id: try peerID(request), prefix: "card"))])
    }

    /// `place-tag`: without `type=`, today's tag without memory; with it, a Type 2 tag or a MIFARE
    /// Classic card with memory (ATQA and SAK then come from the type).
    private static func placeTag(_ request: ControlRequest, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        try request.allowOnly(["uid", "atqa", "sak", "id", "type", "ndef", "key", "leave-after"])
        let uid = try uid(request)
        let leavesAfter = try request.integer("leave-after", in: 1...1_000_000)
        guard let typeName = request.value("type"), typeName != "plain" else {
            guard leavesAfter == nil else {
                throw ControlError(.badArgument, "leave-after= needs a tag with memory (type=ntag213|ntag215|ntag216|ultralight|classic1k|classic4k|mini)")
            }
            guard request.value("ndef") == nil, request.value("key") == nil else {
                throw ControlError(.badArgument, "ndef= needs type=ntag213|ntag215|ntag216|ultralight; key= needs type=classic1k|classic4k|mini")
            }
            let tag = ISO14443_3Tag(uid: uid, atqa: try atqa(request) ?? 0x0004, sak: try byte(request, "sak") ?? 0x08)
            return ControlReply([("peer", try binding.field.place(tag, id: try peerID(request), prefix: "tag"))])
        }
        guard request.value("atqa") == nil, request.value("sak") == nil else {
            throw ControlError(.badArgument, "atqa= and sak= come from type=\(typeName); leave them out")
        }
        let tag: ISO14443_3Tag
        do {
            if let model = Type2TagModel(rawValue: typeName) {
                guard request.value("key") == nil else {
                    throw ControlError(.badArgument, "key= is for MIFARE Classic (type=classic1k|classic4k|mini), not \(typeName)")
                }
                tag = try ISO14443_3Tag(type2: model, uid: uid, ndefMessage: try request.bytes("ndef"))
            } else if let model = MIFAREClassicModel(rawValue: typeName) {
                guard request.value("ndef") == nil else {
                    throw ControlError(.badArgument, "ndef= is for Type 2 tags (type=ntag213|ntag215|ntag216|ultralight), not \(typeName)")
                }
                let key = try request.bytes("key") ?? MIFAREClassicMemory.transportKey
                guard key.count == 6 else {
                    // The value itself is not echoed: it is a key.
                    throw ControlError(.badArgument, "key must be 6 hex bytes (12 digits), got \(key.count) bytes")
                }
                tag = try ISO14443_3Tag(classic: model, uid: uid, keyA: key, keyB: key)
            } else {
                throw ControlError(.badArgument, "unknown type '\(typeName)'; known: plain, \(tagTypeNames.joined(separator: ", "))")
            }
        } catch let error as StorageCardError {
            throw ControlError(.badArgument, error.reason)
        } catch let error as ControlError {
            throw error
        } catch {
            throw ControlError(.badArgument, "\(error)")
        }
        // A tag pulled away during its leave-after-th command on air (ISO14443_3Tag.leave(duringCommand:)).
        tag.leave(duringCommand: leavesAfter)
        return ControlReply([("peer", try binding.field.place(tag, id: try peerID(request), prefix: "tag")),
                             ("type", typeName)])
    }

    /// `place-target`: a FeliCa, ISO/IEC 14443-B or Topaz/Jewel target (docs/acr122-clones.md §4b).
    private static func placeTarget(_ request: ControlRequest, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        try request.allowOnly(["family", "id", "idm", "pupi", "jewel-id", "memory", "applet"])
        func sized(_ key: String, _ count: Int, default value: [UInt8]) throws(ControlError) -> [UInt8] {
            guard let bytes = try request.bytes(key) else { return value }
            guard bytes.count == count else {
                throw ControlError(.badArgument, "\(key) must be \(count) hex bytes, got \(bytes.count)")
            }
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
        let target: PassiveTargetPeer
        switch family {
        case "felica", "felica424":
            target = PassiveTargetPeer(
                .felica(idm: try sized("idm", 8, default: [0x01, 0x01, 0x05, 0x01, 0x86, 0x04, 0x02, 0x02]),
                        pmm: [0x03, 0x01, 0x4B, 0x02, 0x4F, 0x49, 0x93, 0xFF], systemCode: [0x12, 0xFC],
                        highSpeed: family == "felica424"),
                memory: memory)
        case "typeb":
            var atqb: [UInt8] = [0x50, 0x12, 0x23, 0x45, 0x56, 0x12, 0x53, 0x54, 0x4E, 0x33, 0x81, 0xC3]
            atqb.replaceSubrange(1...4, with: try sized("pupi", 4, default: Array(atqb[1...4])))
            var handler: (@Sendable ([UInt8]) -> [UInt8])?
            if let name = request.value("applet") {
                guard let applet = BuiltInApplet(rawValue: name) else {
                    throw ControlError(.badArgument, "unknown applet '\(name)'; known: \(BuiltInApplet.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                handler = applet.makeHandler()
            }
            target = PassiveTargetPeer(.typeB(atqb: atqb, attribResponse: [0x00]), apdu: handler)
        default:
            let jewelID = try sized("jewel-id", 4, default: [0xB5, 0x7A, 0x2C, 0x00])
            target = PassiveTargetPeer(.jewel(sensRes: [0x0C, 0x00], jewelID: jewelID), memory: memory)
        }
        return ControlReply([("peer", try binding.field.place(target, id: try peerID(request), prefix: "target")),
                             ("family", family)])
    }

    /// The `type=` values of `place-tag` with memory.
    static let tagTypeNames = Type2TagModel.allCases.map(\.rawValue) + MIFAREClassicModel.allCases.map(\.rawValue)

    /// `tag-memory`: a placed tag's memory as hex (keys of MIFARE Classic trailers as 00 bytes).
    private static func tagMemory(_ request: ControlRequest, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        try request.allowOnly(["peer", "id", "first", "count"])
        guard let id = request.value("peer") ?? request.value("id") else {
            throw ControlError(.missingArgument, "tag-memory needs peer=<id>")
        }
        guard let tag = binding.field.peer(id) as? ISO14443_3Tag, tag.hasMemory else {
            throw ControlError(.refused, "no tag with memory '\(id)' in the field (place one with place-tag type=…)")
        }
        let memory = tag.memory
        let unit = memory.unitSize
        let bytes = tag.displayBytes
        let units = bytes.count / unit
        let first = try request.integer("first", in: 0...max(0, units - 1)) ?? 0
        let count = try request.integer("count", in: 1...units) ?? units - first
        let end = min(units, first + count)
        return ControlReply([("type", memory.typeName), ("unit", String(unit)), ("first", String(first)),
                             ("count", String(end - first)), ("commands", String(tag.commandsReceived)),
                             ("data", ControlHex.format(bytes[first * unit..<end * unit]))])
    }

    private static func placeTerminal(_ request: ControlRequest, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        try request.allowOnly(["script", "transcript", "channel", "id", "leave-after", "return-after-ms", "taps", "host-delay-ms", "host-delay-at", "wtx"])
        let adjust = try phoneBehaviour(request)
        let terminal: ExternalTerminal
        if let path = request.value("transcript") {
            guard request.value("script") == nil else {
                throw ControlError(.badArgument, "give script= or transcript=, not both")
            }
            // Checked whole here (its errors in the reply), then read as the terminal sends its
            // commands: it holds the step it is at, not the file (docs/transcript-diff.md, "§7").
            let file = try terminalTranscriptFile(path, channel: request.value("channel"))
            do {
                terminal = try ExternalTerminal(transcriptFile: file)
            } catch {
                throw ControlError(.badArgument, "transcript \(path): \(error)")
            }
            if adjust != nil {
                throw ControlError(.badArgument, "leave-after, taps, host-delay-ms and wtx apply to a model (script=), not to a transcript")
            }
        } else {
            let name = request.value("script") ?? "android-t4t-read"
            if adjust != nil, name.hasSuffix("-recording") {
                throw ControlError(.badArgument, "leave-after, taps, host-delay-ms and wtx apply to a model, not to the recording '\(name)'")
            }
            guard let named = ExternalTerminal.named(name, adjust: adjust ?? { _ in }) else {
                throw ControlError(.badArgument, "unknown script '\(name)'; known: \(ExternalTerminal.catalog.map(\.name).joined(separator: ", "))")
            }
            terminal = named
        }
        return ControlReply([("peer", try binding.field.place(terminal, id: try peerID(request), prefix: "terminal"))])
    }

    /// The ``PhoneBehaviour`` changes `place-terminal` asks for, or nil when it asks for none.
    private static func phoneBehaviour(_ request: ControlRequest) throws(ControlError) -> (@Sendable (inout PhoneBehaviour) -> Void)? {
        let leaveAfter = try request.integer("leave-after", in: 1...10_000)
        let returnAfter = try request.integer("return-after-ms", in: 0...60_000)
        if returnAfter != nil, leaveAfter == nil {
            throw ControlError(.missingArgument, "return-after-ms (how long the phone stays away, simulated) needs leave-after=<n>")
        }
        let taps = try request.integer("taps", in: 1...16)
        let delay = try request.integer("host-delay-ms", in: 0...60_000)
        let delayAt = try request.integer("host-delay-at", in: 1...10_000)
        if delayAt != nil, delay == nil {
            throw ControlError(.missingArgument, "host-delay-at needs host-delay-ms=<simulated milliseconds>")
        }
        let wtxText = request.value("wtx")
        if let wtxText, wtxText != "yes", wtxText != "no" {
            throw ControlError(.badArgument, "wtx='\(wtxText)' must be yes (the PN532 sends S(WTX) while its host works, the default) or no")
        }
        let wtx = wtxText.map { $0 == "yes" }
        guard leaveAfter != nil || taps != nil || delay != nil || wtx != nil else { return nil }
        return { behaviour in
            if let leaveAfter { behaviour.leaveAfter = leaveAfter }
            if let returnAfter { behaviour.returnAfter = .milliseconds(returnAfter) }
            if let taps { behaviour.taps = taps }
            if let delay { behaviour.hostDelay = .init(command: delayAt ?? 1, delay: .milliseconds(delay)) }
            if let wtx { behaviour.pn532SendsWTX = wtx }
        }
    }

    /// The most a `terminal-result` waits.
    static let maximumWait = 60_000

    private static func terminalResult(_ request: ControlRequest, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        try request.allowOnly(["peer", "wait-ms"])
        let id = try request.required("peer")
        let waitMilliseconds = try request.integer("wait-ms", in: 0...maximumWait) ?? 0
        guard let terminal = binding.field.peer(id) as? ExternalTerminal else {
            throw ControlError(.refused, "no external terminal '\(id)' in the field")
        }
        // The terminal has no condition to wait on: look every 5 ms, at most wait-ms in total.
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(waitMilliseconds)
        while !isFinished(terminal.result), clock.now < deadline {
            var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&pause, nil)
        }
        var fields: [(String, String)]
        switch terminal.result {
        case .waiting: fields = [("result", "waiting"), ("step", "0")]
        case .running(let step): fields = [("result", "running"), ("step", String(step))]
        case .passed: fields = [("result", "passed"), ("step", String(terminal.exchangeCount))]
        case .mismatch(let step, let expected, let actual):
            fields = [("result", "mismatch"), ("step", String(step)), ("expected", expected), ("actual", ControlHex.format(actual))]
        case .failed(let step, let stage, let reason):
            fields = [("result", "failed"), ("step", String(step)), ("stage", stage), ("reason", reason)]
        case .targetLeft(let step): fields = [("result", "target-left"), ("step", String(step))]
        case .leftField(let step): fields = [("result", "left-field"), ("step", String(step))]
        case .ignored(let reason): fields = [("result", "ignored"), ("step", "0"), ("reason", reason)]
        }
        if let report = terminal.report {
            fields.append(("read", report.summary))
            if let message = report.ndefMessage { fields.append(("ndef", ControlHex.format(message))) }
            if !report.items.isEmpty { fields.append(("items", report.items.joined(separator: "; "))) }
        }
        fields += [("exchanges", String(terminal.exchangeCount)), ("activations", String(terminal.activations))]
        let results = terminal.activationResults
        if !results.isEmpty { fields.append(("activation-results", results.joined(separator: "; "))) }
        return ControlReply(fields)
    }

    private static func isFinished(_ result: ExternalTerminal.Result) -> Bool {
        switch result {
        case .waiting, .running: false
        case .passed, .mismatch, .failed, .targetLeft, .leftField, .ignored: true
        }
    }

    // MARK: Arguments

    private static func uid(_ request: ControlRequest) throws(ControlError) -> [UInt8] {
        guard let uid = try request.bytes("uid") else {
            throw ControlError(.missingArgument, "\(request.verb) needs uid=<4, 7 or 10 hex bytes>")
        }
        guard [4, 7, 10].contains(uid.count) else {
            throw ControlError(.badArgument, "uid must be 4, 7 or 10 bytes (ISO/IEC 14443-3), got \(uid.count)")
        }
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

    private static func peerID(_ request: ControlRequest) throws(ControlError) -> String? {
        guard let id = request.value("id") else { return nil }
        guard !id.isEmpty, id.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw ControlError(.badArgument, "id may hold 1…64 letters, digits, '-' and '_'")
        }
        return id
    }

    /// The transcript file at `path` (absolute), read once whole to check it (nothing kept), unless
    /// this process checked it already and it is unchanged (`replay --against simulated`). A FIFO
    /// or device is refused without blocking (the file reader opens with O_NONBLOCK and reads
    /// regular files only).
    private static func transcriptFile(_ path: String, channel: String?) throws(ControlError) -> TranscriptReplayFile {
        try requireAbsolute(path)
        do {
            return try TranscriptReplayFile.checked(contentsOfFile: path, channelID: channel)
        } catch {
            throw ControlError(.badArgument, "transcript \(path): \(error)")
        }
    }

    private static func requireAbsolute(_ path: String) throws(ControlError) {
        guard path.hasPrefix("/") else {
            throw ControlError(.badArgument, "transcript path '\(path)' must be absolute (pcscd's working directory is not yours)")
        }
    }

    /// The transcript file at `path` (absolute) for a terminal to replay, read once whole to check
    /// it (counts kept, not the exchanges). A FIFO or device is refused without blocking, as in
    /// ``transcriptFile(_:channel:)``.
    private static func terminalTranscriptFile(_ path: String, channel: String?) throws(ControlError) -> ExternalTerminal.TranscriptFile {
        try requireAbsolute(path)
        do {
            return try ExternalTerminal.TranscriptFile(contentsOfFile: path, channel: channel)
        } catch {
            throw ControlError(.badArgument, "transcript \(path): \(error)")
        }
    }
}
