import FuzzSupport
import PN53x

/// The PN532 high-speed UART frame parser (PN532 UM0701-02 §6.2; docs/pn532-uart.md §1): the input
/// is fed in chunks whose size comes from its first byte, as a serial line delivers it. Never traps
/// and always ends; every frame it finds re-encodes to bytes that parse back to the same frame; an
/// incomplete frame never holds more than 274 bytes; no input byte is lost or counted twice.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPN532UART(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    guard let first = input.first else { return 0 }
    let chunk = Int(first % 32) + 1
    let body = Array(input.dropFirst())
    var parser = PN532UARTFrameParser(receiving: first & 0x80 != 0 ? PN532UARTFrame.chipTFI : nil)
    var offset = 0
    var calls = 0
    while offset < body.count {
        parser.append(body[offset..<min(offset + chunk, body.count)])
        offset += chunk
        while true {
            calls += 1
            FuzzInput.require(calls <= 2 * body.count + 2, "the parser does not end on \(FuzzInput.hex(input))")
            do {
                guard let frame = try parser.next() else { break }
                check(frame, input)
            } catch {
                _ = error.description
            }
        }
        FuzzInput.require(parser.bufferedCount <= 274, "\(parser.bufferedCount) bytes buffered for \(FuzzInput.hex(input))")
    }
    FuzzInput.require(parser.skippedBytes + parser.bufferedCount <= body.count, "skipped bytes counted twice in \(FuzzInput.hex(input))")
    return 0
}

private func check(_ frame: PN532UARTFrame, _ input: [UInt8]) {
    guard let bytes = try? frame.serialized() else {
        FuzzInput.require(false, "a parsed frame does not encode: \(frame) from \(FuzzInput.hex(input))")
        return
    }
    var again = PN532UARTFrameParser()
    again.append(bytes)
    FuzzInput.require((try? again.next()) == frame, "\(frame) does not parse back from \(FuzzInput.hex(bytes))")
    FuzzInput.require(again.bufferedCount == 0, "\(frame) leaves bytes behind")
    _ = frame.description
}
