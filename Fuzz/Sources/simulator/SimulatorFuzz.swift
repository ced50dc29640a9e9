import ACR122Simulator
import FuzzSupport
import ISO7816

/// The simulated ACR122U as pcscd's driver drives it: pseudo-APDUs and card APDUs through
/// `transmit`, escape commands through `control`, power and protocol changes, in the order the
/// input gives, against a field holding an ISO/IEC 14443-4 card, a Type 2 tag, a MIFARE Classic
/// 1K and a phone-like terminal (for target mode). The field's time scale is 0, so every device
/// wait ends at once. Never traps; no answer is larger than pcscd's receive buffer.
///
/// Input: byte 0 picks the personality; then steps `| op | length | bytes… |`, op (mod 8):
/// 0 transmit, 1 control with libccid's escape code, 2 control with the ACS driver's, 3 control
/// with another code, 4 power up, 5 power down, 6 set protocol T=0/T=1, 7 take the card out of
/// or back into the field.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSimulator(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    guard let first = input.first else { return 0 }
    let personalities: [ACR122Personality] = [.ccidEscapeEnabled, .ccidEscapeDisabled, .acsDriver, .legacyT0Firmware]
    let field = SimulatedField(clock: SimulationClock(scale: 0))
    let reader = SimulatedACR122U(field: field, personality: personalities[Int(first) % personalities.count])
    defer { reader.detach() }
    let card = ISO14443_4Card(uid: [0x04, 0xA1, 0xB2, 0xC3]) { apdu in
        // Echoes the command data with 90 00, like the simulator's `echo` applet.
        apdu.count > 5 ? Array(apdu.dropFirst(5)) + [0x90, 0x00] : [0x90, 0x00]
    }
    field.place(card)
    if let tag = try? ISO14443_3Tag(type2: .ntag213, uid: [0x04, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66]) { field.place(tag) }
    if let classic = try? ISO14443_3Tag(classic: .classic1K, uid: [0xDE, 0xAD, 0xBE, 0xEF]) { field.place(classic) }
    field.place(ExternalTerminal(script: .androidType4ReadExample))
    var cardInField = true
    var index = 1
    // At most 64 steps: every step is bounded, and so is the whole input.
    for _ in 0..<64 where index + 2 <= input.count {
        let op = input[index] % 8
        let length = Int(input[index + 1])
        let payload = Array(input[(index + 2)..<min(input.count, index + 2 + length)])
        index += 2 + length
        var answer: [UInt8] = []
        switch op {
        case 0: answer = (try? reader.transmit(payload)) ?? []
        case 1: answer = (try? reader.control(code: ACR122DriverConstants.ccidEscapeCode, payload)) ?? []
        case 2: answer = (try? reader.control(code: ACR122DriverConstants.acsEscapeCode, payload)) ?? []
        case 3: answer = (try? reader.control(code: 0x4200_0000 | UInt32(payload.first ?? 0), payload)) ?? []
        case 4: answer = (try? reader.powerUp()) ?? []
        case 5: reader.powerDown()
        case 6: try? reader.setProtocol(payload.first.map { $0 & 1 == 0 ? 1 : 2 } ?? 2)
        default:
            if cardInField { field.remove(card) } else { field.place(card) }
            cardInField.toggle()
        }
        FuzzInput.require(answer.count <= 65_548, "an answer of \(answer.count) bytes exceeds MAX_BUFFER_SIZE_EXTENDED")
        _ = reader.isCardPresent()
    }
    return 0
}
