import PCSCCore

/// One node of the command tree: a command with options, or a group of subcommands.
public struct Command: Sendable {
    package let name: String
    package let abstract: String
    /// Usage line(s) after "secbridge NAME", e.g. "[--reader NAME|INDEX] [--json] HEX…".
    package let usage: String
    /// The discussion, made when help or a man page shows it: some are built from tables (e.g.
    /// `simulate`'s personalities, 0.15 M instructions) that no other run needs, and the whole
    /// tree is built at every start (docs/benchmarks.md §11).
    package var discussion: String { makeDiscussion() }
    private let makeDiscussion: @Sendable () -> String
    package let options: [OptionSpec]
    package let subcommands: [Command]
    package let run: (@Sendable (Invocation) throws -> Int32)?
    /// A stand-in for a command of `secbridge-tools`: the whole command line goes there.
    package let delegatesToTools: Bool

    package init(
        name: String, abstract: String, usage: String = "", discussion: @autoclosure @escaping @Sendable () -> String = "",
        options: [OptionSpec] = [], subcommands: [Command] = [],
        run: (@Sendable (Invocation) throws -> Int32)? = nil
    ) {
        self.name = name
        self.abstract = abstract
        self.usage = usage
        self.makeDiscussion = discussion
        self.options = options
        self.subcommands = subcommands
        self.run = run
        self.delegatesToTools = false
    }

    package init(name: String, abstract: String, delegatesToTools: Bool) {
        self.name = name
        self.abstract = abstract
        self.usage = ""
        self.makeDiscussion = { "" }
        self.options = []
        self.subcommands = []
        self.run = nil
        self.delegatesToTools = delegatesToTools
    }

    /// The help text: abstract, usage, discussion, subcommands and options.
    package func help(path: [String]) -> String {
        let full = (["secbridge"] + path).joined(separator: " ")
        var text = "OVERVIEW: \(abstract)\n\nUSAGE: \(full)"
        if !subcommands.isEmpty {
            text += " <subcommand>"
        }
        if !usage.isEmpty { text += " " + usage }
        text += "\n"
        if !discussion.isEmpty { text += "\n" + discussion + "\n" }
        if !subcommands.isEmpty {
            text += "\nSUBCOMMANDS:\n"
            let width = subcommands.map(\.name.count).max() ?? 0
            for command in subcommands {
                text += "  " + command.name.padding(width) + "  " + command.abstract + "\n"
            }
            text += "\n  See '\(full) <subcommand> --help' for details.\n"
        }
        let allOptions = options + [.flag("help", short: "h", "Show help information.")]
        text += "\nOPTIONS:\n"
        let labels = allOptions.map { option -> String in
            var label = option.short.map { "-\($0), " } ?? ""
            label += "--" + option.name
            if let value = option.valueName { label += " <\(value)>" }
            return label
        }
        let width = labels.map(\.count).max() ?? 0
        for (label, option) in zip(labels, allOptions) {
            text += "  " + label.padding(width) + "  " + option.help + "\n"
        }
        return text
    }
}

/// What a running command receives: its parsed arguments, the console, and its place in the tree.
package struct Invocation: Sendable {
    package let arguments: ParsedArguments
    package let console: any Console
    package let path: [String]
    /// How the command reaches readers: pcsc-lite, or the in-process client in tests.
    package let client: any PCSCClient
    /// How much the 60 s card-emulation window is shrunk: 1 on a real desk; in tests on simulated
    /// readers e.g. 0.02, so a test of a whole window takes 1.2 s (other session rules keep real time).
    package let timeScale: Double
    /// Every `--record` file this run writes, finished by the dispatch when the command returns
    /// (``RecordingLedger``: one rule for a recording that cannot be written).
    package let recordings: RecordingLedger

    package init(
        arguments: ParsedArguments, console: any Console, path: [String], client: any PCSCClient, timeScale: Double = 1,
        recordings: RecordingLedger? = nil
    ) {
        self.arguments = arguments
        self.console = console
        self.path = path
        self.client = client
        self.timeScale = timeScale
        self.recordings = recordings ?? RecordingLedger(console: console)
    }

    package var json: Bool { arguments.has("json") }

    /// The same invocation writing to `console`.
    package func with(console: any Console) -> Invocation {
        Invocation(arguments: arguments, console: console, path: path, client: client, timeScale: timeScale, recordings: recordings)
    }

    package func out(_ line: String) { console.out(line + "\n") }
}

extension String {
    package func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
