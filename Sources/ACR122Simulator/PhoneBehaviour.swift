import ISO7816

/// What a simulated phone does around the APDUs its ``TerminalProgram`` sends: leaving the field
/// in the middle of a read and coming back, tapping again, how long it waits for each answer, and
/// whether it polls as a peer-to-peer (NFC-DEP) initiator (docs/terminal-models.md §6).
///
/// Time is simulated: a slow host is a delay given here, compared with the waiting time the
/// terminal honours; nothing waits on the wall clock.
public struct PhoneBehaviour: Sendable, Hashable {
    /// The phone leaves the field after the R-APDU to its `leaveAfter`-th C-APDU of the first
    /// activation (1 = the first), instead of sending the next one: the emulating host's TgGetData
    /// gets status 29, as the PN532 reports an initiator gone. It comes back at the next
    /// TgInitAsTarget and reads again from the start (a new RATS). nil: it stays.
    public var leaveAfter: Int?
    /// How long a phone that left (``leaveAfter``) stays away, in simulated time, before it
    /// activates a target again: a phone that slipped and is brought back. nil: it comes back at
    /// the next TgInitAsTarget.
    public var returnAfter: Duration?
    /// How many times the phone reads: after a read that completed it leaves (TgGetData 29) and,
    /// while taps remain, taps again at the next TgInitAsTarget. At least 1.
    public var taps: Int
    /// A slow host, in simulated time: the answer to C-APDU `command` (1-based, first activation)
    /// comes `delay` after the command went out. nil: every answer comes at once.
    public var hostDelay: HostDelay?
    /// Whether the PN532, as a PICC, keeps the frame alive with S(WTX) while its host prepares
    /// TgSetData (default true, docs/terminal-models.md §6.4: a decision). When false, the phone
    /// gives up after ``FrameWaitingTime/retransmissionBound(fwi:)``.
    public var pn532SendsWTX: Bool
    /// The phone's own limit on one command's answer, above the frame level: Android's
    /// `RW_T4T_TOUT_RESP`, 1000 ms (AOSP system/nfc `src/include/nfc_target.h`, armed by
    /// `rw_t4t_send_to_lower` in `rw_t4t.cc`). nil: no limit above the frame level.
    public var responseTimeout: Duration?

    /// The answer to C-APDU `command` (1-based) of the first activation takes `delay` (simulated).
    public struct HostDelay: Sendable, Hashable {
        /// The C-APDU whose answer is late, 1-based within the first activation.
        public var command: Int
        /// How long after the C-APDU the answer comes, in simulated time.
        public var delay: Duration
        /// - Parameters:
        ///   - command: 1 for the first C-APDU.
        ///   - delay: simulated time, e.g. `.milliseconds(1200)`.
        public init(command: Int, delay: Duration) {
            self.command = command
            self.delay = delay
        }
    }

    /// A phone that stays, taps once, gets every answer at once, and has no limit of its own above
    /// the frame level, unless told otherwise; `taps` below 1 counts as 1.
    /// (``returnAfter`` is nil: set the property for a phone that stays away a while.)
    public init(leaveAfter: Int? = nil, taps: Int = 1, hostDelay: HostDelay? = nil, pn532SendsWTX: Bool = true,
                responseTimeout: Duration? = nil) {
        self.leaveAfter = leaveAfter
        returnAfter = nil
        self.taps = max(1, taps)
        self.hostDelay = hostDelay
        self.pn532SendsWTX = pn532SendsWTX
        self.responseTimeout = responseTimeout
    }

    /// Android's NFC stack: `RW_T4T_TOUT_RESP` = 1000 ms per command.
    public static let android = PhoneBehaviour(responseTimeout: .milliseconds(1000))

    /// How long the phone waits for one answer given the ATS the target sent, and why it stops
    /// there: with S(WTX) from the PN532, the ``responseTimeout`` alone (nil: no bound); without,
    /// the frame level's bound too.
    func waitLimit(ats: [UInt8]) -> (limit: Duration?, rule: String) {
        let fwi = FrameWaitingTime.fwi(ats: ats)
        let frame = FrameWaitingTime.retransmissionBound(fwi: fwi)
        let frameRule = "no block within FWT (FWI \(fwi) from the ATS: \(FrameWaitingTime.milliseconds(FrameWaitingTime.fwt(fwi: fwi))) ms, + ΔFWT) after two R(NAK) retransmissions: \(FrameWaitingTime.milliseconds(frame)) ms"
        let appRule = responseTimeout.map { "the reader's response timer of \(FrameWaitingTime.milliseconds($0)) ms (RW_T4T_TOUT_RESP) expired" }
        if pn532SendsWTX {
            guard let responseTimeout, let appRule else { return (nil, "") }
            return (responseTimeout, appRule + " while the PN532 extended the frame with S(WTX)")
        }
        if let responseTimeout, let appRule, responseTimeout < frame { return (responseTimeout, appRule) }
        return (frame, frameRule)
    }
}

/// Frame waiting time (ISO/IEC 14443-4 §7.2; docs/iso14443-t4t-ndef.md §2): FWT = 2^(FWI+12) / fc
/// with fc = 13.56 MHz, and the PCD's margin ΔFWT = 49152 / fc.
public enum FrameWaitingTime {
    /// The FWI of an ATS `TL T0 [TA(1)] [TB(1)] …`: TB(1) bits 8–5; 4 when TB(1) is absent (the
    /// default), e.g. 9 for the PN532's `05 75 33 92 03`.
    public static func fwi(ats: [UInt8]) -> Int {
        guard ats.count >= 2 else { return 4 }
        let t0 = ats[1]
        guard t0 & 0x20 != 0 else { return 4 }
        let index = 2 + (t0 & 0x10 != 0 ? 1 : 0)
        guard index < ats.count else { return 4 }
        let fwi = Int(ats[index] >> 4)
        return fwi == 15 ? 4 : fwi  // FWI 15 is RFU; a PCD reads it as the default.
    }

    /// FWT for `fwi` (0…14): 2^(FWI+12) / 13.56 MHz, e.g. 154.66 ms for FWI 9.
    public static func fwt(fwi: Int) -> Duration {
        let cycles = Double(1 << (min(max(fwi, 0), 14) + 12))
        return .nanoseconds(Int64((cycles / 13.56e6 * 1e9).rounded()))
    }

    /// ΔFWT = 49152 / fc = 3.62 ms.
    public static let deltaFWT = Duration.nanoseconds(Int64((49152 / 13.56e6 * 1e9).rounded()))

    /// How long a PCD waits without S(WTX) before it gives up: the first FWT and two R(NAK)
    /// retransmissions, each FWT + ΔFWT: 474.8 ms for FWI 9 (a PCD resends at most twice, NFC
    /// Digital; docs/iso14443-t4t-ndef.md §2).
    public static func retransmissionBound(fwi: Int) -> Duration {
        (fwt(fwi: fwi) + deltaFWT) * 3
    }

    /// Milliseconds with one decimal, e.g. "154.7".
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = (Double(seconds) * 10_000 + Double(attoseconds) / 1e14).rounded()
        return String(Int(tenths) / 10) + "." + String(Int(tenths) % 10)
    }
}

/// A peer-to-peer initiator (Android Beam, Android 4.0 to 9): after the Type A activation it sends
/// ATR_REQ (NFC-DEP, ISO/IEC 18092 NFCIP-1) instead of RATS, and speaks LLCP inside DEP.
///
/// It activates a PN532 target only when TgInitAsTarget allows DEP (Mode bit PICCOnly 04 clear)
/// and the SEL_RES announces NFC-DEP (bit 40) (UM0701-02 §7.3.14; nfcpy's `listen_tta` expects
/// ATR_REQ only for such a SEL_RES). TgInitAsTarget then answers mode 04 (DEP, passive, 106 kbit/s)
/// and `F0 LEN ATR_REQ`. Otherwise it does not find an NFC-DEP target and reports that.
public struct PeerToPeerInitiator: TerminalProgram {
    /// ATR_REQ as TgInitAsTarget returns it at 106 kbit/s passive: SB F0, LEN (counting itself),
    /// `D4 00`, NFCID3i (10), DIDi 00, BSi 00, BRi 00, PPi 32 (general bytes follow, LRi 3: 254
    /// bytes), then the LLCP general bytes: magic `46 66 6D`, VERSION `01 01 11`, WKS `03 02 00 13`,
    /// LTO `04 01 96` (1.5 s) — the layout of a Galaxy S3's ATR_REQ logged on an ACR122U
    /// (docs/terminal-models.md §6.3).
    public static let atrRequest: [UInt8] = {
        let body: [UInt8] = [0xD4, 0x00, 0x08, 0x37, 0xD9, 0x35, 0x3C, 0xBF, 0xD5, 0xAE, 0x77, 0x9C, 0x00, 0x00, 0x00, 0x32,
                             0x46, 0x66, 0x6D, 0x01, 0x01, 0x11, 0x03, 0x02, 0x00, 0x13, 0x04, 0x01, 0x96]
        return [0xF0, UInt8(body.count + 1)] + body
    }()

    /// TgInitAsTarget's mode byte for this activation: DEP (bit 2), passive Type A framing, 106 kbit/s.
    public static let activatedMode: UInt8 = 0x04

    /// The initiator; it sends ATR_REQ at activation and LLCP SYMM first inside DEP.
    public init() {}

    /// LLCP SYMM (`00 00`: DSAP 0, PTYPE 0, SSAP 0; NFC Forum LLCP 1.1), the first PDU inside DEP.
    public mutating func start() -> TerminalAction { .send([0x00, 0x00]) }

    /// Any answer ends the run: what the target sent back to SYMM is reported.
    public mutating func receive(_ response: [UInt8]) -> TerminalAction {
        .finish(.completed(TerminalReport(summary: "LLCP: the target answered \(response.hexString) to SYMM")))
    }
}
