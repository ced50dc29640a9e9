import Foundation
import Testing

@testable import Transcript

/// Every transcript file under Fixtures/ (recursively), relative to the repository.
func fixtureFiles() -> [String] {
    let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")
    guard let walker = FileManager.default.enumerator(atPath: root.path) else { return [] }
    return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".trn") }.sorted()
        .map { root.appendingPathComponent($0).path }
}

/// The corpus under Fixtures/: each file parses, round-trips byte for byte, carries its provenance,
/// and replays against itself (its own answers, through ReplayChannel). Live replays against vicc
/// and the simulated reader are end-to-end tests.
@Suite struct FixtureCorpusTests {
    @Test func corpusIsNotEmpty() {
        #expect(fixtureFiles().count >= 2)
    }

    @Test(arguments: fixtureFiles())
    func parsesAndRoundTrips(_ path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let transcript = try Transcript(parsing: text, fileName: path)
        #expect(transcript.serialized() == text)
        #expect(transcript.header.origin != nil, "a fixture states its origin")
        #expect(transcript.header.tool != nil, "a fixture names the tool that wrote it")
        #expect(transcript.header.date != nil, "a fixture carries its date")
    }

    @Test(arguments: fixtureFiles())
    func replaysAgainstItsOwnAnswers(_ path: String) throws {
        let transcript = try Transcript(contentsOfFile: path)
        let channel = ReplayChannel(transcript)
        for exchange in transcript.recordedExchanges(channel: nil) {
            guard let command = exchange.command.bytes else { continue }
            var wildcardAnswer = false
            if case .answer(let answer, _) = exchange.outcome { wildcardAnswer = !answer.isConcrete }
            do {
                switch exchange.kind {
                case .transmit: _ = try channel.transmit(command)
                case .control(let code): _ = try channel.control(code: code, command)
                }
                #expect(!wildcardAnswer, "an answer with ?? bytes cannot be played back")
            } catch let error as ReplayError {
                // A wildcard answer (a random challenge) matches a live card but cannot be invented.
                #expect(wildcardAnswer && error.code == .unreplayableAnswer, "\(error)")
                return
            } catch {
                // A recorded `!` line comes back as the recorded failure.
                guard case .failure = exchange.outcome else { throw error }
            }
        }
        try channel.finish()
    }
}
