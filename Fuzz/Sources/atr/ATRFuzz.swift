import FuzzSupport
import ISO7816

/// ATR(parsing:) and ATR.readLeniently (ISO/IEC 7816-3 §8.2): never trap; a strict parse keeps
/// the input byte for byte; a lenient reading splits the input into the ATR and what follows, and
/// agrees with the strict parse of its ATR; the historical bytes decode without trapping.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzATR(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    let loose = try? ATR(parsing: input, requireValidChecksum: false)
    let strict = try? ATR(parsing: input)
    if let loose {
        FuzzInput.require(loose.serialized() == input, "serialized ATR != input \(FuzzInput.hex(input))")
        FuzzInput.require((strict != nil) == loose.isChecksumValid, "strict parse and isChecksumValid disagree for \(FuzzInput.hex(input))")
        FuzzInput.require(!loose.protocols.isEmpty, "no protocol for \(FuzzInput.hex(input))")
        _ = try? loose.decodedHistoricalBytes()
        _ = loose.cardCapabilities
    } else {
        FuzzInput.require(strict == nil, "strict accepts what the loose parse refuses: \(FuzzInput.hex(input))")
    }
    if let reading = try? ATR.readLeniently(input) {
        FuzzInput.require(reading.atr.bytes + reading.bytesAfter == input, "lenient split loses bytes of \(FuzzInput.hex(input))")
        if case .missing = reading.atr.checkByte {
            FuzzInput.require((try? ATR(parsing: reading.atr.bytes)) == nil, "strict accepts an ATR without its TCK: \(FuzzInput.hex(input))")
        } else {
            let again = try? ATR(parsing: reading.atr.bytes, requireValidChecksum: false)
            FuzzInput.require(again == reading.atr, "lenient ATR does not parse strictly: \(FuzzInput.hex(reading.atr.bytes))")
        }
        if let loose { FuzzInput.require(reading.atr == loose && reading.bytesAfter.isEmpty, "lenient and strict readings differ") }
    } else {
        FuzzInput.require(loose == nil, "lenient refuses what the strict parse accepts: \(FuzzInput.hex(input))")
    }
    return 0
}
