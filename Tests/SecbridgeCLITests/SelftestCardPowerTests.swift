import Foundation
import Dispatch
import PCSCCore
import SecbridgeTesting
@testable import SecbridgeTools
import Testing
import Transcript

/// `selftest --hardware` with a card on the reader, recorded in either state pcscd leaves it in
/// (docs/acr122-units.md §6): still powered up from its insertion (the PN532 lists it as target 1)
/// or powered down after pcscd's grace period (no target listed); `--replay` stages the state the
/// recording's first GetGeneralStatus shows. In process (no pcscd): the in-process layer powers a
/// card up at insertion, as pcscd does, and having no timer keeps it powered until a disposition
/// says otherwise, so each order is staged by the test, deterministically.
@Suite struct SelftestCardPowerTests {
    /// An NTAG-like tag (SAK 00, 7-byte UID), as SelftestTests places on the shared reader.
    static let tag = "place-tag uid=04A1B2C3D4E5F6 atqa=0044 sak=00 id=t2"
    static let generalStatusStep = "PN532 GetGeneralStatus"

    /// Records a bundle on `desk` (a card already placed); returns the bundle's path and the
    /// recorded answers by step label.
    func record(on desk: SimulatedDesk) async throws -> (bundle: String, answers: [String: String]) {
        let bundle = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-selftest-\(UUID().uuidString)").path
        let result = try await runTool(["selftest", "--hardware", "--reader", desk.names[0], "--output", bundle, "--json"], on: desk)
        #expect(result.status == 0, "\(result.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        let steps = (json["parts"] as? [[String: Any]] ?? []).flatMap { ($0["steps"] as? [[String: Any]]) ?? [] }
        let answers = Dictionary(steps.map { ($0["step"] as? String ?? "", $0["answer"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
        return (bundle, answers)
    }

    /// `secbridge selftest --replay bundle` as a subprocess of the built binary (beside the test
    /// bundle), as a user runs it: its fresh simulated reader is then the process's only one,
    /// whereas in this process the desks of tests running in parallel may hold all 16. Bounded:
    /// killed after 60 s.
    func replay(_ bundle: String, json: Bool = false) async throws -> (status: Int32, out: String, err: String) {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var binary: URL?
        for _ in 0..<4 where binary == nil {
            let candidate = directory.appendingPathComponent("secbridge")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { binary = candidate }
            directory = directory.deletingLastPathComponent()
        }
        let executable = try #require(binary, "the secbridge binary is built with the tests (swift build --build-tests)")
        let executor = BlockingExecutor(name: "selftest-replay")
        defer { executor.shutdown() }
        return try await executor.run {
            try runChildBlocking(executable, ["selftest", "--replay", bundle] + (json ? ["--json"] : []), timeout: .seconds(60))
        }
    }

    /// Powers the placed card up and down again through `desk`'s client, as pcscd does at insertion
    /// and once its grace period passes with no client (SCardDisconnect UNPOWER powers it down the
    /// same way: IFDHPowerICC IFD_POWER_DOWN).
    func powerDownAfterInsertion(on desk: SimulatedDesk) throws {
        let context = try desk.client.establishContext()
        defer { try? context.release() }
        let handle = try context.connect(to: desk.names[0], share: .shared, protocols: .any)
        try handle.disconnect(.unpower)
    }

    /// The CI failure of issue 13, made deterministic: the card just put on the reader, still
    /// powered by the PC/SC layer when the sequence runs. GetGeneralStatus lists it as target 1
    /// (`Err 00 Field 00 NbTg 01 Tg 01 BrRx 00 BrTx 00 Type 00 SAM 80`, PN532 UM0701-02 §7.2.3), and
    /// the replay stages it powered, so every answer matches (before the fix the replay always
    /// powered it down and answered `D5 05 00 00 00 80` there).
    @Test func aBundleRecordedWhileTheCardIsStillPoweredReplays() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control().send(Self.tag)
        let (bundle, answers) = try await record(on: desk)
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        #expect(answers[Self.generalStatusStep] == "D50500000101000000" + "80" + "9000")
        #expect(answers["InListPassiveTarget 106 kbit/s Type A"] == "D54B010100440007" + "04A1B2C3D4E5F6" + "9000")
        let transcript = try Transcript(contentsOfFile: bundle + "/reader.trn")
        #expect(transcript.header["card"] == "uid=04A1B2C3D4E5F6 atqa=0044 sak=00")
        #expect(BundleHeader.targetsListedAtStart(in: transcript) == 1)

        let replayed = try await replay(bundle)
        #expect(replayed.status == 0, "\(replayed.err)")
        #expect(replayed.out.contains("\(bundle)/reader.trn: "), "\(replayed.out)")
        #expect(replayed.out.contains("every answer matches the simulator"), "\(replayed.out)")
    }

    /// The other order: pcscd powered the card down before the sequence ran, GetGeneralStatus
    /// lists no target (`D5 05 00 00 00 80`), and the replay stages it powered down.
    @Test func aBundleRecordedAfterTheCardWasPoweredDownReplays() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control().send(Self.tag)
        try powerDownAfterInsertion(on: desk)
        let (bundle, answers) = try await record(on: desk)
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        #expect(answers[Self.generalStatusStep] == "D505000000" + "80" + "9000")
        // The card is found all the same: InListPassiveTarget activates it afresh.
        #expect(answers["InListPassiveTarget 106 kbit/s Type A"] == "D54B010100440007" + "04A1B2C3D4E5F6" + "9000")
        let transcript = try Transcript(contentsOfFile: bundle + "/reader.trn")
        #expect(BundleHeader.targetsListedAtStart(in: transcript) == 0)

        let replayed = try await replay(bundle)
        #expect(replayed.status == 0, "\(replayed.err)")
        #expect(replayed.out.contains("every answer matches the simulator"), "\(replayed.out)")
    }

    /// The two states part at the first GetGeneralStatus only: RF field off releases every target
    /// two steps later, and InListPassiveTarget then finds the card afresh in both.
    @Test func theTwoStatesDifferAtTheFirstGetGeneralStatusOnly() async throws {
        let powered = try await SimulatedDesk.open()
        defer { powered.close() }
        let poweredDown = try await SimulatedDesk.open()
        defer { poweredDown.close() }
        try powered.control().send(Self.tag)
        try poweredDown.control().send(Self.tag)
        try powerDownAfterInsertion(on: poweredDown)
        let first = try await record(on: powered)
        defer { try? FileManager.default.removeItem(atPath: first.bundle) }
        let second = try await record(on: poweredDown)
        defer { try? FileManager.default.removeItem(atPath: second.bundle) }
        let differing = first.answers.keys.filter { first.answers[$0] != second.answers[$0] }
        #expect(differing == [Self.generalStatusStep], "\(first.answers)\n\(second.answers)")
        #expect(first.answers.count == second.answers.count)
    }

    /// A bundle whose recorded state cannot be staged gets the first different line,
    /// GetGeneralStatus, as a diff with a note, not a crash or an "unusable" verdict.
    @Test func aBundleWhoseListingWasEditedGetsTheDiffAtGetGeneralStatus() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control().send(Self.tag)
        try powerDownAfterInsertion(on: desk)
        let (bundle, _) = try await record(on: desk)
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        // A first GetGeneralStatus that lists a target while the header records no card: a state
        // no staging reproduces (no card to power up), so the replay differs at that line and says
        // why.
        let original = try String(contentsOfFile: bundle + "/reader.trn", encoding: .utf8)
        let listed = original.replacingOccurrences(
            of: "ctl 0x42000001 < D5 05 00 00 00 80 90 00", with: "ctl 0x42000001 < D5 05 00 00 01 01 00 00 00 80 90 00")
        #expect(listed != original)
        let edited = listed.replacingOccurrences(of: "# card: uid=04A1B2C3D4E5F6 atqa=0044 sak=00\n", with: "# card: none\n")
        #expect(edited != listed)
        try edited.write(toFile: bundle + "/reader.trn", atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: bundle + "/target.trn")

        let replayed = try await replay(bundle)
        #expect(replayed.status == 1)
        #expect(replayed.err.contains("\(bundle)/reader.trn: the simulator answers differently"), "\(replayed.err)")
        #expect(replayed.err.contains("expected: ctl 0x42000001 < D5 05 00 00 01 01 00 00 00 80 90 00"), "\(replayed.err)")
        #expect(replayed.err.contains("actual:   ctl 0x42000001 < D5 05 00 00 00 80 90 00"), "\(replayed.err)")
        #expect(replayed.err.contains("note: the recording's first GetGeneralStatus lists 1 target but its `card` header is none"), "\(replayed.err)")

        let json = try await replay(bundle, json: true)
        #expect(json.status == 1)
        let parts = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        #expect(parts.first?["result"] as? String == "differs")
        #expect((parts.first?["error"] as? String)?.contains("note: the recording's first GetGeneralStatus lists 1 target") == true)
    }

    /// A Touchatag-era unit never reports a tag to PC/SC, only its permanent pseudo-card
    /// (docs/acr122-clones.md §2), so nothing powers the tag up before the sequence and
    /// InListPassiveTarget alone finds it: the replay places the tag only, on `touchatag`, the
    /// personality the firmware (ACR122U102) and PN532 version name.
    @Test func aTagOnATouchatagUnitIsRecordedAndReplays() async throws {
        let desk = try await SimulatedDesk.open(personality: "touchatag")
        defer { desk.close() }
        try desk.control().send(Self.tag)
        let (bundle, answers) = try await record(on: desk)
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        #expect(answers[Self.generalStatusStep] == "D505000000" + "80" + "9000")
        #expect(answers["InListPassiveTarget 106 kbit/s Type A"] == "D54B010100440007" + "04A1B2C3D4E5F6" + "9000")
        let transcript = try Transcript(contentsOfFile: bundle + "/reader.trn")
        #expect(BundleHeader.personality(for: transcript) == "touchatag")

        let replayed = try await replay(bundle)
        #expect(replayed.status == 0, "\(replayed.err)")
        #expect(replayed.out.contains("every answer matches the simulator"), "\(replayed.out)")
    }

    /// A clone's card: the sequence cannot tell the clone from a genuine ACR122U214 (the same
    /// feature list and firmware), and the SENS_RES it gives least significant byte first
    /// (docs/acr122-clones.md §1) is recorded as the ATQA `44 00`, which a genuine unit gives for
    /// such a card too, so the bundle replays against `acr122u214` with the card powered down.
    @Test func aCardOnACloneIsRecordedAndReplays() async throws {
        let desk = try await SimulatedDesk.open(personality: "clone")
        defer { desk.close() }
        try desk.control().send(Self.tag)
        let (bundle, answers) = try await record(on: desk)
        defer { try? FileManager.default.removeItem(atPath: bundle) }
        #expect(answers[Self.generalStatusStep] == "D505000000" + "80" + "9000")
        let transcript = try Transcript(contentsOfFile: bundle + "/reader.trn")
        #expect(transcript.header["card"] == "uid=04A1B2C3D4E5F6 atqa=4400 sak=00")
        #expect(BundleHeader.personality(for: transcript) == "acr122u214")

        let replayed = try await replay(bundle)
        #expect(replayed.status == 0, "\(replayed.err)")
        #expect(replayed.out.contains("every answer matches the simulator"), "\(replayed.out)")
    }

    /// The staging each recorded state gets (docs/acr122-units.md §6).
    @Test func theStagingFollowsTheFirstGetGeneralStatus() {
        let card = ["uid": "04A1B2C3D4E5F6", "atqa": "0044", "sak": "00"]
        func staging(_ card: [String: String]?, _ listed: Int?, reportsCards: Bool = true) -> BundleHeader.CardStaging? {
            let result = BundleHeader.cardStaging(card: card, listedAtStart: listed, reportsCards: reportsCards)
            return result.note == nil ? result.staging : nil
        }
        #expect(staging(card, 1) == .powered)
        #expect(staging(card, 0) == .poweredDown)
        // A part without GetGeneralStatus (cut short): as pcscd leaves an unused card in the end.
        #expect(staging(card, nil) == .poweredDown)
        #expect(staging(nil, 0) == BundleHeader.CardStaging.none)
        #expect(staging(card, 0, reportsCards: false) == .placedOnly)
        let twoTargets = BundleHeader.cardStaging(card: card, listedAtStart: 2, reportsCards: true)
        #expect(twoTargets.staging == .powered)
        #expect(twoTargets.note?.contains("lists 2 targets") == true)
        let noCard = BundleHeader.cardStaging(card: nil, listedAtStart: 1, reportsCards: true)
        #expect(noCard.staging == .none)
        #expect(noCard.note?.contains("lists 1 target but its `card` header is none") == true)
    }
}
