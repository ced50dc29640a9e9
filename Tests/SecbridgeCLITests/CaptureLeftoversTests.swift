import Foundation
import Testing

@testable import SecbridgeTools

/// A capture killed with SIGKILL leaves its temporary directory, raw spy log and all; the next
/// capture removes it (docs/secrets.md §3).
@Suite struct CaptureLeftoversTests {
    @Test func theSweepRemovesTheDirectoriesOfCapturesThatAreGoneAndNothingElse() throws {
        let parent = NSTemporaryDirectory() + "secbridge-leftovers-\(getpid())"
        try? FileManager.default.removeItem(atPath: parent)
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: parent) }
        // A process that has ended: its pid names no process now.
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        func directory(_ name: String, owner: String?) throws -> String {
            let path = parent + "/" + name
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            try "raw spy log\n".write(toFile: path + "/pcsc-spy", atomically: false, encoding: .utf8)
            if let owner { try owner.write(toFile: path + "/owner", atomically: false, encoding: .utf8) }
            return path
        }
        let gone = try directory("secbridge-capture-AbC123", owner: "\(ended.processIdentifier)\n")
        let running = try directory("secbridge-capture-DeF456", owner: "\(getpid())\n")
        let unmarked = try directory("secbridge-capture-GhI789", owner: nil)
        let other = try directory("secbridge-capture-test-leftover", owner: "\(ended.processIdentifier)\n")
        CaptureLeftovers.sweep(in: parent)
        #expect(!FileManager.default.fileExists(atPath: gone), "its capture is gone")
        #expect(FileManager.default.fileExists(atPath: running), "its capture still runs")
        #expect(FileManager.default.fileExists(atPath: unmarked), "no owner named: left alone")
        #expect(FileManager.default.fileExists(atPath: other), "not a mkdtemp name")
    }

    @Test func aCaptureDirectoryNamesItsOwner() throws {
        let directory = NSTemporaryDirectory() + "secbridge-owner-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        CaptureLeftovers.markOwner(of: directory)
        #expect(try String(contentsOfFile: directory + "/owner", encoding: .utf8) == "\(getpid())\n")
        let mode = try FileManager.default.attributesOfItem(atPath: directory + "/owner")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}
