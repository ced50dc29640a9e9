import Foundation
import PCSCSandbox
import Testing

/// `scripts/install.sh` into a temporary prefix, then the installed copy run from there: `simulate`
/// loads the driver from PREFIX/lib/secbridge (not the build directory), other programs see its
/// readers, `demo` runs; the man pages and completions are in place.
///
/// The script installs the binaries the test runs with (`--bin-path`, the debug build), so the test
/// needs no release build; scripts/install.sh without it builds release.
@Suite(.serialized, .needsPrivatePCSCD) struct InstallTests {
    /// Runs `executable` in `directory`; returns status and both streams (bounded by `timeout`:
    /// it throws when the program ran longer).
    static func run(_ executable: String, _ arguments: [String], in directory: String, environment: [String: String], timeout: Duration = .seconds(120)) async throws
        -> (status: Int32, out: String, err: String)
    {
        // Both streams read as they come; past `timeout` it is killed and the test fails, saying so.
        let child = try BinaryProcess(arguments, environment: environment, executable: URL(fileURLWithPath: executable),
                                      directory: URL(fileURLWithPath: directory), noInput: true)
        try await child.exit(within: timeout, after: "starting")
        return (child.process.terminationStatus, child.finalOutputText(timeout: .seconds(5)), child.finalStandardError(timeout: .seconds(5)))
    }

    /// The environment of an installed copy: no driver override, PATH without the build directory.
    static var cleanEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment[SimulatedReaders.libraryVariable] = nil
        environment["PCSCLITE_CSOCK_NAME"] = nil
        return environment
    }

    @Test func theInstalledCopyRunsSimulateAndDemoFromItsPrefix() async throws {
        try requireBuiltBinaries()
        let build = try secbridgeBinary().deletingLastPathComponent().path
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-install-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let install = try await Self.run(
            "/bin/sh", [try repositoryPath("scripts/install.sh"), "--prefix", prefix, "--bin-path", build], in: "/tmp", environment: Self.cleanEnvironment)
        #expect(install.status == 0, "\(install.err)\n\(install.out)")
        #expect(install.out.contains("install: installed secbridge 0.1.0 under \(prefix)\n"), "\(install.out)")
        let files = FileManager.default
        for file in ["bin/secbridge", "bin/secbridge-tools"] {
            #expect(files.isExecutableFile(atPath: prefix + "/" + file), "\(file)")
        }
        let driver = prefix + "/lib/secbridge/libSecbridgeACR122IFD.so"
        #expect(files.fileExists(atPath: driver))
        // The Swift runtime the driver links, beside it (its runpath ends in $ORIGIN).
        #expect(files.fileExists(atPath: prefix + "/lib/secbridge/libswiftCore.so"))
        let pages = try files.contentsOfDirectory(atPath: prefix + "/share/man/man1")
        #expect(pages.contains("secbridge.1") && pages.contains("secbridge-simulate.1") && pages.contains("secbridge-transcript-redact.1"), "\(pages)")
        let bash = try String(contentsOfFile: prefix + "/share/bash-completion/completions/secbridge", encoding: .utf8)
        #expect(bash.contains("complete -F _secbridge secbridge\n"))
        let zsh = try String(contentsOfFile: prefix + "/share/zsh/site-functions/_secbridge", encoding: .utf8)
        #expect(zsh.hasPrefix("#compdef secbridge\n"))
        #expect(files.fileExists(atPath: prefix + "/share/secbridge/credentials/uri-tag.json"))

        // simulate from the prefix, in a directory outside the clone: the driver pcscd loads is the installed one.
        let secbridge = prefix + "/bin/secbridge"
        let simulate = try BinaryProcess(
            ["simulate", "--json", "--card", "04A1B2C3", "--applet", "t4t-ndef", "--time-scale", "0.01", "--timeout", "60"],
            environment: Self.cleanEnvironment, executable: URL(fileURLWithPath: secbridge), directory: URL(fileURLWithPath: prefix), input: true)
        defer { if simulate.process.isRunning { kill(simulate.process.processIdentifier, SIGKILL) } }  // SIGTERM may be blocked in it
        let first = try await simulate.line(containing: "{")
        let started = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any], "\(first)")
        #expect(started["event"] as? String == "started")
        #expect(started["driver"] as? String == driver)
        let socket = try #require(started["socket"] as? String)
        #expect(socket.hasSuffix("/pcscd.comm"))
        let readers = try #require(started["readers"] as? [[String: Any]])
        #expect(readers.map { $0["reader"] as? String } == ["a", "b"])
        let names = readers.compactMap { $0["name"] as? String }.sorted()
        #expect(names == ["ACS ACR122U PICC Interface 00 00", "ACS ACR122U PICC Interface 01 00"])
        let controlSocket = readers.first?["controlSocket"] as? String ?? ""
        #expect(controlSocket.hasSuffix("/a/control.sock"), "\(controlSocket)")
        var environment = Self.cleanEnvironment
        environment["PCSCLITE_CSOCK_NAME"] = socket
        let listed = try await Self.run(secbridge, ["readers"], in: prefix, environment: environment, timeout: .seconds(20))
        #expect(listed.status == 0, "\(listed.err)")
        #expect(listed.out.contains("ACS ACR122U PICC Interface 00 00") && listed.out.contains("ACS ACR122U PICC Interface 01 00"), "\(listed.out)")
        _ = try await blocking { simulate.stop() }
        #expect(simulate.process.terminationStatus == 0)
        #expect(simulate.output.last == #"{"event":"stopped"}"#)

        // demo from the prefix: its own private pcscd with the installed driver.
        let demo = try await Self.run(secbridge, ["demo", "--json", "--time-scale", "0.01", "--record", prefix + "/demo.trn"], in: prefix, environment: Self.cleanEnvironment)
        #expect(demo.status == 0, "\(demo.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(demo.out.utf8)) as? [String: Any], "\(demo.out)")
        #expect(json["escapeControlCode"] as? String == "0x42000001")
        let ndef = try #require((json["ndef"] as? [[String: Any]])?.first)
        #expect(ndef["uri"] as? String == "https://example.com", "\(ndef)")
        #expect(json["transcript"] as? String == prefix + "/demo.trn")
        #expect(files.fileExists(atPath: prefix + "/demo.trn"))
    }

    @Test func installRefusesUnknownArgumentsAndMissingBuilds() async throws {
        let script = try repositoryPath("scripts/install.sh")
        let unknown = try await Self.run("/bin/sh", [script, "--prefx", "/tmp/x"], in: "/tmp", environment: Self.cleanEnvironment)
        #expect(unknown.status == 64)
        #expect(unknown.err == "install: unknown argument '--prefx'; use --prefix DIR or --bin-path DIR\n")
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-empty-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let missing = try await Self.run("/bin/sh", [script, "--prefix", empty + "/prefix", "--bin-path", empty], in: "/tmp", environment: Self.cleanEnvironment)
        #expect(missing.status == 1)
        #expect(missing.err == "install: \(empty)/secbridge is missing; build first (swift build -c release)\n")
        #expect(!FileManager.default.fileExists(atPath: empty + "/prefix"), "nothing installed")
    }
}
