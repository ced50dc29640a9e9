import SecbridgeTesting
import Testing
@testable import Transcript

/// The built-in rules say which commands they can concern (`CommandScope`), and the redactor
/// skips a rule for any other command without calling it: that must never skip a rule that would
/// have masked something.
@Suite("Redaction rules' scopes")
struct RedactionScopeTests {
    /// Commands of every CLA class and INS the rules look at, in the lengths they need, plus
    /// Direct Transmit frames carrying each card command.
    static let commands: [[UInt8]] = {
        var out: [[UInt8]] = []
        let cards: [[UInt8]] = [0x00, 0x80, 0xA0, 0x0C, 0xFF].flatMap { cla in
            [0x20, 0x21, 0x24, 0x25, 0x2C, 0x2D, 0x82, 0xD8, 0xA4, 0xB0, 0xD6, 0x00, 0x40, 0xC0].flatMap { ins -> [[UInt8]] in
                [
                    [cla, ins, 0x00, 0x00],
                    [cla, ins, 0x00, 0x00, 0x10],
                    [cla, ins, 0x00, 0x81, 0x08] + [UInt8](repeating: 0x31, count: 8),
                    [cla, ins, 0x00, 0x07, 0x10] + [UInt8](repeating: 0xA5, count: 16),
                ]
            }
        }
        out += cards
        for card in cards.prefix(40) {
            out.append([0xFF, 0x00, 0x00, 0x00, UInt8(card.count + 3), 0xD4, 0x40, 0x01] + card)
            out.append([0xFF, 0x00, 0x00, 0x00, UInt8(card.count + 2), 0xD4, 0x42] + card)
        }
        out.append(hex("FF 82 00 00 06 FF FF FF FF FF FF"))  // LOAD KEY
        out.append(hex("FF 00 00 00 0F D4 40 01 60 07 FF FF FF FF FF FF 01 02 03 04"))  // MIFARE auth
        out.append(hex("FF 00 00 00 02 D4 86"))  // TgGetData
        out.append(hex("FF B0 00 07 10"))  // Read Binary of a sector trailer
        out.append(hex("FF 00 00 00 05 D4 40 01 30 07"))  // InDataExchange READ of a trailer
        return out
    }()

    static let answers: [[UInt8]] = [
        hex("90 00"),
        [UInt8](repeating: 0x11, count: 16) + [0x90, 0x00],
        hex("D5 87 00 00 20 00 81 08 31 32 33 34 35 36 37 38 90 00"),
        hex("D5 41 00") + [UInt8](repeating: 0x22, count: 16) + [0x90, 0x00],
    ]

    @Test("a rule its scope excludes finds nothing to mask in the command or the answer")
    func scopeExcludesOnlyWhatTheRuleIgnores() {
        let rules = Redactor.default.rules
        let responseRules = Redactor.default.responseRules
        #expect(rules.allSatisfy { if case .any = $0.scope { false } else { true } })
        #expect(responseRules.allSatisfy { if case .any = $0.scope { false } else { true } })
        var excluded = 0
        for command in Self.commands {
            for rule in rules where rule.scope.excludes(command) {
                excluded += 1
                #expect(rule.ranges(in: command).isEmpty, "\(rule.id) skipped for \(command.hexString) but masks it")
            }
            for rule in responseRules where rule.scope.excludes(command) {
                for answer in Self.answers {
                    #expect(rule.ranges(in: answer, answering: command).isEmpty, "\(rule.id) skipped for \(command.hexString)")
                }
            }
        }
        #expect(excluded > Self.commands.count)  // the scopes do skip rules
    }

    @Test("masksAny gives what calling every rule gives")
    func masksAnyUnchanged() {
        let redactor = Redactor.default
        for command in Self.commands {
            let byEveryRule = redactor.rules.contains { !$0.ranges(in: command).isEmpty }
            #expect(redactor.masksAny(of: command) == byEveryRule, "\(command.hexString)")
            for answer in Self.answers {
                let byEveryAnswerRule = redactor.responseRules.contains { !$0.ranges(in: answer, answering: command).isEmpty }
                #expect(redactor.masksAny(ofResponse: answer, answering: command) == byEveryAnswerRule, "\(command.hexString)")
            }
        }
        // A VERIFY is masked, a SELECT is not (docs/secrets.md).
        #expect(redactor.masksAny(of: hex("00 20 00 81 08 31 32 33 34 35 36 37 38")))
        #expect(!redactor.masksAny(of: hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")))
    }
}
