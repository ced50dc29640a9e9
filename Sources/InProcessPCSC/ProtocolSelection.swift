import PCSCCore

/// The protocols an ATR announces and the one it names first, as pcscd 1.9.9 decodes them before it
/// selects a protocol (pcsc-lite `src/atrhandler.c`, ATRDecodeAtr).
///
/// Layout read (ISO/IEC 7816-3 §8.2): `| TS | T0 | TA1 TB1 TC1 TD1 | TA2 TB2 TC2 TD2 | … |`; the high
/// nibble of T0 and of each TDi says which of TAi+1…TDi+1 follow, the low nibble of each TDi is a
/// protocol T. Rules kept from pcscd:
/// - the first TDi gives the default protocol (T=0 or T=1; any other T makes the ATR undecodable);
/// - every TDi adds its T=0 or T=1 to the available set;
/// - TA2 present (specific mode) narrows both to the protocol in its low nibble;
/// - no TD1 at all means T=0 only.
///
/// A contactless ACR122U ATR `3B 8N 80 01 …` has TD1 = 80 (T=0) and TD2 = 01 (T=1): available
/// T=0 and T=1, default T=0 (docs/acr122-pn532.md §3).
public struct ATRProtocols: Sendable, Hashable {
    /// SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1 bits the ATR announces.
    public var available: ProtocolSet
    /// The protocol of TD1 (or TA2), pcscd's fallback when the driver refuses the chosen one.
    public var defaultProtocol: ProtocolSet

    /// The protocols an ATR offers and the one pcscd falls back to.
    public init(available: ProtocolSet, defaultProtocol: ProtocolSet) {
        self.available = available
        self.defaultProtocol = defaultProtocol
    }

    /// Decodes `atr` as pcscd does, including where its decoder stops early: what was found up to
    /// that point is kept (an ATR shorter than 2 bytes or with TS other than 3B/3F gives nothing,
    /// a first TDi naming a protocol other than T=0/T=1 gives nothing, a TA2 naming another
    /// protocol or interface bytes beyond 33 bytes keep what the earlier TDi gave). With nothing
    /// available, every protocol request fails with SCARD_E_PROTO_MISMATCH. Bytes missing at the end
    /// of a short ATR read as 00, as pcscd reads its zeroed 33-byte ATR buffer.
    public init(atr: [UInt8]) {
        (available, defaultProtocol) = Self.decode(atr)
    }

    private static func decode(_ atr: [UInt8]) -> (ProtocolSet, ProtocolSet) {
        var available: ProtocolSet = []
        var defaultProtocol: ProtocolSet = []
        guard atr.count >= 2, atr[0] == 0x3B || atr[0] == 0x3F else { return ([], []) }
        var presence = atr[1] >> 4
        var offset = 2
        func next() -> UInt8 {
            defer { offset += 1 }
            return offset < atr.count ? atr[offset] : 0
        }
        // Each round consumes at least one byte and the ATR buffer holds 33: at most 33 rounds.
        for index in 1...33 {
            let ta: UInt8? = presence & 0x01 != 0 ? next() : nil
            if presence & 0x02 != 0 { _ = next() }
            if presence & 0x04 != 0 { _ = next() }
            if presence & 0x08 != 0 {
                let td = next()
                presence = td >> 4
                let t = td & 0x0F
                if defaultProtocol.isEmpty {
                    switch t {
                    case 0: defaultProtocol = .t0
                    case 1: defaultProtocol = .t1
                    default: return ([], [])
                    }
                }
                if t == 0 { available.insert(.t0) } else if t == 1 { available.insert(.t1) }
            } else {
                presence = 0
            }
            if index == 2, let ta {
                switch ta & 0x0F {
                case 0: (available, defaultProtocol) = (.t0, .t0)
                case 1: (available, defaultProtocol) = (.t1, .t1)
                default: return (available, defaultProtocol)
                }
            }
            if offset > 33 { return (available, defaultProtocol) }
            if presence == 0 { break }
        }
        if defaultProtocol.isEmpty {
            defaultProtocol = .t0
            available.insert(.t0)
        }
        return (available, defaultProtocol)
    }
}

/// What pcscd's protocol selection decides for a connection (pcsc-lite `src/prothandler.c`,
/// PHSetProtocol), given the driver's answer to IFDHSetProtocolParameters.
enum ProtocolChoice: Sendable, Hashable {
    /// Use this protocol (T=0 or T=1).
    case use(ProtocolSet)
    /// SET_PROTOCOL_WRONG_ARGUMENT: SCardConnect fails with SCARD_E_PROTO_MISMATCH.
    case wrongArgument
    /// SET_PROTOCOL_PPS_FAILED: SCardConnect fails with SCARD_W_UNRESPONSIVE_CARD.
    case ppsFailed

    /// The protocol pcscd asks the driver for: T=1 when both are wanted and available, else T=0;
    /// nil when no requested protocol is available (then no driver call happens).
    static func candidate(preferred: ProtocolSet, announced: ATRProtocols) -> ProtocolSet? {
        let usable = preferred.intersection(announced.available).intersection(.any)
        if usable.contains(.t1) { return .t1 }
        if usable.contains(.t0) { return .t0 }
        return nil
    }

    /// pcscd's decision once the driver answered `driverResult` (an IFD_* RESPONSECODE) for
    /// `candidate`:
    ///
    /// | driver answer | result |
    /// |---|---|
    /// | IFD_SUCCESS | the candidate |
    /// | IFD_PROTOCOL_NOT_SUPPORTED, IFD_ERROR_NOT_SUPPORTED | the ATR's default, unless the default is exactly the (masked) request: then PPS failed |
    /// | IFD_NOT_SUPPORTED (no PPS in the driver) | the ATR's default |
    /// | anything else | PPS failed |
    static func decide(preferred: ProtocolSet, announced: ATRProtocols, candidate: ProtocolSet,
                       driverResult: Int) -> ProtocolChoice {
        let masked = preferred.intersection(announced.available)
        switch driverResult {
        case IFDResponseCode.success:
            return .use(candidate)
        case IFDResponseCode.protocolNotSupported, IFDResponseCode.errorNotSupported:
            return announced.defaultProtocol == masked ? .ppsFailed : .use(announced.defaultProtocol)
        case IFDResponseCode.notSupported:
            return .use(announced.defaultProtocol)
        default:
            return .ppsFailed
        }
    }
}
