import Foundation
import PCSCCore
import PCSCSandbox
import SecbridgeTesting
import Testing
import Transcript

// `secbridge read` and `secbridge write-ndef` on storage cards placed on a simulated ACR122U of the
// test's own desk, in process (the in-process PC/SC client, no pcscd): NFC Forum Type 2 tags (NTAG213) and MIFARE Classic 1K, through the PC/SC
// part 3 pseudo-APDUs (FF CA, FF B0, FF D6, FF 82, FF 86; ACR122U API v2.04; docs/iso14443-t4t-ndef.md §6).

/// `D1 01 0C 55 04 "example.com"`: the URI record https://example.com (docs/iso14443-t4t-ndef.md §5).
private let exampleURIMessage = "D1010C55046578616D706C652E636F6D"

/// What `tag-memory` says a placed tag holds, as bytes.
func tagMemory(_ peer: String, first: Int, count: Int, on desk: SimulatedDesk) throws -> [UInt8] {
    let reply = try desk.control(.tagMemory(peer: "\(peer)", first: first, count: count))
    return (reply["data"] ?? "").split(separator: " ").compactMap { UInt8($0, radix: 16) }
}

/// Every page of a placed NTAG213 (45 pages), as tag-memory shows it.
private func wholeNTAG213(_ peer: String, on desk: SimulatedDesk) throws -> [UInt8] {
    try tagMemory(peer, first: 0, count: 45, on: desk)
}

private func temporaryTranscriptPath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-storage-\(UUID().uuidString).trn").path
}

extension InProcessCommandTests {
    @Suite struct StorageCardCommandsInProcessTests {
        @Test func readShowsTheUIDTheCardNameAndTheNDEFMessageOfAnNTAG213() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ntag213, ndef: hex(exampleURIMessage)), id: "t2"))
            defer { _ = try? desk.control(.removeAll) }
            let state = try await cardState(desk)
            // PC/SC part 3 storage-card ATR, name 00 03 (Ultralight/NTAG), TCK 68 (docs/cases.md P05).
            #expect(state.atr == hex("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 03 00 00 00 00 68"))
            let result = try await runTool(["read", "--reader", desk.names[0]], on: desk)
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("UID 04 A1 B2 C3 D4 E5 F6\n"))
            // The model from GET_VERSION through Direct Transmit (NTAG213: 00 04 04 02 01 00 0F 03).
            #expect(result.out.contains("card: NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03; PC/SC part 3 name 00 03, ISO/IEC 14443 A, part 3)\n"), "\(result.out)")
            // NTAG213: CC E1 10 12 00, 0x12 × 8 = 144 data bytes (NXP NTAG213/215/216 data sheet).
            #expect(result.out.contains("capability container: E1 10 12 00 (version 1.0, 144 data bytes, read/write)\n"))
            #expect(result.out.contains("NDEF record 1: URI https://example.com\n"))
            let json = try await runTool(["read", "--reader", desk.names[0], "--json"], on: desk)
            #expect(json.status == 0, "\(json.err)")
            #expect(json.out.contains("\"uri\": \"https://example.com\""))
            #expect(json.out.contains("\"uid\": \"04A1B2C3D4E5F6\""))
            #expect(json.out.contains("\"model\": \"NTAG213\""))
            #expect(json.out.contains("\"version\": \"0004040201000F03\""))
        }


        /// An early T=0 unit (personality `legacy-t0`, ACR122U103) announces a pseudo-APDU's answer
        /// with `61 LL` and hands it over on `FF C0 00 00 LL` (ACR122U API v2.04 §6, T=0): the
        /// GET_VERSION through Direct Transmit still names the NTAG213.
        @Test func readOnALegacyT0UnitFetchesGetVersionsAnswerWithFFC0() async throws {
            let desk = try await SimulatedDesk.open(personality: "legacy-t0")
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ntag213, ndef: hex(exampleURIMessage)), id: "t2"))
            let result = try await runTool(["read", "--reader", desk.names[0]], on: desk)
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("card: NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03; PC/SC part 3 name 00 03, ISO/IEC 14443 A, part 3)\n"), "\(result.out)")
            #expect(result.out.contains("> FF C0 00 00 0D\n"), "\(result.out)")
            #expect(result.out.contains("NDEF record 1: URI https://example.com\n"))
        }

        @Test func writeNDEFRefusesAnNTAG213WhoseCCClaimsMoreThanItHasAndWritesNothing() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ntag213, ndef: hex(exampleURIMessage)), id: "t2"))
            defer { _ = try? desk.control(.removeAll) }
                        // The CC is one-time programmable: writing E1 10 FF 00 ORs SIZE up to FF (2040 bytes).
            let send = try await runTool(["send", "--reader", desk.names[0], "FF D6 00 03 04 E1 10 FF 00"], on: desk)
            #expect(send.status == 0, "\(send.err)")
            #expect(try tagMemory("t2", first: 3, count: 1, on: desk) == hex("E1 10 FF 00"))
            let before = try wholeNTAG213("t2", on: desk)
            let result = try await runTool(["write-ndef", "--reader", desk.names[0], "--text", "Hello", "--yes"], on: desk)
            #expect(result.status == 1)
            #expect(result.out.contains("card: NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03; "), "\(result.out)")
            #expect(result.err.contains("the capability container claims a data area of 2040 bytes (SIZE FF × 8), but the tag is an NTAG213 (GET_VERSION 00 04 04 02 01 00 0F 03) with 144 bytes of user memory (pages 4–39)"), "\(result.err)")
            // Nothing written: not the data area, not the lock and configuration pages 28h–2Ch.
            #expect(try wholeNTAG213("t2", on: desk) == before)
        }

        @Test func anUltralightWhoseCCClaimsMoreThanItHoldsIsRefusedWithNothingWritten() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ultralight, ndef: hex(exampleURIMessage)), id: "ul"))
            defer { _ = try? desk.control(.removeAll) }
                        // The Ultralight's CC E1 10 06 00 (48 bytes), raised to FF: it has pages 0–15 only
            // (NXP MF0ICU1 data sheet) and no GET_VERSION to tell its model.
            let send = try await runTool(["send", "--reader", desk.names[0], "FF D6 00 03 04 00 00 FF 00"], on: desk)
            #expect(send.status == 0, "\(send.err)")
            let before = try tagMemory("ul", first: 0, count: 16, on: desk)
            let long = "https://example.com/" + String(repeating: "a", count: 60)
            let result = try await runTool(["write-ndef", "--reader", desk.names[0], "--uri", long, "--yes"], on: desk)
            #expect(result.status == 1)
            #expect(result.out.contains("note: the tag did not answer GET_VERSION"), "\(result.out)")
            #expect(result.err.contains("the message needs pages 4–23, but the tag does not answer a read of page 23 (63 00)"), "\(result.err)")
            #expect(try tagMemory("ul", first: 0, count: 16, on: desk) == before)
            let read = try await runTool(["read", "--reader", desk.names[0]], on: desk)
            #expect(read.out.contains("NDEF record 1: URI https://example.com\n"), "\(read.out)")
        }

        @Test func writeNDEFRefusedByAStaticLockLeavesTheTagAsItWas() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ntag213, ndef: hex(exampleURIMessage)), id: "t2"))
            defer { _ = try? desk.control(.removeAll) }
                        // LOCK1 bit 0 (page 2 byte 3): page 8 read-only for good (NTAG213 data sheet §8.5.2).
            let send = try await runTool(["send", "--reader", desk.names[0], "FF D6 00 02 04 00 00 00 01"], on: desk)
            #expect(send.status == 0, "\(send.err)")
            let before = try wholeNTAG213("t2", on: desk)
            // BCC1 = C3 ⊕ D4 ⊕ E5 ⊕ F6 = 04, internal 48, LOCK0 00, LOCK1 01.
            #expect(Array(before[8..<12]) == hex("04 48 00 01"))
            // "Hello world, hello world": 31 bytes of NDEF, 34 with the TLV, pages 4–12; page 8 is locked.
            let result = try await runTool(["write-ndef", "--reader", desk.names[0], "--text", "Hello world, hello world", "--yes"], on: desk)
            #expect(result.status == 1)
            #expect(result.err.contains("page 8 is locked by the static lock bits (page 2 bytes 2–3: 00 01) and the message needs pages 4–12; nothing was written"), "\(result.err)")
            #expect(try wholeNTAG213("t2", on: desk) == before)
            let read = try await runTool(["read", "--reader", desk.names[0]], on: desk)
            #expect(read.out.contains("NDEF record 1: URI https://example.com\n"), "\(read.out)")
        }

        @Test func readOptionsThatDoNotApplyToAStorageCardAreUsageErrors() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ntag213), id: "t2"))
            defer { _ = try? desk.control(.removeAll) }
                        let aid = try await runTool(["read", "--reader", desk.names[0], "--aid", "D2760000850101"], on: desk)
            #expect(aid.status == 64)
            #expect(aid.err.contains("a memory card without applications: read it without --aid"), "\(aid.err)")
            let pn532 = try await runTool(["read", "--reader", desk.names[0], "--pn532"], on: desk)
            #expect(pn532.status == 64)
            #expect(pn532.err.contains("drop --pn532; storage cards are read through the PC/SC part 3 path"), "\(pn532.err)")
        }

        @Test func anUltralightIsReadByItsCCWithANoteThatGETVERSIONGotNoAnswer() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ultralight, ndef: hex(exampleURIMessage)), id: "t2"))
            defer { _ = try? desk.control(.removeAll) }
                        let result = try await runTool(["read", "--reader", desk.names[0]], on: desk)
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("card: MIFARE Ultralight (PC/SC part 3 name 00 03, ISO/IEC 14443 A, part 3)\n"))
            #expect(result.out.contains("note: the tag did not answer GET_VERSION (PN532 status "), "\(result.out)")
            #expect(result.out.contains("NDEF record 1: URI https://example.com\n"))
        }

        @Test func keyBUnderTransportAccessConditionsAndBlocksOutsideTheCard() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K), id: "mf"))
            defer { _ = try? desk.control(.removeAll) }
                        let keyB = try await runTool(["read", "--reader", desk.names[0], "--key", "FFFFFFFFFFFF", "--key-b", "--blocks", "4"], on: desk)
            #expect(keyB.status == 1)
            #expect(keyB.err.contains("the card refused the read after authenticating with key B: with the transport access conditions (FF 07 80) key B may not read"), "\(keyB.err)")
            #expect(keyB.err.contains("try key A"))
            let outside = try await runTool(["read", "--reader", desk.names[0], "--key", "FFFFFFFFFFFF", "--blocks", "64"], on: desk)
            #expect(outside.status == 64)
            #expect(outside.err.contains("--blocks 64: block 64 is not on a MIFARE Classic 1K, which has blocks 0–63"), "\(outside.err)")
            #expect(!outside.err.contains("(> )"))
        }

        @Test func writeNDEFWritesATextRecordPageByPageAndReadsItBack() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ntag213), id: "t2"))
            defer { _ = try? desk.control(.removeAll) }
            // A fresh tag holds the empty NDEF message: 03 00 FE from page 4.
            #expect(try tagMemory("t2", first: 4, count: 1, on: desk) == hex("03 00 FE 00"))
                        let record = temporaryTranscriptPath()
            defer { try? FileManager.default.removeItem(atPath: record) }
            let result = try await runTool(["write-ndef", "--reader", desk.names[0], "--text", "Hello", "--yes", "--record", record], on: desk)
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            #expect(result.out.contains("NDEF record 1: text \"Hello\" (en)\n"))
            // "Hello" (en) → D1 01 08 54 02 65 6E 48 65 6C 6C 6F (docs/iso14443-t4t-ndef.md §5), in an NDEF TLV
            // 03 0C … and the terminator FE, the last page padded with 00.
            #expect(try tagMemory("t2", first: 4, count: 4, on: desk) == hex("03 0C D1 01 08 54 02 65 6E 48 65 6C 6C 6F FE 00"))
            // The transcript holds the Update Binary of page 4.
            let transcript = try Transcript(contentsOfFile: record)
            let commands = transcript.lines.compactMap { line -> [UInt8]? in
                if case .transmit(.outgoing, let bytes)? = line.record?.entry { return bytes.bytes }
                return nil
            }
            #expect(commands.contains(hex("FF D6 00 04 04 03 0C D1 01")))
            let read = try await runTool(["read", "--reader", desk.names[0]], on: desk)
            #expect(read.out.contains("NDEF record 1: text \"Hello\" (en)\n"), "\(read.out)")
        }

        /// A tag pulled away during any one of `write-ndef`'s commands (`place-tag … leave-after=N`,
        /// for every N up to the number a whole write sends) holds a well-formed NDEF message: the
        /// old one, the empty one the write puts in page 4 first, or the new one, in that order as
        /// N grows, never a torn one (the write empties page 4 first and writes its real start
        /// last). Every write that lost its tag exits non-zero. The in-process, deterministic
        /// counterpart of the end-to-end test that kills the process at points in time.
        @Test func writeNDEFWhoseTagLeavesDuringAnyCommandLeavesAWellFormedTag() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            defer { _ = try? desk.control(.removeAll) }
            // URI https://example.com (prefix 04), as the tag holds it first.
            let old: [UInt8] = [0xD1, 0x01, 0x0C, 0x55, 0x04] + Array("example.com".utf8)
            let rest = "example.org/a/path/long/enough/to/span/many/pages/of/the/tag"
            let new: [UInt8] = [0xD1, 0x01, UInt8(1 + rest.utf8.count), 0x55, 0x04] + Array(rest.utf8)
            let arguments = ["write-ndef", "--reader", desk.names[0], "--uri", "https://" + rest, "--yes"]
            func placeTheOldTag(leavingAfter count: Int?) throws {
                _ = try desk.control(.removeAll)
                try desk.control().send(
                    "place-tag type=ntag213 uid=04A1B2C3D4E5F6 ndef=\(old.hexString.replacingOccurrences(of: " ", with: ""))"
                        + " id=ntag" + (count.map { " leave-after=\($0)" } ?? ""))
            }
            /// Until the reader reports the placed tag: presence is polled on use in process, and
            /// the first poll after a tag left reports its removal (bounded: a few polls).
            func untilPresent() async throws {
                for _ in 0..<4 where try await cardState(desk).atr.isEmpty {}
                #expect(try await !cardState(desk).atr.isEmpty, "the placed tag is reported")
            }
            /// The NDEF message in the NDEF TLV at page 4 (`03 len message`), nil when there is none.
            func message() throws -> [UInt8]? {
                let bytes = try tagMemory("ntag", first: 4, count: 36, on: desk)
                guard bytes.count >= 2, bytes[0] == 0x03, Int(bytes[1]) + 2 <= bytes.count else { return nil }
                return Array(bytes[2..<(2 + Int(bytes[1]))])
            }
            // Only a tag with memory counts its commands.
            do {
                try desk.control().send("place-tag uid=04A1B2C3 leave-after=3")
                Issue.record("a tag without memory was placed with leave-after=")
            } catch {
                #expect("\(error)".contains("leave-after= needs a tag with memory"), "\(error)")
            }
            try placeTheOldTag(leavingAfter: nil)
            let whole = try await runTool(arguments, on: desk)
            #expect(whole.status == 0, "\(whole.err)")
            #expect(try message() == new)
            let commands = Int(try desk.control(.tagMemory(peer: "ntag", first: 0, count: 1))["commands"] ?? "") ?? 0
            // A 66-byte message (TLV 03 40 … FE: 69 bytes, 18 pages) cannot be written in fewer.
            #expect(commands >= 18, "a whole write sent \(commands) commands on air")
            var seen: [String] = []
            for count in 1...max(1, commands) {
                try placeTheOldTag(leavingAfter: count)
                try await untilPresent()
                let torn = try await runTool(arguments, on: desk)
                #expect(torn.status != 0, "the tag left during command \(count) of \(commands), yet: \(torn.out)")
                // The message says the tag left, not that a page refused the write or that the
                // tag is smaller than its CC says (the reader answers 63 00 to all three).
                // (Gone during GET_VERSION, the tag is selected again, and SCardReconnect finds none.)
                let left = torn.err.contains("the tag left the reader")
                    && torn.err.hasSuffix("; place the tag on the reader again and run write-ndef again\n")
                #expect(left || torn.err.contains("SCARD_E_NO_SMARTCARD"), "\(torn.err)")
                #expect(!torn.err.contains("locked") && !torn.err.contains("larger tag"), "\(torn.err)")
                let held = try message()
                switch held {
                case old?: seen.append("old")
                case []?: seen.append("empty")
                case new?: seen.append("new")
                default:
                    Issue.record("the tag left during command \(count) of \(commands) and holds \(held?.hexString ?? "no NDEF TLV")")
                }
            }
            // old… then empty… then new…, each at least once but new (the last command may be the
            // write of page 4 itself).
            let order = ["old", "empty", "new"]
            #expect(seen == seen.sorted { order.firstIndex(of: $0)! < order.firstIndex(of: $1)! }, "\(seen)")
            #expect(seen.count == commands)
            #expect(seen.first == "old")
            #expect(seen.contains("empty"))
        }

        @Test func writeNDEFRefusesAMessageLargerThanTheTag() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            // A MIFARE Ultralight: CC E1 10 06 00, 48 data bytes.
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ultralight), id: "t2"))
            defer { _ = try? desk.control(.removeAll) }
                        let long = "https://example.com/" + String(repeating: "a", count: 60)
            let result = try await runTool(["write-ndef", "--reader", desk.names[0], "--uri", long, "--yes"], on: desk)
            #expect(result.status == 1)
            #expect(result.err.contains("48"), "\(result.err)")
            // Nothing was written.
            #expect(try tagMemory("t2", first: 4, count: 1, on: desk) == hex("03 00 FE 00"))
        }

        @Test func writeNDEFRefusesACardThatIsNotAType2Tag() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K), id: "mf"))
            defer { _ = try? desk.control(.removeAll) }
                        let result = try await runTool(["write-ndef", "--reader", desk.names[0], "--uri", "https://example.com", "--yes"], on: desk)
            #expect(result.status == 1)
            #expect(result.err.contains("MIFARE Classic 1K"), "\(result.err)")
        }

        @Test func mifareClassicBlocksAreReadWithTheKeyWhichNeverReachesTheTranscript() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K, key: [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5]), id: "mf"))
            defer { _ = try? desk.control(.removeAll) }
            let state = try await cardState(desk)
            // Name 00 01 (MIFARE Classic 1K), TCK 6A (docs/cases.md P05).
            #expect(state.atr == hex("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A"))

            let noKey = try await runTool(["read", "--reader", desk.names[0]], on: desk)
            #expect(noKey.status == 0, "\(noKey.err)")
            #expect(noKey.out.contains("UID 04 A1 B2 C3\n"))
            #expect(noKey.out.contains("--key"))

            let record = temporaryTranscriptPath()
            defer { try? FileManager.default.removeItem(atPath: record) }
            let result = try await runTool(["read", "--reader", desk.names[0], "--key", "A0A1A2A3A4A5", "--blocks", "4-7", "--record", record], on: desk)
            #expect(result.status == 0, "\(result.err)\n\(result.out)")
            // Sector 1's trailer: key A reads as zeros, access bits FF 07 80 69 (transport
            // configuration), key B masked (NXP MIFARE Classic EV1 1K data sheet, §8.6–8.7).
            #expect(result.out.contains("00 00 00 00 00 00 FF 07 80 69 [REDACTED 6]"), "\(result.out)")
            #expect(!result.out.contains("A0 A1 A2 A3 A4 A5"))
            let text = try String(contentsOfFile: record, encoding: .utf8)
            #expect(text.contains("> FF 82 00 00 06 [REDACTED 6]"))
            #expect(text.contains("> FF 86 00 00 05 01 00 04 60 00"))
            #expect(!text.contains("A0 A1 A2 A3 A4 A5"))

            let wrong = try await runTool(["read", "--reader", desk.names[0], "--key", "FFFFFFFFFFFF", "--blocks", "4"], on: desk)
            #expect(wrong.status == 1)
            #expect(wrong.err.contains("sector 1"), "\(wrong.err)")
            #expect(!wrong.err.contains("FF FF FF FF FF FF"))
        }
    }
}

/// The reader's state as SCardGetStatusChange reports it (presence is polled on use in process).
private func cardState(_ desk: SimulatedDesk) async throws -> ReaderState {
    let context = try desk.client.establishContext()
    var states = [ReaderState(readerName: desk.names[0])]
    _ = try context.getStatusChange(&states, timeout: .zero)
    return states[0]
}
