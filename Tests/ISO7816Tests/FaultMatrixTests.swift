import Foundation
import Testing

/// docs/faults.md, the fault matrix: every row of its tables names a test that stages the fault
/// (`Target/File.swift` followed by the test functions' names), or says plainly that it has none
/// ("not yet tested", "not yet understood"); every test it names exists in the file it names.
@Suite struct FaultMatrixTests {
    /// The repository root: this file is Tests/ISO7816Tests/FaultMatrixTests.swift.
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// A file reference and the names right after it: "`EndToEndTests/MonitorTests.swift` `a`, `b`".
    static let reference = try! NSRegularExpression(pattern: #"`([A-Za-z0-9]+Tests/[A-Za-z0-9]+\.swift)`((?:[ ,]+`[A-Za-z_][A-Za-z0-9_]*`)*)"#)
    static let name = try! NSRegularExpression(pattern: #"`([A-Za-z_][A-Za-z0-9_]*)`"#)

    /// The table rows of docs/faults.md (not the header or separator lines): the fault's first
    /// words and the row's last cell.
    static func rows() throws -> [(fault: String, test: String)] {
        let text = try String(contentsOfFile: root + "/docs/faults.md", encoding: .utf8)
        return text.split(separator: "\n").compactMap { line -> (String, String)? in
            guard line.hasPrefix("| "), !line.hasPrefix("| Fault |") else { return nil }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 6 else { return nil }
            return (String(cells[1].prefix(60)), cells[cells.count - 2])
        }
    }

    static func matches(_ expression: NSRegularExpression, in text: String) -> [[String]] {
        let range = NSRange(text.startIndex..., in: text)
        return expression.matches(in: text, range: range).map { match in
            (0..<match.numberOfRanges).map { index in
                Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
            }
        }
    }

    @Test func everyRowNamesATestThatExistsOrSaysItHasNone() throws {
        let rows = try Self.rows()
        #expect(rows.count >= 30, "\(rows.count) rows")
        for row in rows {
            let references = Self.matches(Self.reference, in: row.test)
            let saysNone = row.test.contains("not yet tested") || row.test.contains("not yet understood")
            let named = references.filter { !$0[2].isEmpty }
            #expect(!named.isEmpty || saysNone, "docs/faults.md row '\(row.fault)…' names no test: \(row.test)")
            for reference in references {
                #expect(!reference[2].isEmpty, "docs/faults.md row '\(row.fault)…' names \(reference[1]) without the tests in it")
                let file = "Tests/" + reference[1]
                guard let source = try? String(contentsOfFile: Self.root + "/" + file, encoding: .utf8) else {
                    Issue.record("docs/faults.md row '\(row.fault)…' names \(file), which does not exist")
                    continue
                }
                for name in Self.matches(Self.name, in: reference[2]).map({ $0[1] }) {
                    #expect(source.contains("func \(name)("), "docs/faults.md row '\(row.fault)…': no test \(name) in \(file)")
                }
            }
        }
    }
}
