import FuzzSupport
import ISO7816

/// ResponseAPDU(parsing:) (ISO/IEC 7816-4 §5.1): never traps; `data | SW1 SW2` re-encodes to
/// itself; the status word's meaning and `checked()` never trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseAPDU(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    guard let response = try? ResponseAPDU(parsing: input) else {
        FuzzInput.require(input.count < 2 || input.count > 65_538, "refused \(input.count) bytes")
        return 0
    }
    FuzzInput.require(response.serialized() == input, "encode(parse(x)) != x for \(FuzzInput.hex(input))")
    FuzzInput.require(response.data.count == input.count - 2, "data length")
    let checked = try? response.checked()
    FuzzInput.require((checked != nil) == (response.statusWord == StatusWord(0x9000) || response.statusWord.sw1 == 0x61), "checked() of \(response.statusWord)")
    _ = response.statusWord.meaning
    _ = response.statusWord.description
    return 0
}
