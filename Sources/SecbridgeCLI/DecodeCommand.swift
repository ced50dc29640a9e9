import ISO7816

extension SecbridgeCLI {
    package static let decodeCommand = Command(
        name: "decode",
        abstract: "Decode a command APDU, a response, an ATR or BER-TLV data, given in hex.",
        discussion: """
            Nothing is sent: decoding works without pcscd or a reader.

            Examples:
              $ secbridge decode apdu 00 A4 04 00 07 D2 76 00 00 85 01 01 00
              $ secbridge decode response 6A 82
              $ secbridge decode atr 3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A
              $ secbridge decode tlv --json 6F 15 81 02 02 00 82 01 01 83 02 44 02 86 08 FF 90 90 90 90 90 90 00
            """,
        subcommands: [
            decodeSubcommand(
                "apdu", "Decode a command APDU: its ISO 7816-4 case, header, Nc and Ne.",
                json: "{case, cla, ins, p1, p2, nc, ne, data}", run: decodeAPDU),
            decodeSubcommand(
                "response", "Decode a response APDU: data and status word with its meaning.",
                json: "{data, sw, meaning, tlv (when the data is FCP, FMD or FCI)}", run: decodeResponse),
            decodeSubcommand(
                "atr", "Decode an ATR: interface bytes, protocols, historical bytes, TCK.",
                json: "{convention, t0, interfaceBytes, protocols, historicalBytes, tck, checksumValid, …, warnings}",
                discussion: """
                    What can still be read is decoded and the rest said: bytes after a complete ATR
                    (an ATR copied with its SW 90 00) are reported and ignored, a wrong TCK is named
                    with the expected one, a TCK missing where a protocol other than T=0 is announced
                    and malformed historical bytes are warnings.
                    """,
                run: decodeATR),
            decodeSubcommand(
                "tlv", "Decode BER-TLV data objects (ISO/IEC 7816-4 §5.2), nested.",
                json: "[{tag, length, meaning, value, note} or {tag, length, meaning, children}]",
                discussion: """
                    ISO/IEC 7816-4 §5.2.2 lets 00 and FF bytes stand before, between and after objects
                    as padding. 00 is always skipped there. FF is skipped too by default (--ff padding),
                    since card responses and files padded with FF are common; with --ff tag an FF
                    starts a private-class constructed tag (FF 01 …). A constructed object whose value
                    is not BER-TLV is shown with its raw value and a note. Inside 62 (FCP), 64 (FMD)
                    and 6F (FCI) the common parameters are named (ISO/IEC 7816-4 §7.4.3).
                    """,
                options: [
                    .value("ff", "padding|tag", "What FF between objects is: padding (the default) or the first byte of a tag.",
                           .choice(["padding", "tag"])),
                ],
                run: decodeTLV),
        ]
    )

    package static func decodeSubcommand(
        _ name: String, _ abstract: String, json: String, discussion: String? = nil, options: [OptionSpec] = [],
        run: @escaping @Sendable (Invocation, [UInt8]) throws -> Int32
    ) -> Command {
        let hexNote = "The hex may be split over several arguments and use spaces, colons or 0x prefixes."
        // A loop, not `map { … }.joined()`: the unspecialised joined's first call looks up its
        // associated types by scanning every conformance record, and this runs in every
        // `secbridge-tools` start (0.26 M instructions; docs/benchmarks.md §11).
        var usage = "[--json] "
        for option in options { usage += "[--\(option.name) \(option.valueName ?? "")] " }
        return Command(
            name: name, abstract: abstract,
            usage: usage + "HEX…",
            discussion: discussion.map { hexNote + "\n\n" + $0 } ?? hexNote,
            options: [.flag("json", "Print JSON: \(json). Hex strings are uppercase without spaces.")] + options,
            run: { invocation in
                let text = invocation.arguments.positional.joined(separator: " ")
                guard !text.isEmpty else { throw CLIError.usage("give the bytes to decode in hex") }
                let bytes: [UInt8]
                do throws(ISO7816Error) {
                    bytes = try HexBytes.parse(text)
                } catch {
                    throw CLIError.usage("the input is not valid hex: \(error.reason)")
                }
                return try run(invocation, bytes)
            })
    }

    @Sendable package static func decodeAPDU(_ invocation: Invocation, _ bytes: [UInt8]) throws -> Int32 {
        let apdu: CommandAPDU
        do {
            apdu = try CommandAPDU(parsing: bytes)
        } catch {
            throw CLIError.failure("not a valid command APDU: \(error.reason)")
        }
        if invocation.json {
            invocation.out(JSONValue.object([
                ("case", .string(apdu.case.rawValue)),
                ("cla", .hex([apdu.cla])), ("ins", .hex([apdu.ins])),
                ("p1", .hex([apdu.p1])), ("p2", .hex([apdu.p2])),
                ("nc", .int(apdu.nc)), ("ne", .int(apdu.ne)),
                ("data", .hex(apdu.data)),
            ]).prettySerialized())
        } else {
            invocation.out("case \(apdu.case.rawValue)\(apdu.isReaderPseudoAPDU ? " (reader pseudo-APDU, CLA FF)" : "")")
            invocation.out("CLA \([apdu.cla].hexString)  INS \([apdu.ins].hexString)  P1 \([apdu.p1].hexString)  P2 \([apdu.p2].hexString)")
            invocation.out("Nc \(apdu.nc)  Ne \(apdu.ne)\(apdu.ne == 0 ? " (no Le field)" : "")")
            if !apdu.data.isEmpty { invocation.out("data \(apdu.data.hexString)") }
        }
        return exitSuccess
    }

    @Sendable static func decodeResponse(_ invocation: Invocation, _ bytes: [UInt8]) throws -> Int32 {
        let response: ResponseAPDU
        do {
            response = try ResponseAPDU(parsing: bytes)
        } catch {
            throw CLIError.failure("not a valid response APDU: \(error.reason)")
        }
        let fileControl = fileControlObjects(response.data)
        if invocation.json {
            var members: [(String, JSONValue)] = [
                ("data", .hex(response.data)), ("sw", .hex(response.statusWord.bytes)),
                ("meaning", .string(response.statusWord.meaning)),
            ]
            if let fileControl { members.append(("tlv", .array(fileControl.map { tlvJSON($0, inside: nil) }))) }
            invocation.out(JSONValue.object(members).prettySerialized())
        } else {
            if !response.data.isEmpty { invocation.out("data (\(byteCount(response.data.count))) \(response.data.hexString)") }
            for line in tlvLines(fileControl ?? [], depth: 1) { invocation.out(line) }
            invocation.out("SW \(response.statusWord.bytes.hexString): \(response.statusWord.meaning)")
        }
        return exitSuccess
    }

    @Sendable static func decodeATR(_ invocation: Invocation, _ bytes: [UInt8]) throws -> Int32 {
        // Lenient: an ATR copied with the SW after it, a wrong or missing TCK, or broken historical
        // bytes still decode, and each is said (ATR.readLeniently).
        let reading: ATR.LenientReading
        do {
            reading = try ATR.readLeniently(bytes)
        } catch {
            throw CLIError.failure("not a valid ATR: \(error.reason)")
        }
        let atr = reading.atr
        let historical: HistoricalBytes?
        var warnings: [String] = []
        do {
            historical = try atr.decodedHistoricalBytes()
        } catch {
            historical = nil
            warnings.append("historical bytes malformed: \(error.reason)")
        }
        let storage = historical?.contactlessStorageCard
        let tckText: String
        switch atr.checkByte {
        case .notRequired:
            tckText = "TCK absent (only T=0 announced)"
        case .valid:
            tckText = "TCK \([atr.tck ?? 0].hexString) (valid)"
        case .invalid(let expected):
            tckText = "TCK \([atr.tck ?? 0].hexString) invalid: expected \([expected].hexString)"
            warnings.append(tckText)
        case .missing(let expected):
            tckText = "TCK missing: a protocol other than T=0 is announced, so the ATR should end with TCK \([expected].hexString)"
            warnings.append(tckText)
        }
        if !reading.bytesAfter.isEmpty {
            warnings.append("\(byteCount(reading.bytesAfter.count)) after the ATR ignored: \(reading.bytesAfter.hexString)")
        }
        if invocation.json {
            var members: [(String, JSONValue)] = [
                ("convention", .string(atr.convention == .direct ? "direct" : "inverse")),
                ("t0", .hex([atr.t0])),
                ("interfaceBytes", .array(atr.interfaceGroups.map { group in
                    var fields: [(String, JSONValue)] = [("index", .int(group.index))]
                    if let ta = group.ta { fields.append(("ta", .hex([ta]))) }
                    if let tb = group.tb { fields.append(("tb", .hex([tb]))) }
                    if let tc = group.tc { fields.append(("tc", .hex([tc]))) }
                    if let td = group.td { fields.append(("td", .hex([td]))) }
                    return .object(fields)
                })),
                ("protocols", .array(atr.protocols.map { .string("T=\($0)") })),
                ("historicalBytes", .hex(atr.historicalBytes)),
                ("tck", atr.tck.map { .hex([$0]) } ?? .null),
                ("checksumValid", .bool(atr.isChecksumValid)),
            ]
            switch atr.checkByte {
            case .invalid(let expected), .missing(let expected): members.append(("expectedTCK", .hex([expected])))
            case .valid, .notRequired: break
            }
            if !reading.bytesAfter.isEmpty { members.append(("ignoredAfterATR", .hex(reading.bytesAfter))) }
            if let historical {
                members.append(("categoryIndicator", historical.categoryIndicator.map { .hex([$0]) } ?? .null))
                members.append(("compactTLV", .array(historical.objects.map {
                    .object([
                        ("tag", .hex([$0.tagLengthByte])), ("value", .hex($0.value)),
                        ("meaning", .string(describeCompactTLV($0))),
                    ])
                })))
            }
            if let storage {
                members.append(("contactless", .object([
                    ("rid", .hex(storage.rid)), ("standard", .hex([storage.standard])),
                    ("cardName", .hex([UInt8(storage.cardName >> 8), UInt8(storage.cardName & 0xFF)])),
                    ("cardNameText", storage.cardNameText.map { .string($0) } ?? .null),
                ])))
            }
            members.append(("warnings", .array(warnings.map { .string($0) })))
            invocation.out(JSONValue.object(members).prettySerialized())
        } else {
            invocation.out("TS \([atr.bytes[0]].hexString) (\(atr.convention == .direct ? "direct" : "inverse") convention)  T0 \([atr.t0].hexString)  K = \(atr.historicalBytes.count)")
            for group in atr.interfaceGroups {
                var parts: [String] = []
                if let ta = group.ta { parts.append("TA\(group.index) \([ta].hexString)") }
                if let tb = group.tb { parts.append("TB\(group.index) \([tb].hexString)") }
                if let tc = group.tc { parts.append("TC\(group.index) \([tc].hexString)") }
                if let td = group.td { parts.append("TD\(group.index) \([td].hexString) (T=\(td & 0x0F))") }
                invocation.out(parts.joined(separator: "  "))
            }
            invocation.out("protocols: " + (atr.protocols.map { "T=\($0)" }.joined(separator: ", ")))
            invocation.out("historical bytes: " + (atr.historicalBytes.isEmpty ? "none" : atr.historicalBytes.hexString))
            if let historical {
                for object in historical.objects {
                    invocation.out("  compact-TLV \([object.tagLengthByte].hexString): " + describeCompactTLV(object))
                }
            }
            if let storage {
                invocation.out("contactless storage card: RID \(storage.rid.hexString), standard \([storage.standard].hexString)\(storage.standardText.map { " (\($0))" } ?? ""), name \([UInt8(storage.cardName >> 8), UInt8(storage.cardName & 0xFF)].hexString)\(storage.cardNameText.map { " (\($0))" } ?? "")")
            }
            invocation.out(tckText)
            for warning in warnings where warning != tckText { invocation.out(warning) }
        }
        return exitSuccess
    }

    /// One COMPACT-TLV object of the historical bytes in words (ISO/IEC 7816-4 §8.1.1.2).
    static func describeCompactTLV(_ object: CompactTLV) -> String {
        let names: [UInt8: String] = [
            0x1: "country code", 0x2: "issuer identification number", 0x3: "card service data",
            0x4: "initial access data", 0x5: "card issuer's data", 0x6: "pre-issuing data",
            0x7: "card capabilities", 0x8: "status indicator", 0xF: "application identifier",
        ]
        var text = (names[object.tag] ?? "tag \(object.tag)") + (object.value.isEmpty ? "" : " " + object.value.hexString)
        switch object.tag {
        case 0x7:
            let capabilities = CardCapabilities(compactTLVValue: object.value)
            var features: [String] = []
            if capabilities.supportsCommandChaining { features.append("command chaining") }
            if capabilities.supportsExtendedLength { features.append("extended Lc/Le") }
            text += " (" + (features.isEmpty ? "neither command chaining nor extended Lc/Le" : features.joined(separator: ", ")) + ")"
        case 0x8:
            // Status indicator: LCS (1 byte), SW (2 bytes), or both.
            switch object.value.count {
            case 1: text += " (life cycle status \([object.value[0]].hexString))"
            case 2: text += " (SW \(object.value.hexString))"
            case 3: text += " (life cycle status \([object.value[0]].hexString), SW \(object.value[1...].hexString))"
            default: break
            }
        default:
            break
        }
        return text
    }

    @Sendable static func decodeTLV(_ invocation: Invocation, _ bytes: [UInt8]) throws -> Int32 {
        let options = BERTLV.ReadingOptions(
            ff: invocation.arguments.value("ff") == "tag" ? .tag : .padding, keepsMalformedContent: true)
        let objects: [BERTLV]
        do {
            objects = try BERTLV.parseAll(bytes, options: options)
        } catch {
            throw CLIError.failure("not valid BER-TLV: \(error.reason)")
        }
        if invocation.json {
            invocation.out(JSONValue.array(objects.map { tlvJSON($0, inside: nil) }).prettySerialized())
        } else {
            for line in tlvLines(objects) { invocation.out(line) }
        }
        return exitSuccess
    }

    /// Response data that is file control information (it starts with 62, 64 or 6F and reads as
    /// BER-TLV, malformed constructed values kept raw); nil for any other data.
    package static func fileControlObjects(_ data: [UInt8]) -> [BERTLV]? {
        guard let first = data.first, FileControlInformation.templateNames[UInt32(first)] != nil else { return nil }
        return try? BERTLV.parseAll(data, options: BERTLV.ReadingOptions(keepsMalformedContent: true))
    }

    /// The note on a constructed object kept with its raw value.
    static func contentNote(_ error: ISO7816Error) -> String {
        "constructed, but the value is not BER-TLV (\(error.reason)); shown raw"
    }

    /// One line per object, children indented under their parent: tag, length, the value of a
    /// primitive object (or of a constructed one that did not parse), the meaning of file control
    /// parameters (`FileControlInformation`).
    package static func tlvLines(_ objects: [BERTLV], inside parent: BERTag? = nil, depth: Int = 0) -> [String] {
        var lines: [String] = []
        for object in objects {
            var line = String(repeating: "  ", count: depth) + "\(object.tag.bytes.hexString) (\(byteCount(object.value.count)))"
            let raw = !object.tag.isConstructed || object.contentError != nil
            if raw && !object.value.isEmpty { line += ": \(object.value.hexString)" }
            if let meaning = FileControlInformation.meaning(of: object, inside: parent) { line += " — \(meaning)" }
            if let error = object.contentError { line += " [\(contentNote(error))]" }
            lines.append(line)
            lines += tlvLines(object.children, inside: object.tag, depth: depth + 1)
        }
        return lines
    }

    /// `{tag, length, meaning, value, note}` or `{tag, length, meaning, children}`; meaning and note
    /// only when there is one.
    static func tlvJSON(_ object: BERTLV, inside parent: BERTag?) -> JSONValue {
        var members: [(String, JSONValue)] = [("tag", .hex(object.tag.bytes)), ("length", .int(object.value.count))]
        if let meaning = FileControlInformation.meaning(of: object, inside: parent) { members.append(("meaning", .string(meaning))) }
        if object.tag.isConstructed && object.contentError == nil {
            members.append(("children", .array(object.children.map { tlvJSON($0, inside: object.tag) })))
        } else {
            members.append(("value", .hex(object.value)))
            if let error = object.contentError { members.append(("note", .string(contentNote(error)))) }
        }
        return .object(members)
    }
}

/// "1 byte", "2 bytes".
func byteCount(_ count: Int) -> String { count == 1 ? "1 byte" : "\(count) bytes" }
