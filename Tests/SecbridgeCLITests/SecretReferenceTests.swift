import Foundation
import SecbridgeTesting
import Testing

@testable import SecbridgeCLI

/// Keys and PIN-carrying APDUs given by reference (env:NAME, file:PATH, -), so they stay out of
/// argv, which every local user reads in /proc/PID/cmdline.
@Suite struct SecretReferenceTests {
    private let keyOption = OptionSpec.value("key", "HEX12", "The key.").secret()

    @Test func aSecretOptionTakesAnEnvironmentVariableAFileOrALineOfStandardInput() throws {
        let variable = "SECBRIDGE_TEST_KEY_\(getpid())"
        setenv(variable, "A0A1A2A3A4A5", 1)
        defer { unsetenv(variable) }
        #expect(try parseArguments(["--key", "env:\(variable)"], options: [keyOption]).value("key") == "A0A1A2A3A4A5")

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-key-\(getpid())").path
        try "  FFFFFFFFFFFF  \nsecond line ignored\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try parseArguments(["--key", "file:\(path)"], options: [keyOption]).value("key") == "FFFFFFFFFFFF")

        #expect(try parseArguments(["--key", "-"], options: [keyOption], standardInput: { "D3F7D3F7D3F7\r" }).value("key") == "D3F7D3F7D3F7")
        // A literal value is taken as it is.
        #expect(try parseArguments(["--key", "FFFFFFFFFFFF"], options: [keyOption]).value("key") == "FFFFFFFFFFFF")
        // Options that are not secrets never resolve references.
        let record = OptionSpec.value("record", "FILE", "A transcript.")
        #expect(try parseArguments(["--record", "env:\(variable)"], options: [record]).value("record") == "env:\(variable)")
    }

    @Test func aReferenceThatLeadsNowhereIsAUsageErrorThatNeverShowsASecret() {
        func refusal(_ arguments: [String], input: String? = nil) -> String? {
            do {
                _ = try parseArguments(arguments, options: [keyOption], standardInput: { input })
                return nil
            } catch {
                return error.message
            }
        }
        #expect(refusal(["--key", "env:SECBRIDGE_SURELY_UNSET_\(getpid())"])
            == "--key env:SECBRIDGE_SURELY_UNSET_\(getpid()): the environment variable SECBRIDGE_SURELY_UNSET_\(getpid()) is not set or empty; export it first")
        #expect(refusal(["--key", "env:"]) == "--key env: needs a variable name, e.g. env:SECBRIDGE_KEY")
        #expect(refusal(["--key", "file:/nonexistent/secbridge-key"])?.hasPrefix("--key file:/nonexistent/secbridge-key: ") == true)
        #expect(refusal(["--key", "-"])?.hasPrefix("--key -: standard input gave no line") == true)
        #expect(refusal(["--key", "-"], input: "   ")?.hasPrefix("--key -: standard input gave no line") == true)
    }

    /// A key file that is a directory, or far larger than a key, is refused in words about a
    /// key file (they spoke of transcripts: "give the path of a transcript file").
    @Test func aDirectoryOrAHugeFileAsAKeyFileIsRefusedInTheWordsOfAKeyFile() throws {
        func refusal(_ reference: String) -> String? {
            do {
                _ = try parseArguments(["--key", reference], options: [keyOption])
                return nil
            } catch {
                return error.message
            }
        }
        let directory = FileManager.default.temporaryDirectory.path
        let notAFile = refusal("file:\(directory)")
        #expect(notAFile == "--key file:\(directory): \(directory) is not a regular file: give the path of a file whose first line holds the value")
        let path = directory + "/secbridge-huge-key-\(getpid())"
        try String(repeating: "FF", count: 40_000).write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let huge = refusal("file:\(path)")
        #expect(huge == "--key file:\(path): \(path) is larger than 65536 bytes: not a key or APDU this tool reads")
    }

    /// A binary file as a key or APDU is refused by what it holds, and its bytes are never echoed
    /// (send echoed them raw: "APDU 1 ('\u{0}\u{1}\u{2}binary') is not valid hex").
    @Test func aBinaryFileIsRefusedWithoutEchoingItsBytes() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-binary-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        func refusal() -> String? {
            do {
                _ = try parseArguments(["--key", "file:\(path)"], options: [keyOption])
                return nil
            } catch {
                return error.message
            }
        }
        try Data([0x00, 0x01, 0x02, 0x41, 0x0A]).write(to: URL(fileURLWithPath: path))
        #expect(refusal() == "--key file:\(path): the file's first line holds the control character 0x00 (a binary file?); write the value in hex, on the first line")
        try Data([0xFF, 0xFE, 0x41, 0x0A]).write(to: URL(fileURLWithPath: path))
        #expect(refusal() == "--key file:\(path): the file's first line is not UTF-8 text; write the value in hex, on the first line")
        // A key file written on Windows (CR LF) is still text.
        try Data("FFFFFFFFFFFF\r\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try parseArguments(["--key", "file:\(path)"], options: [keyOption]).value("key") == "FFFFFFFFFFFF")
    }

    /// `send`'s messages name the reference once ("the APDU file:P file:P: …" named it twice).
    @Test func sendNamesAnAPDUReferenceOnce() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-empty-apdu-\(getpid())").path
        try Data().write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let empty = try await runTool(["send", "--reader", "0", "file:\(path)"], on: desk)
        #expect(empty.status == 64)
        #expect(empty.err.hasPrefix("secbridge: error: the APDU file:\(path): the file's first line is empty\n"), "\(empty.err)")
        let noLine = try await runTool(["send", "--reader", "0", "-"], on: desk)
        #expect(noLine.err.hasPrefix("secbridge: error: the APDU -: standard input gave no line; pipe the value in (e.g. `… - < file`)"), "\(noLine.err)")
    }

    /// The help of a secret option says how to keep it out of the process list.
    @Test func theHelpOfASecretOptionNamesTheReferences() {
        #expect(keyOption.help == "The key. Also env:NAME, file:PATH or - (one line of standard input): keeps it out of the process list.")
        #expect(keyOption.isSecret)
    }

    /// `send` takes an APDU by reference too: a VERIFY never needs to be in argv.
    @Test func sendTakesAnAPDUFromAFileOrStandardInput() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF, id: "card"))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-apdu-\(getpid())").path
        try "00A4040007D276000085010100\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        // The NDEF Tag Application SELECT (docs/iso14443-t4t-ndef.md §4) answers 90 00.
        let fromFile = try await runTool(["send", "--reader", "0", "file:\(path)"], on: desk)
        #expect(fromFile.status == 0, "\(fromFile.err)")
        #expect(fromFile.out.contains("> 00 A4 04 00 07 D2 76 00 00 85 01 01 00\n< 90 00\n"), "\(fromFile.out)")
        let fromInput = try await runTool(["send", "--reader", "0", "-"], on: desk, input: ["00 A4 04 00 07 D2 76 00 00 85 01 01 00"])
        #expect(fromInput.status == 0, "\(fromInput.err)")
        #expect(fromInput.out.contains("< 90 00\n"), "\(fromInput.out)")
    }

    /// `read --key env:NAME` authenticates with the key from the environment (a MIFARE Classic 1K
    /// with the transport key FF…FF, block 4 read with key A).
    @Test func readTakesAMifareKeyFromTheEnvironment() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        try desk.control(.placeTag(uid: [0x04, 0xA1, 0xB2, 0xC3], .classic(.classic1K), id: "mf"))
        let variable = "SECBRIDGE_TEST_MIFARE_KEY_\(getpid())"
        setenv(variable, "FFFFFFFFFFFF", 1)
        defer { unsetenv(variable) }
        let read = try await runTool(["read", "--reader", desk.names[0], "--key", "env:\(variable)", "--blocks", "4"], on: desk)
        #expect(read.status == 0, "\(read.err)")
        // Load Keys with the key masked, then block 4 of a fresh card: 16 zero bytes.
        #expect(read.out.contains("> FF 82 00 00 06 [REDACTED 6]\n< 90 00\n"), "\(read.out)")
        #expect(read.out.contains("block   4 (sector  1): 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"), "\(read.out)")
        #expect(!read.out.contains("FF FF FF FF FF FF"), "the key is never shown: \(read.out)")
    }
}
