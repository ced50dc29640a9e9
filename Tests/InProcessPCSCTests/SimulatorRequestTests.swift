import ACR122Simulator
import Foundation
import PCSCSandbox
import SecbridgeTesting
import SimulatedACR122IFD
import Testing

/// The typed control requests (Sources/SimulatedACR122IFD/SimulatorRequest.swift): each one's text
/// form parses back to the same value, the lines of the protocol's table parse to the requests they
/// name, and a typed request on an in-process desk gets what its line gets through the socket.
@Suite struct SimulatorRequestTests {
    static let uid4: [UInt8] = [0x04, 0xA1, 0xB2, 0xC3]
    static let uid7: [UInt8] = [0x04, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66]

    /// At least one request of every case, with arguments away from their defaults.
    static let samples: [SimulatorRequest] = [
        .ping, .help, .status, .peers, .unplug, .replug, .pn532Serial, .pn532SerialList,
        .placeCard(uid: uid4),
        .placeCard(uid: uid7, atqa: 0x0044, sak: 0x00, ats: [0x02, 0x80], applet: .t4tNDEF, ndef: [0xD1, 0x01, 0x00, 0x54], leaveAfter: 3, id: "c_1"),
        .placeCard(uid: uid4, applet: .t4tNDEFVersion1, ndef: []),
        .placeCard(uid: uid4, transcript: "/tmp/with space/a.trn", channel: "card", id: "replayed"),
        .placeTag(uid: uid4),
        .placeTag(uid: uid7, .plain(atqa: 0x0344, sak: 0x09), id: "t"),
        .placeTag(uid: uid7, .type2(.ntag215, ndef: [0xD1, 0x01, 0x01, 0x55, 0x04]), leaveAfter: 7),
        .placeTag(uid: uid7, .type2(.ultralight)),
        .placeTag(uid: uid4, .classic(.classic1K)),
        .placeTag(uid: uid4, .classic(.mini, key: [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5]), id: "mf"),
        .placeTarget(.felica()),
        .placeTarget(.felica(idm: [1, 2, 3, 4, 5, 6, 7, 8], memory: Array(repeating: 0x5A, count: 32), highSpeed: true), id: "f"),
        .placeTarget(.typeB()),
        .placeTarget(.typeB(pupi: [0xDE, 0xAD, 0xBE, 0xEF], applet: .echo)),
        .placeTarget(.jewel(jewelID: [1, 2, 3, 4], memory: [0x11, 0x48])),
        .placeTerminal(),
        .placeTerminal(script: "emv-payment"),
        .placeTerminal(.init(leaveAfter: 2, returnAfterMilliseconds: 150, taps: 3, hostDelayMilliseconds: 900, hostDelayAt: 2, wtx: false), id: "phone"),
        .placeTerminal(.init(wtx: true)),
        .placeTerminal(transcript: "/tmp/a.trn", channel: "phone"),
        .remove(peer: "card-1"), .removeAll,
        .personality(name: "ccid-escape-disabled"), .personality(name: "ccid-escape-enabled", firmware: "ACR122U215"),
        .fault(lateReplies: 2),
        .events(), .events(after: 12),
        .terminalResult(peer: "terminal-1"), .terminalResult(peer: "p", waitMilliseconds: 5000),
        .cardLog(peer: "card-1"),
        .tagMemory(peer: "tag-1"), .tagMemory(peer: "mf", first: 4, count: 3),
        .timescale, .setTimescale(0.01), .setTimescale(1), .setTimescale(0), .setTimescale(0.00001),
    ]

    /// Which case a request is; a new case fails to compile here until it is added to ``samples``.
    static func caseName(_ request: SimulatorRequest) -> String {
        switch request {
        case .ping: "ping"
        case .help: "help"
        case .status: "status"
        case .placeCard: "placeCard"
        case .placeTag: "placeTag"
        case .placeTarget: "placeTarget"
        case .placeTerminal: "placeTerminal"
        case .remove: "remove"
        case .removeAll: "removeAll"
        case .peers: "peers"
        case .personality: "personality"
        case .fault: "fault"
        case .events: "events"
        case .terminalResult: "terminalResult"
        case .cardLog: "cardLog"
        case .tagMemory: "tagMemory"
        case .timescale: "timescale"
        case .setTimescale: "setTimescale"
        case .unplug: "unplug"
        case .replug: "replug"
        case .pn532Serial: "pn532Serial"
        case .pn532SerialList: "pn532SerialList"
        }
    }

    @Test func everyRequestsTextFormParsesBackToTheSameRequest() throws {
        #expect(Set(Self.samples.map(Self.caseName)).count == 22, "every case of SimulatorRequest")
        for request in Self.samples {
            let line = request.line
            let parsed = try SimulatorRequest(parsing: line)
            #expect(parsed == request, "\(line)")
            #expect(parsed.line == line, "the text form is canonical")
        }
    }

    @Test func linesOfTheProtocolTableParseToTheRequestsTheyName() throws {
        let expected: [(String, SimulatorRequest)] = [
            ("place-card uid=04A1B2C3 applet=t4t-ndef", .placeCard(uid: Self.uid4, applet: .t4tNDEF)),
            ("place-card uid=\"04 A1 B2 C3\" atqa=\"00 04\" sak=20 ats=\"05 78 80 70 02\" applet=ok",
             .placeCard(uid: Self.uid4)),
            ("place-tag uid=04112233445566 type=ntag213 ndef=D1", .placeTag(uid: Self.uid7, .type2(.ntag213, ndef: [0xD1]))),
            ("place-tag uid=04A1B2C3 type=plain", .placeTag(uid: Self.uid4)),
            ("place-tag uid=04A1B2C3 type=classic1k key=FFFFFFFFFFFF", .placeTag(uid: Self.uid4, .classic(.classic1K))),
            ("place-target family=felica424", .placeTarget(.felica(highSpeed: true))),
            ("place-terminal script=android-t4t-read", .placeTerminal()),
            ("place-terminal leave-after=1 wtx=no", .placeTerminal(.init(leaveAfter: 1, wtx: false))),
            ("remove all=yes", .removeAll),
            ("remove peer=card-1", .remove(peer: "card-1")),
            ("events after=0x10", .events(after: 16)),
            ("tag-memory id=mf first=0x04", .tagMemory(peer: "mf", first: 4)),
            ("timescale value=1", .setTimescale(1)),
            ("pn532-serial list=yes", .pn532SerialList),
            ("fault late-reply=16", .fault(lateReplies: 16)),
        ]
        for (line, request) in expected {
            #expect(try SimulatorRequest(parsing: line) == request, "\(line)")
        }
    }

    /// What the text protocol answered before there was a typed request, word for word.
    @Test func aLineThatIsNoRequestGetsTheTextProtocolsError() {
        let refusals: [(String, String, String)] = [
            ("", "syntax", "expected a verb (lowercase letters, digits, '-') at offset 0; send 'help' for the list"),
            ("frobnicate", "unknown-verb", "no verb 'frobnicate'; verbs: ping, help, status, place-card, place-tag, place-target, place-terminal, remove, peers, personality, fault, events, terminal-result, card-log, tag-memory, timescale, unplug, replug, pn532-serial"),
            ("place-card", "missing-argument", "place-card needs uid=<4, 7 or 10 hex bytes>"),
            ("place-card uid=04A1B2", "bad-argument", "uid must be 4, 7 or 10 bytes (ISO/IEC 14443-3), got 3"),
            ("ping x=1", "bad-argument", "ping takes no argument 'x' (it takes: none)"),
            ("remove", "missing-argument", "remove needs peer=<id> or all=yes"),
            ("fault late-reply=17", "bad-argument", "late-reply='17' must be a number in 1…16"),
            ("place-tag uid=04A1B2C3 leave-after=2", "bad-argument",
             "leave-after= needs a tag with memory (type=ntag213|ntag215|ntag216|ultralight|classic1k|classic4k|mini)"),
            ("place-target family=typeb pupi=0102", "bad-argument", "pupi must be 4 hex bytes, got 2"),
            ("place-terminal return-after-ms=5 taps=99", "missing-argument",
             "return-after-ms (how long the phone stays away, simulated) needs leave-after=<n>"),
            ("timescale value=-1", "bad-argument", "timescale value '-1' must be a decimal number from 0 to 1000, e.g. value=0.01 (1 is real time)"),
            // The one precedence that changed: a transcript cannot carry a behaviour, so that is
            // said before the file is read.
            ("place-terminal transcript=/nonexistent/a.trn leave-after=2", "bad-argument",
             "leave-after, taps, host-delay-ms and wtx apply to a model (script=), not to a transcript"),
        ]
        for (line, code, reason) in refusals {
            do {
                let request = try SimulatorRequest(parsing: line)
                Issue.record("'\(line)' parsed as \(request)")
            } catch {
                #expect(error.code.rawValue == code, "\(line)")
                #expect(error.reason == reason, "\(line)")
            }
        }
    }

    /// On an in-process desk, a typed request and its line through the socket get the same reply.
    @Test func aTypedRequestGetsWhatItsLineGetsThroughTheSocket() async throws {
        let desk = try await SimulatedDesk.open(readers: 2)
        defer { desk.close() }
        let socket = desk.control(1)
        for request: SimulatorRequest in [.ping, .help, .status, .peers, .timescale, .events()] {
            #expect(try desk.control(request, reader: 1) == socket.send(request.line), "\(request.line)")
        }
        let typed = try desk.control(.placeCard(uid: Self.uid4, applet: .t4tNDEF, id: "typed"))
        #expect(typed["peer"] == "typed")
        let sent = try socket.send(SimulatorRequest.placeTag(uid: Self.uid7, .type2(.ntag213), id: "sent").line)
        #expect(sent.fields.map(\.key) == ["peer", "type"])
        #expect(try desk.control(.peers) == socket.send("peers"), "one field, whichever path placed the peers")
        #expect(try desk.control(.peers)["count"] == "2")
        #expect(try desk.control(.tagMemory(peer: "sent", first: 0, count: 1))["data"] == "04 11 22 BF")
        #expect(try desk.control(.removeAll)["removed"] == "typed sent")
    }

    /// A typed value the text could not have carried is refused with the text's message.
    @Test func aTypedRequestOutOfRangeIsRefusedWithTheTextsMessage() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let refusals: [(SimulatorRequest, String, String)] = [
            (.placeCard(uid: [0x04, 0xA1, 0xB2]), "bad-argument", "uid must be 4, 7 or 10 bytes (ISO/IEC 14443-3), got 3"),
            (.placeCard(uid: Self.uid4, ats: [0x05, 0x78]), "bad-argument",
             "ats must be a whole ATS whose first byte TL is its length (2…20 bytes), e.g. \"05 78 80 70 02\""),
            (.placeCard(uid: Self.uid4, applet: .echo, ndef: [0xD0]), "bad-argument", "ndef= goes with applet=t4t-ndef or applet=t4t-ndef-v1"),
            (.placeCard(uid: Self.uid4, id: "no spaces"), "bad-argument", "id may hold 1…64 letters, digits, '-' and '_'"),
            (.placeTag(uid: Self.uid4, leaveAfter: 1), "bad-argument",
             "leave-after= needs a tag with memory (type=ntag213|ntag215|ntag216|ultralight|classic1k|classic4k|mini)"),
            (.placeTag(uid: Self.uid4, .classic(.classic4K, key: [0xFF])), "bad-argument", "key must be 6 hex bytes (12 digits), got 1 bytes"),
            (.placeTarget(.felica(idm: [1, 2])), "bad-argument", "idm must be 8 hex bytes, got 2"),
            (.placeTerminal(.init(returnAfterMilliseconds: 5)), "missing-argument",
             "return-after-ms (how long the phone stays away, simulated) needs leave-after=<n>"),
            (.placeTerminal(script: "no-such-model"), "bad-argument", "unknown script 'no-such-model'; known: "),
            (.fault(lateReplies: 0), "bad-argument", "late-reply='0' must be a number in 1…16"),
            (.terminalResult(peer: "x", waitMilliseconds: 60_001), "bad-argument", "wait-ms='60001' must be a number in 0…60000"),
            (.setTimescale(1001), "bad-argument", "timescale value '1001.0' must be a decimal number from 0 to 1000, e.g. value=0.01 (1 is real time)"),
            (.remove(peer: "nobody"), "refused", "no peer 'nobody' in the field; send 'peers' for the list"),
        ]
        for (request, code, reason) in refusals {
            do {
                try desk.control(request)
                Issue.record("\(request) was accepted")
            } catch {
                #expect(error.code == code, "\(request)")
                #expect(error.reason.hasPrefix(reason) && (reason.hasSuffix("known: ") || error.reason == reason), "\(request): \(error.reason)")
            }
        }
        #expect(try desk.control(.peers)["count"] == "0", "nothing was placed")
        #expect(throws: SimulatedReaderError(code: "connect", reason: "the desk has no reader 1 (it has 1)")) {
            try desk.control(.ping, reader: 1)
        }
    }
}
