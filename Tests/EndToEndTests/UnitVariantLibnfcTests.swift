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
