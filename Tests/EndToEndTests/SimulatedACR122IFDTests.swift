import Foundation
import ISO7816
import PCSC
import PCSCSandbox
import PN53x
import SecbridgeCLI
import SecbridgeTesting
import Testing

// The simulated ACR122U driver (libSecbridgeACR122IFD.so) inside the shared private pcscd: what a
// PC/SC client sees of it (docs/acr122-pn532.md §1, §3, §5, §5c, §8), driven through its control socket.

/// Puts both simulated readers back to their start: no peers in the shared field, default
/// personality (libccid with escape commands enabled); waits until pcscd sees both readers empty.
func resetSimulatedReaders() async throws -> TestEnvironment {
    let environment = try await sharedEnvironment()
    for control in [SimulatedReaders.controlA, SimulatedReaders.controlB] {
        try control.send("remove all=yes")
        try control.send("personality name=ccid-escape-enabled")
    }
    try SimulatedReaders.controlA.send("timescale value=\(SimulatedReaders.testTimeScale)")
    for reader in [environment.simulatedReaderA, environment.simulatedReaderB] {
        _ = try await waitForCard(in: reader, present: false)
    }
    return environment
}

/// Places `line` (`place-tag …`, `place-card …`) in reader A's field and waits until pcscd has
/// seen it on reader A and, when reader B polls for cards (PICC parameter bit 7, as
/// ``resetSimulatedReaders()`` leaves it), on reader B too.
///
/// The two readers share one field, so B's pcscd powers the new card up as well (IFDHPowerICC at
/// insertion), and the simulator's new activation of the card drops a MIFARE Classic
/// authentication made on A. pcscd polls each reader on its own ~400 ms phase; waiting for A alone
/// let B's power-up land inside A's commands (a dump's block 1 refused with 63 00 after block 0).
/// pcscd reports a card present only after it powered it up, so once both report it no further
/// activation comes.
func placeInSharedField(_ line: String, environment: TestEnvironment) async throws {
    try SimulatedReaders.controlA.send(line)
    _ = try await waitForCard(in: environment.simulatedReaderA, present: true)
    let picc = try SimulatedReaders.controlB.send("status")["picc"].flatMap { UInt8($0, radix: 16) } ?? 0
    if picc & 0x80 != 0 {
        _ = try await waitForCard(in: environment.simulatedReaderB, present: true)
    }
}

/// Waits (at most `timeout`) until pcscd reports a card in `reader` (or none), and returns the
/// reader's state. pcscd polls IFDHICCPresence about every 400 ms.
func waitForCard(in reader: String, present: Bool, timeout: Duration = .seconds(5)) async throws -> ReaderState {
    try await blocking {
        let context = try PCSCContext()
        var states = [ReaderState(readerName: reader)]
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        _ = try context.getStatusChange(&states, timeout: .zero)
        while states[0].eventFlags.contains(.present) != present {
            let remaining = deadline - clock.now
            guard remaining > .zero else {
                throw SimulatedReaderError(code: "timeout", reason: "\(reader): card \(present ? "never appeared" : "never left") within \(timeout)")
            }
            states[0].acknowledge()
            do {
                _ = try context.getStatusChange(&states, timeout: remaining)
            } catch let error as PCSCError where error == .timeout {
                continue
            }
        }
        return states[0]
    }
}

/// One synthesised-ATR vector: a placed card's ATS and the ATR the reader must report.
struct ATRVector: Sendable, CustomTestStringConvertible {
    var id: String
    var personality = "ccid-escape-enabled"
    var ats: String
    var atr: [UInt8]
    var source: String
    var testDescription: String { id }
}

extension SharedReader {
    @Suite struct SimulatedACR122IFDTests {
        @Test func readersAppearWithTheACR122NameAndTheirControlSockets() async throws {
            let environment = try await resetSimulatedReaders()
            #expect(Set([environment.simulatedReaderA, environment.simulatedReaderB])
                == ["ACS ACR122U PICC Interface 00 00", "ACS ACR122U PICC Interface 01 00"])
            #expect(environment.readerNames.contains(environment.simulatedReaderA))
            #expect(environment.readerNames.contains(environment.simulatedReaderB))
            let pingA = try SimulatedReaders.controlA.send("ping")
            let pingB = try SimulatedReaders.controlB.send("ping")
            #expect(pingA["driver"] == "secbridge-acr122")
            #expect(pingA["reader"] == SimulatedReaders.directoryA)
            #expect(pingB["reader"] == SimulatedReaders.directoryB)
            #expect(pingA["field"] == pingB["field"])  // one shared field
            // A PC/SC attribute answered by the device: the ACR122U's SCARD_ATTR_MAXINPUT (261 =
            // 271-byte CCID messages − 10), docs/cases.md P06.
            let reader = environment.simulatedReaderA
            let (maxInput, vendor) = try await blocking {
                let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
                return (try direct.maxInput(), try direct.vendorName())
            }
            #expect(maxInput == 261)
            #expect(vendor == "ACS")  // SCARD_ATTR_VENDOR_NAME, the USB iManufacturer string
        }

        @Test func noCardSharedConnectFailsAndDirectConnectReachesTheDevice() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            let (sharedError, directProtocol, features) = try await blocking {
                let context = try PCSCContext()
                var sharedError: PCSCError?
                do {
                    _ = try context.connect(to: reader, share: .shared, protocols: .any)
                } catch let error as PCSCError {
                    sharedError = error
                }
                let direct = try context.connect(to: reader, share: .direct, protocols: [])
                let features = try direct.control(code: ACR122ControlCode.getFeatureRequest, [])
                return (sharedError, direct.activeProtocol, features)
            }
            #expect(sharedError == .noSmartcard)  // 0x8010000C
            #expect(directProtocol.rawValue == 0)
            #expect(features == hex("12 04 42 33 00 12 13 04 42 00 00 01"))  // GET_TLV_PROPERTIES, CCID_ESC_COMMAND → 0x42000001
        }

        @Test func firmwareVersionThroughEscapeIsTenASCIIBytesWithoutStatusWord() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            let reply = try await blocking {
                let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
                return try direct.control(code: ACR122ControlCode.ccidEscape, hex("FF 00 48 00 00"))
            }
            #expect(reply == Array("ACR122U207".utf8))
            #expect(reply.count == 10)
        }

        @Test func P09_escapeDisabledGivesNotTransactedAndTheLinkNamesIfdDriverOptions() async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("personality name=ccid-escape-disabled")
            let reader = environment.simulatedReaderA
            let (escapeError, features, linkError) = try await blocking {
                let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
                var escapeError: PCSCError?
                do {
                    _ = try direct.control(code: ACR122ControlCode.ccidEscape, hex("FF 00 48 00 00"))
                } catch let error as PCSCError {
                    escapeError = error
                }
                let features = try direct.control(code: ACR122ControlCode.getFeatureRequest, [])
                var linkError: (any Error)?
                do {
                    _ = try ACR122Link.open(channel: direct, readerName: reader)
                } catch {
                    linkError = error
                }
                return (escapeError, features, linkError.map { "\($0)" })
            }
            #expect(escapeError == .notTransacted)  // 0x80100016
            #expect(escapeError?.code == 0x8010_0016)
            #expect(features == hex("12 04 42 33 00 12"))  // no FEATURE_CCID_ESC_COMMAND without the option
            let text = linkError ?? "no error"
            #expect(text.contains("ifdDriverOptions"))
            #expect(text.contains("0x0001"))
        }

        struct FeatureVector: Sendable, CustomTestStringConvertible {
            var personality: String
            var features: [UInt8]
            var escapeCode: UInt32
            var otherCode: UInt32
            /// What the other driver's code gives: libccid does not know 0x42000DAC
            /// (SCARD_E_UNSUPPORTED_FEATURE); acsccid refuses SCARD_CTL_CODE(1) under its default
            /// ifdDriverOptions 0x0000 (SCARD_E_NOT_TRANSACTED; docs/acr122-units.md §2).
            var otherError: PCSCError
            var testDescription: String { personality }
        }

        /// docs/acr122-pn532.md §1: libccid lists 0x42000001 only with the option; acsccid always lists
        /// 0x42000DAC; the code of the other driver is an unknown control code (docs/cases.md P09).
        static let featureVectors = [
            FeatureVector(personality: "ccid-escape-enabled", features: hex("12 04 42 33 00 12 13 04 42 00 00 01"),
                          escapeCode: 0x4200_0001, otherCode: 0x4200_0DAC, otherError: .unsupportedFeature),
            FeatureVector(personality: "acs-driver", features: hex("11 04 42 33 00 11 12 04 42 33 00 12 13 04 42 00 0D AC"),
                          escapeCode: 0x4200_0DAC, otherCode: 0x4200_0001, otherError: .notTransacted),
        ]

        @Test(arguments: featureVectors)
        func P09_featureRequestNamesTheEscapeCodeOfEachDriver(_ vector: FeatureVector) async throws {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send("personality name=\(vector.personality)")
            let reader = environment.simulatedReaderA
            let (features, firmware, otherError, link) = try await blocking {
                let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
                let features = try direct.control(code: ACR122ControlCode.getFeatureRequest, [])
                let firmware = try direct.control(code: vector.escapeCode, hex("FF 00 48 00 00"))
                var otherError: PCSCError?
                do {
                    _ = try direct.control(code: vector.otherCode, hex("FF 00 48 00 00"))
                } catch let error as PCSCError {
                    otherError = error
                }
                let link = try ACR122Link.open(channel: direct, readerName: reader)
                return (features, firmware, otherError, link.escapeCode)
            }
            #expect(features == vector.features)
            #expect(firmware == Array("ACR122U207".utf8))
            #expect(otherError == vector.otherError)
            #expect(link == vector.escapeCode)
        }

        /// docs/acr122-pn532.md §3 and docs/cases.md P05: `3B 8N 80 01 <historical bytes of the ATS> TCK`.
        static let atrVectors = [
            ATRVector(id: "no historical bytes", ats: "05 78 80 70 02", atr: hex("3B 80 80 01 01"),
                      source: "docs/acr122-pn532.md §3; docs/cases.md P05"),
            ATRVector(id: "DESFire ATS 06 75 77 81 02 80", ats: "06 75 77 81 02 80", atr: hex("3B 81 80 01 80 80"),
                      source: "docs/acr122-pn532.md §3 (public pcsc_scan log)"),
            // The switchable variant: the whole ATS, TL included, as historical bytes; TCK 00.
            ATRVector(id: "whole ATS as historical bytes", personality: "atr-whole-ats", ats: "06 75 77 81 02 80",
                      atr: hex("3B 86 80 01 06 75 77 81 02 80 00"), source: "docs/acr122-pn532.md §3 (U), ACS ACR122T manual"),
        ]

        @Test(arguments: atrVectors)
        func placedISO14443_4CardIsPresentWithTheSynthesisedATR(_ vector: ATRVector) async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            try SimulatedReaders.controlA.send("personality name=\(vector.personality)")
            let placed = try SimulatedReaders.controlA.send("place-card uid=\"04 A1 B2 C3\" ats=\"\(vector.ats)\" applet=echo")
            let peer = try #require(placed["peer"])
            let state = try await waitForCard(in: reader, present: true)
            #expect(state.atr == vector.atr)
            let (atr, answer, uid) = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                let answer = try card.transmit(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
                let uid = try card.transmit(hex("FF CA 00 00 00"))
                return (try card.status().atr, answer, uid)
            }
            #expect(atr == vector.atr)
            #expect(answer == hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00 90 00"))  // the echo applet
            #expect(uid == hex("04 A1 B2 C3 90 00"))  // Get UID pseudo-APDU
            let log = try SimulatedReaders.controlA.send("card-log peer=\(peer)")
            #expect(log["count"] == "1")
            #expect(log.bytes("last") == hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
            try SimulatedReaders.controlA.send("remove peer=\(peer)")
            _ = try await waitForCard(in: reader, present: false)
        }

        @Test func legacyT0PersonalityAnnouncesDirectTransmitAnswersWith61xx() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            try SimulatedReaders.controlA.send("personality name=legacy-t0")
            try SimulatedReaders.controlA.send("place-card uid=\"04 A1 B2 C3\" applet=ok id=t0-card")
            _ = try await waitForCard(in: reader, present: true)
            let (active, announced, fetched, nothingLeft, firmware, chipVersion) = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                // GetFirmwareVersion through Direct Transmit: `D5 03 IC Ver Rev Support 90 00` is
                // 8 bytes, announced as 61 08 (libnfc's Touchatag trace, drivers/acr122_usb.c).
                let announced = try card.transmit(hex("FF 00 00 00 02 D4 02"))
                let fetched = try card.transmit(hex("FF C0 00 00 08"))
                let nothingLeft = try card.transmit(hex("FF C0 00 00 08"))
                let link = try ACR122Link.open(channel: card, readerName: reader)
                let chip = PN532(link: link)  // fetches with FF C0 itself
                return (card.activeProtocol, announced, fetched, nothingLeft, link.firmware?.text, try chip.send(PN532.GetFirmwareVersion()))
            }
            #expect(active == .t0)
            #expect(announced == hex("61 08"))  // docs/acr122-pn532.md §1 step 4, §2: 61 xx on T=0 units
            #expect(fetched == hex("D5 03 32 01 06 07 90 00"))  // 8 bytes, no status word added
            #expect(nothingLeft == hex("6A 81"))  // nothing waits any more (U)
            #expect(firmware == "ACR122U103")
            #expect(chipVersion == PN532FirmwareVersion(ic: 0x32, version: 0x01, revision: 0x06, support: 0x07))
            try SimulatedReaders.controlA.send("remove peer=t0-card")
        }

        /// Through pcscd: a card that leaves during its second C-APDU makes the driver fail the
        /// block (IFD_COMMUNICATION_ERROR), which pcscd returns as SCARD_E_NOT_TRANSACTED; `send`
        /// watches the reader for pcscd's next presence poll and says the card was removed, with
        /// the first exchange still printed.
        @Test func aCardRemovedMidExchangeIsReportedAsRemovedThroughPcscd() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            try SimulatedReaders.controlA.send("place-card uid=\"04 A1 B2 C3\" applet=ok leave-after=2 id=leaving")
            _ = try await waitForCard(in: reader, present: true)
            let result = try await runCLI(["send", "--reader", reader, "00 A4 04 00 05 F0 01 02 03 04", "00 B0 00 00 0F"])
            #expect(result.status == 1)
            #expect(result.out.hasPrefix("> 00 A4 04 00 05 F0 01 02 03 04\n< 90 00\n"), "\(result.out)")
            #expect(result.err.contains("00 B0 00 00 0F: the card was removed during the exchange; the exchanges before it are shown"), "\(result.err)")
            #expect(result.err.contains("SCARD_E_NOT_TRANSACTED from the reader"), "\(result.err)")
            _ = try await waitForCard(in: reader, present: false)
        }

        @Test func lateReplyFaultIsDetectedAndResynchronised() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            let (timedOut, desynchronized, afterwards) = try await blocking {
                let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
                let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: reader))
                try SimulatedReaders.controlA.send("fault late-reply=1")
                var timedOut: PCSCError?
                do {
                    try chip.send(PN532.RFConfiguration(.rfField(on: true)))
                } catch let error as PCSCError {
                    timedOut = error
                }
                var desynchronized: PN532Error?
                do {
                    try chip.send(PN532.SetParameters([.automaticRATS]))
                } catch let error as PN532Error {
                    desynchronized = error
                }
                return (timedOut, desynchronized, try chip.send(PN532.GetFirmwareVersion()))
            }
            // docs/acr122-pn532.md §5b: the command times out in the driver (SCARD_E_NOT_TRANSACTED), its
            // answer arrives for the next one; the client sees the wrong echo, resynchronises with
            // GetFirmwareVersion and reports the desync; then the link is back in step.
            #expect(timedOut == .notTransacted)
            #expect(desynchronized == .desynchronized(sent: .setParameters, received: hex("D5 33")))
            #expect(afterwards == PN532FirmwareVersion(ic: 0x32, version: 0x01, revision: 0x06, support: 0x07))
        }

        @Test func statusReportsLEDAndPICCParameterAfterPseudoAPDUs() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            let before = try SimulatedReaders.controlA.send("status")
            let (ledReply, piccReply) = try await blocking {
                let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
                let led = try direct.control(code: ACR122ControlCode.ccidEscape, hex("FF 00 40 0F 04 00 00 00 00"))
                let picc = try direct.control(code: ACR122ControlCode.ccidEscape, hex("FF 00 51 7F 00"))
                return (led, picc)
            }
            let after = try SimulatedReaders.controlA.send("status")
            #expect(before["picc"] == "FF")  // factory default: every polling bit set
            #expect(before["personality"] == "ccid-escape-enabled")
            #expect(before["firmware"] == "ACR122U207")
            #expect(ledReply == hex("90 03"))  // docs/acr122-pn532.md §2: FF 00 40 0F 04 00 00 00 00 → 90 03
            #expect(after["led"] == "03")
            #expect(piccReply == hex("90 7F"))
            #expect(after["picc"] == "7F")  // auto polling off, as nfcpy sets it
        }

        @Test func cardAndTerminalFromTranscriptFiles() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("secbridge-tool.\(getpid()).\(UUID().uuidString.prefix(8)).transcripts")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            // A card that answers as recorded (Fixtures/README.md format, version 1).
            let cardFile = directory.appendingPathComponent("card.transcript")
            try """
                # secbridge-transcript: 1
                # origin: simulated
                > 00 A4 04 00 07 D2 76 00 00 85 01 01 00
                < 90 00
                > 00 B0 00 00 02
                < 00 10 90 00

                """.write(to: cardFile, atomically: true, encoding: .utf8)
            let placed = try SimulatedReaders.controlA.send("place-card uid=\"04 A1 B2 C3\" transcript=\(cardFile.path)")
            _ = try await waitForCard(in: reader, present: true)
            let answers = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                return [try card.transmit(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")),
                        try card.transmit(hex("00 B0 00 00 02")),
                        try card.transmit(hex("00 B0 00 00 02"))]  // beyond the recording
            }
            #expect(answers[0] == hex("90 00"))
            #expect(answers[1] == hex("00 10 90 00"))
            #expect(answers[2] == hex("6F 00"))  // no recorded answer left
            try SimulatedReaders.controlA.send("remove peer=\(try #require(placed["peer"]))")
            _ = try await waitForCard(in: reader, present: false)

            // A terminal that sends the `tgt <` commands and expects the `tgt >` answers.
            let terminalFile = directory.appendingPathComponent("terminal.transcript")
            try """
                # secbridge-transcript: 1
                # origin: simulated
                tgt < 00 A4 04 00 07 D2 76 00 00 85 01 01 00
                tgt > 90 00
                tgt < 00 A4 00 0C 02 E1 03
                tgt > 90 00

                """.write(to: terminalFile, atomically: true, encoding: .utf8)
            try SimulatedReaders.controlB.send("place-terminal transcript=\(terminalFile.path) id=recorded")
            let served = try await blocking {
                let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
                let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: reader))
                try chip.prepareForCardEmulation()
                defer { _ = try? chip.restoreReaderDefaults() }
                _ = try chip.initAsTarget(uid: try EmulatedUID([0x08, 0x01, 0x02, 0x03]))
                var served: [[UInt8]] = []
                for _ in 0..<4 {
                    guard case .command(let apdu) = try chip.receiveCommand() else { break }
                    served.append(apdu)
                    _ = try chip.sendResponse(hex("90 00"))
                }
                return served
            }
            #expect(served == [hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), hex("00 A4 00 0C 02 E1 03")])
            let result = try SimulatedReaders.controlB.send("terminal-result peer=recorded wait-ms=5000")
            #expect(result["result"] == "passed")
            #expect(result["exchanges"] == "2")
            let relative = try SimulatedReaders.controlA.exchange("place-card uid=04A1B2C3 transcript=card.transcript")
            #expect(relative.hasPrefix("error bad-argument transcript path 'card.transcript' must be absolute"))
        }

        /// A pcscd of its own (the shared one keeps its readers): DEVICENAME options reach the
        /// driver, and a DEVICENAME it cannot use is refused with the reason in pcscd's log.
        @Test func deviceNameOptionsAndRejectionInAPcscdOfItsOwn() async throws {
            _ = try await sharedEnvironment()  // the library path is checked by the shared start
            let base = SimulatedReaders.baseDirectory + "/own"
            let good = ReaderConfEntry(friendlyName: SimulatedReaders.friendlyName,
                                       deviceName: base + "/c:personality=acs-driver:field=own",
                                       libraryPath: SimulatedReaders.libraryPath)
            let pcscd = try PrivatePCSCD(readers: [good])
            defer { pcscd.stop() }
            let names = try await blocking { try pcscd.start() }
            #expect(names == ["ACS ACR122U PICC Interface 00 00"])
            let control = SimulatedReaderControl(socketPath: base + "/c/control.sock")
            let status = try control.send("status")
            #expect(status["personality"] == "acs-driver")
            #expect(try control.send("ping")["field"] == "field:own")

            let bad = ReaderConfEntry(friendlyName: SimulatedReaders.friendlyName,
                                      deviceName: base + "/d:colour=red", libraryPath: SimulatedReaders.libraryPath)
            let refused = try PrivatePCSCD(readers: [bad])
            defer { refused.stop() }
            var failure: HarnessError?
            do {
                _ = try await blocking { try refused.start(timeout: .seconds(2)) }
            } catch let error as HarnessError {
                failure = error
            }
            #expect(failure?.code == .timeout)  // pcscd runs on, without the reader
            #expect(refused.logTail(lines: 200).contains("unknown option 'colour': the options are personality=<name>, field=<name>, timescale=<number>, clock=<name> and control=socket|none"))
            // Stopped off Swift's shared pool (the defers then find both stopped).
            _ = try await blocking { refused.stop(); pcscd.stop() }
        }

        @Test func cliReadersAndSendWorkAgainstTheSimulatedReader() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            try SimulatedReaders.controlA.send("place-card uid=\"04 A1 B2 C3\" applet=t4t-ndef id=cli-card")
            _ = try await waitForCard(in: reader, present: true)
            let readers = try await runCLI(["readers"])
            #expect(readers.status == 0)
            #expect(readers.out.contains(reader))
            let send = try await runCLI(["send", "--reader", reader, "00 A4 04 00 07 D2 76 00 00 85 01 01 00", "00 A4 00 0C 02 E1 03", "00 B0 00 00 0F"])
            #expect(send.status == 0, "\(send.err)")
            #expect(send.out.contains("< 90 00"))
            #expect(send.out.contains("< 00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00 90 00"))
            try SimulatedReaders.controlA.send("remove peer=cli-card")
        }

        @Test func controlSocketAnswersMalformedRequestsWithAnErrorLine() async throws {
            _ = try await resetSimulatedReaders()
            let control = SimulatedReaders.controlA
            #expect(try control.exchange("").hasPrefix("error syntax "))
            #expect(try control.exchange("place-card uid=\"04 A1").hasPrefix("error syntax "))
            #expect(try control.exchange("frobnicate").hasPrefix("error unknown-verb "))
            #expect(try control.exchange("place-card").hasPrefix("error missing-argument "))
            #expect(try control.exchange("place-card uid=04A1B2").hasPrefix("error bad-argument "))
            #expect(try control.exchange("place-card uid=04A1B2C3 colour=red").hasPrefix("error bad-argument "))
            #expect(try control.exchange("personality name=nonesuch").hasPrefix("error bad-argument "))
            #expect(try control.exchange("remove peer=nobody").hasPrefix("error refused "))
            #expect(try control.exchange(String(repeating: "x", count: 5000)).hasPrefix("error too-long "))
            #expect(try control.send("ping")["driver"] == "secbridge-acr122")  // still serving
        }

        @Test func P10_targetRoleServesATerminalThenIsReleasedAndReinitialised() async throws {
            let environment = try await resetSimulatedReaders()
            let reader = environment.simulatedReaderA
            // The terminal waits in the field until a reader is in TgInitAsTarget.
            try SimulatedReaders.controlB.send("place-terminal script=android-t4t-read id=phone-1")
            let (firstActivation, served, afterRelease, deliveries) = try await blocking {
                let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
                let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: reader))
                try chip.prepareForCardEmulation()
                let activation = try chip.initAsTarget(uid: try EmulatedUID([0x08, 0x12, 0x34, 0x56]))
                let terminal = try serveTerminal(on: chip, answers: type4FullURIRead)
                try chip.release()
                return (activation, terminal.commands, terminal.end, terminal.deliveries)
            }
            #expect(firstActivation.mode.rawValue == 0x08)  // 106 kbit/s, ISO 14443-4 PICC, Type A
            #expect(firstActivation.initiatorCommand == hex("E0 80"))  // RATS, FSD 256, CID 0
            #expect(served == type4FullURIRead.map(\.command))
            #expect(deliveries == Array(repeating: .delivered, count: type4FullURIRead.count))
            guard case .released(let code)? = afterRelease else {
                Issue.record("expected status 29 after the last step, got \(String(describing: afterRelease))")
                return
            }
            #expect(code.rawValue == 0x29)
            let result = try SimulatedReaders.controlB.send("terminal-result peer=phone-1 wait-ms=5000")
            #expect(result["result"] == "passed")
            #expect(result["exchanges"] == "6")
            // Re-initialise for a second terminal (an iPhone read): activated again.
            try SimulatedReaders.controlB.send("place-terminal script=ios-t4t-read id=phone-2")
            let (second, firstCommand) = try await blocking {
                let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
                let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: reader))
                try chip.prepareForCardEmulation()
                let activation = try chip.initAsTarget(uid: try EmulatedUID([0x08, 0x12, 0x34, 0x56]))
                let command = try chip.receiveCommand()
                try chip.restoreReaderDefaults()
                return (activation, command)
            }
            #expect(second.initiatorCommand == hex("E0 80"))
            #expect(firstCommand == .command(hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")))
            let events = try SimulatedReaders.controlA.send("events")
            #expect(events["events"]?.contains("target activated mode 08 initiator command E0 80") == true)
            try SimulatedReaders.controlA.send("remove all=yes")
        }

        @Test func readerBReadsTheCardReaderAEmulates() async throws {
            let environment = try await resetSimulatedReaders()
            let (readerA, readerB) = (environment.simulatedReaderA, environment.simulatedReaderB)
            // B must not poll automatically, or it would activate A's emulation by itself (PICC
            // parameter bit 7, docs/acr122-pn532.md §2).
            try await blocking { try stopAutomaticPolling(on: readerB) }
            // Reader A emulates on its own thread (TgInitAsTarget blocks until B polls).
            let emulation = Task.detached { () -> [[UInt8]] in
                try await Self.emulate(on: readerA, answering: 2)
            }
            let (target, answers) = try await blocking {
                let direct = try PCSCContext().connect(to: readerB, share: .direct, protocols: [])
                let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: readerB))
                var target: ISO14443ATarget?
                for _ in 0..<50 where target == nil {  // A reaches TgInitAsTarget within a few polls
                    target = try chip.pollISO14443A(passiveActivationRetries: 0x10)
                }
                let found = try #require(target)
                let answers = try type4FullURIRead.prefix(2).map { try chip.exchangeAPDU($0.command, target: found.logicalNumber) }
                try chip.release()
                try chip.restoreReaderDefaults()
                return (found, answers)
            }
            let served = try await emulation.value
            #expect(target.uid == hex("08 12 34 56"))
            #expect(target.sak == 0x20)
            #expect(target.ats.map { Array($0.prefix(5)) } == hex("05 75 33 92 03"))  // the PN532's own ATS
            #expect(answers == type4FullURIRead.prefix(2).map(\.response))
            #expect(served == type4FullURIRead.prefix(2).map(\.command))
        }

        /// Emulates the worked-example tag on `reader` for `count` C-APDUs; returns them.
        static func emulate(on reader: String, answering count: Int) async throws -> [[UInt8]] {
            let executor = BlockingExecutor(name: "e2e-emulation")
            defer { executor.shutdown() }
            return try await executor.run {
                let direct = try PCSCContext().connect(to: reader, share: .direct, protocols: [])
                let chip = PN532(link: try ACR122Link.open(channel: direct, readerName: reader))
                try chip.prepareForCardEmulation()
                _ = try chip.initAsTarget(uid: try EmulatedUID([0x08, 0x12, 0x34, 0x56]))
                var served: [[UInt8]] = []
                for _ in 0..<count {
                    guard case .command(let apdu) = try chip.receiveCommand() else { break }
                    served.append(apdu)
                    _ = try chip.sendResponse(type4FullURIRead.first { $0.command == apdu }?.response ?? hex("6D 00"))
                }
                try chip.restoreReaderDefaults()
                return served
            }
        }
    }
}
