import ISO7816

// ACR122U pseudo-APDUs and PN532 frames in words, for every view that shows them
// (`secbridge transcript show` and its HTML page among them).

extension ACR122Command {
    /// The pseudo-APDU in words (ACR122U API v2.04 §4–§6; docs/acr122-pn532.md §2):
    ///
    /// | Command | Summary |
    /// |---|---|
    /// | `FF 00 00 00 Lc D4 …` | `ACR122U direct transmit: PN532 ` and ``PN532HostFrame/summary`` |
    /// | `FF C0 00 00 Le` | `ACR122U: get response (Le 0A)` |
    /// | `FF CA 00 00 00` / `FF CA 01 00 00` | `ACR122U: get data (UID)` / `(ATS)` |
    /// | `FF 00 40 …` | `ACR122U: LED and buzzer control` |
    /// | `FF 00 48 00 00` | `ACR122U: get firmware version` |
    /// | `FF 00 50 00 00` / `FF 00 51 pp 00` | `ACR122U: get PICC operating parameter` / `set PICC operating parameter pp` |
    /// | `FF 00 41 TO 00` | `ACR122U: set timeout TO` |
    /// | `FF 00 52 00/FF 00` | `ACR122U: buzzer on card detection off` / `on` |
    public var summary: String {
        switch self {
        case .directTransmit(let frame): "ACR122U direct transmit: PN532 \(frame.summary)"
        case .getResponse(let length): "ACR122U: get response (Le \(HexBytes.format(length)))"
        case .getUID: "ACR122U: get data (UID)"
        case .getATS: "ACR122U: get data (ATS)"
        case .ledAndBuzzer: "ACR122U: LED and buzzer control"
        case .firmwareVersion: "ACR122U: get firmware version"
        case .getPICCOperatingParameter: "ACR122U: get PICC operating parameter"
        case .setPICCOperatingParameter(let parameter): "ACR122U: set PICC operating parameter \(HexBytes.format(parameter.rawValue))"
        case .setMCUTimeout(let timeout): "ACR122U: set timeout \(HexBytes.format(timeout.byte))"
        case .setBuzzerOnDetection(let on): "ACR122U: buzzer on card detection \(on ? "on" : "off")"
        }
    }
}

extension PN532HostFrame {
    /// The command in words: its UM0701-02 §7 name (``PN532CommandCode/name``), and
    ///
    /// - for InDataExchange, `| D4 40 | Tg | data |` (§7.3.8): the target number and, when the data
    ///   is at least a 4-byte header, the card APDU's first `CommandAPDU.summary` line (the
    ///   instruction name alone when it does not parse): `InDataExchange target 1: SELECT by DF
    ///   name (AID) (case 4S, Nc 7, Ne 256)`;
    /// - for TgSetData, `| D4 8E | data |` (§7.3.17) with at least 2 bytes: the status word the
    ///   emulated card returns, `TgSetData: R-APDU ending 90 00`.
    public var summary: String {
        let name = command.name
        switch command {
        case .inDataExchange where parameters.count > 1:
            let inner = Array(parameters.dropFirst())
            var text = "\(name) target \(parameters[0])"
            if let apdu = try? CommandAPDU(parsing: inner), let first = apdu.summary.first {
                text += ": " + first
            } else if inner.count >= 4 {
                text += ": " + CommandAPDU.instructionName(ins: inner[1], p1: inner[2])
            }
            return text
        case .tgSetData where parameters.count >= 2:
            return "\(name): R-APDU ending \(HexBytes.format(Array(parameters.suffix(2))))"
        default:
            return name
        }
    }
}

extension PN532ChipFrame {
    /// Commands whose answer starts with a status byte (PN532 UM0701-02 §7.3: InDataExchange,
    /// InCommunicateThru, InDeselect, InRelease, InSelect, TgGetData, TgGetInitiatorCommand,
    /// TgSetData, TgResponseToInitiator).
    static let answersWithStatus: Set<UInt8> = [0x40, 0x42, 0x44, 0x52, 0x54, 0x86, 0x88, 0x8E, 0x90]

    /// The command this frame answers: its response code minus one (UM0701-02 §6.2).
    public var answeredCommand: PN532CommandCode { PN532CommandCode(rawValue: responseCode &- 1) }

    /// The answer in words, one line a fact:
    ///
    /// 1. `PN532 <name> answer` (the command is the response code minus one), and for an answer
    ///    `| D5 cmd+1 | status | … |` (InDataExchange, InCommunicateThru, InDeselect, InRelease,
    ///    InSelect, TgGetData, TgGetInitiatorCommand, TgSetData, TgResponseToInitiator) the ``PN532Status``:
    ///    `PN532 InDataExchange answer, status 00 (success)`;
    /// 2. after a successful InDataExchange with at least 2 bytes of data and MI clear (§7.3.8),
    ///    the card's status word: `card: SW 90 00: …` (`StatusWord.meaning`);
    /// 3. after a successful TgGetData with a C-APDU of at least 4 bytes (§7.3.16), the terminal's
    ///    command: `terminal's C-APDU: SELECT by DF name (AID) (case 4S, Nc 7, Ne 256)`.
    public var summary: [String] {
        let command = answeredCommand
        var lines = ["PN532 \(command.name) answer"]
        guard Self.answersWithStatus.contains(command.rawValue), let first = data.first else { return lines }
        let status = PN532Status(rawValue: first)
        lines[0] += ", status \(status)"
        guard status.isSuccess else { return lines }
        let rest = Array(data.dropFirst())
        // With MI set the data is only the first part of the card's answer: no status word yet.
        if command == .inDataExchange, !status.moreInformation, rest.count >= 2 {
            let sw = StatusWord(sw1: rest[rest.count - 2], sw2: rest[rest.count - 1])
            lines.append("card: SW \(sw.bytes.hexString): \(sw.meaning)")
        }
        if command == .tgGetData, rest.count >= 4 {
            let apdu = (try? CommandAPDU(parsing: rest))?.summary.first ?? CommandAPDU.instructionName(ins: rest[1], p1: rest[2])
            lines.append("terminal's C-APDU: " + apdu)
        }
        return lines
    }
}
