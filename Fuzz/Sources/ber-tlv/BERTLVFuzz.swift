import FuzzSupport
import ISO7816

/// BERTLV(parsing:) and BERTLV.parseAll (ISO/IEC 7816-4 §5.2.2): never trap; re-encoding (with the
/// shortest length fields) parses to the same objects and is never longer; a constructed object
/// rebuilt from its children parses back to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBERTLV(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    if let object = try? BERTLV(parsing: input) {
        let encoded = object.serialized()
        FuzzInput.require(encoded.count <= input.count, "re-encoding grew \(FuzzInput.hex(input))")
        FuzzInput.require(object.encodedLength == encoded.count, "encodedLength")
        FuzzInput.require((try? BERTLV(parsing: encoded)) == object, "parse(encode(parse(x))) != parse(x) for \(FuzzInput.hex(input))")
        if object.tag.isConstructed {
            let rebuilt = BERTLV(tag: object.tag, children: object.children)
            FuzzInput.require((try? BERTLV(parsing: rebuilt.serialized())) == rebuilt, "rebuilt from children: \(FuzzInput.hex(input))")
            FuzzInput.require(rebuilt.children == object.children, "children of the rebuilt object")
        }
        _ = object.find(BERTag(0x84))
        _ = object.description
    }
    let strictTag = BERTLV.ReadingOptions(ff: .tag)
    for options in [BERTLV.ReadingOptions.strict, strictTag] {
        guard let objects = try? BERTLV.parseAll(input, options: options) else { continue }
        let encoded = objects.flatMap { $0.serialized() }
        FuzzInput.require(encoded.count <= input.count, "re-encoded sequence grew")
        FuzzInput.require((try? BERTLV.parseAll(encoded, options: options)) == objects, "sequence round trip of \(FuzzInput.hex(input))")
    }
    // Keeping malformed content never loses a top-level object that the strict read found.
    let kept = try? BERTLV.parseAll(input, options: BERTLV.ReadingOptions(keepsMalformedContent: true))
    if let strict = try? BERTLV.parseAll(input) {
        FuzzInput.require(kept?.count == strict.count, "keepsMalformedContent read another sequence")
    }
    return 0
}
