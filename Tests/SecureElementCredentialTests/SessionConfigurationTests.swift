import Foundation
import PCSCCore
import PN53x
import SecbridgeTesting
import Synchronization
import Testing
@testable import SecureElementCredential

/// A PC/SC client that counts its uses and refuses them (SCARD_E_NO_SERVICE): a session on a
/// serial board must not ask it.
private final class CountingClient: PCSCClient {
    let uses = Atomic(0)
    func establishContext() throws(PCSCError) -> any PCSCClientContext {
        uses.add(1, ordering: .relaxed)
        throw PCSCError(code: 0x8010_001D)
    }
}

@Suite("startSession()'s reader: $SECBRIDGE_READER, the configuration file, and a tty: device")
struct SessionConfigurationTests {
    static let file = "/home/ada/.config/secbridge/config"

    @Test("`key = value` lines, comments and blank lines; the reader's file and line are kept")
    func parsing() throws {
        let text = "# secbridge\n\n   # a PN532 board on a USB-serial adapter\r\n  reader=  tty:USB0  \r\n"
        let configuration = try SecbridgeConfiguration(parsing: text, file: Self.file)
        #expect(configuration.reader == "tty:USB0")
        #expect(configuration.readerOrigin == Self.file + ":4")
        let pcsc = try SecbridgeConfiguration(parsing: "reader = ACS ACR122U PICC Interface 00 00 # desk", file: Self.file)
        #expect(pcsc.reader == "ACS ACR122U PICC Interface 00 00 # desk", "a # after a value is part of it")
        #expect(try SecbridgeConfiguration(parsing: "", file: Self.file) == SecbridgeConfiguration())
        #expect(try SecbridgeConfiguration(parsing: "# only a comment\n", file: Self.file).reader == nil)
    }

    @Test("a malformed file is refused naming the file, the line and what to write", arguments: [
        ("reader tty:USB0", 1, "is not a setting: write `key = value`"),
        ("\n\nreaders = tty:USB0", 3, "unknown key 'readers'; the keys are `reader`"),
        ("= tty:USB0", 1, "a setting without a key"),
        ("reader =", 1, "`reader` has no value"),
        ("reader = \"ACS ACR122U PICC Interface 00 00\"", 1, "is quoted: write the name without quotes"),
        ("reader = tty:USB0\n# again\nreader = tty:USB1", 3, "set a second time (first at /home/ada/.config/secbridge/config:1)"),
        ("reader = tty:USB0:arygon", 1, "names the driver 'arygon': only a PN532 board is supported"),
        ("reader = tty:", 1, "'tty:' names no device"),
    ])
    func malformed(text: String, line: Int, says: String) {
        do {
            _ = try SecbridgeConfiguration(parsing: text, file: Self.file)
            Issue.record("taken: \(text)")
        } catch {
            #expect(error.file == Self.file)
            #expect(error.line == line)
            #expect("\(error)".hasPrefix("the configuration file \(Self.file):\(line): "), "\(error)")
            #expect("\(error)".contains(says), "\(error)")
        }
    }

    @Test("the file is $XDG_CONFIG_HOME/secbridge/config, else ~/.config/secbridge/config")
    func path() {
        #expect(SecbridgeConfiguration.path(environment: ["XDG_CONFIG_HOME": "/x", "HOME": "/h"]) == "/x/secbridge/config")
        #expect(SecbridgeConfiguration.path(environment: ["XDG_CONFIG_HOME": "", "HOME": "/h"]) == "/h/.config/secbridge/config")
        #expect(SecbridgeConfiguration.path(environment: ["HOME": "/h"]) == "/h/.config/secbridge/config")
    }

    @Test("$SECBRIDGE_READER beats the file's reader; an empty one does not")
    func precedence() {
        let file = SecbridgeConfiguration(reader: "tty:USB0", readerOrigin: Self.file + ":2")
        let both = SessionDefaults.fromEnvironment(
            ["SECBRIDGE_READER": "ACS ACR122U PICC Interface 00 00"], standardInputIsTerminal: false, configuration: file)
        #expect(both.readerName == "ACS ACR122U PICC Interface 00 00")
        #expect(both.readerOrigin == "SECBRIDGE_READER")
        #expect(both.serialDevice == nil)
        for environment in [[:], ["SECBRIDGE_READER": ""]] {
            let fromFile = SessionDefaults.fromEnvironment(environment, standardInputIsTerminal: false, configuration: file)
            #expect(fromFile.readerName == "tty:USB0")
            #expect(fromFile.readerOrigin == Self.file + ":2")
            #expect(fromFile.serialDevice?.path == "/dev/ttyUSB0")
        }
        let neither = SessionDefaults.fromEnvironment([:], standardInputIsTerminal: false, configuration: SecbridgeConfiguration())
        #expect(neither.readerName == nil)
        #expect(neither.readerOrigin == nil)
    }

    @Test("the file on disk: none is no setting; a malformed one makes checkReader() refuse, naming file and line")
    func loadedFromDisk() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-config-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = ["XDG_CONFIG_HOME": directory]
        #expect(try SecbridgeConfiguration.load(environment: environment) == SecbridgeConfiguration())
        let none = SessionDefaults.fromEnvironment(environment, standardInputIsTerminal: false)
        #expect(none.configurationError == nil)
        try none.checkReader()

        try FileManager.default.createDirectory(atPath: directory + "/secbridge", withIntermediateDirectories: true)
        let file = directory + "/secbridge/config"
        try Data("reader = tty:/dev/ttyUSB0\n".utf8).write(to: URL(fileURLWithPath: file))
        let good = SessionDefaults.fromEnvironment(environment, standardInputIsTerminal: false)
        #expect(good.readerName == "tty:/dev/ttyUSB0")
        #expect(good.readerOrigin == file + ":1")
        #expect(good.serialDevice?.path == "/dev/ttyUSB0")
        let overridden = SessionDefaults.fromEnvironment(environment.merging(["SECBRIDGE_READER": "tty:pts/3"]) { $1 }, standardInputIsTerminal: false)
        #expect(overridden.serialDevice?.path == "/dev/pts/3")

        try Data("# board\nreader: tty:USB0\n".utf8).write(to: URL(fileURLWithPath: file))
        let bad = SessionDefaults.fromEnvironment(environment, standardInputIsTerminal: false)
        #expect(bad.configurationError?.line == 2)
        #expect(throws: CredentialSession.ErrorCode.invalidInput) { try bad.checkReader() }
        do {
            try bad.checkReader()
        } catch {
            #expect(error.reason.contains("\(file):2: 'reader: tty:USB0' is not a setting: write `key = value`"), "\(error)")
        }
        try Data(repeating: 0x23, count: SecbridgeConfiguration.maximumSize + 1).write(to: URL(fileURLWithPath: file))
        #expect(throws: SecbridgeConfigurationError.self) { try SecbridgeConfiguration.load(file: file) }
    }

    @Test("a tty: $SECBRIDGE_READER that names no device is refused, naming the variable")
    func badDeviceInTheEnvironment() {
        let defaults = SessionDefaults.fromEnvironment(
            ["SECBRIDGE_READER": "tty:USB0:arygon"], standardInputIsTerminal: false, configuration: SecbridgeConfiguration())
        #expect(defaults.serialDevice == nil)
        do {
            try defaults.checkReader()
            Issue.record("tty:USB0:arygon was taken")
        } catch {
            #expect(error.code == .invalidInput)
            #expect(error.reason.hasPrefix("SECBRIDGE_READER: 'tty:USB0:arygon' names the driver 'arygon'"), "\(error)")
        }
    }

    @Test("a tty: reader makes the session emulate on the serial board (SerialPN532EmulationBackend), without asking PC/SC")
    func serialSelection() async throws {
        let board = SimulatedSerialPN532(name: "PN532 board (selection test)")
        defer { board.close() }
        let client = CountingClient()
        let opened = Mutex<[String]>([])
        let credential = Credential(id: "uri-tag", secureElement: try exampleElement())
        let session = try await CredentialSession.startSession(
            on: client, readerName: "tty:USB0", credentials: [credential], authorizer: PolicyAuthorizer.approveAll,
            clock: ContinuousSessionClock(), timings: .standard
        ) { device, executor in
            opened.withLock { $0.append(device.path) }
            return await SerialPN532EmulationBackend.open(
                stream: board.line.host, clock: board.clock, readerName: device.description, executor: executor)
        }
        #expect(opened.withLock { $0 } == ["/dev/ttyUSB0"])
        let backend = try #require(await session.options.emulationBackend as? SerialPN532EmulationBackend)
        #expect(backend.readerName == "tty:/dev/ttyUSB0")
        #expect(backend.support == .supported)
        #expect(board.device.receivedCommands == [[0xD4, 0x14, 0x01, 0x00, 0x00]], "woken: SAMConfiguration normal mode")
        #expect(client.uses.load(ordering: .relaxed) == 0)
        await session.invalidate()
        await backend.close()

        // The production opener: a node that does not exist is named, with the check to run.
        await #expect(throws: CredentialSession.ErrorCode.instanceDoesNotExist) {
            _ = try await CredentialSession.startSession(
                on: client, readerName: "tty:/dev/secbridge-no-such-board", credentials: [], authorizer: PolicyAuthorizer.approveAll)
        }
        do {
            _ = try await CredentialSession.startSession(
                on: client, readerName: "tty:/dev/secbridge-no-such-board", credentials: [], authorizer: PolicyAuthorizer.approveAll)
        } catch {
            #expect(error.reason.contains("no serial device /dev/secbridge-no-such-board"), "\(error)")
            #expect(error.reason.contains("secbridge doctor --device tty:/dev/secbridge-no-such-board"), "\(error)")
        }
        await #expect(throws: CredentialSession.ErrorCode.invalidInput) {
            _ = try await CredentialSession.startSession(on: client, readerName: "tty:", credentials: [], authorizer: PolicyAuthorizer.approveAll)
        }
        #expect(client.uses.load(ordering: .relaxed) == 0)
    }

    @Test("isEligible with a tty: reader: the device node decides, and PC/SC is not asked")
    func eligibilityOfASerialReader() async throws {
        let client = CountingClient()
        func eligible(_ reader: String) async throws -> Bool {
            let override = SessionDefaults.Override(
                client: client, readerName: reader, credentials: [], authorizer: PolicyAuthorizer.approveAll)
            return try await SessionDefaults.$override.withValue(override) { try await CredentialSession.isEligible }
        }
        // /dev/null is a character device anyone may read and write: it stands for a port here.
        #expect(try await eligible("tty:/dev/null"))
        #expect(try await !eligible("tty:/dev/secbridge-no-such-board"))
        #expect(try await !eligible("tty:/etc/hostname"), "a regular file is no serial port")
        #expect(try await !eligible("tty:USB0:arygon"), "a name PN532DeviceName refuses")
        #expect(client.uses.load(ordering: .relaxed) == 0)
        // A PC/SC reader's name still asks the client (which refuses: no pcscd).
        await #expect(throws: CredentialSession.ErrorCode.resourceUnavailable) { _ = try await eligible("ACS ACR122U PICC Interface 00 00") }
        #expect(client.uses.load(ordering: .relaxed) == 1)
    }
}
