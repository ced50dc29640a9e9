import FuzzSupport
import NFCTags

/// NDEFMessage(parsing:) (NFC Forum NDEF, docs/iso14443-t4t-ndef.md §5) and the tag capability
/// containers: never trap; a message re-encodes (short records where they fit, no empty ID) to
/// bytes that parse to the same records, and to the input itself when it was written that way; the
/// URI and text readings of each record never trap; the Type 4 Tag capability container re-encodes
/// to a container that parses back to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNDEF(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    if let message = try? NDEFMessage(parsing: input) {
        let encoded = message.serialized()
        FuzzInput.require((try? NDEFMessage(parsing: encoded)) == message, "parse(encode(parse(x))) != parse(x) for \(FuzzInput.hex(input))")
        FuzzInput.require(encoded.count <= input.count, "re-encoding grew \(FuzzInput.hex(input))")
        if encoded.count == input.count { FuzzInput.require(encoded == input, "same length, other bytes: \(FuzzInput.hex(input))") }
        for record in message.records {
            _ = try? record.uriValue()
            _ = try? record.textValue()
        }
        _ = Type2TagWriter.tlvBytes(for: message)
    }
    if let container = try? Type4CapabilityContainer(parsing: input) {
        let encoded = container.serialized()
        FuzzInput.require((try? Type4CapabilityContainer(parsing: encoded)) == container, "Type 4 CC round trip of \(FuzzInput.hex(input))")
    }
    if input.count >= 4, let container = try? Type2CapabilityContainer(parsing: Array(input.prefix(4))) {
        _ = container.isReadOnly
    }
    return 0
}
