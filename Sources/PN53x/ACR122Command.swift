import ISO7816

/// LED control bits, the P2 byte of the LED/buzzer pseudo-APDU (ACR122U API v2.04 §6.2).
///
/// | bit | 7 | 6 | 5 | 4 | 3 | 2 | 1 | 0 |
/// |---|---|---|---|---|---|---|---|---|
/// | meaning | green blink mask | red blink mask | initial green blink | initial red blink | green mask | red mask | final green | final red |
///
/// A "mask" bit lets the command change that LED; without it the LED keeps its state.
public struct ACR122LEDControl: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bit 0: the red LED's final state is on (ACR122U API v2.04; docs/acr122-pn532.md §2).
    public static let finalRed = ACR122LEDControl(rawValue: 0x01)
    /// Bit 1: the green LED's final state is on.
    public static let finalGreen = ACR122LEDControl(rawValue: 0x02)
    /// Bit 2: the red LED takes the final state of bit 0 (without it, red keeps its state).
    public static let redMask = ACR122LEDControl(rawValue: 0x04)
    /// Bit 3: the green LED takes the final state of bit 1.
    public static let greenMask = ACR122LEDControl(rawValue: 0x08)
    /// Bit 4: the red LED's initial blinking state is on.
    public static let initialRedBlink = ACR122LEDControl(rawValue: 0x10)
    /// Bit 5: the green LED's initial blinking state is on.
    public static let initialGreenBlink = ACR122LEDControl(rawValue: 0x20)
    /// Bit 6: the red LED blinks (T1 and T2, in units of 100 ms, set the phases).
    public static let redBlinkMask = ACR122LEDControl(rawValue: 0x40)
    /// Bit 7: the green LED blinks.
    public static let greenBlinkMask = ACR122LEDControl(rawValue: 0x80)
}

/// When the buzzer sounds during an LED blink sequence: the last byte of the LED/buzzer pseudo-APDU.
public enum ACR122BuzzerLink: UInt8, Sendable, Hashable, CaseIterable {
    /// 00: the buzzer stays off.
    case off = 0x00
    /// 01: the buzzer sounds during T1.
    case duringT1 = 0x01
    /// 02: the buzzer sounds during T2.
    case duringT2 = 0x02
    /// 03: the buzzer sounds during T1 and T2.
    case duringT1AndT2 = 0x03
}

/// The LED/buzzer pseudo-APDU's parameters (ACR122U API v2.04 §6.2).
///
/// Wire layout: `| FF | 00 | 40 | LED control | 04 | T1 | T2 | repetitions | buzzer link |`;
/// T1 and T2 are in units of 100 ms on the wire.
public struct ACR122LEDBuzzerControl: Sendable, Hashable {
    /// The P2 byte.
    public var led: ACR122LEDControl
    /// T1, the initial blink state's duration: a multiple of 100 ms, at most 25.5 s.
    public let t1: Duration
    /// T2, the toggle blink state's duration: a multiple of 100 ms, at most 25.5 s.
    public let t2: Duration
    /// How many times the T1/T2 cycle repeats.
    public var repetitions: UInt8
    /// When the buzzer sounds.
    public var buzzer: ACR122BuzzerLink

    /// - Throws: `PN53xParseError` `.invalidValue` when T1 or T2 is not a multiple of 100 ms in
    ///   0 … 25.5 s.
    public init(
        led: ACR122LEDControl, t1: Duration = .zero, t2: Duration = .zero,
        repetitions: UInt8 = 0, buzzer: ACR122BuzzerLink = .off
    ) throws(PN53xParseError) {
        self.led = led
        self.t1 = t1
        self.t2 = t2
        self.repetitions = repetitions
        self.buzzer = buzzer
        _ = try Self.units(t1, "T1")
        _ = try Self.units(t2, "T2")
    }

    /// T1 in units of 100 ms, as sent.
    public var t1Units: UInt8 { (try? Self.units(t1, "T1")) ?? 0 }
    /// T2 in units of 100 ms, as sent.
    public var t2Units: UInt8 { (try? Self.units(t2, "T2")) ?? 0 }

    static func units(_ duration: Duration, _ name: String) throws(PN53xParseError) -> UInt8 {
        let (seconds, attoseconds) = duration.components
        let attosecondsPerMillisecond: Int64 = 1_000_000_000_000_000
        guard seconds >= 0, attoseconds >= 0, attoseconds % attosecondsPerMillisecond == 0 else {
            throw PN53xParseError(.invalidValue, at: 0, "\(name) must be a whole number of 100 ms, got \(duration)")
        }
        let milliseconds = seconds * 1000 + attoseconds / attosecondsPerMillisecond
        guard milliseconds % 100 == 0, milliseconds <= 25_500 else {
            throw PN53xParseError(
                .invalidValue, at: 0,
                "\(name) must be a multiple of 100 ms between 0 and 25.5 s, got \(duration)")
        }
        return UInt8(milliseconds / 100)
    }
}

/// The PICC operating parameter of the ACR122U (ACR122U API v2.04 §6.4); the default is FF (all set).
///
/// libnfc clears it all (00) before card emulation; nfcpy sends 7F (automatic polling off).
/// Restore FF after an emulation, or the reader looks dead until it is replugged (docs/acr122-pn532.md §5d).
public struct ACR122PICCOperatingParameter: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bit 0: detect ISO 14443 Type A cards.
    public static let iso14443TypeA = ACR122PICCOperatingParameter(rawValue: 0x01)
    /// Bit 1: detect ISO 14443 Type B cards.
    public static let iso14443TypeB = ACR122PICCOperatingParameter(rawValue: 0x02)
    /// Bit 2: detect Topaz (NFC Forum Type 1) tags.
    public static let topaz = ACR122PICCOperatingParameter(rawValue: 0x04)
    /// Bit 3: detect FeliCa at 212 kbit/s.
    public static let feliCa212 = ACR122PICCOperatingParameter(rawValue: 0x08)
    /// Bit 4: detect FeliCa at 424 kbit/s.
    public static let feliCa424 = ACR122PICCOperatingParameter(rawValue: 0x10)
    /// Bit 5: poll every 250 ms (set) instead of every 500 ms (clear).
    public static let pollInterval250ms = ACR122PICCOperatingParameter(rawValue: 0x20)
    /// Bit 6: send RATS automatically to ISO 14443-4 Type A cards.
    public static let automaticATSGeneration = ACR122PICCOperatingParameter(rawValue: 0x40)
    /// Bit 7: poll for cards automatically.
    public static let automaticPolling = ACR122PICCOperatingParameter(rawValue: 0x80)

    /// FF, the factory default.
    public static let factoryDefault = ACR122PICCOperatingParameter(rawValue: 0xFF)
}

/// The ACR122U MCU's timeout for a PN532 answer, P2 of `FF 00 41 TO 00` (ACR122U API v2.04 §6.3).
public enum ACR122MCUTimeout: Sendable, Hashable {
    /// TO = 00: no timeout check.
    case none
    /// TO = 01 … FE: the timeout in steps of 5 s (1 … 254 steps).
    case fiveSecondSteps(UInt8)
    /// TO = FF: wait until the PN532 answers.
    case waitForChip

    /// The TO byte. `fiveSecondSteps(0)` and `fiveSecondSteps(255)` would be sent as 00 and FF, which
    /// mean `none` and `waitForChip`: build step counts with `init(covering:)` or `init(byte:)`.
    public var byte: UInt8 {
        switch self {
        case .none: 0x00
        case .fiveSecondSteps(let steps): steps
        case .waitForChip: 0xFF
        }
    }

    /// The case the TO byte stands for.
    public init(byte: UInt8) {
        switch byte {
        case 0x00: self = .none
        case 0xFF: self = .waitForChip
        default: self = .fiveSecondSteps(byte)
        }
    }

    /// The shortest 5 s step count that covers `duration` (at least one step).
    /// - Throws: `PN53xParseError` `.invalidValue` when `duration` is negative or above 254 × 5 s.
    public init(covering duration: Duration) throws(PN53xParseError) {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0, seconds <= 1270 else {
            throw PN53xParseError(.invalidValue, at: 0, "the MCU timeout must be between 0 and 1270 s, got \(duration)")
        }
        let wholeSeconds = seconds + (attoseconds > 0 ? 1 : 0)
        let steps = max(1, (wholeSeconds + 4) / 5)
        guard steps <= 254 else {
            throw PN53xParseError(.invalidValue, at: 0, "the MCU timeout must be at most 1270 s, got \(duration)")
        }
        self = .fiveSecondSteps(UInt8(steps))
    }
}

/// An ACR122U pseudo-APDU (class FF): a command for the reader, not for a card (ACR122U API v2.04).
///
/// These never go through ISO/IEC 7816-4 card transport logic (61xx / 6Cxx handling); see
/// `ACR122Link`.
///
/// | Case | Bytes | Reply |
/// |---|---|---|
/// | `directTransmit` | `FF 00 00 00 Lc D4 cmd params` | `D5 cmd+1 … 90 00` |
/// | `getResponse` | `FF C0 00 00 xx` after `61 xx` | `D5 cmd+1 … 90 00`, the xx bytes announced (docs/acr122-pn532.md §2) |
/// | `getUID` | `FF CA 00 00 00` | `UID 90 00`; `63 00`; `6A 81` |
/// | `getATS` | `FF CA 01 00 00` | `ATS 90 00`; `6A 81` |
/// | `ledAndBuzzer` | `FF 00 40 P2 04 T1 T2 Rep Link` | `90 ss` |
/// | `firmwareVersion` | `FF 00 48 00 00` | 10 ASCII bytes, no status word |
/// | `getPICCOperatingParameter` | `FF 00 50 00 00` | `90 pp` |
/// | `setPICCOperatingParameter` | `FF 00 51 pp 00` | `90 pp` (or `pp` alone (U)) |
/// | `setMCUTimeout` | `FF 00 41 TO 00` | `90 00`; `63 00` |
/// | `setBuzzerOnDetection` | `FF 00 52 00/FF 00` | `90 00` |
public enum ACR122Command: Sendable, Hashable, CustomStringConvertible {
    /// Wraps a PN532 frame; Lc is computed from the frame, never given by callers (docs/cases.md P08).
    case directTransmit(PN532HostFrame)
    /// Fetches the pending answer on a T=0 unit after `61 xx`; Le = xx (00 means 256).
    case getResponse(length: UInt8)
    /// Reads the UID of the card in the field.
    case getUID
    /// Reads the ATS of the ISO 14443-4 Type A card in the field.
    case getATS
    /// Drives the LEDs and the buzzer.
    case ledAndBuzzer(ACR122LEDBuzzerControl)
    /// Reads the firmware string, e.g. "ACR122U207".
    case firmwareVersion
    /// Reads the PICC operating parameter.
    case getPICCOperatingParameter
    /// Writes the PICC operating parameter.
    case setPICCOperatingParameter(ACR122PICCOperatingParameter)
    /// Sets the MCU's timeout for PN532 answers.
    case setMCUTimeout(ACR122MCUTimeout)
    /// Turns the beep on card detection on (`true`, P2 FF) or off (`false`, P2 00).
    case setBuzzerOnDetection(Bool)

    /// The pseudo-APDU's bytes.
    public func serialized() -> [UInt8] {
        switch self {
        case .directTransmit(let frame):
            let payload = frame.serialized()
            // PN532HostFrame caps the frame at 254 bytes, so Lc always fits one byte.
            return [0xFF, 0x00, 0x00, 0x00, UInt8(payload.count)] + payload
        case .getResponse(let length): return [0xFF, 0xC0, 0x00, 0x00, length]
        case .getUID: return [0xFF, 0xCA, 0x00, 0x00, 0x00]
        case .getATS: return [0xFF, 0xCA, 0x01, 0x00, 0x00]
        case .ledAndBuzzer(let control):
            return [0xFF, 0x00, 0x40, control.led.rawValue, 0x04,
                    control.t1Units, control.t2Units, control.repetitions, control.buzzer.rawValue]
        case .firmwareVersion: return [0xFF, 0x00, 0x48, 0x00, 0x00]
        case .getPICCOperatingParameter: return [0xFF, 0x00, 0x50, 0x00, 0x00]
        case .setPICCOperatingParameter(let parameter): return [0xFF, 0x00, 0x51, parameter.rawValue, 0x00]
        case .setMCUTimeout(let timeout): return [0xFF, 0x00, 0x41, timeout.byte, 0x00]
        case .setBuzzerOnDetection(let on): return [0xFF, 0x00, 0x52, on ? 0xFF : 0x00, 0x00]
        }
    }

    /// Wraps a PN532 command (`D4 cmd params`) in a direct-transmit pseudo-APDU.
    /// - Throws: `ACR122Error.frameTooLong` when `D4 cmd params` exceeds 254 bytes.
    public static func directTransmit(
        command: PN532CommandCode, parameters: [UInt8]
    ) throws(ACR122Error) -> ACR122Command {
        .directTransmit(try PN532HostFrame(command: command, parameters: parameters))
    }

    /// Parses a pseudo-APDU, e.g. in a simulated reader.
    /// - Throws: `PN53xParseError`: `.unexpectedByte` for a class other than FF or a wrong constant
    ///   byte, `.lengthMismatch` when Lc disagrees with the data, `.truncated`, `.trailingBytes`,
    ///   `.unknownCommand` for an FF-class command this library does not model.
    public init(parsing bytes: [UInt8]) throws(PN53xParseError) {
        var reader = PN53xByteReader(bytes)
        try reader.expectByte(0xFF, "CLA")
        let ins = try reader.readByte("INS")
        let p1 = try reader.readByte("P1")
        let p2 = try reader.readByte("P2")
        let p3Offset = reader.offset
        let p3 = try reader.readByte(ins == 0xC0 ? "Le" : "Lc/Le")

        func expect(_ value: UInt8, _ expected: UInt8, _ field: String, at offset: Int) throws(PN53xParseError) {
            guard value == expected else {
                throw PN53xParseError(
                    .unexpectedByte, at: offset,
                    "\(field) must be \(HexBytes.format(expected)), found \(HexBytes.format(value))")
            }
        }

        switch (ins, p1) {
        case (0x00, 0x00):
            try expect(p2, 0x00, "P2 of direct transmit", at: 3)
            guard Int(p3) == reader.remaining else {
                throw PN53xParseError(
                    reader.remaining < Int(p3) ? .truncated : .lengthMismatch, at: p3Offset,
                    "Lc says \(p3) bytes but \(reader.remaining) follow")
            }
            do {
                self = .directTransmit(try PN532HostFrame(parsing: reader.readRest()))
            } catch {
                throw PN53xParseError(error.code, at: error.offset + 5, error.reason)
            }
            return
        case (0xC0, 0x00):
            try expect(p2, 0x00, "P2 of Get Response", at: 3)
            self = .getResponse(length: p3)
        case (0xCA, 0x00), (0xCA, 0x01):
            try expect(p2, 0x00, "P2 of Get Data", at: 3)
            try expect(p3, 0x00, "Le of Get Data", at: 4)
            self = p1 == 0x00 ? .getUID : .getATS
        case (0x00, 0x40):
            try expect(p3, 0x04, "Lc of LED/buzzer", at: 4)
            let data = try reader.readBytes(4, "LED/buzzer data (T1 T2 repetitions link)")
            guard let link = ACR122BuzzerLink(rawValue: data[3]) else {
                throw PN53xParseError(
                    .invalidValue, at: 8, "buzzer link must be 00 … 03, found \(HexBytes.format(data[3]))")
            }
            self = .ledAndBuzzer(try ACR122LEDBuzzerControl(
                led: ACR122LEDControl(rawValue: p2), t1: .milliseconds(Int(data[0]) * 100),
                t2: .milliseconds(Int(data[1]) * 100), repetitions: data[2], buzzer: link))
        case (0x00, 0x48):
            try expect(p2, 0x00, "P2 of firmware version", at: 3)
            try expect(p3, 0x00, "Le of firmware version", at: 4)
            self = .firmwareVersion
        case (0x00, 0x50):
            try expect(p2, 0x00, "P2 of get PICC parameter", at: 3)
            try expect(p3, 0x00, "Le of get PICC parameter", at: 4)
            self = .getPICCOperatingParameter
        case (0x00, 0x51):
            try expect(p3, 0x00, "Le of set PICC parameter", at: 4)
            self = .setPICCOperatingParameter(ACR122PICCOperatingParameter(rawValue: p2))
        case (0x00, 0x41):
            try expect(p3, 0x00, "Le of set MCU timeout", at: 4)
            self = .setMCUTimeout(ACR122MCUTimeout(byte: p2))
        case (0x00, 0x52):
            guard p2 == 0x00 || p2 == 0xFF else {
                throw PN53xParseError(.invalidValue, at: 3, "P2 of buzzer on detection must be 00 or FF, found \(HexBytes.format(p2))")
            }
            try expect(p3, 0x00, "Le of buzzer on detection", at: 4)
            self = .setBuzzerOnDetection(p2 == 0xFF)
        default:
            throw PN53xParseError(
                .unknownCommand, at: 1,
                "FF \(HexBytes.format([ins, p1])) is not an ACR122U pseudo-APDU this library models")
        }
        try reader.expectEnd("pseudo-APDU")
    }

    public var description: String { HexBytes.format(serialized()) }
}
