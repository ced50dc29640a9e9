import ACR122Simulator
import ISO7816

/// Drives a fresh simulated ACR122U from a byte string, as pcscd's driver would: the fuzz target
/// `simulator` (Fuzz/Sources/simulator) runs every input through it, and FuzzRegressionTests
/// replays the inputs it kept.
///
/// The field holds an ISO/IEC 14443-4 card (UID 04 A1 B2 C3, echoing the command data with
/// 90 00), an NTAG213 Type 2 tag, a MIFARE Classic 1K and a terminal reading a Type 4 Tag as
/// Android does (for target mode). Its time scale is 0, so every device wait ends at once.
///
/// Layout: byte 0 picks the personality (mod 4: ccid-escape-enabled, ccid-escape-disabled,
/// acs-driver, legacy-t0); then up to 64 steps `| op | length | bytes (length, or fewer at the end) |`,
/// op mod 8: 0 transmit, 1 control with libccid's escape code 0x42000001, 2 control with the ACS
/// driver's 0x42000DAC, 3 control with 0x420000XX (XX the first byte), 4 power up, 5 power down,
/// 6 set protocol (T=0 for an even first byte, else T=1), 7 take the card out of the field or put it back.
public enum SimulatorByteScript {
    /// One step's outcome: the answer, or the error the device gave.
    public struct Step: Sendable, Hashable {
        /// The operation byte of the step.
        public let op: UInt8
        /// What the device answers: bytes, or an IFD error.
        public let answer: Result<[UInt8], IFDError>
    }

    /// The most steps one script runs.
    public static let maximumSteps = 64

    /// Runs `script` on a fresh reader and field, and takes the reader out of the field afterwards.
    /// - Returns: each step's outcome, in order.
    public static func run(_ script: [UInt8]) -> [Step] {
        guard let first = script.first else { return [] }
        let personalities: [ACR122Personality] = [.ccidEscapeEnabled, .ccidEscapeDisabled, .acsDriver, .legacyT0Firmware]
        let field = SimulatedField(clock: SimulationClock(scale: 0))
        let reader = SimulatedACR122U(field: field, personality: personalities[Int(first) % personalities.count])
        defer { reader.detach() }
        let card = ISO14443_4Card(uid: [0x04, 0xA1, 0xB2, 0xC3]) { apdu in
            apdu.count > 5 ? Array(apdu.dropFirst(5)) + [0x90, 0x00] : [0x90, 0x00]
        }
        field.place(card)
        if let tag = try? ISO14443_3Tag(type2: .ntag213, uid: [0x04, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66]) { field.place(tag) }
        if let classic = try? ISO14443_3Tag(classic: .classic1K, uid: [0xDE, 0xAD, 0xBE, 0xEF]) { field.place(classic) }
        field.place(ExternalTerminal(script: .androidType4ReadExample))
        var cardInField = true
        var index = 1
        var steps: [Step] = []
        while steps.count < maximumSteps, index + 2 <= script.count {
            let op = script[index] % 8
            let length = Int(script[index + 1])
            let payload = Array(script[(index + 2)..<min(script.count, index + 2 + length)])
            index += 2 + length
            let answer: Result<[UInt8], IFDError>
            switch op {
            case 0: answer = Result { () throws(IFDError) in try reader.transmit(payload) }
            case 1: answer = Result { () throws(IFDError) in try reader.control(code: ACR122DriverConstants.ccidEscapeCode, payload) }
            case 2: answer = Result { () throws(IFDError) in try reader.control(code: ACR122DriverConstants.acsEscapeCode, payload) }
            case 3: answer = Result { () throws(IFDError) in try reader.control(code: 0x4200_0000 | UInt32(payload.first ?? 0), payload) }
            case 4: answer = Result { () throws(IFDError) in try reader.powerUp() }
            case 5:
                reader.powerDown()
                answer = .success([])
            case 6:
                let protocolValue: UInt = (payload.first ?? 1) & 1 == 0 ? 1 : 2
                answer = Result { () throws(IFDError) in try reader.setProtocol(protocolValue); return [] }
            default:
                if cardInField { field.remove(card) } else { field.place(card) }
                cardInField.toggle()
                answer = .success([])
            }
            steps.append(Step(op: op, answer: answer))
            _ = reader.isCardPresent()
        }
        return steps
    }
}
