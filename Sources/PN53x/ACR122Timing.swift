/// How long the ACR122U MCU takes before it answers a pseudo-APDU by design (docs/acr122-units.md §4).
extension ACR122LEDBuzzerControl {
    /// The blink/beep sequence's length: (T1 + T2) × repetitions. The MCU answers `90 ss` when it
    /// ends (ACR122U API v2.04, Bi-Color LED and Buzzer Control; nfcpy's acr122.py waits that long).
    public var sequenceDuration: Duration { (t1 + t2) * Int(repetitions) }
}

extension ACR122Command {
    /// How long the reader takes by design before it answers the pseudo-APDU `bytes`: the LED/buzzer
    /// sequence for `FF 00 40 P2 04 T1 T2 Rep Link` ((T1 + T2) × 100 ms × Rep, up to about 3.6 h),
    /// zero for anything else. A caller's bound on the call must cover it.
    public static func designedDuration(ofPseudoAPDU bytes: [UInt8]) -> Duration {
        guard bytes.count == 9, bytes[0] == 0xFF, bytes[1] == 0x00, bytes[2] == 0x40, bytes[4] == 0x04 else { return .zero }
        return .milliseconds(100 * (Int(bytes[5]) + Int(bytes[6])) * Int(bytes[7]))
    }
}
