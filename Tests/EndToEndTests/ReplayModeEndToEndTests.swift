import Foundation
import PCSCSandbox
import Testing

/// A file under the repository root.
private func replayFixtureFile(_ relative: String) throws -> URL {
    guard let root = HarnessPaths.repositoryRoot else {
        throw HarnessError(code: .missingDependency, reason: "the repository root (with Package.swift) was not found")
    }
    return root.appendingPathComponent(relative)
}

/// Every transcript under Fixtures/ that names the credential answering its terminal side in a
/// `# replay-credential: PATH` header line (PATH relative to the repository root).
func credentialFixtures() throws -> [URL] {
    let root = try replayFixtureFile("Fixtures")
    guard let walker = FileManager.default.enumerator(atPath: root.path) else { return [] }
    return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".trn") }.sorted()
        .map { root.appendingPathComponent($0) }
        .filter { url in
            guard let text = try? String(contentsOf: url, encoding: .utf8) else { return false }
            return text.split(separator: "\n").contains { $0.hasPrefix("# replay-credential: ") }
        }
}

/// A temporary copy of `text` as a transcript file.
private func temporaryTranscript(_ name: String, _ text: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("replay6-\(ProcessInfo.processInfo.processIdentifier)-\(name)")
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url
}

extension SharedReader {
    /// `secbridge replay --against … --mode …`.
    @Suite struct ReplayModeEndToEndTests {
        @Test func theCorpusHasCredentialReplays() throws {
            #expect(try credentialFixtures().contains { $0.lastPathComponent == "android-t4t-read-uri.trn" })
        }

        @Test(arguments: try credentialFixtures())
        func fixtureReplaysAgainstItsCredential(_ fixture: URL) async throws {
            let text = try String(contentsOf: fixture, encoding: .utf8)
            let header = try #require(text.split(separator: "\n").first { $0.hasPrefix("# replay-credential: ") })
            let credential = try replayFixtureFile(String(String(header).dropFirst(21).split(separator: " ")[0]))
            let result = try await runCLI(["replay", "--against", "credential:" + credential.path, fixture.path])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("every answer matches"))
        }

        @Test func androidTypeFourReadAgainstTheURITag() async throws {
            let fixture = try replayFixtureFile("Fixtures/flows/android-t4t-read-uri.trn")
            let credential = try replayFixtureFile("Fixtures/credentials/uri-tag.json")
            let result = try await runCLI(["replay", "--against", "credential:" + credential.path, fixture.path])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out == "replayed 6 exchanges from \(fixture.path) against credential 'example-uri-tag' (host applets (NFC Forum Type 4 Tag)): every answer matches\n")
            let json = try await runCLI(["replay", "--json", "--against", "credential:" + credential.path, fixture.path])
            #expect(json.status == 0)
            #expect(json.out.contains("\"exchanges\": 6"))
            #expect(json.out.contains("\"result\": \"match\""))
        }

        @Test func credentialMismatchNamesFileLineExpectedAndActual() async throws {
            let fixture = try replayFixtureFile("Fixtures/flows/android-t4t-read-uri.trn")
            let credential = try replayFixtureFile("Fixtures/credentials/uri-tag.json")
            // The recorded NLEN says 17 bytes; the credential's message has 16 (line 21).
            let edited = try String(contentsOf: fixture, encoding: .utf8)
                .replacingOccurrences(of: "tgt > 00 10 90 00", with: "tgt > 00 11 90 00")
            let file = try temporaryTranscript("nlen.trn", edited)
            defer { try? FileManager.default.removeItem(at: file) }
            let result = try await runCLI(["replay", "--against", "credential:" + credential.path, file.path])
            #expect(result.status == 1)
            #expect(result.err == """
                secbridge: error: \(file.path):21: the credential answered differently than recorded (first difference at byte 1)
                  expected: tgt > 00 11 90 00
                  actual:   tgt > 00 10 90 00

                """)
        }

        @Test func getChallengeFixtureReplaysLiveInWildcardMode() async throws {
            _ = try await sharedEnvironment()
            let fixture = try replayFixtureFile("Fixtures/vicc/get-challenge.trn")
            let result = try await runCLI(["replay", "--mode", "wildcard", fixture.path])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("replayed 1 exchange from"))
        }

        @Test func concreteChallengeNeedsWildcardMode() async throws {
            _ = try await sharedEnvironment()
            // The recording as the recorder wrote it, before ?? were put in by hand: vicc answers
            // other random bytes each time (a match by chance has probability 2^-64).
            let recorded = try String(contentsOf: try replayFixtureFile("Fixtures/vicc/get-challenge.trn"), encoding: .utf8)
                .replacingOccurrences(of: "< ?? ?? ?? ?? ?? ?? ?? ?? 90 00", with: "< 3C 91 0E 77 A2 5B 16 D8 90 00")
            let file = try temporaryTranscript("challenge.trn", recorded)
            defer { try? FileManager.default.removeItem(at: file) }
            let strict = try await runCLI(["replay", file.path])
            #expect(strict.status == 1)
            #expect(strict.err.hasPrefix("secbridge: error: \(file.path):10: the device answered differently than recorded (first difference at byte 0)"))
            let ignoreTiming = try await runCLI(["replay", "--mode", "ignore-timing", file.path])
            #expect(ignoreTiming.status == 1)
            let wildcard = try await runCLI(["replay", "--mode", "wildcard", file.path])
            #expect(wildcard.status == 0, "\(wildcard.err)")
        }

        @Test func usageErrors() async throws {
            let fixture = try replayFixtureFile("Fixtures/flows/android-t4t-read-uri.trn")
            // A terminal-side transcript (only `tgt` lines) has no host commands for a reader.
            let simulated = try await runCLI(["replay", "--against", "simulated", fixture.path])
            #expect(simulated.status == 1)
            #expect(simulated.err.contains("records no commands to replay (no `>` or `ctl … >` lines)"))
            let mode = try await runCLI(["replay", "--mode", "loose", fixture.path])
            #expect(mode.status == 64)
            #expect(mode.err.contains("--mode takes strict, ignore-timing or wildcard, not 'loose'"))
            let against = try await runCLI(["replay", "--against", "card", fixture.path])
            #expect(against.status == 64)
            let missing = try await runCLI(["replay", "--against", "credential:/nonexistent.json", fixture.path])
            #expect(missing.status == 1)
            #expect(missing.err.contains("/nonexistent.json"))
        }
    }
}
