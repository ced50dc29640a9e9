import ISO7816
import SecbridgeTesting
import Testing

/// The meanings of file control parameters (ISO/IEC 7816-4 §7.4.3, docs/iso7816-fcp.md §1).
@Suite("File control information")
struct FileControlInformationTests {
    /// The meaning of each child of the single template in `bytes`.
    func meanings(_ bytes: [UInt8]) throws -> [String?] {
        let template = try BERTLV(parsing: bytes)
        return template.children.map { FileControlInformation.meaning(of: $0, inside: template.tag) }
    }

    @Test("P02: the IsoApplet FCI of a transparent EF")
    func p02() throws {
        let fci = try BERTLV(parsing: hex("6F 15 81 02 02 00 82 01 01 83 02 44 02 86 08 FF 90 90 90 90 90 90 00"))
        #expect(FileControlInformation.meaning(of: fci, inside: nil) == "FCI template (file control information)")
        #expect(try meanings(fci.serialized()) == [
            "total file size (with structural information): 512 bytes",
            "file descriptor: not shareable, working EF, transparent",
            "file identifier",
            "security attributes (proprietary format)",
        ])
    }

    @Test("an MF's FCP: shareable DF, operational activated, expanded security attributes")
    func masterFile() throws {
        let fcp: [UInt8] = [
            0x62, 0x10,  // FCP template
            0x82, 0x02, 0x78, 0x21,  // descriptor 78: shareable DF; data coding byte 21
            0x83, 0x02, 0x3F, 0x00,  // file identifier of the MF
            0x8A, 0x01, 0x05,  // life cycle status: operational, activated
            0x8B, 0x03, 0x2F, 0x06, 0x01,  // security attributes referencing EF 2F06 record 1
        ]
        #expect(try meanings(fcp) == [
            "file descriptor: shareable, DF; data coding byte 21",
            "file identifier (the MF)",
            "life cycle status: 05 (operational state, activated)",
            "security attributes (referencing the expanded format)",
        ])
    }

    @Test("file descriptor: record sizes and numbers of records")
    func fileDescriptors() {
        // A linear fixed EF of 2 records of 38 bytes, as UICCs describe theirs.
        #expect(FileControlInformation.fileDescriptor([0x42, 0x21, 0x00, 0x26, 0x02])
            == "shareable, working EF, linear fixed; data coding byte 21; max record size 38; 2 records")
        #expect(FileControlInformation.fileDescriptor([0x02, 0x21, 0x1A])
            == "not shareable, working EF, linear fixed; data coding byte 21; max record size 26")
        #expect(FileControlInformation.fileDescriptor([0x46, 0x21, 0x00, 0x1A, 0x01, 0x00])
            == "shareable, working EF, cyclic; data coding byte 21; max record size 26; 256 records")
        #expect(FileControlInformation.fileDescriptor([0x0C]) == "not shareable, internal EF, linear variable")
        #expect(FileControlInformation.fileDescriptor([0x39]) == "not shareable, EF of BER-TLV structure")
        #expect(FileControlInformation.fileDescriptor([0x81]) == "proprietary descriptor byte 81")
    }

    @Test("life cycle status values of §7.4.10", arguments: [
        (UInt8(0x00), "no information given"), (0x01, "creation state"), (0x03, "initialisation state"),
        (0x05, "operational state, activated"), (0x07, "operational state, activated"),
        (0x04, "operational state, deactivated"), (0x06, "operational state, deactivated"),
        (0x0C, "termination state"), (0x0F, "termination state"), (0x02, "reserved"), (0x0A, "reserved"),
        (0x10, "proprietary"), (0xFF, "proprietary"),
    ])
    func lifeCycle(_ lcs: UInt8, _ state: String) {
        #expect(FileControlInformation.lifeCycleStatus(lcs).hasSuffix("(\(state))"))
    }

    @Test("sizes, short EF identifiers; nothing said outside the templates")
    func sizesAndContext() throws {
        #expect(try meanings([0x62, 0x07, 0x80, 0x02, 0x00, 0x80, 0x88, 0x01, 0x10]) == [
            "file size (data bytes, without structural information): 128 bytes",
            "short EF identifier 2",
        ])
        #expect(try meanings([0x62, 0x02, 0x88, 0x00]) == ["short EF identifier: none (the EF cannot be referenced by one)"])
        // 88 inside A5 (an EMV FCI's SFI of the directory) is not the FCP's 88.
        let a5 = try BERTLV(parsing: [0xA5, 0x03, 0x88, 0x01, 0x01])
        #expect(FileControlInformation.meaning(of: a5.children[0], inside: a5.tag) == nil)
        // A template's name only at the top.
        #expect(FileControlInformation.meaning(of: a5, inside: nil) == nil)
    }
}
