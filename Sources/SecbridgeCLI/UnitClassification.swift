import PCSC
import PN53x

/// Which kind of ACR122-class unit `reader` is (``ACR122Unit``): a pseudo-card ATR in `atr` says
/// a Touchatag-era unit; otherwise SCARD_ATTR_VENDOR_NAME is read on a DIRECT connection (each
/// call bounded by the call watchdog) and a vendor other than ACS says a clone. Read-only; a
/// reader whose attribute cannot be read counts as genuine.
/// The corresponding PC/SC functions are SCardConnect (SCARD_SHARE_DIRECT) and SCardGetAttrib.
package func classifyACR122Unit(context: any PCSCClientContext, reader: String, atr: [UInt8]) -> ACR122Unit {
    if PseudoCardATR.isPseudoCard(atr) { return .classify(vendorName: nil, atr: atr) }
    let vendor: String? = try? CallWatchdog.shared.guarding("SCardConnect") { () throws(PCSCError) -> String in
        let handle = try context.connect(to: reader, share: .direct, protocols: [])
        defer { try? handle.disconnect(.leave) }
        return try handle.vendorName()
    }
    return .classify(vendorName: vendor, atr: atr)
}
