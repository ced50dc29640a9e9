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
    }
}
