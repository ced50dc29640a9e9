import ISO7816

// The typed PN532 commands, one struct per command, named as in PN532 UM0701-02 §7 and nested in
// `PN532` (e.g. `PN532.InDataExchange`). Each gives `| D4 | cmd | parameters |` and parses the data
// after `| D5 | cmd+1 |`.

extension PN532 {
    /// GetFirmwareVersion: `D4 02` → `D5 03 IC Ver Rev Support` (UM0701-02 §7.2.2).
    public struct GetFirmwareVersion: PN532Command {
        public static let code = PN532CommandCode.getFirmwareVersion
        /// The command `D4 02`; it has no parameters.
        public init() {}
        public func parameters() throws(PN532Error) -> [UInt8] { [] }
        public func response(parsing data: [UInt8]) throws(PN532Error) -> PN532FirmwareVersion {
            try PN532Parse.reading(data, Self.code) { reader throws(PN53xParseError) in
                let bytes = try reader.readBytes(4, "IC Ver Rev Support")
                return PN532FirmwareVersion(ic: bytes[0], version: bytes[1], revision: bytes[2], support: bytes[3])
            }
        }
    }

    /// GetGeneralStatus: `D4 04` → `D5 05 Err Field NbTg [Tg BrRx BrTx Type]… SAM` (UM0701-02 §7.2.3).
    public struct GetGeneralStatus: PN532Command {
        public static let code = PN532CommandCode.getGeneralStatus
        /// The command `D4 04`; it has no parameters.
        public init() {}
        public func parameters() throws(PN532Error) -> [UInt8] { [] }
        public func response(parsing data: [UInt8]) throws(PN532Error) -> PN532GeneralStatus {
            try PN532Parse.reading(data, Self.code) { reader throws(PN53xParseError) in
                let error = try reader.readByte("Err")
                let field = try reader.readByte("Field")
                let countOffset = reader.offset
                let count = try reader.readByte("NbTg")
                guard count <= 2 else {
                    throw PN53xParseError(.invalidValue, at: countOffset, "NbTg is at most 2, got \(count)")
                }
                var targets: [PN532GeneralStatusTarget] = []
                for _ in 0..<count {
                    let t = try reader.readBytes(4, "target entry (Tg BrRx BrTx Type)")
                    targets.append(PN532GeneralStatusTarget(
                        logicalNumber: t[0], receiveBitRate: t[1], transmitBitRate: t[2], modulationType: t[3]))
                }
                let sam = try reader.readByte("SAM status")
                return PN532GeneralStatus(
                    lastError: PN532ErrorCode(rawValue: error), externalFieldPresent: field == 0x01,
                    targets: targets, samStatus: sam)
            }
        }
    }

    /// ReadRegister: `D4 06 (AH AL)…` → `D5 07 value…` (UM0701-02 §7.2.4), e.g. CIU TxMode 0x6302.
    public struct ReadRegister: PN532Command {
        public static let code = PN532CommandCode.readRegister
        /// The 16-bit register addresses, sent high byte first.
        public var addresses: [UInt16]
        /// Reads the registers at `addresses` (CIU registers are at 6300–63FF), in order.
        public init(_ addresses: [UInt16]) { self.addresses = addresses }
        public func parameters() throws(PN532Error) -> [UInt8] {
            guard !addresses.isEmpty else { throw .invalidRequest(command: Self.code, reason: "no register address given") }
            return addresses.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        }
        /// One value per address, in order.
        public func response(parsing data: [UInt8]) throws(PN532Error) -> [UInt8] {
            let count = addresses.count
            return try PN532Parse.reading(data, Self.code) { reader throws(PN53xParseError) in
                try reader.readBytes(count, "\(count) register values")
            }
        }
    }

    /// One register write: `| AH | AL | value |`.
    public struct RegisterWrite: Sendable, Hashable {
        /// The 16-bit register address, sent high byte first.
        public var address: UInt16
        /// The byte to write.
        public var value: UInt8
        /// A write of `value` to the register at `address`.
        public init(address: UInt16, value: UInt8) {
            self.address = address
            self.value = value
        }
    }

    /// WriteRegister: `D4 08 (AH AL V)…` → `D5 09` (UM0701-02 §7.2.5).
    public struct WriteRegister: PN532Command {
        public static let code = PN532CommandCode.writeRegister
        /// The writes, in the order the chip makes them.
        public var writes: [RegisterWrite]
        /// Writes each register of `writes`, in order.
        public init(_ writes: [RegisterWrite]) { self.writes = writes }
        public func parameters() throws(PN532Error) -> [UInt8] {
            guard !writes.isEmpty else { throw .invalidRequest(command: Self.code, reason: "no register write given") }
            return writes.flatMap { [UInt8($0.address >> 8), UInt8($0.address & 0xFF), $0.value] }
        }
        public func response(parsing data: [UInt8]) throws(PN532Error) { try PN532Parse.empty(data, Self.code) }
    }

    /// SetParameters flags (UM0701-02 §7.2.9). libnfc sends 14 at init and 30 for card emulation.
    public struct ParameterFlags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// 01 fNADUsed: the initiator uses the NAD (DEP and ISO/IEC 14443-4 PCD).
        public static let nadUsed = ParameterFlags(rawValue: 0x01)
        /// 02 fDIDUsed: the initiator uses the DID (DEP and ISO/IEC 14443-4 PCD).
        public static let didUsed = ParameterFlags(rawValue: 0x02)
        /// 04 fAutomaticATR_RES: the chip answers ATR_REQ by itself in target mode.
        public static let automaticATRRes = ParameterFlags(rawValue: 0x04)
        /// 10 fAutomaticRATS: the chip sends RATS by itself as an ISO/IEC 14443-4 PCD.
        public static let automaticRATS = ParameterFlags(rawValue: 0x10)
        /// ISO 14443-4 PICC emulation (PN532 only).
        public static let iso14443_4PICC = ParameterFlags(rawValue: 0x20)
        /// 40 fRemovePrePostAmble: the chip sends its frames without preamble and postamble.
        public static let removePrePostamble = ParameterFlags(rawValue: 0x40)
    }

    /// SetParameters: `D4 12 flags` → `D5 13` (UM0701-02 §7.2.9).
    public struct SetParameters: PN532Command {
        public static let code = PN532CommandCode.setParameters
        /// The flags to set; the chip clears the others. libnfc sends 14 at start and 30 for emulation
        /// (docs/acr122-pn532.md §4).
        public var flags: ParameterFlags
        /// SetParameters with `flags`.
        public init(_ flags: ParameterFlags) { self.flags = flags }
        public func parameters() throws(PN532Error) -> [UInt8] { [flags.rawValue] }
        public func response(parsing data: [UInt8]) throws(PN532Error) { try PN532Parse.empty(data, Self.code) }
    }

    /// SAMConfiguration: `D4 14 Mode [Timeout [IRQ]]` → `D5 15` (UM0701-02 §7.2.10).
    public struct SAMConfiguration: PN532Command {
        /// 01 normal (no SAM), 02 virtual card, 03 wired card, 04 dual card.
        public enum Mode: UInt8, Sendable, Hashable {
            /// The Mode byte of SAMConfiguration (UM0701-02 §7.2.10): 01 normal mode, no SAM (what a reader
            /// without a SAM uses); 02 virtual card; 03 wired card; 04 dual card.
            case normal = 0x01, virtualCard = 0x02, wiredCard = 0x03, dualCard = 0x04
        }
        public static let code = PN532CommandCode.samConfiguration
        /// How the chip uses its SAM.
        public var mode: Mode
        /// The virtual-card timeout in units of 50 ms; nil to omit it (and the IRQ byte).
        public var timeoutIn50Milliseconds: UInt8?
        /// Whether the chip drives its P70_IRQ pin; nil to omit the byte.
        public var useIRQ: Bool?
        /// `D4 14 mode [timeout [irq]]`: the optional bytes are sent only when given; ``parameters()``
        /// throws `PN532Error.invalidRequest` for an IRQ byte without the timeout before it.
        public init(mode: Mode, timeoutIn50Milliseconds: UInt8? = nil, useIRQ: Bool? = nil) {
            self.mode = mode
            self.timeoutIn50Milliseconds = timeoutIn50Milliseconds
            self.useIRQ = useIRQ
        }
        public func parameters() throws(PN532Error) -> [UInt8] {
            var bytes = [mode.rawValue]
            if let timeoutIn50Milliseconds { bytes.append(timeoutIn50Milliseconds) }
            if let useIRQ {
                guard bytes.count == 2 else {
                    throw .invalidRequest(command: Self.code, reason: "the IRQ byte needs the timeout byte before it")
                }
                bytes.append(useIRQ ? 0x01 : 0x00)
            }
            return bytes
        }
        public func response(parsing data: [UInt8]) throws(PN532Error) { try PN532Parse.empty(data, Self.code) }
    }

    /// RFConfiguration: `D4 32 CfgItem data` → `D5 33` (UM0701-02 §7.3.1).
    public struct RFConfiguration: PN532Command {
        /// The configuration items this library uses.
        public enum Item: Sendable, Hashable {
            /// Item 01: the RF field off (`00`) or on (`01`), as the ACR122U API and libnfc send it.
            case rfField(on: Bool)
            /// Item 02: `00 ATR_RES RetryTimeout`; a value n means 100 µs · 2^(n−1)
            /// (defaults 0B = 102.4 ms and 0A = 51.2 ms).
            case timeouts(atrResponse: UInt8, retry: UInt8)
            /// Item 04: MaxRtyCOM, the InCommunicateThru/InDataExchange retries.
            case maxRetryCOM(UInt8)
            /// Item 05: MxRtyATR, MxRtyPSL, MxRtyPassiveActivation (FF = infinite, the chip's default
            /// for passive activation; `maxRetries(atr: 0, psl: 1, passiveActivation: 2)` bounds polling).
            case maxRetries(atr: UInt8, psl: UInt8, passiveActivation: UInt8)
        }
        public static let code = PN532CommandCode.rfConfiguration
        /// The configuration item and its data.
        public var item: Item
        /// RFConfiguration of `item`.
        public init(_ item: Item) { self.item = item }
        public func parameters() throws(PN532Error) -> [UInt8] {
            switch item {
            case .rfField(let on): [0x01, on ? 0x01 : 0x00]
            case .timeouts(let atr, let retry): [0x02, 0x00, atr, retry]
            case .maxRetryCOM(let count): [0x04, count]
            case .maxRetries(let atr, let psl, let passive): [0x05, atr, psl, passive]
            }
        }
        public func response(parsing data: [UInt8]) throws(PN532Error) { try PN532Parse.empty(data, Self.code) }
    }

    /// InListPassiveTarget at 106 kbit/s Type A: `D4 4A MaxTg 00 [UID]` →
    /// `D5 4B NbTg [Tg SENS_RES SEL_RES NFCIDLength NFCID1 [ATS]]…` (UM0701-02 §7.3.5).
    ///
    /// SENS_RES comes most significant byte first here (docs/acr122-pn532.md §4).
    public struct InListPassiveTarget: PN532Command {
        public static let code = PN532CommandCode.inListPassiveTarget
        /// MaxTg: 1 or 2.
        public var maxTargets: UInt8
        /// InitiatorData: a UID to select only that card, or empty.
        public var uid: [UInt8]
        /// Looks for at most `maxTargets` Type A targets at 106 kbit/s (BrTy 00), or for the one with `uid`.
        public init(maxTargets: UInt8 = 1, uid: [UInt8] = []) {
            self.maxTargets = maxTargets
            self.uid = uid
        }
        public func parameters() throws(PN532Error) -> [UInt8] {
            guard maxTargets == 1 || maxTargets == 2 else {
                throw .invalidRequest(command: Self.code, reason: "MaxTg must be 1 or 2, got \(maxTargets)")
            }
            guard [0, 4, 7, 10].contains(uid.count) else {
                throw .invalidRequest(command: Self.code, reason: "a Type A UID is 4, 7 or 10 bytes, got \(uid.count)")
            }
            return [maxTargets, 0x00] + uid
        }
        /// The targets found: empty when none answered within the retries.
        public func response(parsing data: [UInt8]) throws(PN532Error) -> [ISO14443ATarget] {
            try PN532Parse.reading(data, Self.code) { reader throws(PN53xParseError) in
                let countOffset = reader.offset
                let count = try reader.readByte("NbTg")
                guard count <= 2 else {
                    throw PN53xParseError(.invalidValue, at: countOffset, "NbTg is at most 2, got \(count)")
                }
                var targets: [ISO14443ATarget] = []
                for _ in 0..<count { targets.append(try ISO14443ATarget.read(from: &reader)) }
                return targets
            }
        }
    }

    /// InDataExchange: `D4 40 Tg data` → `D5 41 Status data` (UM0701-02 §7.3.8).
    ///
    /// Tg bit 6 (MI) tells the chip more host data follows; the answer's status bit 6 tells the host
    /// to send InDataExchange again (with no data) for the rest.
    public struct InDataExchange: PN532Command {
        public static let code = PN532CommandCode.inDataExchange
        /// Tg, 1 or 2 (bits 5–0).
        public var target: UInt8
        /// Sets bit 6 of Tg (MI): more data of the same frame follows in the next InDataExchange.
        public var moreInformation: Bool
        /// The bytes for the target, e.g. a C-APDU (at most 252 through the ACR122U).
        public var data: [UInt8]
        /// `D4 40 Tg data` to target `target`.
        public init(target: UInt8 = 1, moreInformation: Bool = false, data: [UInt8]) {
            self.target = target
            self.moreInformation = moreInformation
            self.data = data
        }
        public func parameters() throws(PN532Error) -> [UInt8] {
            guard target & 0xC0 == 0 else {
                throw .invalidRequest(command: Self.code, reason: "Tg must fit in bits 5–0, got \(HexBytes.format(target))")
            }
            return [target | (moreInformation ? 0x40 : 0x00)] + data
        }
        public func response(parsing data: [UInt8]) throws(PN532Error) -> PN532DataResponse {
            let (status, rest) = try PN532Parse.status(data, Self.code)
            return PN532DataResponse(moreInformation: status.moreInformation, data: rest)
        }
    }

    /// InCommunicateThru: `D4 42 raw` → `D5 43 Status data` (UM0701-02 §7.3.9).
    public struct InCommunicateThru: PN532Command {
        public static let code = PN532CommandCode.inCommunicateThru
        /// The raw bytes for the target, sent without ISO-DEP framing.
        public var data: [UInt8]
        /// InCommunicateThru of `data`.
        public init(_ data: [UInt8]) { self.data = data }
        public func parameters() throws(PN532Error) -> [UInt8] { data }
        public func response(parsing data: [UInt8]) throws(PN532Error) -> [UInt8] {
            try PN532Parse.status(data, Self.code).rest
        }
    }

    /// InDeselect: `D4 44 Tg` → `D5 45 Status` (UM0701-02 §7.3.10); Tg 0 = all targets.
    public struct InDeselect: PN532Command {
        public static let code = PN532CommandCode.inDeselect
        /// Tg, the target to deselect; 0 deselects all.
        public var target: UInt8
        /// InDeselect of `target` (0, all targets, by default).
        public init(target: UInt8 = 0) { self.target = target }
        public func parameters() throws(PN532Error) -> [UInt8] { [target] }
        public func response(parsing data: [UInt8]) throws(PN532Error) {
            try PN532Parse.empty(try PN532Parse.status(data, Self.code).rest, Self.code)
        }
    }

    /// InRelease: `D4 52 Tg` → `D5 53 Status` (UM0701-02 §7.3.11); Tg 0 = all targets.
    public struct InRelease: PN532Command {
        public static let code = PN532CommandCode.inRelease
        /// Tg, the target to release; 0 releases all.
        public var target: UInt8
        /// InRelease of `target` (0, all targets, by default).
        public init(target: UInt8 = 0) { self.target = target }
        public func parameters() throws(PN532Error) -> [UInt8] { [target] }
        public func response(parsing data: [UInt8]) throws(PN532Error) {
            try PN532Parse.empty(try PN532Parse.status(data, Self.code).rest, Self.code)
        }
    }

    /// InSelect: `D4 54 Tg` → `D5 55 Status` (UM0701-02 §7.3.12).
    public struct InSelect: PN532Command {
        public static let code = PN532CommandCode.inSelect
        /// Tg, the target to select.
        public var target: UInt8
        /// InSelect of `target` (1 by default).
        public init(target: UInt8 = 1) { self.target = target }
        public func parameters() throws(PN532Error) -> [UInt8] { [target] }
        public func response(parsing data: [UInt8]) throws(PN532Error) {
            try PN532Parse.empty(try PN532Parse.status(data, Self.code).rest, Self.code)
        }
    }

    /// TgInitAsTarget Mode bits (UM0701-02 §7.3.14).
    public struct TargetModes: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// 01 PassiveOnly: accept only a passive-mode initiator.
        public static let passiveOnly = TargetModes(rawValue: 0x01)
        /// 02 DEPOnly: accept only a DEP (ISO/IEC 18092) activation.
        public static let depOnly = TargetModes(rawValue: 0x02)
        /// 04 PICCOnly: accept only an ISO/IEC 14443-4 PICC activation (what card emulation uses).
        public static let piccOnly = TargetModes(rawValue: 0x04)
    }

    /// TgInitAsTarget: configures the PN532 as a target and blocks until an initiator activates it
    /// (or the ACR122U's MCU timeout expires) (UM0701-02 §7.3.14).
    ///
    /// | D4 8C | Mode | SENS_RES (2, LSB first) | NFCID1t (3) | SEL_RES | FeliCaParams (18) | NFCID3t (10) | LenGt | Gt | LenTk | Tk |
    ///
    /// → `D5 8D Mode InitiatorCommand…`. In PICC mode Tk holds the ATS historical bytes.
    public struct TgInitAsTarget: PN532Command {
        public static let code = PN532CommandCode.tgInitAsTarget
        /// The Mode byte of the request: which activations the chip accepts.
        public var modes: TargetModes
        /// Sent least significant byte first (docs/acr122-pn532.md §4).
        public var atqa: ATQA
        /// The UID; the chip fixes its first byte at 08.
        public var uid: EmulatedUID
        /// SEL_RES (SAK), e.g. 20 for ISO 14443-4.
        public var sak: UInt8
        /// 18 bytes: NFCID2t (8), PAD (8), system code (2).
        public var feliCaParameters: [UInt8]
        /// 10 bytes.
        public var nfcid3t: [UInt8]
        /// General bytes for ATR_RES, at most 47.
        public var generalBytes: [UInt8]
        /// Historical bytes of the ATS (ISO 14443-4 PICC), at most 48.
        public var historicalBytes: [UInt8]

        /// The command with its parameters; FeliCa parameters and NFCID3t default to zeros, general and
        /// historical bytes to none. ``parameters()`` throws `PN532Error.invalidRequest` when a field has
        /// the wrong length (FeliCaParams 18, NFCID3t 10, at most 47 general and 48 historical bytes).
        public init(
            modes: TargetModes, atqa: ATQA, uid: EmulatedUID, sak: UInt8,
            feliCaParameters: [UInt8] = Array(repeating: 0, count: 18),
            nfcid3t: [UInt8] = Array(repeating: 0, count: 10),
            generalBytes: [UInt8] = [], historicalBytes: [UInt8] = []
        ) {
            self.modes = modes
            self.atqa = atqa
            self.uid = uid
            self.sak = sak
            self.feliCaParameters = feliCaParameters
            self.nfcid3t = nfcid3t
            self.generalBytes = generalBytes
            self.historicalBytes = historicalBytes
        }

        public func parameters() throws(PN532Error) -> [UInt8] {
            guard feliCaParameters.count == 18 else {
                throw .invalidRequest(command: Self.code, reason: "FeliCaParams must be 18 bytes, got \(feliCaParameters.count)")
            }
            guard nfcid3t.count == 10 else {
                throw .invalidRequest(command: Self.code, reason: "NFCID3t must be 10 bytes, got \(nfcid3t.count)")
            }
            guard generalBytes.count <= 47 else {
                throw .invalidRequest(command: Self.code, reason: "at most 47 general bytes (Gt), got \(generalBytes.count)")
            }
            guard historicalBytes.count <= 48 else {
                throw .invalidRequest(command: Self.code, reason: "at most 48 historical bytes (Tk), got \(historicalBytes.count)")
            }
            return [modes.rawValue] + atqa.leastSignificantFirst + uid.nfcid1t + [sak]
                + feliCaParameters + nfcid3t
                + [UInt8(generalBytes.count)] + generalBytes
                + [UInt8(historicalBytes.count)] + historicalBytes
        }

        public func response(parsing data: [UInt8]) throws(PN532Error) -> PN532TargetActivation {
            try PN532Parse.reading(data, Self.code) { reader throws(PN53xParseError) in
                let mode = try reader.readByte("Mode")
                return PN532TargetActivation(mode: PN532ActivatedMode(rawValue: mode), initiatorCommand: reader.readRest())
            }
        }
    }

    /// TgGetData: `D4 86` → `D5 87 Status data` (UM0701-02 §7.3.16); status MI means call again.
    public struct TgGetData: PN532Command {
        public static let code = PN532CommandCode.tgGetData
        /// The command `D4 86`; it has no parameters.
        public init() {}
        public func parameters() throws(PN532Error) -> [UInt8] { [] }
        public func response(parsing data: [UInt8]) throws(PN532Error) -> PN532DataResponse {
            let (status, rest) = try PN532Parse.status(data, Self.code)
            return PN532DataResponse(moreInformation: status.moreInformation, data: rest)
        }
    }

    /// TgSetData: `D4 8E data` → `D5 8F Status` (UM0701-02 §7.3.17); status 00 = delivered.
    public struct TgSetData: PN532Command {
        public static let code = PN532CommandCode.tgSetData
        /// The bytes for the initiator, e.g. an R-APDU (at most 252 through the ACR122U).
        public var data: [UInt8]
        /// TgSetData of `data`.
        public init(_ data: [UInt8]) { self.data = data }
        public func parameters() throws(PN532Error) -> [UInt8] { data }
        public func response(parsing data: [UInt8]) throws(PN532Error) {
            try PN532Parse.empty(try PN532Parse.status(data, Self.code).rest, Self.code)
        }
    }

    /// TgGetTargetStatus: `D4 8A` → `D5 8B Status BRit` (UM0701-02 §7.3.21).
    public struct TgGetTargetStatus: PN532Command {
        public static let code = PN532CommandCode.tgGetTargetStatus
        /// The command `D4 8A`; it has no parameters.
        public init() {}
        public func parameters() throws(PN532Error) -> [UInt8] { [] }
        public func response(parsing data: [UInt8]) throws(PN532Error) -> PN532TargetStatus {
            try PN532Parse.reading(data, Self.code) { reader throws(PN53xParseError) in
                let bytes = try reader.readBytes(2, "Status BRit")
                return PN532TargetStatus(state: bytes[0], bitRates: bytes[1])
            }
        }
    }
}
