import ACR122Simulator
import PCSCCore

/// A `CardChannel` straight onto a simulated reader's `IFDDevice` (a `SimulatedACR122U` or any
/// other personality), with pcscd's rules and nothing else in between: no pcscd, no IFD handler
/// library, no threads.
///
/// The calls are the ones pcscd makes for a client, and the errors are the ones pcscd 1.9.9 gives,
/// from the one table of them (PCSCCore's `IFDResultMapping`):
/// - `.undefined` is a SCARD_SHARE_DIRECT connection: no card is powered, only SCardControl reaches
///   the reader (SCardTransmit answers as pcscd does for protocol 0, SCARD_E_NOT_TRANSACTED here);
/// - `.t0` / `.t1` power the card up (IFDHPowerICC) and select the protocol
///   (IFDHSetProtocolParameters): no card gives SCARD_E_NO_SMARTCARD, a protocol the card does
///   not offer SCARD_E_PROTO_MISMATCH, as SCardConnect does.
///
/// For the whole client (reader table, sharing, events, the driver's threads) use the in-process
/// PC/SC client; this channel is for tests of one layer against the simulated device.
public final class SimulatedReaderChannel: CardChannel {
    /// The simulated reader.
    public let device: any IFDDevice
    /// The protocol connected with (`.undefined` for DIRECT).
    public let transmissionProtocol: TransmissionProtocol

    /// Connects as SCardConnect would.
    /// - Parameters:
    ///   - device: the simulated reader.
    ///   - transmissionProtocol: `.undefined` for a direct connection, `.t0` or `.t1` to power the card up.
    /// - Throws: `PCSCError` — SCARD_E_NO_SMARTCARD (0x8010000C) without a card,
    ///   SCARD_E_PROTO_MISMATCH (0x8010000F) for a protocol the card does not offer,
    ///   SCARD_E_NOT_TRANSACTED (0x80100016) when powering up fails otherwise.
    public init(_ device: any IFDDevice, protocol transmissionProtocol: TransmissionProtocol) throws(PCSCError) {
        self.device = device
        self.transmissionProtocol = transmissionProtocol
        guard transmissionProtocol == .t0 || transmissionProtocol == .t1 else { return }
        guard device.isCardPresent() else { throw PCSCError(code: PCSCError.noSmartcard.code, function: "SCardConnect") }
        do {
            _ = try device.powerUp()
        } catch {
            throw Self.failure(IFDResultMapping.power(error.responseCode), "SCardConnect")
        }
        do {
            try device.setProtocol(transmissionProtocol == .t0 ? 1 : 2)
        } catch {
            throw PCSCError(
                code: error == .protocolNotSupported ? PCSCError.protoMismatch.code : PCSCError.notTransacted.code,
                function: "SCardConnect")
        }
    }

    /// SCardTransmit.
    /// - Throws: `PCSCError` as `IFDResultMapping.transmit(_:)` (PCSCCore) maps the device's error.
    public func transmit(_ command: [UInt8]) throws(PCSCError) -> [UInt8] {
        do {
            return try device.transmit(command)
        } catch {
            throw Self.failure(IFDResultMapping.transmit(error.responseCode), "SCardTransmit")
        }
    }

    /// SCardControl.
    /// - Throws: `PCSCError` as `IFDResultMapping.control(_:)` (PCSCCore) maps the device's error, e.g.
    ///   SCARD_E_NOT_TRANSACTED when libccid refuses escape commands (docs/cases.md P09).
    public func control(code: UInt32, _ command: [UInt8]) throws(PCSCError) -> [UInt8] {
        do {
            return try device.control(code: code, command)
        } catch {
            throw Self.failure(IFDResultMapping.control(error.responseCode), "SCardControl")
        }
    }

    private static func failure(_ mapped: PCSCError?, _ function: String) -> PCSCError {
        PCSCError(code: (mapped ?? .notTransacted).code, function: function)
    }
}
