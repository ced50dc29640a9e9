import Foundation
import PCSCSandbox
import SecbridgeTesting
import Testing

// libnfc's nfc-list against the clone personality, as nfc-tools/mfoc issue #80 shows it on the
// real clone (docs/acr122-clones.md §1).

extension SharedReader {
    @Suite(.enabled(if: Libnfc.isBuilt, "libnfc is not built: run scripts/build-libnfc.sh (as root the first time)"))
    struct UnitVariantLibnfcTests {
        @Test func nfcListOnACloneShowsSENSRESLeastSignificantByteFirst() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("personality name=clone")
            defer { _ = try? SimulatedReaders.controlA.send("personality name=ccid-escape-enabled") }
            try SimulatedReaders.controlA.send("place-tag uid=\"77 E5 EB 59\" atqa=\"00 04\" sak=08 id=classic")
            defer { _ = try? SimulatedReaders.controlA.send("remove peer=classic") }
            let toolEnvironment = Libnfc.environment(reader: environment.simulatedReaderA, base: environment.environmentForSubprocesses)
            let result = try await blocking { try Libnfc.run("nfc-list", ["-t", "1"], environment: toolEnvironment) }
            #expect(result.status == 0, "\(result.output)")
            // mfoc #80: "ATQA (SENS_RES): 04 00", the UID and SAK as a genuine unit shows them.
            #expect(result.output.contains("ATQA (SENS_RES): 04  00"), "\(result.output)")
            #expect(result.output.contains("UID (NFCID1): 77  e5  eb  59"), "\(result.output)")
            #expect(result.output.contains("SAK (SEL_RES): 08"), "\(result.output)")
        }

        /// libnfc's nfc-read-forum-tag3 reads the NDEF message of a FeliCa card holding an NFC
        /// Forum Type 3 Tag (attribute block 0, the message from block 1), through Check (Read
        /// Without Encryption) frames sent with InCommunicateThru (docs/acr122-clones.md §4b).
        @Test func nfcReadForumTag3ReadsAType3Tag() async throws {
            let environment = try await resetSimulatedReaders()
            // Version 1.0, Nbr 4, Nbw 1, Nmaxb 13, WriteFlag 00, RWFlag 01, Ln 16, checksum 0033.
            let attribute = "10 04 01 00 0D 00 00 00 00 00 01 00 00 10 00 33"
            // A URI record for https://example.com (prefix 04), then 12 empty blocks.
            let message = "D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D"
            let memory = ([attribute, message] + Array(repeating: String(repeating: "00", count: 16), count: 12)).joined(separator: " ")
            try SimulatedReaders.controlA.send("place-target family=felica memory=\"\(memory)\" id=t3t")
            defer { _ = try? SimulatedReaders.controlA.send("remove peer=t3t") }
            let toolEnvironment = Libnfc.environment(reader: environment.simulatedReaderA, base: environment.environmentForSubprocesses)
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("t3t-\(getpid())-\(UUID().uuidString.prefix(8)).ndef").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let result = try await blocking { try Libnfc.run("nfc-read-forum-tag3", ["-o", path], environment: toolEnvironment) }
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("NDEF message length: 16 bytes"), "\(result.output)")
            let written = try #require(FileManager.default.contents(atPath: path), "\(result.output)")
            #expect(Array(written) == hex(message), "\(result.output)")
        }

        /// libnfc's nfc-jewel dumps a Topaz tag's 120 bytes (blocks 0–E) with one READ per byte,
        /// each answered by the data byte alone (libnfc's jewel.h; docs/acr122-clones.md §4b).
        @Test func nfcJewelDumpsATopazTag() async throws {
            let environment = try await resetSimulatedReaders()
            let memory = (0..<120).map { UInt8(($0 * 7 + 3) & 0xFF) }
            try SimulatedReaders.controlA.send("place-target family=jewel memory=\(memory.map { String(format: "%02X", $0) }.joined()) id=topaz")
            defer { _ = try? SimulatedReaders.controlA.send("remove peer=topaz") }
            let toolEnvironment = Libnfc.environment(reader: environment.simulatedReaderA, base: environment.environmentForSubprocesses)
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("topaz-\(getpid())-\(UUID().uuidString.prefix(8)).jwd").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let result = try await blocking { try Libnfc.run("nfc-jewel", ["r", path], environment: toolEnvironment) }
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("Found Jewel card with UID: b57a2c00"), "\(result.output)")
            #expect(result.output.contains("Done, 15 of 15 blocks read."), "\(result.output)")
            let written = try #require(FileManager.default.contents(atPath: path), "\(result.output)")
            #expect(Array(written) == memory, "\(result.output)")
        }

        /// nfc-list's FeliCa 212, ISO 14443-B and Jewel pollings (`-t` bits 02, 08, 100) find the
        /// targets `place-target` puts in the field, with the IDm, the PUPI and the JEWELID the
        /// simulator's InListPassiveTarget gives (docs/acr122-clones.md §4).
        @Test(arguments: [
            ("felica", "2", "1 Felica (212 kbps) passive target(s) found:", "0101050186040202"),
            ("typeb", "8", "1 ISO14443B passive target(s) found:", "12234556"),
            ("jewel", "256", "1 ISO14443A-3 Jewel passive target(s) found:", "b57a2c00"),
        ])
        func nfcListFindsTheOtherFamilies(_ family: String, _ mask: String, _ header: String, _ identifier: String) async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("place-target family=\(family) id=other")
            defer { _ = try? SimulatedReaders.controlA.send("remove peer=other") }
            let toolEnvironment = Libnfc.environment(reader: environment.simulatedReaderA, base: environment.environmentForSubprocesses)
            let result = try await blocking { try Libnfc.run("nfc-list", ["-t", mask], environment: toolEnvironment) }
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains(header), "\(result.output)")
            #expect(result.output.lowercased().filter { !$0.isWhitespace }.contains(identifier), "\(result.output)")
        }
    }
}
