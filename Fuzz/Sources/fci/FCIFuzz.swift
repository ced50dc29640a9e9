import FuzzSupport
import ISO7816

/// File control information as `decode` shows a SELECT answer (ISO/IEC 7816-4 §7.4.3,
/// docs/iso7816-fcp.md §1–§2): the data field read as BER-TLV, keeping malformed content, every
/// object's meaning looked up in its template, file descriptors and life cycle bytes decoded.
/// Never traps.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFCI(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    for ff in [BERTLV.ReadingOptions.FF.padding, .tag] {
        guard let objects = try? BERTLV.parseAll(input, options: BERTLV.ReadingOptions(ff: ff, keepsMalformedContent: true)) else {
            continue
        }
        for object in objects { describe(object, inside: nil) }
    }
    _ = FileControlInformation.fileDescriptor(input)
    if let first = input.first { _ = FileControlInformation.lifeCycleStatus(first) }
    return 0
}

/// Every object's meaning, depth first (depth is bounded by BERTLV.maxDepth).
private func describe(_ object: BERTLV, inside parent: BERTag?) {
    _ = FileControlInformation.meaning(of: object, inside: parent)
    _ = object.contentError?.description
    for child in object.children { describe(child, inside: object.tag) }
}
