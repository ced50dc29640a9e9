import Foundation
import SecbridgeTesting
import SecbridgeCLI
@testable import SecbridgeTools
import Testing

#if canImport(Glibc)
import Glibc
#endif

// Files that hold keys or PINs by design are created mode 0600 (issue 33, item 3): a `read --dump`
// dump (its trailers hold the keys) and the spy log `capture --spy-log` keeps.

/// The permission bits of `path` (stat(2)), nil when it cannot be stat'ed.
private func permissions(_ path: String) -> mode_t? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
}

private func newPath(_ name: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-mode-\(UUID().uuidString.prefix(8))-\(name)").path
}

extension InProcessCommandTests {
    @Suite struct PrivateFileModeTests {
        /// A dump made by `read --dump` is 0600 (the usual umask 022 gave it 0644 before).
        @Test func readDumpFileIsMode0600() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K), id: "mf"))
            defer { _ = try? desk.control(.removeAll) }
            let path = newPath("1k.mfd")
            defer { try? FileManager.default.removeItem(atPath: path) }
            let result = try await runTool(["read", "--reader", desk.names[0], "--dump", path], on: desk)
            #expect(result.status == 0, "\(result.err)")
            #expect(permissions(path) == 0o600)
            // MIFARE Classic 1K: 64 blocks of 16 bytes; sector 0's trailer holds the transport key A.
            let dump = [UInt8](FileManager.default.contents(atPath: path) ?? Data())
            #expect(dump.count == 1024)
            #expect(Array(dump[48..<54]) == [UInt8](repeating: 0xFF, count: 6))
            // No temporary file is left beside it.
            let directory = (path as NSString).deletingLastPathComponent, base = (path as NSString).lastPathComponent
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(".\(base).") }.isEmpty)
            // A second dump to the same name is refused and the first is untouched.
            let again = try await runTool(["read", "--reader", desk.names[0], "--dump", path], on: desk)
            #expect(again.status == 1)
            #expect(again.err.contains("the file exists; give a new file name"), "\(again.err)")
            #expect(permissions(path) == 0o600)
        }

        /// The copy `capture --spy-log FILE` keeps of pcsc-spy's text is created 0600.
        @Test func keptSpyLogIsMode0600() throws {
            let source = newPath("spy.txt"), kept = newPath("kept.txt")
            defer { for path in [source, kept] { try? FileManager.default.removeItem(atPath: path) } }
            let text = Data("SCardTransmit\n i hCard: 0x1234\n".utf8)
            #expect(FileManager.default.createFile(atPath: source, contents: text))
            try SecbridgeCLI.copyAtomically(source, to: kept)
            #expect(permissions(kept) == 0o600)
            #expect(FileManager.default.contents(atPath: kept) == text)
        }
    }
}
