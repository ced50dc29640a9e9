import Foundation
import PCSCSandbox
import Testing

// libnfc 1.8.0's tools and other third-party PC/SC clients against the simulated ACR122U through
// the shared private pcscd, asserting what public reports show them print on a real unit
// (docs/acr122-pn532.md §4b; docs/test-infrastructure.md, "An independent ACR122 client").

extension Libnfc.RunningTool {
    /// The output so far, while the tool runs.
    var outputSoFar: String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }

    /// Waits (at most `timeout`, checking every 20 ms: the tool is another process writing a file)
    /// until the output contains `text`; true when it did.
    func waitForOutput(_ text: String, timeout: Duration = .seconds(20)) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if outputSoFar.contains(text) { return true }
            if !process.isRunning { return outputSoFar.contains(text) }
            usleep(20_000)
        }
        return false
    }
}

/// A scratch directory for a tool's files, removed by the caller.
func toolScratchDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "secbridge-libnfc-tools.\(getpid()).\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// The personalities whose libnfc behaviour matches a real libccid unit with the escape option, and
/// the driver's name for each (the control protocol's `personality name=`). libnfc's acr122_pcsc
/// driver needs the escape path (SCardControl 0x42000001) to reach the chip without a card, so the
/// ones without it (libccid's default, acsccid's other control code) are not listed.
let libnfcPersonalities = ["ccid-escape-enabled", "legacy-t0", "atr-whole-ats"]

extension SharedReader {
    @Suite(.enabled(if: Libnfc.isBuilt, "libnfc is not built: run scripts/build-libnfc.sh (as root the first time)"))
    struct LibnfcToolsTests {
        func toolEnvironment(_ environment: TestEnvironment) -> [String: String] {
            Libnfc.environment(reader: environment.simulatedReaderA, base: environment.environmentForSubprocesses)
        }

        /// Runs nfc-poll on reader A, then `start` (which puts the tag `ntag` in the field unless it
        /// is there), waits until nfc-poll reports the tag (it flushes "Waiting for card
        /// removing..." itself), removes the tag and returns nfc-poll's end, expecting status 0.
        func pollUntilTheTagLeaves(
            _ environment: TestEnvironment, start: () async throws -> Void
        ) async throws -> (status: Int32, output: String) {
            let poll = try Libnfc.RunningTool("nfc-poll", [], environment: toolEnvironment(environment))
            try await start()
            let waiting = try await onOwnThread("e2e-tool-wait") { poll.waitForOutput("Waiting for card removing...") }
            try SimulatedReaders.controlA.send("remove peer=ntag")
            let result = try await onOwnThread("e2e-tool-wait") { poll.finish(timeout: .seconds(20)) }
            #expect(waiting, "\(result.output)")
            #expect(result.status == 0, "\(result.output)")
            return result
        }

        /// pn53x-diagnose's three tests pass as on a real PN532 (examples/pn53x-diagnose.c): the line
        /// test echo, the ROM and RAM tests' 00.
        @Test(arguments: libnfcPersonalities)
        func pn53xDiagnosePassesEveryTest(_ personality: String) async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("personality name=\(personality)")
            let result = try await blocking { try Libnfc.run("pn53x-diagnose", [], environment: toolEnvironment(environment)) }
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains(" Communication line test: OK"), "\(result.output)")
            #expect(result.output.contains(" ROM test: OK"), "\(result.output)")
            #expect(result.output.contains(" RAM test: OK"), "\(result.output)")
        }

        /// What nfc-poll prints for the NTAG213 `ntag` and its leaving, when it found the tag through
        /// InAutoPoll on a DIRECT connection: the target as nfc-list prints it, and the end of its
        /// presence check (READ page 0 through InDataExchange gets status 01, which libnfc reports
        /// as "Target Released").
        func expectTheTagAndTargetReleased(_ output: String) {
            #expect(output.contains("ISO/IEC 14443A (106 kbps) target:"), "\(output)")
            #expect(output.contains("ATQA (SENS_RES): 00  44"), "\(output)")
            #expect(output.contains("UID (NFCID1): 04  a1  b2  c3  d4  e5  f6"), "\(output)")
            #expect(output.contains("SAK (SEL_RES): 00"), "\(output)")
            #expect(output.contains("Waiting for card removing...nfc_initiator_target_is_present: Target Released\ndone.\n"), "\(output)")
        }

        /// nfc-poll on a reader whose automatic polling is off, with the tag already in the field:
        /// pcscd never sees the tag, so libnfc opens the reader DIRECT and its InAutoPoll finds the
        /// tag at once, as with a tag that came while it polled. No device wait is involved, so the
        /// test runs at the tests' time scale, independent of real time.
        @Test(arguments: libnfcPersonalities)
        func nfcPollFindsATagThroughInAutoPollAndSeesItLeave(_ personality: String) async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("personality name=\(personality)")
            try await blocking { try stopAutomaticPolling(on: environment.simulatedReaderA) }
            try SimulatedReaders.controlA.send("place-tag type=ntag213 uid=\"04 A1 B2 C3 D4 E5 F6\" id=ntag")
            let result = try await pollUntilTheTagLeaves(environment) {}
            // libnfc left automatic polling as it found it: pcscd saw no card all along.
            #expect(try SimulatedReaders.controlA.send("status")["picc"] == "00")
            expectTheTagAndTargetReleased(result.output)
        }

        /// nfc-poll started with an empty field finds the tag placed while its InAutoPoll waits:
        /// the tag is placed once the control socket shows InAutoPoll (D4 60) under way, and the
        /// chip's wait ends on the tag's arrival. The field runs at time scale 1 here so that the
        /// MCU timeout (5 s) outlasts the test's next step; nothing waits for it.
        @Test func nfcPollFindsATagPlacedWhileItsInAutoPollWaits() async throws {
            let environment = try await resetSimulatedReaders()
            let result = try await atTimeScaleOne {
                try await pollUntilTheTagLeaves(environment) {
                    try await waitUntilBusy(SimulatedReaders.controlA, with: "D4 60")
                    try SimulatedReaders.controlA.send("place-tag type=ntag213 uid=\"04 A1 B2 C3 D4 E5 F6\" id=ntag")
                }
            }
            expectTheTagAndTargetReleased(result.output)
        }

        /// With the tag already in the field (pcscd powered it up), libnfc connects to it as a card
        /// and sends chip commands with SCardTransmit: InAutoPoll finds the tag at once, and once it
        /// leaves pcscd fails the presence check's SCardTransmit, which nfc-poll prints as an
        /// input/output error before "done." (docs/acr122-pn532.md §4b).
        @Test func nfcPollWithATagAlreadyThereSeesItLeaveAsAnIOError() async throws {
            let environment = try await resetSimulatedReaders()
            try await placeInSharedField("place-tag type=ntag213 uid=\"04 A1 B2 C3 D4 E5 F6\" id=ntag", environment: environment)
            let result = try await pollUntilTheTagLeaves(environment) {}
            #expect(result.output.contains("UID (NFCID1): 04  a1  b2  c3  d4  e5  f6"), "\(result.output)")
            #expect(result.output.contains("Waiting for card removing...nfc_initiator_target_is_present: Input / Output Error\ndone.\n"), "\(result.output)")
        }

        /// nfc-mfultralight reads an NTAG213 whole: GET_VERSION in raw mode names it, then 45 pages.
        @Test(arguments: libnfcPersonalities)
        func nfcMfultralightReadsAnNTAG213Whole(_ personality: String) async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("personality name=\(personality)")
            try SimulatedReaders.controlA.send(
                "place-tag type=ntag213 uid=\"04 A1 B2 C3 D4 E5 F6\" ndef=D1010C55046578616D706C652E636F6D id=ntag")
            let directory = try toolScratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let dump = directory + "/ntag.mfd"
            let result = try await blocking { try Libnfc.run("nfc-mfultralight", ["r", dump], environment: toolEnvironment(environment)) }
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("Using MIFARE Ultralight card with UID: 04a1b2c3d4e5f6"), "\(result.output)")
            #expect(result.output.contains("NTAG Type: NTAG213 (144 user bytes)"), "\(result.output)")
            #expect(result.output.contains("Reading 45 pages |.............................................|"), "\(result.output)")
            #expect(result.output.contains("Done, 45 of 45 pages read (0 pages failed)."), "\(result.output)")
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dump)))
            #expect(bytes.count == 45 * 4)
            // Page 3: the capability container of an NTAG213 (E1 10 12 00), page 4 on: TLV 03 of the message.
            #expect(Array(bytes[12..<16]) == [0xE1, 0x10, 0x12, 0x00])
            #expect(Array(bytes[16..<20]) == [0x03, 0x10, 0xD1, 0x01])
            try SimulatedReaders.controlA.send("remove peer=ntag")
        }

        /// A T=0 unit with the tag already in the field: libnfc's acr122_pcsc driver connects to it
        /// with T=0, gets `61 xx` for every chip command and fetches the answer with
        /// `FF C0 00 00 xx` (drivers/acr122_pcsc.c; docs/acr122-pn532.md §2). nfc-mfultralight
        /// reads the NTAG213 whole that way, raw-mode GET_VERSION included.
        @Test func overT0TheChipsAnswersComeThroughGetResponse() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("personality name=legacy-t0")
            _ = try await waitForCard(in: environment.simulatedReaderA, present: false)
            try await placeInSharedField("place-tag type=ntag213 uid=\"04 A1 B2 C3 D4 E5 F6\" id=ntag", environment: environment)
            let directory = try toolScratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let logging = toolEnvironment(environment).merging(["LIBNFC_LOG_LEVEL": "3"]) { $1 }
            let result = try await blocking { try Libnfc.run("nfc-mfultralight", ["r", directory + "/ntag.mfd"], environment: logging) }
            try SimulatedReaders.controlA.send("remove peer=ntag")
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("NTAG Type: NTAG213 (144 user bytes)"), "\(result.output)")
            #expect(result.output.contains("Done, 45 of 45 pages read (0 pages failed)."), "\(result.output)")
            // In T=0 mode libnfc takes only a 2-byte `61 xx` from the send and fails on anything
            // else; it fetches with Le xx and strips D5, cmd+1 and 90 00 from what comes back.
            // GetFirmwareVersion's fetched frame, as libnfc logs it:
            #expect(result.output.contains("libnfc.driver.acr122_pcsc\tRX: d5 03 32 01 06 07 90 00"), "\(result.output)")
        }

        /// nfc-anticol activates the tag itself in raw mode (REQA in 7 bits, both cascade levels of
        /// a 7-byte UID, SELECT with its CRC_A) and prints what it found (examples/nfc-anticol.c).
        @Test func nfcAnticolActivatesAnNTAGRaw() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("place-tag type=ntag213 uid=\"04 A1 B2 C3 D4 E5 F6\" id=ntag")
            let result = try await blocking { try Libnfc.run("nfc-anticol", [], environment: toolEnvironment(environment)) }
            try SimulatedReaders.controlA.send("remove peer=ntag")
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("Sent bits:     26 (7 bits)\nReceived bits: 44  00  \n"), "\(result.output)")
            #expect(result.output.contains("Received bits: 88  04  a1  b2  9f  \n"), "\(result.output)")
            #expect(result.output.contains("Received bits: 00  fe  51  \n"), "\(result.output)")
            #expect(result.output.contains("Found tag with\n UID: 04a1b2c3d4e5f6\nATQA: 0044\n SAK: 00\n"), "\(result.output)")
        }

        /// nfc-mfclassic reads a MIFARE Classic 1K with the transport key: 64 blocks.
        @Test func nfcMfclassicReadsAClassic1K() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("place-tag type=classic1k uid=\"04 A1 B2 C3\" id=mf")
            let directory = try toolScratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let dump = directory + "/classic.mfd"
            let result = try await blocking {
                try Libnfc.run("nfc-mfclassic", ["r", "a", "u", dump], environment: toolEnvironment(environment), timeout: .seconds(40))
            }
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("Found MIFARE Classic card:"), "\(result.output)")
            #expect(result.output.contains("Reading out 64 blocks |"), "\(result.output)")
            #expect(result.output.contains("Done, 64 of 64 blocks read."), "\(result.output)")
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dump)))
            #expect(bytes.count == 64 * 16)
            #expect(Array(bytes.prefix(4)) == [0x04, 0xA1, 0xB2, 0xC3])
            try SimulatedReaders.controlA.send("remove peer=mf")
        }

        /// libccid without the escape option (the distribution default): with no tag, libnfc's
        /// acr122_pcsc driver cannot reach the chip (SCardControl fails with 80100016) and gives up;
        /// with a tag in the field it connects to it as a card and talks to the chip through
        /// SCardTransmit, and the same tools work. Both as users report (libnfc issue 567,
        /// docs/acr122-pn532.md §1).
        @Test func withoutTheEscapeOptionLibnfcNeedsATagInTheField() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("personality name=ccid-escape-disabled")
            _ = try await waitForCard(in: environment.simulatedReaderA, present: false)
            let alone = try await blocking { try Libnfc.run("pn53x-diagnose", [], environment: toolEnvironment(environment)) }
            #expect(alone.status == 1, "\(alone.output)")
            #expect(alone.output.contains("libnfc.driver.acr122_pcsc\tNo ACR122 firmware received, Error: 80100016"), "\(alone.output)")
            #expect(alone.output.contains("pn53x-diagnose: ERROR: Unable to open NFC device."), "\(alone.output)")
            try await placeInSharedField("place-tag type=ntag213 uid=\"04 A1 B2 C3 D4 E5 F6\" id=ntag", environment: environment)
            let withTag = try await blocking { try Libnfc.run("pn53x-diagnose", [], environment: toolEnvironment(environment)) }
            #expect(withTag.status == 0, "\(withTag.output)")
            #expect(withTag.output.contains(" Communication line test: OK\n ROM test: OK\n RAM test: OK\n"), "\(withTag.output)")
            try SimulatedReaders.controlA.send("remove peer=ntag")
        }

        /// nfc-scan-device -v names the chip as libnfc's GetFirmwareVersion decoding does for a
        /// PN532 v1.6 (`32 01 06 07`) and lists its modulations.
        @Test func nfcScanDeviceVerboseNamesThePN532() async throws {
            let environment = try await resetSimulatedReaders()
            let result = try await blocking { try Libnfc.run("nfc-scan-device", ["-v"], environment: toolEnvironment(environment)) }
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("1 NFC device(s) found:"), "\(result.output)")
            #expect(result.output.contains("chip: PN532 v1.6"), "\(result.output)")
            // A PN532 with Support byte 07 (ISO/IEC 14443 A and B, ISO/IEC 18092), as libnfc lists it.
            #expect(result.output.contains(
                "initator mode modulations: ISO/IEC 14443A (424 kbps, 212 kbps, 106 kbps), FeliCa (424 kbps, 212 kbps), ISO/IEC 14443-4B (106 kbps),"),
                "\(result.output)")
            #expect(result.output.contains(
                "target mode modulations: ISO/IEC 14443A (424 kbps, 212 kbps, 106 kbps), FeliCa (424 kbps, 212 kbps), D.E.P. (424 kbps, 212 kbps, 106 kbps)\n"),
                "\(result.output)")
        }
    }
}
