import FuzzSupport
import ISO7816
import PN53x

/// PN532 frames and their ACR122U wrapping (PN532 UM0701-02 §6.2, §7; ACR122U API v2.04 §4–§6):
/// host frames (`D4 cmd params`), chip frames (`D5 cmd+1 data`), pseudo-APDUs (`FF …`, the Direct
/// Transmit wrapping included), and every modelled command's answer parser on the input as a chip
/// frame. Never traps; frames and accepted pseudo-APDUs re-encode to the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPN532Frame(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    if let frame = try? PN532HostFrame(parsing: input) {
        FuzzInput.require(frame.serialized() == input, "host frame round trip of \(FuzzInput.hex(input))")
        let wrapped = ACR122Command.directTransmit(frame).serialized()
        FuzzInput.require((try? ACR122Command(parsing: wrapped)) == .directTransmit(frame), "Direct Transmit of \(FuzzInput.hex(input))")
        _ = frame.command.description
    }
    if let frame = try? PN532ChipFrame(parsing: input) {
        FuzzInput.require(frame.serialized() == input, "chip frame round trip of \(FuzzInput.hex(input))")
    }
    if let command = try? ACR122Command(parsing: input) {
        FuzzInput.require(command.serialized() == input, "pseudo-APDU round trip: \(FuzzInput.hex(input)) re-encodes as \(FuzzInput.hex(command.serialized()))")
        _ = command.description
    }
    answers(input)
    return 0
}

/// Runs every modelled command's answer parser on `frame`.
private func answers(_ frame: [UInt8]) {
    _ = try? PN532.GetFirmwareVersion().response(parsingFrame: frame)
    _ = try? PN532.GetGeneralStatus().response(parsingFrame: frame)
    _ = try? PN532.ReadRegister([0x6302, 0x6303, 0x633D]).response(parsingFrame: frame)
    _ = try? PN532.WriteRegister([]).response(parsingFrame: frame)
    _ = try? PN532.SetParameters([]).response(parsingFrame: frame)
    _ = try? PN532.SAMConfiguration(mode: .normal).response(parsingFrame: frame)
    _ = try? PN532.RFConfiguration(.rfField(on: true)).response(parsingFrame: frame)
    _ = try? PN532.InListPassiveTarget(maxTargets: 2).response(parsingFrame: frame)
    _ = try? PN532.InDataExchange(data: []).response(parsingFrame: frame)
    _ = try? PN532.InCommunicateThru([]).response(parsingFrame: frame)
    _ = try? PN532.InDeselect().response(parsingFrame: frame)
    _ = try? PN532.InRelease().response(parsingFrame: frame)
    _ = try? PN532.InSelect().response(parsingFrame: frame)
    let target = PN532.TgInitAsTarget(
        modes: [], atqa: ATQA(rawValue: 0x0004), uid: EmulatedUID(nfcid1t: (0x01, 0x02, 0x03)), sak: 0x20)
    _ = try? target.response(parsingFrame: frame)
    _ = try? PN532.TgGetData().response(parsingFrame: frame)
    _ = try? PN532.TgSetData([]).response(parsingFrame: frame)
    _ = try? PN532.TgGetTargetStatus().response(parsingFrame: frame)
}
