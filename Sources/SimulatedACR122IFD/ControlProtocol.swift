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
/// Each line is parsed into a ``SimulatorRequest`` (one case per verb below, with the arguments
/// as typed fields; the parser is ``SimulatorRequest/init(_:)``), and the typed request is handled;
/// an in-process test can hand the typed request over without the text
/// (`SimulatedDesk.control(_:reader:)`), with the same replies and errors.
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

    /// Handles one request line for the reader of `binding`: parsed into a ``SimulatorRequest``
    /// (the one parser), then handled as a typed request.
    /// - Throws: ``ControlError`` with a reason that says what to send instead.
    static func handle(_ request: ControlRequest, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        try handle(try SimulatorRequest(request), binding: binding)
    }

    /// Handles one typed request for the reader of `binding`. What a typed value can hold wrongly
    /// (a UID's length, a number out of range, a peer id) is checked here with the text's message.
    /// - Throws: ``ControlError`` with a reason that says what to send instead.
    static func handle(_ request: SimulatorRequest, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        switch request {
        case .ping:
            return ControlReply([("driver", "secbridge-acr122"), ("protocol", version),
                                 ("reader", binding.deviceName.directory), ("field", binding.deviceName.field),
                                 ("open-order", String(binding.openOrder))])
        case .help:
            return ControlReply([("verbs", verbs.joined(separator: " "))])
        case .status:
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
        case .placeCard(let card):
            return try placeCard(card, binding: binding)
        case .placeTag(let tag):
            return try placeTag(tag, binding: binding)
        case .placeTarget(let target):
            return try placeTarget(target, binding: binding)
        case .placeTerminal(let terminal):
            return try placeTerminal(terminal, binding: binding)
        case .remove(let id):
            let removed = binding.field.remove(id)
            if removed.isEmpty {
                throw ControlError(.refused, "no peer '\(id)' in the field; send 'peers' for the list")
            }
            return ControlReply([("removed", removed.joined(separator: " "))])
        case .removeAll:
            return ControlReply([("removed", binding.field.remove(nil).joined(separator: " "))])
        case .peers:
            let list = binding.field.list
            return ControlReply([("count", String(list.count)),
                                 ("list", list.map { "\($0.id): \($0.description)" }.joined(separator: "; "))])
        case .personality(let name, let firmware):
            let personality = try PersonalityName.personality(name, firmware: firmware)
            binding.switchPersonality(to: personality, named: name)
            return ControlReply([("personality", name), ("firmware", personality.firmware)])
        case .timescale:
            return ControlReply([("timescale", String(binding.field.field.clock.scale))])
        case .setTimescale(let scale):
            // Sets the time scale of every reader of the field (real time for a check that must see
            // a device wait whole).
            guard scale >= 0, scale <= 1000 else { throw SimulatorRequest.badTimescale(String(scale)) }
            binding.field.field.setClock(SimulationClock(scale: scale == 0 ? 0 : scale))
            return ControlReply([("timescale", String(binding.field.field.clock.scale))])
        case .unplug:
            binding.unplug()
            return ControlReply([("plugged", "no")])
        case .replug:
            guard binding.isUnplugged else {
                throw ControlError(.refused, "the reader is plugged in; send unplug first (personality name=… replaces a plugged-in unit)")
            }
            binding.replug()
            return ControlReply([("plugged", "yes")])
        case .fault(let count):
            try SimulatorRequest.check("late-reply", count, in: SimulatorRequest.lateReplies)
            binding.device.injectLateReply(count: count)
            return ControlReply([("armed", "late-reply \(count)")])
        case .events(let after):
            try SimulatorRequest.check("after", after, in: SimulatorRequest.eventSequence)
            let events = binding.field.field.events(after: after)
            return ControlReply([("last", String(binding.field.field.lastEventSequence)),
                                 ("count", String(events.count)),
                                 ("events", events.map(\.description).joined(separator: "; "))])
        case .terminalResult(let id, let wait):
            return try terminalResult(id, waitMilliseconds: wait, binding: binding)
        case .cardLog(let id):
            guard let card = binding.field.peer(id) as? ISO14443_4Card else {
                throw ControlError(.refused, "no ISO 14443-4 card '\(id)' in the field")
            }
            let log = card.receivedLog
            return ControlReply([("count", String(log.total)), ("dropped", String(log.dropped)),
                                 ("last", ControlHex.format(log.last ?? [])),
                                 ("all", log.elements.map { ControlHex.format($0) }.joined(separator: "; "))])
        case .tagMemory(let id, let first, let count):
            return try tagMemory(id, first: first, count: count, binding: binding)
        case .pn532SerialList:
            // The bare PN532 boards already in this reader's field (docs/pn532-uart.md §6).
            let boards = binding.field.serialBoards
            return ControlReply([("count", String(boards.count)),
                                 ("list", boards.map { "\($0.id): \($0.terminal.devicePath)" }.joined(separator: "; "))])
        case .pn532Serial:
            // A bare PN532 board in this reader's field on a pseudo-terminal (docs/pn532-uart.md §6).
            let board = try binding.field.addSerialBoard()
            return ControlReply([("board", board.id), ("path", board.terminal.devicePath)])
        }
    }

    // MARK: Peers

    private static func placeCard(_ request: SimulatorRequest.Card, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        if case .applet(_, _, let leavesAfter) = request.answers {
            try SimulatorRequest.check("leave-after", leavesAfter, in: SimulatorRequest.cardLeaveAfter)
        }
        try SimulatorRequest.checkUID(request.uid)
        try SimulatorRequest.checkATS(request.ats)
        let card: ISO14443_4Card
        switch request.answers {
        case .transcript(let path, let channel):
            // Checked whole here (its errors in the reply), then read as the APDUs come: the card
            // holds one exchange, not the file (docs/transcript-diff.md, "§7").
            let file = try transcriptFile(path, channel: channel)
            do {
                card = try ISO14443_4Card(uid: request.uid, atqa: request.atqa, sak: request.sak, ats: request.ats, transcriptFile: file)
            } catch {
                throw ControlError(.badArgument, "transcript \(path): \(error)")
            }
        case .applet(let applet, let ndef, let leavesAfter):
            try SimulatorRequest.checkCardNDEF(ndef, applet: applet)
            card = ISO14443_4Card(uid: request.uid, atqa: request.atqa, sak: request.sak, ats: request.ats,
                                  leavesAfter: leavesAfter, handler: applet.makeHandler(ndef: ndef))
        }
        return ControlReply([("peer", try binding.field.place(card, id: try peerID(request.id), prefix: "card"))])
    }

    /// `place-tag`: a tag without memory, or a Type 2 tag or a MIFARE Classic card with memory
    /// (ATQA and SAK then come from the type).
    private static func placeTag(_ request: SimulatorRequest.Tag, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        try SimulatorRequest.checkUID(request.uid)
        try SimulatorRequest.check("leave-after", request.leaveAfter, in: SimulatorRequest.cardLeaveAfter)
        let tag: ISO14443_3Tag
        let typeName: String
        do {
            switch request.kind {
            case .plain(let atqa, let sak):
                guard request.leaveAfter == nil else { throw SimulatorRequest.plainLeaveAfter }
                let tag = ISO14443_3Tag(uid: request.uid, atqa: atqa, sak: sak)
                return ControlReply([("peer", try binding.field.place(tag, id: try peerID(request.id), prefix: "tag"))])
            case .type2(let model, let ndef):
                typeName = model.rawValue
                tag = try ISO14443_3Tag(type2: model, uid: request.uid, ndefMessage: ndef)
            case .classic(let model, let key):
                typeName = model.rawValue
                guard key.count == 6 else {
                    // The value itself is not echoed: it is a key.
                    throw ControlError(.badArgument, "key must be 6 hex bytes (12 digits), got \(key.count) bytes")
                }
                tag = try ISO14443_3Tag(classic: model, uid: request.uid, keyA: key, keyB: key)
            }
        } catch let error as StorageCardError {
            throw ControlError(.badArgument, error.reason)
        } catch let error as ControlError {
            throw error
        } catch {
            throw ControlError(.badArgument, "\(error)")
        }
        // A tag pulled away during its leave-after-th command on air (ISO14443_3Tag.leave(duringCommand:)).
        tag.leave(duringCommand: request.leaveAfter)
        return ControlReply([("peer", try binding.field.place(tag, id: try peerID(request.id), prefix: "tag")),
                             ("type", typeName)])
    }

    /// `place-target`: a FeliCa, ISO/IEC 14443-B or Topaz/Jewel target (docs/acr122-clones.md §4b).
    private static func placeTarget(_ request: SimulatorRequest.Target, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        let target: PassiveTargetPeer
        switch request.family {
        case .felica(let idm, let memory, let highSpeed):
            try SimulatorRequest.checkLength("idm", idm, 8)
            target = PassiveTargetPeer(
                .felica(idm: idm, pmm: [0x03, 0x01, 0x4B, 0x02, 0x4F, 0x49, 0x93, 0xFF], systemCode: [0x12, 0xFC], highSpeed: highSpeed),
                memory: memory)
        case .typeB(let pupi, let applet):
            try SimulatorRequest.checkLength("pupi", pupi, 4)
            // ACS's example ATQB with the PUPI in bytes 1…4.
            var atqb: [UInt8] = [0x50, 0x12, 0x23, 0x45, 0x56, 0x12, 0x53, 0x54, 0x4E, 0x33, 0x81, 0xC3]
            atqb.replaceSubrange(1...4, with: pupi)
            target = PassiveTargetPeer(.typeB(atqb: atqb, attribResponse: [0x00]), apdu: applet?.makeHandler())
        case .jewel(let jewelID, let memory):
            try SimulatorRequest.checkLength("jewel-id", jewelID, 4)
            target = PassiveTargetPeer(.jewel(sensRes: [0x0C, 0x00], jewelID: jewelID), memory: memory)
        }
        return ControlReply([("peer", try binding.field.place(target, id: try peerID(request.id), prefix: "target")),
                             ("family", request.family.name)])
    }

    /// The `type=` values of `place-tag` with memory.
    static let tagTypeNames = Type2TagModel.allCases.map(\.rawValue) + MIFAREClassicModel.allCases.map(\.rawValue)

    /// `tag-memory`: a placed tag's memory as hex (keys of MIFARE Classic trailers as 00 bytes).
    private static func tagMemory(_ id: String, first: Int?, count: Int?, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        guard let tag = binding.field.peer(id) as? ISO14443_3Tag, tag.hasMemory else {
            throw ControlError(.refused, "no tag with memory '\(id)' in the field (place one with place-tag type=…)")
        }
        let memory = tag.memory
        let unit = memory.unitSize
        let bytes = tag.displayBytes
        let units = bytes.count / unit
        try SimulatorRequest.check("first", first, in: 0...max(0, units - 1))
        try SimulatorRequest.check("count", count, in: 1...units)
        let first = first ?? 0
        let end = min(units, first + (count ?? units - first))
        return ControlReply([("type", memory.typeName), ("unit", String(unit)), ("first", String(first)),
                             ("count", String(end - first)), ("commands", String(tag.commandsReceived)),
                             ("data", ControlHex.format(bytes[first * unit..<end * unit]))])
    }

    private static func placeTerminal(_ request: SimulatorRequest.Terminal, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        let terminal: ExternalTerminal
        switch request.source {
        case .transcript(let path, let channel):
            // Checked whole here (its errors in the reply), then read as the terminal sends its
            // commands: it holds the step it is at, not the file (docs/transcript-diff.md, "§7").
            let file = try terminalTranscriptFile(path, channel: channel)
            do {
                terminal = try ExternalTerminal(transcriptFile: file)
            } catch {
                throw ControlError(.badArgument, "transcript \(path): \(error)")
            }
        case .model(let name, let change):
            try SimulatorRequest.check(change)
            try SimulatorRequest.checkRecording(name, change)
            guard let named = ExternalTerminal.named(name, adjust: phoneBehaviour(change)) else {
                throw ControlError(.badArgument, "unknown script '\(name)'; known: \(ExternalTerminal.catalog.map(\.name).joined(separator: ", "))")
            }
            terminal = named
        }
        return ControlReply([("peer", try binding.field.place(terminal, id: try peerID(request.id), prefix: "terminal"))])
    }

    /// The ``PhoneBehaviour`` changes `place-terminal` asks for (none when `change` is empty).
    private static func phoneBehaviour(_ change: SimulatorRequest.PhoneBehaviourChange) -> @Sendable (inout PhoneBehaviour) -> Void {
        guard !change.isEmpty else { return { _ in } }
        return { behaviour in
            if let leaveAfter = change.leaveAfter { behaviour.leaveAfter = leaveAfter }
            if let returnAfter = change.returnAfterMilliseconds { behaviour.returnAfter = .milliseconds(returnAfter) }
            if let taps = change.taps { behaviour.taps = taps }
            if let delay = change.hostDelayMilliseconds {
                behaviour.hostDelay = .init(command: change.hostDelayAt ?? 1, delay: .milliseconds(delay))
            }
            if let wtx = change.wtx { behaviour.pn532SendsWTX = wtx }
        }
    }

    /// The most a `terminal-result` waits.
    static let maximumWait = 60_000

    private static func terminalResult(_ id: String, waitMilliseconds: Int, binding: SimulatorBinding) throws(ControlError) -> ControlReply {
        try SimulatorRequest.check("wait-ms", waitMilliseconds, in: SimulatorRequest.resultWait)
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

    private static func peerID(_ id: String?) throws(ControlError) -> String? {
        guard let id else { return nil }
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
