import ACR122Simulator
import ISO7816
import PN53x
import SecbridgeTesting
import Testing

/// Uppercase hex with spaces, for readable expectations.
func text(_ bytes: [UInt8]) -> String { bytes.hexString }

/// A field whose 5 s MCU timeout takes 5 ms and libccid's 30 s take 30 ms.
func fastField() -> SimulatedField { SimulatedField(clock: SimulationClock(scale: 0.001)) }

/// A direct (escape) connection to `reader` with the PN53x client on top.
func directPN532(_ reader: SimulatedACR122U, escapeCode: UInt32 = 0x4200_0001) throws -> PN532 {
    PN532(link: ACR122Link(channel: try SimulatedReaderChannel(reader, protocol: .undefined), escapeCode: escapeCode))
}

/// `FF 00 00 00 Lc` + frame.
func wrapped(_ frame: String) -> [UInt8] {
    let bytes = hex(frame)
    return [0xFF, 0x00, 0x00, 0x00, UInt8(bytes.count)] + bytes
}

/// A tiny NFC Forum Type 4 Tag applet (mapping 2.0), written for these tests from
/// docs/iso14443-t4t-ndef.md §4: SELECT by AID (P2 00) and by file id (P2 00 or 0C), READ BINARY with
/// short reads at the end (the NDEF file under the id its CC names); 6A 82 for unknown AIDs and files, 69 86 before a file is selected,
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

    /// `respond` with every file selectable at once (for a test double that keeps its own state).
    func respondStateless(_ apdu: [UInt8]) -> [UInt8] {
        applicationSelected = true
        selectedFile = [0xE1, 0x03]
        if apdu.count >= 5, apdu[1] == 0xB0, apdu[2] == 0x00, apdu[3] == 0x00, apdu[4] != 0x0F { selectedFile = Array(capabilityContainer[9...10]) }
        return respond(apdu)
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
            let ndefFileID = capabilityContainer.count >= 11 ? Array(capabilityContainer[9...10]) : [0xE1, 0x04]
            guard data == [0xE1, 0x03] || data == ndefFileID else { return [0x6A, 0x82] }
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
