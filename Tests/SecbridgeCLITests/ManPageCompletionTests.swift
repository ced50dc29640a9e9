import Foundation
import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// The man pages and shell completions generated from the command tree (`--generate-man`,
/// `--generate-completion`): one page per command, rendered by the system's groff and man without
/// a warning; completions that bash and zsh load and that offer the tree's subcommands, options and
/// option values.
@Suite struct ManPageCompletionTests {
    static let root = SecbridgeCLI.makeRoot(toolCommands: SecbridgeTools.commands)

    /// Every command path of the full tree.
    static var paths: [[String]] {
        func paths(_ command: Command, _ path: [String]) -> [[String]] {
            [path] + command.subcommands.flatMap { paths($0, path + [$0.name]) }
        }
        return paths(root, [])
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-man-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Runs `executable` with `arguments`; returns status, standard output and standard error.
    static func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> (status: Int32, out: String, err: String) {
        try await runChild(URL(fileURLWithPath: executable), arguments, environment: environment)  // bounded, both pipes read at once
    }

    @Test func generateManWritesOnePagePerCommandAndSubcommand() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = run(["--generate-man", directory.path])
        #expect(result.status == 0, "\(result.err)")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        let expected = Self.paths.map { (["secbridge"] + $0).joined(separator: "-") + ".1" }.sorted()
        #expect(files == expected)
        #expect(files.contains("secbridge-transcript-show.1"))
        #expect(files.contains("secbridge-write-ndef.1"))
    }

    /// The structure of one leaf page and one group page, as groff_man(7) reads it.
    @Test func aPageHasTheManSectionsAndEveryOption() throws {
        let send = try #require(ManPages.pages(root: Self.root).first { $0.fileName == "secbridge-send.1" }).text
        let lines = send.split(separator: "\n").map(String.init)
        #expect(lines.contains(#".TH "SECBRIDGE\-SEND" 1 "" "secbridge 0.1.0" "User Commands""#))
        let name = try #require(lines.firstIndex(of: ".SH NAME"))
        #expect(lines[name + 1] == #"secbridge\-send \- "# + ManPages.escaped(SecbridgeCLI.sendCommand.abstract))
        for section in [".SH SYNOPSIS", ".SH DESCRIPTION", ".SH OPTIONS", ".SH SEE ALSO"] {
            #expect(lines.contains(section), "\(section)")
        }
        #expect(lines.contains(#"\fB\-r\fR, \fB\-\-reader\fR \fINAME|INDEX\fR"#))
        #expect(lines.contains(#"\fB\-h\fR, \fB\-\-help\fR"#))
        #expect(lines.last == #"\fBsecbridge\fR(1)"#)
        let transcript = try #require(ManPages.pages(root: Self.root).first { $0.fileName == "secbridge-transcript.1" }).text
        #expect(transcript.contains(".SH COMMANDS\n.TP\n.B import\\-spy\n"))
        #expect(transcript.contains(#"See \fBsecbridge\-transcript\-show\fR(1)."#))
    }

    /// A discussion line starting with `.` would be a roff request; a backslash an escape.
    @Test func roffSpecialCharactersAreEscaped() {
        #expect(ManPages.escaped(".trn files") == #"\&.trn files"#)
        #expect(ManPages.escaped(#"a\b --json"#) == #"a\eb \-\-json"#)
        #expect(ManPages.body("One\nparagraph.\n\nExample:\n  $ secbridge readers\n  0: ACS\nAfter.")
            == "One\nparagraph.\n.PP\nExample:\n.RS 2\n.nf\n$ secbridge readers\n0: ACS\n.fi\n.RE\nAfter.\n")
    }

    /// groff with every warning on (`-ww`; `-k`: the text through preconv, as man does) finds nothing to complain about in any page, and
    /// `man -l` renders the page of `read` with its name line and options.
    @Test func everyPageRendersWithoutAWarning() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/groff") else {
            Issue.record("groff (Debian package groff-base) is not installed: the man pages cannot be checked")
            return
        }
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try ManPages.write(root: Self.root, to: directory.path)
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let result = try await Self.runProcess("/usr/bin/groff", ["-k", "-man", "-Tutf8", "-ww", "-z", directory.appendingPathComponent(file).path])
            #expect(result.status == 0 && result.err.isEmpty, "\(file): \(result.err)")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/man") else { return }
        let rendered = try await Self.runProcess(
            "/usr/bin/man", ["-l", directory.appendingPathComponent("secbridge-read.1").path],
            environment: ["MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"])
        #expect(rendered.status == 0, "\(rendered.err)")
        // Hyphens as ASCII, and justified text's runs of spaces as one.
        let text = rendered.out.replacingOccurrences(of: "\u{2010}", with: "-").replacingOccurrences(of: "\u{2212}", with: "-")
            .split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        #expect(text.contains("secbridge-read - A reader session"), "\(text.prefix(400))")
        #expect(text.contains("--aid HEX"), "\(text.prefix(2000))")
        #expect(text.contains("SEE ALSO"))
    }

    /// Sources the bash script and calls `_secbridge` as bash's programmable completion does.
    static func bashComplete(_ words: [String], script: String) async throws -> [String] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secbridge-completion-\(UUID().uuidString).bash")
        try script.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let quoted = words.map { "'" + $0 + "'" }.joined(separator: " ")
        let command = """
            source '\(file.path)' || exit 3
            cd '\(FileManager.default.temporaryDirectory.path)'
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
            _secbridge
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let result = try await runProcess("/bin/bash", ["--norc", "--noprofile", "-c", command])
        #expect(result.status == 0 && result.err.isEmpty, "\(result.err)")
        return result.out.split(separator: "\n").map(String.init)
    }

    @Test func bashCompletesSubcommandsOptionsAndValues() async throws {
        let script = try #require(Completions.script(for: "bash", root: Self.root))
        let top = try await Self.bashComplete(["secbridge", ""], script: script)
        #expect(top == Self.root.subcommands.map(\.name))
        #expect(try await Self.bashComplete(["secbridge", "tr"], script: script) == ["transcript"])
        #expect(try await Self.bashComplete(["secbridge", "transcript", "s"], script: script) == ["show", "stats"])
        #expect(try await Self.bashComplete(["secbridge", "send", "--re"], script: script) == ["--reader", "--record"])
        #expect(try await Self.bashComplete(["secbridge", "simulate", "--personality", "ccid"], script: script)
            == ["ccid-escape-enabled", "ccid-escape-disabled"])
        #expect(try await Self.bashComplete(["secbridge", "simulate", "--readers", ""], script: script) == ["1", "2"])
        // An option's value is not taken for a subcommand: `--reader transcript` stays at the root… of `send`.
        #expect(try await Self.bashComplete(["secbridge", "send", "--reader", "transcript", "--j"], script: script) == ["--json"])
        // --credential FILE: files of the current directory (the test's temporary directory).
        let marker = "secbridge-completion-marker-\(UUID().uuidString).json"
        let markerPath = FileManager.default.temporaryDirectory.appendingPathComponent(marker)
        try "{}".write(to: markerPath, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: markerPath) }
        #expect(try await Self.bashComplete(["secbridge", "demo", "--credential", "secbridge-completion-marker-"], script: script) == [marker])
        // A transcript subcommand's FILE argument: files too.
        #expect(try await Self.bashComplete(["secbridge", "transcript", "show", "secbridge-completion-marker-"], script: script) == [marker])
    }

    @Test func zshScriptLoadsAndCompletesThroughCompsys() async throws {
        let script = try #require(Completions.script(for: "zsh", root: Self.root))
        #expect(script.hasPrefix("#compdef secbridge\n"))
        #expect(script.contains("_secbridge_transcript_show() {\n"))
        #expect(script.contains(#"'(-r --reader)'{-r,--reader}'[The reader\: an index from `secbridge readers` or part of its name.]:NAME|INDEX: '"#))
        #expect(script.contains(#"'--personality[The readers'\''"#))
        #expect(script.contains("(ccid-escape-enabled ccid-escape-disabled acs-driver legacy-t0 atr-whole-ats empty-target-wait acr122u203 acr122u214 acr122u215 acr122u216 clone touchatag)"))
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/zsh") else {
            Issue.record("zsh is not installed (scripts/install-deps.sh installs it): the zsh completion cannot be loaded")
            return
        }
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try script.write(to: directory.appendingPathComponent("_secbridge"), atomically: true, encoding: .utf8)
        let syntax = try await Self.runProcess("/usr/bin/zsh", ["-n", directory.appendingPathComponent("_secbridge").path])
        #expect(syntax.status == 0 && syntax.err.isEmpty, "\(syntax.err)")
        // compinit finds the function through fpath and binds it to `secbridge`.
        let load = try await Self.runProcess("/usr/bin/zsh", ["-f", "-c", """
            fpath=('\(directory.path)' $fpath); autoload -Uz compinit; compinit -u -d '\(directory.path)/zcompdump'
            print -r -- $_comps[secbridge]
            """])
        #expect(load.status == 0, "\(load.err)")
        #expect(load.out == "_secbridge\n", "\(load.out) \(load.err)")
        // Completion as a user gets it: an interactive zsh on a pseudo-terminal (zsh/zpty), a word
        // typed with Tab, then Ctrl-A and `print DONE: ` before it, so the completed line is printed.
        // Each read waits for its pattern (bounded by the process's own 20 s timeout).
        let typed = ["secbridge transcr", "secbridge simulate --personality ccid-escape-d", "secbridge demo --cred"]
        var driver = """
            zmodload zsh/zpty
            zpty z zsh -f -i
            zpty -w z "PS1='%% '; fpath=('\(directory.path)' \\$fpath); autoload -Uz compinit; compinit -u -d '\(directory.path)/zcompdump'; print RE''ADY"
            zpty -r z out '*READY*'

            """
        for words in typed {
            driver += """
                zpty -w -n z "\(words)"$'\\t'$'\\x01'"print DO''NE: "$'\\n'
                zpty -r z out '*DONE: secbridge*'$'\\r'
                print -r -- "${${out##*DONE: }%%$'\\r'*}"

                """
        }
        driver += "zpty -d z\n"
        let file = directory.appendingPathComponent("drive.zsh")
        try driver.write(to: file, atomically: true, encoding: .utf8)
        let completed = try await Self.runProcess("/usr/bin/timeout", ["20", "/usr/bin/zsh", "-f", file.path])
        #expect(completed.status == 0, "\(completed.err)")
        #expect(completed.out.split(separator: "\n").map(String.init) == [
            "secbridge transcript", "secbridge simulate --personality ccid-escape-disabled", "secbridge demo --credential",
        ], "\(completed.out)")
    }

    @Test func unknownShellAndMissingDirectoryAreRefused() throws {
        let shell = run(["--generate-completion", "fish"])
        #expect(shell.status == 64)
        #expect(shell.err.hasPrefix("secbridge: error: --generate-completion takes bash or zsh, not 'fish'\n"))
        let missing = run(["--generate-man", "/nonexistent/secbridge-man"])
        #expect(missing.status == 1)
        #expect(missing.err == "secbridge: error: --generate-man takes an existing directory, not '/nonexistent/secbridge-man'\n")
    }
}
