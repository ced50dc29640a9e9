import PN53x

/// The firmware string when `command` is the ACR122U's firmware-version pseudo-APDU
/// `FF 00 48 00 00` and `answer` is that string alone: printable ASCII with no status word, e.g.
/// `41 43 52 31 32 32 55 32 30 37` "ACR122U207" (ACR122U API v2.04 §6.1; docs/acr122-pn532.md §2).
/// Such an answer must not be split into data and SW: its last two bytes are "07", not a status
/// word. Nil for any other command, and for an answer that is not bare ASCII (an error SW such as
/// 63 00, or the string with 90 00 after it, which has a real status word).
package func firmwareVersionAnswer(command: [UInt8], answer: [UInt8]) -> ACR122FirmwareVersion? {
    // CLA FF first: every card APDU is answered nil without parsing it as a pseudo-APDU.
    guard command.first == 0xFF, (try? ACR122Command(parsing: command)) == .firmwareVersion,
        answer.allSatisfy({ (0x20...0x7E).contains($0) })
    else { return nil }
    return try? ACR122FirmwareVersion(parsing: answer)
}
