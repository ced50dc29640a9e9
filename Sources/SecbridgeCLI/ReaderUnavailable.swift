import PCSC
import PCSCCore

/// Whether pcscd reports `reader` unavailable now: SCardGetStatusChange (timeout 0) gives
/// SCARD_STATE_UNAVAILABLE while the reader's driver answers as for a removed device (a USB reader
/// unplugged: libccid's IFD_NO_SUCH_DEVICE). pcsc-lite 1.9.9 keeps a reader.conf reader listed in
/// that state and clears it once the driver answers again (docs/faults.md, "What pcscd 1.9.9 does
/// when a reader.conf reader goes away"). False when pcscd cannot be asked.
///
/// A call that failed just after the unplug may come before pcscd's next presence poll (about
/// every 400 ms) marks the reader: so when it is not unavailable yet, this waits up to `wait`
/// for the state to change (one more SCardGetStatusChange), on the error paths that call it only.
///
/// The corresponding PC/SC function is SCardGetStatusChange.
package func readerIsUnavailable(_ reader: String, context: any PCSCClientContext, waitingUpTo wait: Duration = .seconds(1)) -> Bool {
    var states = [ReaderState(readerName: reader)]
    do {
        _ = try CallWatchdog.shared.guarding("SCardGetStatusChange") { () throws(PCSCError) in
            try context.getStatusChange(&states, timeout: .zero)
        }
        if states[0].eventFlags.contains(.unavailable) || wait <= .zero { return states[0].eventFlags.contains(.unavailable) }
        states[0].acknowledge()
        _ = try CallWatchdog.shared.guarding("SCardGetStatusChange") { () throws(PCSCError) in
            try context.getStatusChange(&states, timeout: wait)
        }
    } catch {
        return false
    }
    return states[0].eventFlags.contains(.unavailable)
}

/// The message for a reader pcscd reports unavailable (``readerIsUnavailable(_:context:)``).
package func readerUnavailableMessage(_ reader: String) -> String {
    "'\(reader)' is unavailable: pcscd cannot reach it (the reader was unplugged, or its driver reports no device); plug it in again and retry (pcscd finds it again by itself)"
}
