import FuzzSupport
import ISO7816
import PN53x

/// The ACR122U's own replies (ACR122U API v2.04 §4–§6): `data SW1 SW2`, the firmware string (no
/// status word), the LED state `90 ss`, the PICC operating parameter `90 pp` or `pp`. Never traps;
/// each re-encodes to what it was read from.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzACR122Reply(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    if let reply = try? ACR122Reply(parsing: input) {
        FuzzInput.require(reply.serialized() == input, "reply round trip of \(FuzzInput.hex(input))")
        let checked = try? reply.checkedData()
        FuzzInput.require((checked != nil) == (reply.statusWord == 0x9000), "checkedData() for \(FuzzInput.hex(input))")
    } else {
        FuzzInput.require(input.count < 2, "a reply of \(input.count) bytes refused")
    }
    if let firmware = try? ACR122FirmwareVersion(parsing: input) {
        let text = input.count >= 2 && input.suffix(2) == [0x90, 0x00] ? Array(input.dropLast(2)) : input
        FuzzInput.require(firmware.serialized() == text, "firmware string round trip of \(FuzzInput.hex(input))")
        _ = firmware.version
        _ = firmware.isACR122U
    }
    if let led = try? ACR122LEDState(parsingReply: input) {
        FuzzInput.require(input == [0x90, led.rawValue], "LED state of \(FuzzInput.hex(input))")
    }
    if let parameter = try? ACR122PICCOperatingParameter(parsingReply: input) {
        FuzzInput.require(input.last == parameter.rawValue, "PICC parameter of \(FuzzInput.hex(input))")
    }
    _ = ATQA(mostSignificantFirst: (input.first ?? 0, input.last ?? 0)).description
    return 0
}
