import ACR122Simulator
import Foundation
import ISO7816
import NFCTags
import PCSCCore
import PN53x
import SecbridgeTesting
import SecureElementCredential
import Testing
import Transcript

/// The repository's root, from this file's place in it.
private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// Every library product's module with the landing article that must hold its example.
/// SimulatedACR122IFD (the product SecbridgeACR122IFD) has no Swift example: pcscd calls its C
/// entry points, and its article's example is the reader.conf entry that loads it.
private let modules = [
    "PCSCCore", "PCSC", "ISO7816", "Transcript", "PN53x", "NFCTags", "SecureElementCredential", "ACR122Simulator",
    "SecbridgeCLI", "SecbridgeTesting",
]

@Suite("The examples of the modules' articles compile and say what they do")
struct DocumentationExampleTests {
    /// The ```swift blocks of an article, each as its lines.
    static func swiftBlocks(_ path: String) throws -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n") {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!)
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// The examples in Examples.swift, by article path: the body lines between `// example: PATH`
    /// and `// end of example`, with the function body's indentation (8 spaces) taken off.
    static func compiledExamples() throws -> [String: [String]] {
        let lines = try String(contentsOfFile: root + "/Tests/DocumentationExampleTests/Examples.swift", encoding: .utf8)
            .components(separatedBy: "\n")
        var examples: [String: [String]] = [:]
        var current: (path: String, lines: [String])?
        for line in lines {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("// example: ") {
                current = (String(trimmed.dropFirst("// example: ".count)), [])
            } else if trimmed == "// end of example", let done = current {
                examples[done.path] = done.lines
                current = nil
            } else if current != nil {
                current!.lines.append(line.hasPrefix("        ") ? String(line.dropFirst(8)) : trimmed)
            }
        }
        return examples
    }

    @Test("every library module's landing article has a ```swift example, the same as the one compiled here", arguments: modules)
    func theExampleIsTheCompiledOne(module: String) throws {
        let path = "Sources/\(module)/\(module).docc/\(module).md"
        let block = try #require(try Self.swiftBlocks(root + "/" + path).first, "\(path) has no ```swift example")
        let compiled = try #require(try Self.compiledExamples()[path], "Examples.swift has no `// example: \(path)`")
        // The article's block: its import lines, a blank line, then the compiled body.
        let imports = block.prefix { $0.hasPrefix("import ") }
        var body = Array(block.dropFirst(imports.count))
        if body.first == "" { body.removeFirst() }
        #expect(body == compiled, "\(path)'s example differs from Examples.swift's")
        let examplesSource = try String(contentsOfFile: root + "/Tests/DocumentationExampleTests/Examples.swift", encoding: .utf8)
        for line in imports {
            #expect(examplesSource.contains("\n\(line)\n") || examplesSource.hasPrefix("\(line)\n"), "\(path): Examples.swift lacks '\(line)'")
        }
    }

    @Test func pcscCoreNamesTheError() {
        let (name, kind) = Examples.pcscCore()
        #expect(name == "SCARD_E_NO_SMARTCARD")
        #expect(kind == "no card")
    }

    @Test func iso7816SerialisesTheSelectAndNamesTheStatusWord() throws {
        let (response, bytes) = try Examples.iso7816()
        #expect(bytes == hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"))
        #expect(response.statusWord == StatusWord(sw1: 0x6A, sw2: 0x82))
        #expect(response.statusWord.meaning == "file or application not found")
    }

    @Test func transcriptReplaysItsExchange() throws {
        let transcript = try Examples.transcript()
        #expect(transcript.header.reader == "ACS ACR122U PICC Interface 00 00")
    }

    @Test func pn53xBuildsTheFrameAndReadsTheVersion() throws {
        let (frame, version) = try Examples.pn53x()
        #expect(frame == [0xD4, 0x02])
        #expect(version == PN532FirmwareVersion(ic: 0x32, version: 0x01, revision: 0x06, support: 0x07))
    }

    @Test func nfcTagsRoundTripsTheURI() throws {
        let (message, uri) = try Examples.nfcTags()
        #expect(message.serialized() == hex("D1 01 0C 55 04 65 78 61 6D 70 6C 65 2E 63 6F 6D"))
        #expect(uri == "https://example.com")
    }

    @Test func acr122SimulatorAnswersItsFirmwareString() throws {
        #expect(try Examples.acr122Simulator() == Array("ACR122U207".utf8))
    }

    @Test func secbridgeCLIPrintsTheVersion() {
        let (status, output) = Examples.secbridgeCLI()
        #expect(status == 0)
        #expect(output == "secbridge \(SecbridgeVersion.current)\n")
    }

    @Test func secureElementCredentialIsReadByThePhone() async throws {
        let events = try await Examples.secureElementCredential()
        #expect(events.contains { if case .fieldStateChanged(info: .fieldPresent) = $0 { true } else { false } })
        #expect(events.contains { if case .fieldStateChanged(info: .fieldAbsent) = $0 { true } else { false } })
    }

    @Test func secbridgeTestingSelectsTheApplication() async throws {
        let executor = BlockingExecutor(name: "doc-example")
        defer { executor.shutdown() }
        try await executor.run { try Examples.secbridgeTesting() }
    }
}
