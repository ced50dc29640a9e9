import Foundation
import Testing
@testable import Transcript

#if canImport(Glibc)
import Glibc
#endif

/// The room a `TranscriptWriter` keeps past its last line for the closing `; incomplete: …` line
/// (fallocate(2), FALLOC_FL_KEEP_SIZE), and a staged full disk (/dev/full after a byte budget).
@Suite struct FullDiskWriterTests {
    static let header = TranscriptHeader(tool: "secbridge 0.1.0", origin: .recorded, reader: "ACS ACR122U PICC Interface 00 00")

    /// Bytes the file system allocated to `path` (st_blocks × 512).
    static func allocated(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_blocks) * 512 : -1
    }

    @Test func theRoomPastTheLastLineIsAllocatedWhileWritingAndGivenBackOnClose() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-room-\(UUID().uuidString.prefix(8)).trn").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try TranscriptWriter(creatingFileAt: path, header: Self.header)
        try writer.append(.comment("one line"))
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(size < 200)
        // ext4, xfs and tmpfs allocate the 64 KiB past the end; the file's length stays the lines'.
        if FileIO.reserve(-1, from: 0, count: 1) != EOPNOTSUPP {
            #expect(Self.allocated(path) >= TranscriptWriter.reserveStep, "\(Self.allocated(path)) bytes allocated")
        }
        try writer.close()
        #expect(Self.allocated(path) <= 8192, "\(Self.allocated(path)) bytes allocated after close")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == size)
    }

    @Test func aStagedFullDiskFailsWithENOSPCCutsNothingAndTakesTheClosingLine() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-full-\(UUID().uuidString.prefix(8)).trn").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        TranscriptWriter.injectFullDisk(atPath: path, afterBodyBytes: 20)
        let writer = try TranscriptWriter(creatingFileAt: path, header: Self.header)
        try writer.append(.comment("first, 17 bytes"))  // "; first, 17 bytes\n": 18 bytes, within the 20
        #expect {
            try writer.append(.comment("second"))
        } throws: { error in
            guard let e = error as? TranscriptWriteError else { return false }
            return e.code == .writeFailed && e.errorNumber == ENOSPC && e.path == path
                && e.reason == "cannot append to \(path): \(String(cString: strerror(ENOSPC))) (errno 28); the file keeps every line before"
        }
        try writer.appendClosingComment("incomplete: a test\nwith a line feed")
        try writer.close()
        let transcript = try Transcript(contentsOfFile: path)
        #expect(transcript.lines == [.comment("first, 17 bytes"), .comment("incomplete: a test with a line feed")])
    }
}
