import FuzzSupport
import ISO7816

/// CommandAPDU(parsing:) (ISO/IEC 7816-4 §5.1): never traps; an accepted input re-encodes to
/// itself, the fields rebuild the same command, and the T=0 form exists exactly for short cases.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCommandAPDU(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    guard let command = try? CommandAPDU(parsing: input) else { return 0 }
    let encoded = command.serialized()
    FuzzInput.require(encoded == input, "encode(parse(x)) is \(FuzzInput.hex(encoded)) for \(FuzzInput.hex(input))")
    FuzzInput.require(command.encodedLength == input.count, "encodedLength \(command.encodedLength) for \(input.count) bytes")
    let rebuilt = try? CommandAPDU(
        cla: command.cla, ins: command.ins, p1: command.p1, p2: command.p2,
        data: command.data, ne: command.ne, extended: command.isExtended)
    FuzzInput.require(rebuilt == command, "the fields of \(FuzzInput.hex(input)) build another command")
    let t0 = try? command.serializedForT0()
    FuzzInput.require((t0 == nil) == command.case.isExtended, "T=0 form of case \(command.case.rawValue)")
    if let t0 { FuzzInput.require(t0.count == 5 + (command.data.isEmpty ? 0 : command.nc), "T=0 length of \(FuzzInput.hex(input))") }
    _ = command.description
    return 0
}
