import PN53x
import Testing

/// The worked example of docs/iso14443-t4t-ndef.md §4 ("Full URI read"): each C-APDU Android's
/// Type 4 Tag read sends and the R-APDU the emulating host gives, SW1 SW2 included. The tag holds
/// the CC `00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00` (read/write) and a URI record for
/// https://example.com.
public let type4FullURIRead: [(command: [UInt8], response: [UInt8])] = [
    (hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), hex("90 00")),
    (hex("00 A4 00 0C 02 E1 03"), hex("90 00")),
    (hex("00 B0 00 00 0F"), hex("00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00 90 00")),
    (hex("00 A4 00 0C 02 E1 04"), hex("90 00")),
    (hex("00 B0 00 00 02"), hex("00 10 90 00")),
    (hex("00 B0 00 02 10"), hex("D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D 90 00")),
]

/// What a terminal did while ``serveTerminal(on:answers:rounds:)`` served it.
public struct ServedTerminal: Sendable {
    /// The C-APDUs received (TgGetData), in order.
    public var commands: [[UInt8]] = []
    /// The outcome of each R-APDU sent (TgSetData).
    public var deliveries: [PN532TargetSendResult] = []
    /// What ended the exchange: the receive result that was not a command (released, not
    /// activated), or nil when `rounds` ran out.
    public var end: PN532TargetReceiveResult?
}

/// Serves an activated target's terminal from a table, as an emulating host would: TgGetData, the
/// table's R-APDU for that command (`6D 00`, INS not supported, for one not in it), TgSetData, at
/// most `rounds` times or until the terminal lets go (PN532 UM0701-02 §7.3.16, §7.3.17).
/// - Throws: the PN532 client's errors.
public func serveTerminal(
    on chip: PN532, answers: [(command: [UInt8], response: [UInt8])], rounds: Int = 16
) throws -> ServedTerminal {
    var served = ServedTerminal()
    for _ in 0..<rounds {
        let result = try chip.receiveCommand()
        guard case .command(let apdu) = result else {
            served.end = result
            break
        }
        served.commands.append(apdu)
        served.deliveries.append(try chip.sendResponse(answers.first { $0.command == apdu }?.response ?? [0x6D, 0x00]))
    }
    return served
}
