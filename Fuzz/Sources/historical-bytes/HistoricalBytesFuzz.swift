import FuzzSupport
import ISO7816

/// HistoricalBytes(parsing:) (ISO/IEC 7816-4 §8.1.1, PC/SC part 3 §3.1.3.2.3): never traps, keeps
/// its input; up to 15 bytes make a contactless ATR (`3B 8N 80 01 … TCK`) that carries them back.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHistoricalBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    if let decoded = try? HistoricalBytes(parsing: input) {
        FuzzInput.require(decoded.bytes == input, "historical bytes not kept")
        _ = decoded.cardCapabilities
        _ = decoded.contactlessStorageCard?.cardNameText
        for object in decoded.objects {
            FuzzInput.require(object.serialized().count == 1 + object.value.count, "COMPACT-TLV length")
        }
    }
    if input.count <= 15 {
        guard let atr = try? ATR.contactless(historicalBytes: input) else {
            fatalError("property violated: no contactless ATR for \(FuzzInput.hex(input))")
        }
        FuzzInput.require(atr.historicalBytes == input && atr.isChecksumValid, "contactless ATR of \(FuzzInput.hex(input))")
        FuzzInput.require((try? ATR(parsing: atr.serialized())) == atr, "contactless ATR does not parse back")
    }
    return 0
}
