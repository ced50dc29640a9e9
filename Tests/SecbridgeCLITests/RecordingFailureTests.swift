import Foundation
import SecbridgeCLI
import SecbridgeTesting
import Testing
import Transcript
@testable import SecbridgeTools

#if canImport(Glibc)
import Glibc
#endif

// One rule for every writer of a recording (issue 33, item 2; docs/faults.md, "A recording that
// cannot be written"): a write error stops the recording with a message naming the file and the
// errno, the command finishes its device work, the transcript ends with `; incomplete: …`, and the
// command exits non-zero. The full disk is staged with `TranscriptWriter.injectFullDisk`: past a
// number of body bytes, lines go to /dev/full, whose write(2) fails with the kernel's ENOSPC.

private func newPath(_ name: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-full-\(UUID().uuidString.prefix(8))-\(name)").path
}

/// The file's lines (it must parse as a transcript: every line before the failure is whole).
private func transcriptLines(_ path: String) throws -> (transcript: Transcript, last: String) {
    let transcript = try Transcript(contentsOfFile: path)
    let text = try String(contentsOfFile: path, encoding: .utf8)
    #expect(text.hasSuffix("\n"))
    return (transcript, String(text.split(separator: "\n").last ?? ""))
}

/// `No space left on device (errno 28)`: strerror(ENOSPC) as this system says it.
private let enospc = "\(String(cString: strerror(ENOSPC))) (errno \(ENOSPC))"

/// Every data block of a MIFARE Classic 1K but block 0 (16 sectors × 3 data blocks − 1 = 47).
private let dataBlocks = (1..<64).filter { $0 % 4 != 3 }

/// The dump of the 1K on `desk`'s first reader (`read --dump`) with each of ``dataBlocks`` filled
/// with `fill(block)`, written to `path`.
private func editedDump(of desk: SimulatedDesk, to path: String, fill: (Int) -> UInt8) async throws {
    let first = newPath("1k.mfd")
    defer { try? FileManager.default.removeItem(atPath: first) }
    #expect(try await runTool(["read", "--reader", desk.names[0], "--dump", first], on: desk).status == 0)
    var dump = [UInt8](FileManager.default.contents(atPath: first) ?? Data())
    try #require(dump.count == 1024)
    for block in dataBlocks { dump.replaceSubrange(block * 16..<(block + 1) * 16, with: [UInt8](repeating: fill(block), count: 16)) }
    _ = FileManager.default.createFile(atPath: path, contents: Data(dump))
}

extension InProcessCommandTests {
    @Suite struct RecordingFailureTests {
        /// `write-dump --record` onto a disk that fills after the first lines: the card is written in
        /// full (every changed block), the message names the file and ENOSPC, the transcript ends
        /// with its `; incomplete:` line, exit 1.
        @Test func writeDumpOnAFullDiskWritesTheWholeCardAndSaysTheRecordingIsIncomplete() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K), id: "mf"))
            defer { _ = try? desk.control(.removeAll) }
            let edited = newPath("1ke.mfd"), record = newPath("write.trn")
            defer { for path in [edited, record] { try? FileManager.default.removeItem(atPath: path) } }
            try await editedDump(of: desk, to: edited) { UInt8($0) }
            TranscriptWriter.injectFullDisk(atPath: record, afterBodyBytes: 600)
            let result = try await runTool(["write-dump", edited, "--reader", desk.names[0], "--yes", "--record", record], on: desk)
            #expect(result.status == 1, "\(result.err)")
            #expect(result.out.contains("wrote 47 blocks (1–2, 4–6, 8–10"), "\(result.out)")
            #expect(result.err.contains("secbridge: error: cannot record to '\(record)': cannot append to \(record): \(enospc)"), "\(result.err)")
            #expect(result.err.contains("the recording stopped, the card write goes on\n"), "\(result.err)")
            #expect(result.err.contains("secbridge: error: the recording to '\(record)' is incomplete: writing it failed (\(enospc))"), "\(result.err)")
            #expect(!result.err.contains("stopped answering"), "\(result.err)")
            for block in dataBlocks {
                #expect(try tagMemory("mf", first: block, count: 1, on: desk) == [UInt8](repeating: UInt8(block), count: 16), "block \(block)")
            }
            let (transcript, last) = try transcriptLines(record)
            #expect(last == "; incomplete: the recording stopped here: writing this file failed (\(enospc)); the card write went on, unrecorded")
            #expect(transcript.lines.compactMap(\.record).count >= 2)
        }

        /// The same write with room: the transcript is complete, and its size is within the bound the
        /// free-space check asks for (`writeDumpRecordingBound`).
        @Test func aWholeWriteDumpRecordingFitsTheBoundItsSpaceCheckAsksFor() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K), id: "mf"))
            defer { _ = try? desk.control(.removeAll) }
            let edited = newPath("1ke.mfd"), record = newPath("write.trn")
            defer { for path in [edited, record] { try? FileManager.default.removeItem(atPath: path) } }
            try await editedDump(of: desk, to: edited) { _ in 0xA5 }
            let result = try await runTool(["write-dump", edited, "--reader", desk.names[0], "--yes", "--record", record], on: desk)
            #expect(result.status == 0, "\(result.err)")
            let size = try #require(try FileManager.default.attributesOfItem(atPath: record)[.size] as? Int)
            let bound = SecbridgeCLI.writeDumpRecordingBound(dumpBytes: 1024)
            #expect(size > 8 * 1024 && UInt64(size) <= bound, "\(size) bytes against a bound of \(bound)")
            #expect(!(try String(contentsOfFile: record, encoding: .utf8)).contains("; incomplete"))
        }

        /// A disk with less room than the bound: refused before the card is touched, naming the
        /// disk; the card keeps its blocks.
        @Test func theSpaceCheckNamesTheDiskAndBothSizes() throws {
            let problem = RecordingRoom.problem(path: "/mnt/small/w.trn", needed: 180 * 1024, available: 8 * 1024, mount: "/mnt/small", command: "write-dump --record")
            #expect(problem == "write-dump --record /mnt/small/w.trn: the disk that would hold it (the file system mounted at /mnt/small) has 8 KiB free, and the recording needs up to 180 KiB: free some space there or record elsewhere; nothing was sent to the card")
            #expect(RecordingRoom.problem(path: "/x/w.trn", needed: 1024, available: 1024, mount: "/", command: "c") == nil)
            // The real disk of the temporary directory: its mount point is a directory above it.
            let (bytes, mount) = try #require(RecordingRoom.available(forFileAt: newPath("w.trn")))
            #expect(bytes > 0)
            #expect(FileManager.default.temporaryDirectory.path.hasPrefix(mount))
            #expect(RecordingRoom.available(forFileAt: "/proc/self/nonexistent/w.trn") == nil)
        }

        /// `write-dump --record` onto a file system with no room (/proc: statvfs gives 0 blocks
        /// free): refused before the card is touched, naming the disk; the card keeps its blocks.
        @Test func writeDumpRecordOntoAFullFileSystemIsRefusedBeforeTheCardIsTouched() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K), id: "mf"))
            defer { _ = try? desk.control(.removeAll) }
            let edited = newPath("1ke.mfd")
            defer { try? FileManager.default.removeItem(atPath: edited) }
            try await editedDump(of: desk, to: edited) { _ in 0x3C }
            let before = try tagMemory("mf", first: 1, count: 1, on: desk)
            let result = try await runTool(["write-dump", edited, "--reader", desk.names[0], "--yes", "--record", "/proc/secbridge-w.trn"], on: desk)
            #expect(result.status == 1)
            #expect(result.err == "secbridge: error: write-dump --record /proc/secbridge-w.trn: the disk that would hold it (the file system mounted at /proc) has 0 KiB free, and the recording needs up to 48 KiB: free some space there or record elsewhere; nothing was sent to the card\n", "\(result.err)")
            #expect(result.out.isEmpty, "\(result.out)")
            #expect(try tagMemory("mf", first: 1, count: 1, on: desk) == before)
            #expect(before != [UInt8](repeating: 0x3C, count: 16))
        }

        /// One writer each of `control --record` (the escape path), `run --record` (the script
        /// interpreter, also the shell's `record`) and `read --record` (the reader session): with
        /// the disk full from the first body line, each does its device work, says the recording is
        /// incomplete, exits 1 and leaves a transcript that is its header and the closing line.
        @Test(arguments: ["control", "run", "read"])
        func everyOtherWriterFollowsTheRule(_ command: String) async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], applet: .t4tNDEF, id: "tag"))
            let record = newPath("\(command).trn"), script = newPath("script.txt")
            defer { for path in [record, script] { try? FileManager.default.removeItem(atPath: path) } }
            try "00A4040007D276000085010100\n".write(toFile: script, atomically: true, encoding: .utf8)
            let (arguments, work, shown): ([String], String, String) = switch command {
            case "control": (["control", "--record", record, "FF 00 48 00 00"], "the control exchange", "< 41 43 52 31 32 32 55 32 30 37")
            case "run": (["run", "--reader", "0", "--record", record, script], "the run", "< 90 00")
            default: (["read", "--reader", desk.names[0], "--record", record], "the read", "> 00 A4 04 00 07 D2 76 00 00 85 01 01 00")
            }
            TranscriptWriter.injectFullDisk(atPath: record, afterBodyBytes: 0)
            let result = try await runTool(arguments, on: desk)
            #expect(result.status == 1, "\(result.err)")
            #expect(result.out.contains(shown), "\(result.out)")
            #expect(result.err.contains("secbridge: error: cannot record to '\(record)': cannot append to \(record): \(enospc)"), "\(result.err)")
            #expect(result.err.contains("the recording stopped, \(work) goes on"), "\(result.err)")
            #expect(result.err.contains("secbridge: error: the recording to '\(record)' is incomplete: writing it failed (\(enospc))"), "\(result.err)")
            let (transcript, last) = try transcriptLines(record)
            #expect(transcript.lines.count == 1)
            #expect(last == "; incomplete: the recording stopped here: writing this file failed (\(enospc)); \(work) went on, unrecorded")
        }

        /// `replay --record` onto a full disk: the replay itself succeeds (every answer matches), and
        /// the run fails as a recording failure, not a replay failure.
        @Test func replayRecordOnAFullDiskIsARecordingFailureNotAReplayFailure() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
            let session = newPath("session.trn"), again = newPath("again.trn")
            defer { for path in [session, again] { try? FileManager.default.removeItem(atPath: path) } }
            let sent = try await runTool(["send", "--reader", "0", "--record", session, "00A4040007D276000085010100"], on: desk)
            #expect(sent.status == 0, "\(sent.err)")
            TranscriptWriter.injectFullDisk(atPath: again, afterBodyBytes: 0)
            let result = try await runTool(["replay", "--reader", "0", "--record", again, session], on: desk)
            #expect(result.status == 1, "\(result.err)")
            #expect(result.out.contains("replayed 1 exchange from \(session) on '\(desk.names[0])': every answer matches"), "\(result.out)")
            #expect(result.err.contains("secbridge: error: cannot record to '\(again)': cannot append to \(again): \(enospc)"), "\(result.err)")
            #expect(result.err.contains("the recording stopped, the replay goes on"), "\(result.err)")
            #expect(result.err.hasSuffix("secbridge: error: the recording to '\(again)' is incomplete: writing it failed (\(enospc)); it keeps every line before and ends with a line saying so\n"), "\(result.err)")
            let (transcript, last) = try transcriptLines(again)
            #expect(transcript.lines.compactMap(\.record).isEmpty)
            #expect(last == "; incomplete: the recording stopped here: writing this file failed (\(enospc)); the replay went on, unrecorded")
        }

        /// `send --record` (the path of `run`, `read` and `write-ndef` too, through `CardSession`):
        /// the APDU is sent and answered, the recording fails.
        @Test func sendRecordOnAFullDiskSendsAndSaysTheRecordingIsIncomplete() async throws {
            let desk = try await SimulatedDesk.open()
            defer { desk.close() }
            try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
            let record = newPath("send.trn")
            defer { try? FileManager.default.removeItem(atPath: record) }
            // The command line (48 bytes with its offset) fits; its answer does not.
            TranscriptWriter.injectFullDisk(atPath: record, afterBodyBytes: 60)
            let result = try await runTool(["send", "--reader", "0", "--record", record, "00A4040007D276000085010100"], on: desk)
            #expect(result.status == 1, "\(result.err)")
            #expect(result.out.contains("< 90 00\n"), "\(result.out)")
            #expect(result.err.contains("secbridge: error: the recording to '\(record)' is incomplete"), "\(result.err)")
            let (transcript, last) = try transcriptLines(record)
            #expect(transcript.lines.compactMap(\.record).count == 1)
            #expect(transcript.lines.compactMap(\.record).first?.entry == .transmit(.outgoing, TranscriptBytes([0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00])))
            #expect(last.hasPrefix("; incomplete: the recording stopped here: writing this file failed (\(enospc))"))
        }
    }
}

/// `serve --record`'s path: the serve loop answers vpcd from the credential while its recording,
/// a file of the run's ``RecordingLedger``, has failed; the ledger then says the file is incomplete.
@Suite struct ServeRecordingFailureTests {
    @Test func serveGoesOnAnsweringWhenItsRecordingFails() async throws {
        let record = newPath("serve.trn")
        defer { try? FileManager.default.removeItem(atPath: record) }
        let console = CapturingConsole()
        let ledger = RecordingLedger(console: console)
        TranscriptWriter.injectFullDisk(atPath: record, afterBodyBytes: 0)
        let sink = try ledger.open(
            path: record, header: TranscriptRecording.header(reader: "vpcd at 127.0.0.1", atr: [0x3B, 0x80, 0x80, 0x01, 0x01], transmissionProtocol: .t1, command: "serve"),
            work: "serving")
        let recorder = TranscriptRecorder(sink: sink)
        let (end, served, answers) = try await VPCDProtocolTests.serveAStandInVpcd(recorder: recorder)
        #expect(end == .closed("vpcd closed the connection"))
        #expect(served == 1)
        // The ATR (length 5), then 90 00 (length 2), as without a recording.
        #expect(answers == [0x00, 0x05, 0x3B, 0x80, 0x80, 0x01, 0x01, 0x00, 0x02, 0x90, 0x00])
        #expect(console.standardError.contains("secbridge: error: cannot record to '\(record)': cannot append to \(record): \(enospc)"), "\(console.standardError)")
        #expect(console.standardError.contains("the recording stopped, serving goes on"))
        let messages = ledger.finishAll()
        #expect(messages == ["the recording to '\(record)' is incomplete: writing it failed (\(enospc)); it keeps every line before and ends with a line saying so"])
        #expect(ledger.finishAll() == messages, "finishing twice says the same, writes nothing more")
        let (transcript, last) = try transcriptLines(record)
        #expect(transcript.lines.compactMap(\.record).isEmpty)
        #expect(last == "; incomplete: the recording stopped here: writing this file failed (\(enospc)); serving went on, unrecorded")
        #expect(try String(contentsOfFile: record, encoding: .utf8).components(separatedBy: "; incomplete").count == 2)
    }
}

/// The rule's words and file for a writer whose disk was full from the first body line, its failure
/// said by the run's ledger: the failure naming `record` and ENOSPC, `WORK goes on`, the dispatch's
/// closing `is incomplete` message, exit 1; the file is its header and the closing line.
private func expectTheRule(_ result: (status: Int32, out: String, err: String), record: String, work: String) throws {
    #expect(result.status == 1, "\(result.err)")
    #expect(result.err.contains("secbridge: error: cannot record to '\(record)': cannot append to \(record): \(enospc)"), "\(result.err)")
    #expect(result.err.contains("the recording stopped, \(work) goes on\n"), "\(result.err)")
    #expect(result.err.hasSuffix("secbridge: error: the recording to '\(record)' is incomplete: writing it failed (\(enospc)); it keeps every line before and ends with a line saying so\n"), "\(result.err)")
    let (transcript, last) = try transcriptLines(record)
    #expect(transcript.lines.count == 1)
    #expect(last == "; incomplete: the recording stopped here: writing this file failed (\(enospc)); \(work) went on, unrecorded")
}

extension InProcessCommandTests.RecordingFailureTests {
    /// The shell's `record FILE` statement and its `--record FILE` option (one writer, the script
    /// interpreter's): with the disk full from the first body line, both APDUs are sent and
    /// answered, the failure names the file and ENOSPC, the file is its header and the closing
    /// line, exit 1.
    @Test(arguments: ["statement", "option"])
    func theShellsRecordFollowsTheRule(_ form: String) async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let record = newPath("shell-\(form).trn")
        defer { try? FileManager.default.removeItem(atPath: record) }
        TranscriptWriter.injectFullDisk(atPath: record, afterBodyBytes: 0)
        let apdus = ["00 A4 04 00 01 AA", "00B0000001BB"]
        let result = form == "statement"
            ? try await runTool(["shell", "--reader", "0"], on: desk, input: ["record \(record)"] + apdus + ["record off"])
            : try await runTool(["shell", "--reader", "0", "--record", record], on: desk, input: apdus)
        // The device work went on: both APDUs reached the card and were answered.
        #expect(result.out.contains("< 00 A4 04 00 01 AA 90 00\n"), "\(result.out)")
        #expect(result.out.contains("< 00 B0 00 00 01 BB 90 00\n"), "\(result.out)")
        #expect(try desk.control(.cardLog(peer: "card"))["all"] == "00 A4 04 00 01 AA; 00 B0 00 00 01 BB")
        if form == "statement" {
            // `record off` does not call the stopped recording complete.
            #expect(result.out.hasSuffix("recorded to \(record) up to where writing it failed (\(enospc)); the file ends with a line saying it is incomplete\n"), "\(result.out)")
        }
        try expectTheRule(result, record: record, work: "the shell")
    }

    /// `monitor --record` in process, on the desk: the first event (the reader attached) cannot be
    /// written; it is shown, and the monitor stops at once (a recording with a silent hole would
    /// look complete), exit 1, with its own words only (no second message from the dispatch);
    /// the file's closing line says that monitoring stopped with it.
    @Test func monitorStopsAtTheFirstEventItsFileCannotTake() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let record = newPath("monitor.trn")
        defer { try? FileManager.default.removeItem(atPath: record) }
        TranscriptWriter.injectFullDisk(atPath: record, afterBodyBytes: 0)
        // --count 3 and --timeout 30 are only the bounds of a monitor that would not stop.
        let result = try await runTool(["monitor", "--record", record, "--count", "3", "--timeout", "30"], on: desk)
        #expect(result.status == 1, "\(result.err)")
        #expect(result.out == "reader-attached \"\(desk.names[0])\"\n", "\(result.out)")
        #expect(result.err == "secbridge: error: cannot record to '\(record)': cannot append to \(record): \(enospc); the file keeps every line before\n"
            + "secbridge: error: monitoring stopped: the recording holds every event before the one it could not take\n", "\(result.err)")
        let (transcript, last) = try transcriptLines(record)
        #expect(transcript.lines.count == 1)
        #expect(last == "; incomplete: the recording stopped here: writing this file failed (\(enospc)); monitoring stopped with it")
    }

    /// `readers --record` on a full disk: the listing is printed whole, the failure names the
    /// file and ENOSPC, the file is its header and the closing line, exit 1. (Before, the
    /// listing exited 0 with an incomplete file: it used the monitor's stop-and-say-it-yourself
    /// recording without stopping or saying it.)
    @Test func readersRecordOnAFullDiskListsAndSaysTheRecordingIsIncomplete() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
        let record = newPath("readers.trn")
        defer { try? FileManager.default.removeItem(atPath: record) }
        TranscriptWriter.injectFullDisk(atPath: record, afterBodyBytes: 0)
        let result = try await runTool(["readers", "--record", record], on: desk)
        #expect(result.out.contains("0: \(desk.names[0])\n"), "\(result.out)")
        #expect(result.out.contains("   ATR: 3B 80 80 01 01\n"), "\(result.out)")
        try expectTheRule(result, record: record, work: "the listing")
    }

    /// `write-ndef --record` on a full disk: the tag is written (its NDEF TLV on page 4), the
    /// recording fails naming the file and ENOSPC, exit 1.
    @Test func writeNDEFRecordOnAFullDiskWritesTheTag() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6], .type2(.ntag213), id: "t2"))
        let record = newPath("write-ndef.trn")
        defer { try? FileManager.default.removeItem(atPath: record) }
        TranscriptWriter.injectFullDisk(atPath: record, afterBodyBytes: 0)
        let result = try await runTool(["write-ndef", "--reader", desk.names[0], "--text", "Hello", "--yes", "--record", record], on: desk)
        // "Hello" (en) in its TLV: 03 0C D1 01 08 54 02 65 6E 48 … on pages 4–7 (docs/iso14443-t4t-ndef.md §5).
        #expect(try tagMemory("t2", first: 4, count: 1, on: desk).prefix(4) == [0x03, 0x0C, 0xD1, 0x01])
        try expectTheRule(result, record: record, work: "the tag write")
    }

    /// `emulate --record` in process, on the desk's virtual time (the same fault through pcscd:
    /// EndToEndTests/FaultEndToEndTests.swift): Android's read of the tag goes to its end, the
    /// reader is restored (PICC polling on again), the recording's failure names the file and
    /// ENOSPC, and the emulation's own report says it is incomplete, exit 1.
    @Test func emulateRecordOnAFullDiskServesTheTerminalAndRestoresTheReader() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeTerminal(id: "android"))
        let record = newPath("emulate.trn")
        defer { try? FileManager.default.removeItem(atPath: record) }
        TranscriptWriter.injectFullDisk(atPath: record, afterBodyBytes: 0)
        let result = try await runTool(
            ["emulate", "--credential", EmulationExitTests.credential("uri-tag.json"), "--yes", "--record", record, "--reader", desk.names[0]],
            on: desk)
        #expect(result.status == 1, "\(result.err)\n\(result.out)")
        #expect(result.out.contains("terminal: 6 APDUs; the NDEF file was read to the end"), "\(result.out)")
        #expect(try desk.control(.status)["picc"] == "FF")
        #expect(result.err.contains("secbridge: error: cannot record to '\(record)': cannot append to \(record): \(enospc)"), "\(result.err)")
        #expect(result.err.contains("the recording stopped, the emulation goes on\n"), "\(result.err)")
        #expect(result.err.contains("secbridge: error: the recording to '\(record)' is incomplete: cannot append to \(record): \(enospc)"), "\(result.err)")
        #expect(result.err.components(separatedBy: "is incomplete").count == 2, "said once: \(result.err)")
        let (transcript, last) = try transcriptLines(record)
        #expect(transcript.lines.count == 1)
        #expect(last == "; incomplete: the recording stopped here: writing this file failed (\(enospc)); the emulation went on, unrecorded")
    }
}

extension InProcessCommandTests.RecordingFailureTests {
    /// `demo --in-process --record FILE` (the demo's own readers, not the desk's) with the disk
    /// full from the first body line: the demo runs to its summary, the failure names the file
    /// and ENOSPC, the file is its header and the closing line, exit 1. (Before, each line that
    /// could not be written was dropped without a word and the demo exited 0.)
    @Test func theDemoFollowsTheRule() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let record = newPath("demo.trn")
        defer { try? FileManager.default.removeItem(atPath: record) }
        TranscriptWriter.injectFullDisk(atPath: record, afterBodyBytes: 0)
        let result = try await runTool(["demo", "--in-process", "--time-scale", "0.01", "--record", record], on: desk)
        #expect(result.out.contains("\nsummary\n  states: "), "\(result.out)")
        try expectTheRule(result, record: record, work: "the demo")
    }
}
