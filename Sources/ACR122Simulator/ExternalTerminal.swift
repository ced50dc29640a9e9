import ISO7816
import Synchronization
import Transcript

/// An external NFC terminal (a phone reading a tag, a payment terminal): an ISO/IEC 14443-4
/// initiator that activates a card emulated by a simulated ACR122U in the same field and sends it
/// C-APDUs, each chosen by its ``TerminalProgram`` from the answers so far.
///
/// The terminal activates the first simulated reader in the field that waits in TgInitAsTarget with
/// a SAK announcing ISO/IEC 14443-4 (bit 0x20): it sends RATS (`E0 80` by default), which
/// TgInitAsTarget returns as the initiator command. It then hands the emulating host one C-APDU per
/// TgGetData and gives the answer the host sends with TgSetData to its program. When the program
/// ends (read done, a script's last step, or a refusal) it releases the target: the host's next
/// TgGetData gets status 29. A terminal runs its program once.
///
/// Programs: a recorded ``Script`` (each answer checked byte for byte), or a model of a real
/// reader's algorithm (``AndroidType4Reader``, ``IOSType4Reader``, ``PaymentTerminal``,
/// ``AccessControlReader``). It records every exchange (``exchanges``), the outcome (``result``)
/// and what the program read (``report``).
public final class ExternalTerminal: FieldPeer {
    /// One command of a script and the answer expected.
    public struct Step: Sendable, Hashable {
        /// The C-APDU sent.
        public var command: [UInt8]
        /// The R-APDU expected (SW1-SW2 included); `??` bytes match anything; nil accepts any answer.
        public var expectedResponse: TranscriptBytes?

        /// A step that sends `command` and checks the answer against `expectedResponse` (`??` bytes match
        /// anything; nil accepts any answer).
        public init(command: [UInt8], expectedResponse: TranscriptBytes?) {
            self.command = command
            self.expectedResponse = expectedResponse
        }

        /// A step that sends `command` and expects exactly `response` (SW1-SW2 included).
        public init(_ command: [UInt8], expect response: [UInt8]) {
            self.init(command: command, expectedResponse: TranscriptBytes(response))
        }

        /// The end of a script whose step `step` (0-based, this one) got `response` when it
        /// expected another, or nil when the answer is accepted.
        func mismatch(_ response: [UInt8], step: Int) -> TerminalOutcome? {
            guard let expectedResponse, !expectedResponse.matches(response) else { return nil }
            return .mismatch(step: step, expected: expectedResponse.description, actual: response)
        }
    }

    /// A recorded exchange replayed byte for byte: regression data, not a model.
    public struct Script: Sendable, Hashable {
        /// A name for reports, e.g. "Android Type 4 Tag read (recording)".
        public var name: String
        /// The RATS sent at activation, `E0 80` (FSDI 8 → FSD 256, CID 0) as phones send it
        /// (docs/iso14443-t4t-ndef.md §2).
        public var rats: [UInt8]
        /// The commands, in order; the terminal releases the target after the last.
        public var steps: [Step]

        /// A script named `name` that activates the target with `rats` and then runs `steps`.
        public init(name: String, rats: [UInt8] = [0xE0, 0x80], steps: [Step]) {
            self.name = name
            self.rats = rats
            self.steps = steps
        }
    }

    /// How a terminal's run ended, or where it stands.
    public enum Result: Sendable, Hashable {
        /// Not activated yet.
        case waiting
        /// Activated; `step` is the index of the next exchange.
        case running(step: Int)
        /// The program completed: every script step answered as expected, or a model read what it
        /// reads (see ``report``). The target was released.
        case passed
        /// The answer to script step `step` (0-based) differed from the recording.
        case mismatch(step: Int, expected: String, actual: [UInt8])
        /// A model gave up after the answer to exchange `step` (0-based: 2 when it stops after the
        /// third R-APDU): `stage` names the step of its algorithm ("capability container check"),
        /// `reason` what the real reader refuses and why.
        case failed(step: Int, stage: String, reason: String)
        /// The emulated target went away (left target mode, reader removed) before step `step` was
        /// answered.
        case targetLeft(step: Int)
        /// The phone left the field itself after exchange `step` (``PhoneBehaviour/leaveAfter``,
        /// or a tap done with taps remaining); it comes back at the next TgInitAsTarget.
        case leftField(step: Int)
        /// A peer-to-peer initiator found no NFC-DEP target (`reason`), or its target went back to
        /// waiting for an ISO-DEP reader: nothing was exchanged, and that is no failure of the
        /// emulation (docs/terminal-models.md §6.3).
        case ignored(reason: String)
    }

    /// One C-APDU and the R-APDU the target gave (nil when it left before answering).
    public struct Exchange: Sendable, Hashable {
        /// The C-APDU the terminal sent.
        public var command: [UInt8]
        /// The R-APDU the target answered; nil when it left before answering.
        public var response: [UInt8]?
    }

    private struct State {
        var result: Result = .waiting
        var program: any TerminalProgram
        var next: TerminalAction?
        var awaitingResponse = false
        /// The latest ``ExternalTerminal/logCapacity`` exchanges; `total` counts every one.
        var exchanges = BoundedLog<Exchange>(capacity: ExternalTerminal.logCapacity)
        var activations = 0
        var report: TerminalReport?
        /// The program as placed, run again from the start at each activation.
        let initialProgram: any TerminalProgram
        /// Exchanges of the current activation.
        var exchangesThisActivation = 0
        /// The phone left (or finished a tap) and wants another activation.
        var returning = false
        /// When a phone that left is back in the field (``PhoneBehaviour/returnAfter``); nil: at once.
        var returnsAt: Deadline?
        var tapsDone = 0
        /// The ATS the current target sent (its FWI sets the frame waiting time).
        var ats: [UInt8] = []
        /// One line per activation that ended, oldest first (the latest ``ExternalTerminal/logCapacity``).
        var activationResults = BoundedLog<String>(capacity: ExternalTerminal.logCapacity)

        init(program: any TerminalProgram) {
            self.program = program
            initialProgram = program
        }
    }

    /// The terminal's name in reports, e.g. "Android Type 4 Tag read (android-15.0.0_r23)".
    public let name: String
    /// The RATS sent at activation.
    public let rats: [UInt8]
    /// The recorded script a replaying terminal runs; nil for a model, and for a terminal reading
    /// its transcript file as it goes (``init(transcriptFile:name:)``).
    public let script: Script?
    /// What the phone does around the APDUs (leaving, re-tapping, waiting times).
    public let behaviour: PhoneBehaviour
    /// True for a peer-to-peer initiator (``PeerToPeerInitiator``): it sends ATR_REQ, not RATS.
    public let isNFCDEPInitiator: Bool
    private let state: Mutex<State>

    /// A terminal running `program`, behaving as `behaviour` says around its APDUs.
    public init(name: String, rats: [UInt8] = [0xE0, 0x80], program: some TerminalProgram, behaviour: PhoneBehaviour = PhoneBehaviour()) {
        self.name = name
        self.rats = rats
        script = nil
        self.behaviour = behaviour
        isNFCDEPInitiator = program is PeerToPeerInitiator
        state = Mutex(State(program: program))
    }

    /// A terminal replaying a recorded script.
    public init(script: Script) {
        name = script.name
        rats = script.rats
        self.script = script
        behaviour = PhoneBehaviour()
        isNFCDEPInitiator = false
        state = Mutex(State(program: ScriptProgram(script: script)))
    }

    /// A terminal replaying a transcript: each `tgt <` C-APDU followed by its `tgt >` R-APDU is one
    /// step; a transcript without `tgt <` lines is read from its `>` / `<` (SCardTransmit) lines.
    /// A command the next command follows without an answer accepts any answer. The steps are
    /// held in ``script``; ``init(transcriptFile:name:)`` reads them from a file as it goes.
    /// - Throws: ``ExternalTerminalError`` when the transcript holds no command to send, or a command
    ///   with wildcard or redacted bytes (a terminal must send concrete bytes).
    public convenience init(transcript: Transcript, channel: String? = nil, name: String? = nil) throws(ExternalTerminalError) {
        var check = TranscriptTerminalCheck(channel: channel)
        for line in transcript.lines {
            if let record = line.record { check.read(record) }
        }
        var pairing = TranscriptStepPairing(usesTarget: try check.sideToReplay(fileName: transcript.fileName), channel: channel)
        var steps: [Step] = []
        func append(_ pair: TranscriptStepPairing.Pair?) {
            // Concrete bytes: the check refused any other command.
            if let pair, let command = pair.command.bytes { steps.append(Step(command: command, expectedResponse: pair.answer)) }
        }
        for line in transcript.lines {
            if let record = line.record { append(pairing.read(record)) }
        }
        append(pairing.end())
        self.init(script: Script(name: name ?? transcript.fileName, steps: steps))
    }

    /// Where the run stands or how it ended.
    public var result: Result { state.withLock { $0.result } }
    /// The exchanges so far, oldest first: every one, or the latest ``logCapacity`` (a terminal that
    /// taps again and again, or a long recording, costs the same memory as a short one).
    public var exchanges: [Exchange] { state.withLock { $0.exchanges.elements } }
    /// The exchange log as it stands: the kept exchanges, how many there were in all
    /// (``BoundedLog/total``) and how many are no longer kept (``BoundedLog/dropped``).
    public var exchangeLog: BoundedLog<Exchange> { state.withLock { $0.exchanges } }
    /// How many C-APDUs the terminal has sent, kept or dropped.
    public var exchangeCount: Int { state.withLock { $0.exchanges.total } }
    /// How many exchanges and activation results a terminal keeps: 4096 of each; older ones are
    /// counted in ``exchangeLog``'s `dropped`.
    public static let logCapacity = 4096
    /// How many times a target was activated by this terminal (more than 1 when it left and came
    /// back, or tapped again).
    public var activations: Int { state.withLock { $0.activations } }
    /// One line per activation that ended, oldest first, e.g. "1: left the field after exchange 6
    /// (00 B0 00 00 02 → 00 10 90 00)", "2: passed: NDEF message, 1 record: …".
    public var activationResults: [String] { state.withLock { $0.activationResults.elements } }
    /// What the program read (the NDEF message, the records of a payment application), set when
    /// it ended; nil before, and for recorded scripts.
    public var report: TerminalReport? { state.withLock { $0.report } }
    /// The program as placed (each activation runs a copy of it from the start).
    var initialProgram: any TerminalProgram { state.withLock { $0.initialProgram } }

    public var peerDescription: String { "external terminal (\(name))" }

    // MARK: Driven by the emulating reader (with the field locked)

    /// True while the terminal has not activated any target yet, or left and comes back.
    var wantsActivation: Bool {
        state.withLock { $0.result == .waiting || ($0.returning && $0.returnsAt?.hasPassed != false) }
    }

    /// When a phone that left and is still away comes back (a TgInitAsTarget wakes then); nil when
    /// it is not away.
    var returnDeadline: Deadline? {
        state.withLock { $0.returning ? $0.returnsAt.flatMap { $0.hasPassed ? nil : $0 } : nil }
    }

    /// Activates a target waiting in TgInitAsTarget with request `modes` and `sak`, whose ATS is
    /// `ats`; returns TgInitAsTarget's mode byte and the initiator command, or nil when this
    /// terminal does not activate such a target. An ISO-DEP reader needs ISO 14443-4 allowed
    /// (DEPOnly 02 clear, SAK bit 20) and sends its RATS (mode 08). A peer-to-peer initiator needs
    /// DEP allowed (PICCOnly 04 clear, SAK bit 40) and sends ATR_REQ (mode 04); otherwise it
    /// reports ``Result/ignored(reason:)`` and stops looking.
    func activate(modes: UInt8, sak: UInt8, ats: [UInt8]) -> (mode: UInt8, initiatorCommand: [UInt8])? {
        if isNFCDEPInitiator {
            guard modes & 0x04 == 0, sak & 0x40 != 0 else {
                let why = modes & 0x04 != 0
                    ? "TgInitAsTarget allows ISO/IEC 14443-4 PICC activation only (Mode bit PICCOnly 04): the PN532 does not answer ATR_REQ"
                    : "SEL_RES \([sak].hexString) does not announce NFC-DEP (bit 40)"
                state.withLock { $0.result = .ignored(reason: "no NFC-DEP target: " + why) }
                return nil
            }
            start(ats: [])
            return (PeerToPeerInitiator.activatedMode, PeerToPeerInitiator.atrRequest)
        }
        guard modes & 0x02 == 0, sak & 0x20 != 0 else { return nil }
        start(ats: ats)
        return (0x08, rats)
    }

    private func start(ats: [UInt8]) {
        state.withLock {
            $0.returning = false
            $0.returnsAt = nil
            $0.exchangesThisActivation = 0
            $0.ats = ats
            $0.program = $0.initialProgram
            $0.result = .running(step: $0.exchanges.total)
            $0.activations += 1
            $0.next = $0.program.start()
        }
    }

    /// What the terminal sends next.
    enum Next: Equatable {
        /// A C-APDU.
        case command([UInt8])
        /// The terminal released the target (program over): status 29.
        case released
        /// The previous C-APDU has not been answered (TgGetData twice): not acceptable now.
        case awaitingResponse
        /// Never activated.
        case notActivated
    }

    /// - Parameter clock: the device's clock: a phone that leaves now (``PhoneBehaviour/leaveAfter``)
    ///   is back ``PhoneBehaviour/returnAfter`` later on it.
    func nextCommand(clock: SimulationClock = .realTime) -> Next {
        state.withLock { s in
            switch s.result {
            case .waiting, .ignored: return .notActivated
            case .passed, .mismatch, .failed, .targetLeft, .leftField: return .released
            case .running:
                if s.awaitingResponse { return .awaitingResponse }
                switch s.next {
                case .send(let command):
                    if s.activations == 1, let leaveAfter = behaviour.leaveAfter, s.exchangesThisActivation >= leaveAfter {
                        // The phone moves away instead of sending this command: field loss.
                        Self.leave(&s, why: "left the field after exchange \(s.exchangesThisActivation)")
                        s.returnsAt = behaviour.returnAfter.map { clock.deadline(after: $0) }
                        return .released
                    }
                    s.awaitingResponse = true
                    s.exchangesThisActivation += 1
                    s.exchanges.append(Exchange(command: command, response: nil))
                    return .command(command)
                case .finish(let outcome):
                    finish(&s, outcome)
                    return .released
                case nil:
                    s.result = .passed
                    return .released
                }
            }
        }
    }

    /// The target's R-APDU for the outstanding C-APDU.
    /// - Returns: TgSetData's status: 00 taken; 27 when no C-APDU was outstanding (the host
    ///   answered without being asked); 29 when the phone gave up waiting for this answer
    ///   (``PhoneBehaviour/hostDelay`` beyond its waiting time) and released the target.
    func deliver(_ response: [UInt8]) -> UInt8 {
        state.withLock { s in
            guard case .running = s.result, s.awaitingResponse else { return 0x27 }
            s.awaitingResponse = false
            if s.activations == 1, let delay = behaviour.hostDelay, delay.command == s.exchangesThisActivation {
                let (limit, rule) = behaviour.waitLimit(ats: s.ats)
                let waited = "the answer came \(FrameWaitingTime.milliseconds(delay.delay)) ms after the command"
                if let limit, delay.delay > limit {
                    let command = s.exchanges.last?.command ?? []
                    s.next = nil
                    s.result = .failed(step: max(0, s.exchanges.total - 1), stage: "waiting for the answer to \(command.hexString)",
                                       reason: "timeout: \(rule); \(waited)")
                    s.activationResults.append("\(s.activations): failed: no answer in time to \(command.hexString) (\(waited))")
                    return 0x29
                }
            }
            s.exchanges.updateLast { $0.response = response }
            let action = s.program.receive(response)
            switch action {
            case .send:
                s.next = action
                s.result = .running(step: s.exchanges.total)
            case .finish(let outcome):
                finish(&s, outcome)
            }
            return 0x00
        }
    }

    /// The phone moves out of the field (the lock held): it comes back at the next activation.
    private static func leave(_ s: inout State, why: String) {
        let last = s.exchanges.last.map { " (\($0.command.hexString) → \(($0.response ?? []).hexString))" } ?? ""
        s.activationResults.append("\(s.activations): \(why)\(last)")
        s.next = nil
        s.result = .leftField(step: max(0, s.exchanges.total - 1))
        s.returning = true
    }

    private func finish(_ s: inout State, _ outcome: TerminalOutcome) {
        s.next = nil
        switch outcome {
        case .completed(let report):
            s.report = report
            s.result = .passed
            s.tapsDone += 1
            s.activationResults.append("\(s.activations): passed: \(report.summary)")
            // Another tap to come: the phone moves away and back (the result stays passed).
            if s.tapsDone < behaviour.taps { s.returning = true }
        case .passedScript:
            s.result = .passed
        case .mismatch(let step, let expected, let actual):
            s.result = .mismatch(step: step, expected: expected, actual: actual)
        case .failed(let stage, let reason, let report):
            s.report = report
            s.result = .failed(step: max(0, s.exchanges.total - 1), stage: stage, reason: reason)
            s.activationResults.append("\(s.activations): failed at \(stage): \(reason)")
        }
    }

    /// The target left before the program was over. A peer-to-peer initiator's target that goes
    /// back to waiting (a new TgInitAsTarget) turned it away: ``Result/ignored(reason:)``.
    func targetLeft() {
        state.withLock { s in
            guard case .running(let step) = s.result else { return }
            if isNFCDEPInitiator {
                s.result = .ignored(reason: "the target left NFC-DEP before any exchange (TgInitAsTarget again: not a peer-to-peer target)")
                s.activationResults.append("\(s.activations): ignored by the target")
            } else {
                s.result = .targetLeft(step: step)
                s.activationResults.append("\(s.activations): the target left before exchange \(step)")
            }
        }
    }
}

/// A terminal script that cannot be built.
public struct ExternalTerminalError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the script cannot be built, in words.
    public var reason: String
    public var description: String { reason }
}

// MARK: - The recorded NFC Forum Type 4 Tag reads of phones (docs/iso14443-t4t-ndef.md §4)

extension ExternalTerminal.Script {
    /// The NDEF Tag Application AID of mapping versions 2.0 and 3.0: `D2 76 00 00 85 01 01`.
    public static let ndefApplicationAID: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]

    /// The capability container of the worked example (mapping 2.0, MLe = MLc = 007F, NDEF file
    /// E104 of at most 0400 bytes, read/write): `00 0F 20 00 7F 00 7F 04 06 E1 04 04 00 00 00`.
    public static let exampleCapabilityContainer: [UInt8] = [
        0x00, 0x0F, 0x20, 0x00, 0x7F, 0x00, 0x7F, 0x04, 0x06, 0xE1, 0x04, 0x04, 0x00, 0x00, 0x00,
    ]

    /// The NDEF file of the worked example: NLEN 0010 + a URI record for https://example.com.
    public static let exampleNDEFFile: [UInt8] = [
        0x00, 0x10, 0xD1, 0x01, 0x0C, 0x55, 0x04, 0x65, 0x78, 0x61, 0x6D, 0x70, 0x6C, 0x65, 0x2E, 0x63, 0x6F, 0x6D,
    ]

    /// Android's read of the worked example as recorded, byte for byte (docs/iso14443-t4t-ndef.md §4):
    /// regression data (the model is ``AndroidType4Reader``).
    /// SELECT AID (with Le) → SELECT E103 → READ 0F → SELECT E104 → READ 02 (NLEN) → READ from 2.
    public static let androidType4ReadExample = androidType4Read(
        capabilityContainer: exampleCapabilityContainer, ndefFile: exampleNDEFFile)

    /// iOS's read of the worked example as recorded (the model is ``IOSType4Reader``): the first five
    /// steps as Android, then `00 B0 00 00 10` (NLEN bytes from offset 0) and `00 B0 00 10 02`.
    public static let iOSType4ReadExample = iOSType4Read(
        capabilityContainer: exampleCapabilityContainer, ndefFile: exampleNDEFFile)

    /// Android's Type 4 Tag read of a tag holding `capabilityContainer` (file E103) and `ndefFile`
    /// (NLEN + message, in the file the CC names): after NLEN, reads in chunks of min(MLe, 255)
    /// bytes (Le is never 00).
    public static func androidType4Read(capabilityContainer cc: [UInt8], ndefFile: [UInt8]) -> Self {
        var steps = firstFiveSteps(cc: cc, ndefFile: ndefFile)
        let chunk = readChunk(cc)
        var offset = 2
        while offset < ndefFile.count {
            let count = min(chunk, ndefFile.count - offset)
            steps.append(readStep(offset: offset, count: count, file: ndefFile))
            offset += count
        }
        return Self(name: "Android Type 4 Tag read (recording)", steps: steps)
    }

    /// iOS's Type 4 Tag read: the first five steps as Android, then NLEN bytes from offset 0 (the
    /// NLEN field is read again), then the rest from there on.
    public static func iOSType4Read(capabilityContainer cc: [UInt8], ndefFile: [UInt8]) -> Self {
        var steps = firstFiveSteps(cc: cc, ndefFile: ndefFile)
        let nlen = ndefFile.count >= 2 ? Int(ndefFile[0]) << 8 | Int(ndefFile[1]) : 0
        let chunk = readChunk(cc)
        var offset = 0
        var count = min(nlen, chunk, ndefFile.count)
        while offset < ndefFile.count, count > 0 {
            steps.append(readStep(offset: offset, count: count, file: ndefFile))
            offset += count
            count = min(chunk, ndefFile.count - offset)
        }
        return Self(name: "iOS Type 4 Tag read (recording)", steps: steps)
    }

    private static let ok: [UInt8] = [0x90, 0x00]

    private static func readStep(offset: Int, count: Int, file: [UInt8]) -> ExternalTerminal.Step {
        .init([0x00, 0xB0, UInt8(offset >> 8), UInt8(offset & 0xFF), UInt8(count)],
              expect: Array(file[offset..<offset + count]) + ok)
    }

    private static func readChunk(_ cc: [UInt8]) -> Int {
        guard cc.count >= 5 else { return 0x0F }
        let mle = Int(cc[3]) << 8 | Int(cc[4])
        return max(1, min(mle, 255))
    }

    /// SELECT AID (with Le), SELECT E103 (P2 0C), READ the CC, SELECT the NDEF file, READ NLEN.
    private static func firstFiveSteps(cc: [UInt8], ndefFile: [UInt8]) -> [ExternalTerminal.Step] {
        let fileID: [UInt8] = cc.count >= 11 ? [cc[9], cc[10]] : [0xE1, 0x04]
        return [
            .init([0x00, 0xA4, 0x04, 0x00, 0x07] + ndefApplicationAID + [0x00], expect: ok),
            .init([0x00, 0xA4, 0x00, 0x0C, 0x02, 0xE1, 0x03], expect: ok),
            // A reading phone checks the read-access byte of the NDEF File Control TLV, not the
            // write-access byte (CC byte 14: 00 read/write, FF read-only): AOSP's rw_t4t.c accepts
            // 00, FF and 80+ there (docs/iso14443-t4t-ndef.md §4), so that byte is a wildcard here.
            .init(
                command: [0x00, 0xB0, 0x00, 0x00, UInt8(min(cc.count, 255))],
                expectedResponse: TranscriptBytes(items: cc.enumerated().map { $0.offset == 14 ? .wildcard : .byte($0.element) } + ok.map { .byte($0) })),
            .init([0x00, 0xA4, 0x00, 0x0C, 0x02] + fileID, expect: ok),
            .init([0x00, 0xB0, 0x00, 0x00, 0x02], expect: Array(ndefFile.prefix(2)) + ok),
        ]
    }
}
