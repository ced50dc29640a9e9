import Foundation
import SecbridgeTesting
import Testing

// `read --dump` and `write-dump` on a simulated ACR122U of the test's own desk, in process:
// a MIFARE Classic 4K (16-block sectors), --json, the y/N question, and usage errors
// (docs/storage-card-dumps.md).

private func newPath(_ name: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-dump-\(UUID().uuidString.prefix(8))-\(name)").path
}

extension InProcessCommandTests {
    @Suite struct DumpCommandsInProcessTests {
        @Test func classic4KDumpCoversTheSixteenBlockSectorsAndRestoresABlockThere() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control().send("place-tag type=classic4k uid=04A1B2C3 id=mf")
            defer { _ = try? desk.control().send("remove all=yes") }
            let first = newPath("4k.mfd"), edited = newPath("4ke.mfd"), second = newPath("4kb.mfd")
            defer { for path in [first, edited, second] { try? FileManager.default.removeItem(atPath: path) } }
            let json = try await runTool(["read", "--reader", desk.names[0], "--dump", first, "--json"], on: desk)
            #expect(json.status == 0, "\(json.err)")
            #expect(json.out.contains("\"bytes\": 4096"), "\(json.out)")
            #expect(json.out.contains("\"blocks\": 256"), "\(json.out)")
            var dump = [UInt8](FileManager.default.contents(atPath: first) ?? Data())
            #expect(dump.count == 4096)
            // 4K: 40 sectors; sector 32 is blocks 128–143, its trailer block 143 (MF1S70yyX §8.6).
            #expect(Array(dump[143 * 16 + 6..<143 * 16 + 10]) == [0xFF, 0x07, 0x80, 0x69])
            #expect(Array(dump[142 * 16 + 6..<142 * 16 + 10]) == [0, 0, 0, 0])
            dump.replaceSubrange(140 * 16..<141 * 16, with: [UInt8](repeating: 0x4B, count: 16))
            _ = FileManager.default.createFile(atPath: edited, contents: Data(dump))
            // No --yes and no answer: nothing is written.
            let declined = try await runTool(["write-dump", edited, "--reader", desk.names[0]], on: desk)
            #expect(declined.status == 1)
            #expect(declined.out.contains("Write 1 block to the card 04 A1 B2 C3 on \(desk.names[0])? [y/N] "), "\(declined.out)")
            #expect(declined.err.contains("not written: the write was not confirmed"), "\(declined.err)")
            let restored = try await runTool(["write-dump", edited, "--reader", desk.names[0]], on: desk, input: ["y"])
            #expect(restored.status == 0, "\(restored.err)")
            #expect(restored.out.contains("wrote 1 block (140); 254 unchanged\n"), "\(restored.out)")
            #expect(try await runTool(["read", "--reader", desk.names[0], "--dump", second], on: desk).status == 0)
            #expect(FileManager.default.contents(atPath: second).map { [UInt8]($0) } == dump)
        }

        @Test func usageErrorsNameWhatIsWrong() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control().send("place-tag type=ntag213 uid=04A1B2C3D4E5F6 id=t2")
            defer { _ = try? desk.control().send("remove all=yes") }
            let path = newPath("u.bin")
            defer { try? FileManager.default.removeItem(atPath: path) }
            let noFile = try await runTool(["write-dump", "--reader", desk.names[0]], on: desk)
            #expect(noFile.status == 64)
            #expect(noFile.err.contains("give the dump FILE to write"), "\(noFile.err)")
            let keyOnTag = try await runTool(["read", "--reader", desk.names[0], "--dump", path, "--key", "FFFFFFFFFFFF"], on: desk)
            #expect(keyOnTag.status == 64)
            #expect(keyOnTag.err.contains("--key, --keys and --key-b are for MIFARE Classic cards"), "\(keyOnTag.err)")
            let blocks = try await runTool(["read", "--reader", desk.names[0], "--dump", path, "--blocks", "4"], on: desk)
            #expect(blocks.status == 64)
            #expect(blocks.err.contains("--dump reads every block; drop --blocks"), "\(blocks.err)")
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }
}
