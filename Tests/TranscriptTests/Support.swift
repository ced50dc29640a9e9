import Foundation
import ISO7816
import SecbridgeTesting
import Synchronization
@testable import Transcript

/// The version line every transcript starts with.
let versionLine = "# secbridge-transcript: 1\n"

/// Hex in the project's form to bytes; traps on bad test data only.

/// The ```transcript blocks of Fixtures/README.md, with the line where each starts.
func readmeTranscripts() throws -> [(line: Int, text: String)] {
    let url = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/README.md")
    let readme = try String(contentsOf: url, encoding: .utf8)
    var blocks: [(Int, String)] = []
    var current: [String]?
    var start = 0
    for (i, line) in readme.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        if current == nil, line == "```transcript" {
            current = []
            start = i + 2
        } else if current != nil, line == "```" {
            blocks.append((start, current!.joined(separator: "\n") + "\n"))
            current = nil
        } else if current != nil {
            current!.append(String(line))
        }
    }
    return blocks
}

/// A channel that answers from a table and counts calls; unknown commands throw.
final class ScriptedChannel: CardChannel {
    enum Answer {
        case bytes([UInt8])
        case error(any Error)
    }
    let transmissionProtocol: TransmissionProtocol
    var answers: [[UInt8]: Answer]
    var calls: [[UInt8]] = []
    var onCall: (() -> Void)?

    init(_ answers: [[UInt8]: Answer], protocol p: TransmissionProtocol = .t1) {
        self.answers = answers
        transmissionProtocol = p
    }

    func transmit(_ command: [UInt8]) throws -> [UInt8] {
        try answer(command)
    }

    func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] {
        try answer(command)
    }

    private func answer(_ command: [UInt8]) throws -> [UInt8] {
        calls.append(command)
        onCall?()
        switch answers[command] {
        case .bytes(let b)?: return b
        case .error(let e)?: throw e
        case nil: throw TestCardError(name: "SCARD_E_NOT_TRANSACTED", code: 0x8010_0016)
        }
    }
}

/// A PC/SC-like error that knows its `!` line.
struct TestCardError: Error, TranscriptDescribableError {
    var name: String
    var code: UInt32
    var transcriptFailure: TranscriptFailure { TranscriptFailure(name: name, code: code) }
}

/// A fresh empty directory under the system temporary directory.
func makeTemporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "transcript-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    return path
}

func fileText(_ path: String) throws -> String {
    try String(contentsOfFile: path, encoding: .utf8)
}
