import Foundation
import PCSCSandbox
import SecbridgeTesting
import Testing

// Issue 15, "Secrets", done-when, through the `secbridge` binary and a private pcscd (vpcd and
// vicc): `send` and `capture` of a session that sends a PIN and a cryptogram; every artefact —
// standard output and error, --json, the transcripts with their headers, capture's output, what
// is left in /tmp — grepped for the secret bytes (docs/secrets.md §5). The in-process paths
// (run, shell, read --key, write-dump, emulate, read --pn532) are SecbridgeCLITests/SecretLeakTests.swift.

extension SharedReader {
    @Suite struct SecretLeakEndToEndTests {
        /// "Kq7#Zx": an alphanumeric PIN, greppable as text.
        static let pin: [UInt8] = [0x4B, 0x71, 0x37, 0x23, 0x5A, 0x78]
        static let cryptogram: [UInt8] = [0xC3, 0x1F, 0x8A, 0x60, 0x5E, 0x92, 0x47, 0xB8, 0x0D, 0xE6, 0x39, 0xA4, 0x71, 0xF2, 0x8C, 0x55]

        static func hexText(_ bytes: [UInt8], separator: String = " ") -> String { SecretScan.hexText(bytes, separator: separator) }
        static let verify = "0020008108" + hexText(pin, separator: "") + "FFFF"
        static let externalAuthenticate = "8482330010" + hexText(cryptogram, separator: "")

        /// The PIN and the cryptogram, in any form (SecretScan).
        static func leaks(in text: String, what: String) -> [String] {
            SecretScan([("PIN", pin), ("cryptogram", cryptogram)]).leaks(in: text, what: what)
        }

        /// Every regular file under `directory` (one level deep), by path.
        static func files(in directory: String) throws -> [String: String] {
            var result: [String: String] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
                let path = directory + "/" + name
                result[path] = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data(), as: UTF8.self)
            }
            return result
        }

        /// An empty scratch directory for one test, named so that `leftoverCaptureDirectories()` skips it.
        static func scratch(_ name: String) throws -> String {
            let dir = NSTemporaryDirectory() + "secbridge-capture-test-\(name)-\(getpid())"
            try? FileManager.default.removeItem(atPath: dir)
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            return dir
        }

        @Test(.enabled(if: spyInstalled, "pcsc-spy is not installed (package libpcsclite-dev)"))
        func sendAndCaptureLeaveNoSecretInAnyArtefact() async throws {
            let environment = try await sharedEnvironment()
            let dir = try Self.scratch("secrets")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let binary = try secbridgeBinary().path
            let reader = environment.vpcdReaderName
            let before = leftoverCaptureDirectories()
            var outputs: [(String, String)] = []
            func run(_ arguments: [String]) async throws -> Int32 {
                let result = try await runBinary(arguments, environment: ProcessInfo.processInfo.environment, timeout: .seconds(60))
                outputs.append(("\(arguments.prefix(2)) stdout", result.out))
                outputs.append(("\(arguments.prefix(2)) stderr", result.err))
                return result.status
            }
            // send, text and --json, recorded.
            #expect(try await run(["send", "--reader", reader, "--record", dir + "/send.trn", Self.verify, Self.externalAuthenticate]) == 0)
            #expect(try await run(["send", "--reader", reader, "--json", "--record", dir + "/send-json.trn", Self.verify]) == 0)
            // A malformed VERIFY: a usage error that names the APDU.
            #expect(try await run(["send", "--reader", reader, "0020008108" + Self.hexText(Array(Self.pin.prefix(4)), separator: "")]) == 64)
            // capture of send: the APDU in the program's command line, and a PIN after --pin in a
            // shell command line, as the header's source and --json's command show them.
            #expect(try await run(["capture", "-o", dir + "/capture.trn", "--json", "--", binary, "send", "--reader", reader, Self.verify]) == 0)
            #expect(try await run(["capture", "-o", dir + "/capture-sh.trn", "--", "/bin/sh", "-c",
                                   "\(binary) send --reader '\(reader)' \(Self.externalAuthenticate) ; true --pin Kq7#Zx"]) == 0)
            let capture = try String(contentsOfFile: dir + "/capture.trn", encoding: .utf8)
            #expect(capture.contains("> 00 20 00 81 08 [REDACTED 8]\n"), "\(capture)")
            #expect(capture.contains("# source: secbridge capture -- \(binary) send --reader \(reader) 0020008108[REDACTED 8] ("), "\(capture)")
            let shell = try String(contentsOfFile: dir + "/capture-sh.trn", encoding: .utf8)
            #expect(shell.contains("--pin [REDACTED]"), "\(shell)")
            #expect(shell.contains("> 84 82 33 00 10 [REDACTED 16]\n"), "\(shell)")

            var leaks: [String] = []
            for (what, text) in outputs { leaks += Self.leaks(in: text, what: what) }
            let files = try Self.files(in: dir)
            #expect(files.count == 4, "\(files.keys.sorted())")
            for (path, text) in files { leaks += Self.leaks(in: text, what: path) }
            #expect(leaks.isEmpty, "\(leaks)")
            #expect(leftoverCaptureDirectories().subtracting(before).isEmpty, "capture's temporary directory with the raw spy log was removed")
        }

        /// Issue 30, item 1: capture of programs given the VERIFY each way they take APDUs — one
        /// word per byte (`send`'s own help), one spaced string, opensc-tool's colons, a script
        /// file (`secbridge run FILE`, scriptor) and a script inside `sh -c` (printf into
        /// `secbridge run -`); opensc-tool and scriptor print what they send, so their output is
        /// sent away (capture's own output is what is checked). The headers show
        /// the VERIFY masked, nothing of capture holds the PIN, and capture prints nothing about
        /// its own plumbing: the 1.9.9 spy's `libpcsclite_nospy.so.1: cannot open shared object
        /// file` line (its load_lib's printf of dlerror, in preload mode) is gone.
        @Test(.enabled(if: spyInstalled, "pcsc-spy is not installed (package libpcsclite-dev)"))
        func captureMasksTheAPDUsEachWayAProgramTakesThem() async throws {
            let environment = try await resetSimulatedReaders()  // the ACR122Us empty: opensc-tool and scriptor pick vicc's card
            let dir = try Self.scratch("ways")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let binary = try secbridgeBinary().path
            let reader = environment.vpcdReaderName
            let words = ["00", "20", "00", "81", "08"] + Self.pin.map { Self.hexText([$0]) } + ["FF", "FF"]
            let spaced = words.joined(separator: " ")
            let script = dir + "/verify.apdu"
            try "# VERIFY\n\(spaced)\n".write(toFile: script, atomically: true, encoding: .utf8)
            var programs: [(name: String, command: [String], source: String)] = [
                ("words", [binary, "send", "--reader", reader] + words,
                 "\(binary) send --reader \(reader) 00 20 00 81 08 [REDACTED 8]"),
                ("string", [binary, "send", "--reader", reader, spaced],
                 "\(binary) send --reader \(reader) 00 20 00 81 08 [REDACTED 8]"),
                ("run-file", [binary, "run", "--reader", reader, script], "\(binary) run --reader \(reader) \(script)"),
                ("sh-run", ["/bin/sh", "-c", "printf '\(spaced)\\n' | \(binary) run --reader '\(reader)' -"],
                 "/bin/sh -c printf '00 20 00 81 08 [REDACTED 8]\\n' | \(binary) run --reader '\(reader)' -"),
            ]
            if openscInstalled {
                // Its output (the APDU it sends, in clear) sent away: only capture's own is checked.
                programs.append(("opensc-tool", ["/bin/sh", "-c", "opensc-tool -r '\(reader)' -s \(words.joined(separator: ":")) > /dev/null"],
                                 "/bin/sh -c opensc-tool -r '\(reader)' -s 00:20:00:81:08:[REDACTED 8] > /dev/null"))
            }
            if FileManager.default.isExecutableFile(atPath: "/usr/bin/scriptor") {
                programs.append(("scriptor", ["/bin/sh", "-c", "scriptor -r '\(reader)' \(script) > /dev/null"],
                                 "/bin/sh -c scriptor -r '\(reader)' \(script) > /dev/null"))
            }
            var leaks: [String] = []
            for program in programs {
                for json in [false, true] {
                    let file = dir + "/\(program.name)\(json ? "-json" : "").trn"
                    let result = try await runBinary(["capture", "-o", file] + (json ? ["--json"] : []) + ["--"] + program.command,
                                                     environment: ProcessInfo.processInfo.environment, timeout: .seconds(60))
                    #expect(result.status == 0, "\(program.name): \(result.err)")
                    let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
                    #expect(text.contains("# source: secbridge capture -- \(program.source) ("), "\(program.name): \(text)")
                    #expect(text.contains("> 00 20 00 81 08 [REDACTED 8]\n"), "\(program.name): \(text)")
                    for (what, output) in [("stdout", result.out), ("stderr", result.err), ("transcript", text)] {
                        leaks += Self.leaks(in: output, what: "\(program.name) \(json ? "--json " : "")\(what)")
                        #expect(!output.contains("libpcsclite_nospy") && !output.contains("shared object"), "\(program.name) \(what): \(output)")
                    }
                    if json {
                        #expect(result.out.contains("\"redacted\": 1"), "\(program.name): \(result.out)")
                    }
                }
            }
            #expect(leaks.isEmpty, "\(leaks)")
        }
    }
}
