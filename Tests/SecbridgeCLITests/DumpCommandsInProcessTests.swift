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
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic4K), id: "mf"))
            defer { _ = try? desk.control(.removeAll) }
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

        /// `write-dump --json`: one object saying which blocks were written; the question (none
        /// here: --yes) would go to standard error.
        @Test func writeDumpJSONNamesTheBlocksWritten() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K), id: "mf"))
            defer { _ = try? desk.control(.removeAll) }
            let first = newPath("1k.mfd"), edited = newPath("1ke.mfd")
            defer { for path in [first, edited] { try? FileManager.default.removeItem(atPath: path) } }
            #expect(try await runTool(["read", "--reader", desk.names[0], "--dump", first], on: desk).status == 0)
            var dump = [UInt8](FileManager.default.contents(atPath: first) ?? Data())
            #expect(dump.count == 1024)
            dump.replaceSubrange(5 * 16..<6 * 16, with: [UInt8](repeating: 0x5A, count: 16))
            _ = FileManager.default.createFile(atPath: edited, contents: Data(dump))
            let result = try await runTool(["write-dump", edited, "--reader", desk.names[0], "--yes", "--json"], on: desk)
            #expect(result.status == 0, "\(result.err)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any], "\(result.out)")
            #expect(object["unit"] as? String == "block")
            #expect(object["written"] as? [Int] == [5])
            #expect(object["uid"] as? String == "04A1B2C3")
            #expect(object["file"] as? String == edited)
            #expect((object["notes"] as? [String])?.first?.hasPrefix("note: block 0 (the manufacturer block") == true, "\(result.out)")
            #expect(try tagMemory("mf", first: 5, count: 1, on: desk) == [UInt8](repeating: 0x5A, count: 16))
        }

        @Test func usageErrorsNameWhatIsWrong() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ntag213), id: "t2"))
            defer { _ = try? desk.control(.removeAll) }
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

        @Test func keysFromAKeysFileAndADumpOfAnotherTag() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K, key: [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5]), id: "mf"))
            let keys = newPath("keys.mfd"), viaKeys = newPath("via.mfd"), t2 = newPath("t2.bin")
            defer { for path in [keys, viaKeys, t2] { try? FileManager.default.removeItem(atPath: path) } }
            // Without a key the transport key fails on sector 0: no file is written.
            let wrongKey = try await runTool(["read", "--reader", desk.names[0], "--dump", keys], on: desk)
            #expect(wrongKey.status == 1)
            #expect(wrongKey.err.contains("not dumped: General Authenticate block 0 (sector 0) with key A failed: authentication failed for sector 0 with key A"), "\(wrongKey.err)")
            #expect(!FileManager.default.fileExists(atPath: keys))
            #expect(try await runTool(["read", "--reader", desk.names[0], "--dump", keys, "--key", "A0A1A2A3A4A5"], on: desk).status == 0)
            // The keys file's trailers give each sector's key (as libnfc's <keys.mfd>).
            let fromFile = try await runTool(["read", "--reader", desk.names[0], "--dump", viaKeys, "--keys", keys], on: desk)
            #expect(fromFile.status == 0, "\(fromFile.err)")
            #expect(FileManager.default.contents(atPath: viaKeys) == FileManager.default.contents(atPath: keys))
            _ = try? desk.control(.removeAll)

            // A Type 2 dump of one tag restored to another (a desk of its own for each tag): the UID
            // pages are never written, and said so.
            let source = try await SimulatedDesk.open()
            defer { source.close() }
            try source.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ntag213, ndef: [0xD1, 0x01, 0x0C, 0x55, 0x04, 0x65, 0x78, 0x61, 0x6D, 0x70, 0x6C, 0x65, 0x2E, 0x63, 0x6F, 0x6D]), id: "t2"))
            #expect(try await runTool(["read", "--reader", source.names[0], "--dump", t2], on: source).status == 0)
            try desk.control(.placeTag(uid: [0x04, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66], .type2(.ntag213), id: "t2b"))
            defer { _ = try? desk.control(.removeAll) }
            let other = try await runTool(["write-dump", t2, "--reader", desk.names[0], "--yes"], on: desk)
            #expect(other.status == 0, "\(other.err)")
            #expect(other.out.contains("note: pages 0–2 differ from the tag's and are never written (UID and check bytes, internal byte, PWD, PACK)\n"), "\(other.out)")
            #expect(other.out.contains("wrote 5 pages (4–8); 37 unchanged\n"), "\(other.out)")
        }

        @Test func ultralightWithoutGetVersionDumpsSixteenPagesAndRestores() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            // A MIFARE Ultralight does not know GET_VERSION (MF0ICU1): 16 pages, selected again after asking.
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ultralight), id: "ul"))
            defer { _ = try? desk.control(.removeAll) }
            let first = newPath("ul.bin"), edited = newPath("ule.bin"), second = newPath("ulb.bin")
            defer { for path in [first, edited, second] { try? FileManager.default.removeItem(atPath: path) } }
            let dumped = try await runTool(["read", "--reader", desk.names[0], "--dump", first], on: desk)
            #expect(dumped.status == 0, "\(dumped.err)")
            #expect(dumped.out.contains("read 16 pages of the MIFARE Ultralight\n"), "\(dumped.out)")
            var dump = [UInt8](FileManager.default.contents(atPath: first) ?? Data())
            #expect(dump.count == 64)
            // CC E1 10 06 00: 48 data bytes (MF0ICU1 §7.5; docs/storage-card-dumps.md §3).
            #expect(Array(dump[12..<16]) == [0xE1, 0x10, 0x06, 0x00])
            dump.replaceSubrange(60..<64, with: [0x0F, 0x0F, 0x0F, 0x0F])
            _ = FileManager.default.createFile(atPath: edited, contents: Data(dump))
            let restored = try await runTool(["write-dump", edited, "--reader", desk.names[0], "--yes"], on: desk)
            #expect(restored.status == 0, "\(restored.err)")
            #expect(restored.out.contains("wrote 1 page (15); 15 unchanged\n"), "\(restored.out)")
            #expect(try await runTool(["read", "--reader", desk.names[0], "--dump", second], on: desk).status == 0)
            #expect(FileManager.default.contents(atPath: second).map { [UInt8]($0) } == dump)
        }
    }
}

