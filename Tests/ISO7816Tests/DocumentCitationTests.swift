import Foundation
import SecbridgeTesting
import Testing

/// One citation of the project's documentation found in a source file: a mention of a file under
/// docs/ and the sections it names (`docs/acr122-pn532.md §1, §5c` names "1" and "5c";
/// `docs/cases.md P09` names "P09").
private struct DocumentCitation: Sendable, CustomStringConvertible {
    /// The citing file, relative to the repository root.
    let file: String
    /// 1-based.
    let line: Int
    /// The document's name without directory and extension: "acr122-pn532".
    let document: String
    /// Section numbers ("5b") or case ids ("P09"), in the order cited.
    let sections: [String]
    /// A section cited by its heading, `docs/session-model.md, "Events"`: the quoted text.
    let headingName: String?

    var description: String { "\(file):\(line)" }
}

/// Finds the citations of docs/ in the repository's Swift sources and scripts, and the headings
/// of the documents they cite. Plain Foundation: the files are few and small.
private enum DocumentationScan {
    /// The repository root: this file is Tests/ISO7816Tests/DocumentCitationTests.swift.
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The citations, scanned once per test run (lazily, on the thread of the first caller).
    private static let scan: Result<[DocumentCitation], any Error> = Result { try citations() }

    /// The citations, scanned on a thread of its own (never on Swift's shared pool).
    static func scanned() async throws -> [DocumentCitation] {
        try await onOwnThread("citation-scan") { try scan.get() }
    }

    /// Every `.swift` file under Sources/ and Tests/, and scripts/*.sh, relative to the root.
    static func sourceFiles() -> [String] {
        var files: [String] = []
        for top in ["Sources", "Tests"] {
            guard let walker = FileManager.default.enumerator(atPath: root + "/" + top) else { continue }
            files += walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.map { top + "/" + $0 }
        }
        let scripts = (try? FileManager.default.contentsOfDirectory(atPath: root + "/scripts")) ?? []
        files += scripts.filter { $0.hasSuffix(".sh") }.map { "scripts/" + $0 }
        return files.sorted()
    }

    /// The lines of a file relative to the root.
    static func lines(of file: String) throws -> [String] {
        let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// The text of capture group `group` of `match` in `line`.
    static func text(_ line: String, _ match: NSTextCheckingResult, _ group: Int) -> String {
        Range(match.range(at: group), in: line).map { String(line[$0]) } ?? ""
    }

    /// Every citation of a file under docs/ in `sourceFiles()`.
    static func citations() throws -> [DocumentCitation] {
        // A mention of docs/<name>.md, not preceded by a letter, digit, `_` or `-`.
        let mention = try NSRegularExpression(pattern: #"(?<![A-Za-z0-9_-])docs/([A-Za-z0-9_-]+)\.md"#)
        // Right after the mention: the first section, and further ones in a list
        // (`§1, §5c`, `§4–§5`, `§5 and §5b`, `§5 steps 2–3, §5d`).
        let firstSection = try NSRegularExpression(pattern: #"\s+§([0-9]+[a-z]?)(?![A-Za-z0-9])"#)
        let nextSection = try NSRegularExpression(
            pattern: #"(?:\s+steps?\s+[0-9]+(?:[–-][0-9]+)?)?\s*(?:,|and|or|–|-)\s*§([0-9]+[a-z]?)(?![A-Za-z0-9])"#)
        // Case ids after docs/cases.md: `P09`, `P02, P05, P14`, `P11 (event counter) and P13`.
        let firstCase = try NSRegularExpression(pattern: #"\s+(P[0-9]{2})(?![0-9])"#)
        let nextCase = try NSRegularExpression(pattern: #"(?:\s*\([^)]*\))?\s*(?:,|and)\s*(P[0-9]{2})(?![0-9])"#)
        // A section cited by its heading: `, "Heading text"`.
        let namedSection = try NSRegularExpression(pattern: #", "([^"]+)""#)

        var found: [DocumentCitation] = []
        for file in sourceFiles() {
            for (index, line) in try lines(of: file).enumerated() {
                let length = line.utf16.count
                for match in mention.matches(in: line, range: NSRange(location: 0, length: length)) {
                    let document = text(line, match, 1)
                    let end = match.range.location + match.range.length
                    var sections: [String] = []
                    var position = end
                    var pattern = document == "cases" ? firstCase : firstSection
                    let next = document == "cases" ? nextCase : nextSection
                    while let m = pattern.firstMatch(
                        in: line, options: .anchored, range: NSRange(location: position, length: length - position))
                    {
                        sections.append(text(line, m, 1))
                        position = m.range.location + m.range.length
                        pattern = next
                    }
                    let named = namedSection.firstMatch(
                        in: line, options: .anchored, range: NSRange(location: end, length: length - end))
                    found.append(DocumentCitation(
                        file: file, line: index + 1, document: document, sections: sections,
                        headingName: named.map { text(line, $0, 1) }))
                }
            }
        }
        return found
    }

    /// The headings (`## …` and `### …`) of docs/<name>.md, without the hashes and backticks;
    /// nil when the file does not exist.
    static func headings(of document: String) -> [String]? {
        guard let text = try? String(contentsOfFile: root + "/docs/" + document + ".md", encoding: .utf8) else {
            return nil
        }
        return text.split(separator: "\n").compactMap { line -> String? in
            for prefix in ["## ", "### "] where line.hasPrefix(prefix) {
                return String(line.dropFirst(prefix.count)).replacingOccurrences(of: "`", with: "")
            }
            return nil
        }
    }

    /// The ids of the headings of docs/<name>.md: the first word of each, without a trailing full stop
    /// and of a leading § (`## 5b. Blocking …` → "5b", `## §2a Pairing …` → "2a", `## P09 — Escape …` → "P09").
    static func headingIDs(of document: String) -> Set<String> {
        Set((headings(of: document) ?? []).compactMap { heading -> String? in
            guard var id = heading.split(separator: " ").first.map(String.init) else { return nil }
            if id.hasSuffix(".") { id.removeLast() }
            if id.hasPrefix("§") { id.removeFirst() }
            return id
        })
    }
}

/// Citations of the project's own documents in source comments and test sources
/// (`docs/acr122-pn532.md §5b`, `docs/session-model.md, "Events"`, `docs/cases.md P09`) must
/// resolve in a fresh clone: the file exists under docs/, the section is one of its headings, and
/// nothing points at documents kept outside the repository. A failure lists file:line of each
/// dangling citation.
@Suite("Citations of docs/ resolve")
struct DocumentCitationTests {
    @Test("the scan sees the sources and their citations")
    func scanSeesTheSources() async throws {
        let files = try await onOwnThread { DocumentationScan.sourceFiles() }
        #expect(files.count > 100, "\(files.count) files under \(DocumentationScan.root)")
        #expect(files.contains("Tests/ISO7816Tests/DocumentCitationTests.swift"))
        #expect(files.contains("scripts/build-libnfc.sh"))
        let citations = try await DocumentationScan.scanned()
        #expect(citations.count > 100, "\(citations.count) citations")
        #expect(citations.contains { $0.document == "cases" && !$0.sections.isEmpty })
        #expect(citations.contains { $0.document == "acr122-pn532" && $0.sections.contains("5b") })
    }

    @Test("every cited document exists under docs/")
    func citedDocumentsExist() async throws {
        let dangling = try await DocumentationScan.scanned()
            .filter { !FileManager.default.fileExists(atPath: DocumentationScan.root + "/docs/" + $0.document + ".md") }
            .map { "\($0): no file docs/\($0.document).md" }
        let report = dangling.joined(separator: "\n")
        #expect(dangling.isEmpty, "\(dangling.count) dangling citations:\n\(report)")
    }

    @Test("every section cited by number (§X) is a heading of its document")
    func citedSectionsExist() async throws {
        var headingIDs: [String: Set<String>] = [:]
        var dangling: [String] = []
        for citation in try await DocumentationScan.scanned() where citation.document != "cases" {
            let ids = headingIDs[citation.document] ?? DocumentationScan.headingIDs(of: citation.document)
            headingIDs[citation.document] = ids
            for section in citation.sections where !ids.contains(section) {
                dangling.append("\(citation): docs/\(citation.document).md has no heading §\(section)")
            }
        }
        let report = dangling.joined(separator: "\n")
        #expect(dangling.isEmpty, "\(dangling.count) dangling section citations:\n\(report)")
    }

    @Test("every case cited as docs/cases.md Pnn has a heading there")
    func citedCasesExist() async throws {
        let ids = DocumentationScan.headingIDs(of: "cases")
        var dangling: [String] = []
        for citation in try await DocumentationScan.scanned() where citation.document == "cases" {
            for id in citation.sections where !ids.contains(id) {
                dangling.append("\(citation): docs/cases.md has no heading \(id)")
            }
        }
        let report = dangling.joined(separator: "\n")
        #expect(dangling.isEmpty, "\(dangling.count) dangling case citations:\n\(report)")
    }

    @Test("every section cited by its heading text is a heading of its document")
    func citedHeadingsExist() async throws {
        var dangling: [String] = []
        for citation in try await DocumentationScan.scanned() {
            guard let name = citation.headingName else { continue }
            let headings = DocumentationScan.headings(of: citation.document) ?? []
            if !headings.contains(where: { $0.hasPrefix(name) }) {
                dangling.append("\(citation): docs/\(citation.document).md has no heading \"\(name)\"")
            }
        }
        let report = dangling.joined(separator: "\n")
        #expect(dangling.isEmpty, "\(dangling.count) dangling heading citations:\n\(report)")
    }

    @Test("no source points at documents kept outside the repository")
    func nothingPointsOutside() async throws {
        // Spelled in pieces so that this file does not match itself.
        let outside = ["shared" + "/docs", "shared" + "/cases", "../" + "shared"]
        let dangling = try await onOwnThread { () throws -> [String] in
            var dangling: [String] = []
            for file in DocumentationScan.sourceFiles() {
                for (index, line) in try DocumentationScan.lines(of: file).enumerated() {
                    for path in outside where line.contains(path) {
                        dangling.append("\(file):\(index + 1): mentions \(path)")
                    }
                }
            }
            return dangling
        }
        let report = dangling.joined(separator: "\n")
        #expect(dangling.isEmpty, "\(dangling.count) references outside the repository:\n\(report)")
    }
}
