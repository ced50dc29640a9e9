import ACR122Simulator
import ISO7816
import PN53x
import Testing

/// Bytes from "FF 00 48 00 00" (spaces optional).
func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }
    precondition(digits.count % 2 == 0, "odd number of hex digits in test vector: \(text)")
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        bytes.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

/// Uppercase hex with spaces, for readable expectations.
func text(_ bytes: [UInt8]) -> String { bytes.hexString }

/// An IFD error as pcscd turns it into a PC/SC return code (pcsc-lite ifdwrapper.c / winscard.c).
struct SimulatedPCSCError: PCSCErrorCodeProviding, Equatable {
    var ifdError: IFDError
    var pcscCode: UInt32 {
        switch ifdError {
        case .noCard: 0x8010_000C
        case .communicationError: 0x8010_0016
        case .notSupported: 0x8010_001F
        case .protocolNotSupported: 0x8010_000F
        case .responseTimeout: 0x8010_000A
        case .insufficientBuffer: 0x8010_0008
        }
    }
}

/// A `CardChannel` over an `IFDDevice`, the way pcscd and SCardConnect/SCardTransmit/SCardControl
/// drive a driver: `.undefined` is a DIRECT connection (control only), T=0/T=1 power the card up.
final class IFDCardChannel: CardChannel {
    let device: any IFDDevice
    let transmissionProtocol: TransmissionProtocol

    /// - Throws: `SimulatedPCSCError` (no card for a non-direct connection, protocol mismatch).
    init(_ device: any IFDDevice, protocol transmissionProtocol: TransmissionProtocol) throws {
        self.device = device
        self.transmissionProtocol = transmissionProtocol
        guard transmissionProtocol != .undefined else { return }
        do {
            _ = try device.powerUp()
            try device.setProtocol(transmissionProtocol == .t0 ? 1 : 2)
        } catch {
            throw SimulatedPCSCError(ifdError: error)
        }
    }

    func transmit(_ command: [UInt8]) throws -> [UInt8] {
        do { return try device.transmit(command) } catch { throw SimulatedPCSCError(ifdError: error) }
    }

    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        do { return try device.control(code: code, command) } catch { throw SimulatedPCSCError(ifdError: error) }
    }
}

/// A field whose 5 s MCU timeout takes 5 ms and libccid's 30 s take 30 ms.
func fastField() -> SimulatedField { SimulatedField(clock: SimulationClock(scale: 0.001)) }

/// A direct (escape) connection to `reader` with the PN53x client on top.
func directPN532(_ reader: SimulatedACR122U, escapeCode: UInt32 = 0x4200_0001) throws -> PN532 {
    PN532(link: ACR122Link(channel: try IFDCardChannel(reader, protocol: .undefined), escapeCode: escapeCode))
}

/// `FF 00 00 00 Lc` + frame.
func wrapped(_ frame: String) -> [UInt8] {
    let bytes = hex(frame)
    return [0xFF, 0x00, 0x00, 0x00, UInt8(bytes.count)] + bytes
}

/// A tiny NFC Forum Type 4 Tag applet (mapping 2.0), written for these tests from
/// docs/iso14443-t4t-ndef.md §4: SELECT by AID (P2 00) and by file id (P2 00 or 0C), READ BINARY with
/// short reads at the end; 6A 82 for unknown AIDs and files, 69 86 before a file is selected,
/// 6B 00 for an offset past the end, 6D 00 for other INS, 6E 00 for CLA ≠ 00.
final class NDEFApplet {
    let capabilityContainer: [UInt8]
    let ndefFile: [UInt8]
    private var applicationSelected = false
    private var selectedFile: [UInt8]?

    init(capabilityContainer: [UInt8], ndefFile: [UInt8]) {
        self.capabilityContainer = capabilityContainer
        self.ndefFile = ndefFile
    }

    func respond(_ apdu: [UInt8]) -> [UInt8] {
        guard apdu.count >= 4 else { return [0x67, 0x00] }
        guard apdu[0] == 0x00 else { return [0x6E, 0x00] }
        switch apdu[1] {
        case 0xA4:
            guard apdu.count >= 5 else { return [0x67, 0x00] }
            let lc = Int(apdu[4])
            guard apdu.count >= 5 + lc else { return [0x67, 0x00] }
            let data = Array(apdu[5..<5 + lc])
            if apdu[2] == 0x04 {
                applicationSelected = data == ExternalTerminal.Script.ndefApplicationAID
                selectedFile = nil
                return applicationSelected ? [0x90, 0x00] : [0x6A, 0x82]
            }
            guard applicationSelected, apdu[2] == 0x00, lc == 2 else { return [0x6A, 0x82] }
            guard data == [0xE1, 0x03] || data == [0xE1, 0x04] else { return [0x6A, 0x82] }
            selectedFile = data
            return [0x90, 0x00]
        case 0xB0:
            guard let file = selectedFile else { return [0x69, 0x86] }
            guard apdu.count == 5 else { return [0x67, 0x00] }
            let contents = file == [0xE1, 0x03] ? capabilityContainer : ndefFile
            let offset = Int(apdu[2]) << 8 | Int(apdu[3])
            guard offset <= contents.count else { return [0x6B, 0x00] }
            let length = apdu[4] == 0 ? 256 : Int(apdu[4])
            return Array(contents[offset..<min(contents.count, offset + length)]) + [0x90, 0x00]
        default:
            return [0x6D, 0x00]
        }
    }
}
