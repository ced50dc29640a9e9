@testable import ACR122Simulator
import ISO7816
import PN53x
import SecbridgeTesting
import Testing

// What dumps and restores rely on in the simulated tags (docs/storage-card-dumps.md §3, §4): NTAG213
// dynamic lock bits, PWD/PACK reading as 00, and InCommunicateThru with the CRC handled by the host
// (libnfc's raw mode).
extension StorageCardPeerTests {
    @Test("NTAG213 dynamic lock bytes 03 00 00 lock pages 16–19 and are OR-ed; 00 00 3F locks none")
    func dynamicLock() throws {
        let reader = try Self.listed(try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7)))
        #expect(try Self.exchange(reader, "A2 28 00 00 3F 00") == "D5 41 00")
        #expect(try Self.exchange(reader, "A2 10 11 22 33 44") == "D5 41 00")
        #expect(try Self.exchange(reader, "A2 28 03 00 00 00") == "D5 41 00")
        // OR-ed: 3F kept, 03 added, byte 3 (RFUI BDh) kept.
        #expect(try Self.exchange(reader, "30 28").hasPrefix("D5 41 00 03 00 3F BD"))
        #expect(try Self.exchange(reader, "A2 10 55 66 77 88") == "D5 41 13")
        #expect(try Self.exchange(reader, "A2 13 55 66 77 88") == "D5 41 13")
        #expect(try Self.exchange(reader, "A2 14 55 66 77 88") == "D5 41 00")
        #expect(try Self.exchange(reader, "30 10").hasPrefix("D5 41 00 11 22 33 44"))
    }

    @Test("NTAG213 PWD (2Bh) and PACK (2Ch) read as 00 even after a WRITE")
    func passwordReadsAsZeros() throws {
        let reader = try Self.listed(try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7)))
        #expect(try Self.exchange(reader, "A2 2B 12 34 56 78") == "D5 41 00")
        #expect(try Self.exchange(reader, "A2 2C AB CD 00 00") == "D5 41 00")
        // READ 2A: CFG1 (00 05 00 00), PWD, PACK, then page 00 (wrap-around).
        #expect(try Self.exchange(reader, "30 2A") == "D5 41 00 00 05 00 00 00 00 00 00 00 00 00 00 04 A1 B2 9F")
    }

    @Test("CRC_A of ISO/IEC 14443-3 Annex B: 00 00 → A0 1E")
    func crcAVector() {
        #expect(DeviceState.crcA([0x00, 0x00]) == [0xA0, 0x1E])
    }

    @Test("InCommunicateThru with TxMode/RxMode bit 7 cleared: GET_VERSION 60 + CRC_A, answer + CRC_A; a bad CRC stays mute")
    func communicateThruWithHostCRC() throws {
        let reader = try Self.listed(try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7)))
        // WriteRegister TxMode 00, RxMode 00 (libnfc's NP_HANDLE_CRC false).
        _ = try reader.control(code: 0x4200_0001, wrapped("D4 08 63 02 00 63 03 00"))
        let version = hex("00 04 04 02 01 00 0F 03")
        let frame = [0x60] + DeviceState.crcA([0x60])
        let answer = try reader.control(code: 0x4200_0001, wrapped("D4 42 " + text(frame)))
        #expect(answer == hex("D5 43 00") + version + DeviceState.crcA(version) + hex("90 00"))
        #expect(text(try reader.control(code: 0x4200_0001, wrapped("D4 42 60 00 00"))) == "D5 43 01 90 00")
        // Bit 7 set again: CRC handled by the PN532, as before.
        _ = try reader.control(code: 0x4200_0001, wrapped("D4 08 63 02 80 63 03 80"))
        #expect(try reader.control(code: 0x4200_0001, wrapped("D4 42 60")) == hex("D5 43 00") + version + hex("90 00"))
    }

    @Test("COMPATIBILITY_WRITE A0 + 16 bytes writes the first 4 to the page, under WRITE's rules")
    func compatibilityWrite() throws {
        let reader = try Self.listed(try ISO14443_3Tag(type2: .ntag213, uid: hex(Self.uid7)))
        #expect(try Self.exchange(reader, "A0 05 01 02 03 04 AA AA AA AA AA AA AA AA AA AA AA AA") == "D5 41 00")
        #expect(try Self.exchange(reader, "30 05").hasPrefix("D5 41 00 01 02 03 04 00 00 00 00"))
        #expect(try Self.exchange(reader, "A0 00 01 02 03 04 00 00 00 00 00 00 00 00 00 00 00 00") == "D5 41 13")
    }
}
