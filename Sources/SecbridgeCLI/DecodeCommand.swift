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
                json: "{data, sw, meaning}", run: decodeResponse),
            decodeSubcommand(
                "atr", "Decode an ATR: interface bytes, protocols, historical bytes, TCK.",
                json: "{convention, t0, interfaceBytes, protocols, historicalBytes, tck, checksumValid, …}",
                run: decodeATR),
            decodeSubcommand(
                "tlv", "Decode BER-TLV data objects (ISO/IEC 7816-4 §5.2), nested.",
                json: "[{tag, length, value} or {tag, length, children}]", run: decodeTLV),
        ]
    )

    package static func decodeSubcommand(
        _ name: String, _ abstract: String, json: String,
        run: @escaping @Sendable (Invocation, [UInt8]) throws -> Int32
    ) -> Command {
        Command(
            name: name, abstract: abstract, usage: "[--json] HEX…",
            discussion: "The hex may be split over several arguments and use spaces, colons or 0x prefixes.",
            options: [.flag("json", "Print JSON: \(json). Hex strings are uppercase without spaces.")],
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
        if invocation.json {
            invocation.out(JSONValue.object([
                ("data", .hex(response.data)), ("sw", .hex(response.statusWord.bytes)),
                ("meaning", .string(response.statusWord.meaning)),
            ]).prettySerialized())
        } else {
            if !response.data.isEmpty { invocation.out("data (\(byteCount(response.data.count))) \(response.data.hexString)") }
            invocation.out("SW \(response.statusWord.bytes.hexString): \(response.statusWord.meaning)")
        }
        return exitSuccess
    }

    @Sendable static func decodeATR(_ invocation: Invocation, _ bytes: [UInt8]) throws -> Int32 {
        let atr: ATR
        do {
            atr = try ATR(parsing: bytes, requireValidChecksum: false)
        } catch {
            throw CLIError.failure("not a valid ATR: \(error.reason)")
        }
        let historical = try? atr.decodedHistoricalBytes()
        let storage = historical?.contactlessStorageCard
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
            if let tck = atr.tck {
                invocation.out("TCK \([tck].hexString) (\(atr.isChecksumValid ? "valid" : "INVALID: the XOR of T0…TCK is not 0"))")
            } else {
                invocation.out("TCK absent (only T=0 announced)")
            }
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
        let objects: [BERTLV]
        do {
            objects = try BERTLV.parseAll(bytes)
        } catch {
            throw CLIError.failure("not valid BER-TLV: \(error.reason)")
        }
        func json(_ object: BERTLV) -> JSONValue {
            var members: [(String, JSONValue)] = [("tag", .hex(object.tag.bytes)), ("length", .int(object.value.count))]
            if object.tag.isConstructed {
                members.append(("children", .array(object.children.map(json))))
            } else {
                members.append(("value", .hex(object.value)))
            }
            return .object(members)
        }
        func text(_ object: BERTLV, depth: Int) {
            let indent = String(repeating: "  ", count: depth)
            if object.tag.isConstructed {
                invocation.out("\(indent)\(object.tag.bytes.hexString) (\(byteCount(object.value.count)))")
                for child in object.children { text(child, depth: depth + 1) }
            } else {
                invocation.out("\(indent)\(object.tag.bytes.hexString) (\(byteCount(object.value.count)))" + (object.value.isEmpty ? "" : ": \(object.value.hexString)"))
            }
        }
        if invocation.json {
            invocation.out(JSONValue.array(objects.map(json)).prettySerialized())
        } else {
            for object in objects { text(object, depth: 0) }
        }
        return exitSuccess
    }
}

/// "1 byte", "2 bytes".
func byteCount(_ count: Int) -> String { count == 1 ? "1 byte" : "\(count) bytes" }
