import CEditLine

#if canImport(Glibc)
import Glibc
#endif

/// The history of `secbridge shell`: where it is kept and which lines go into it.
package enum ShellHistory {
    /// The most entries kept (in memory and in the file).
    package static let limit = 1000

    /// The history file: `$XDG_STATE_HOME/secbridge/history`, else
    /// `$HOME/.local/state/secbridge/history` (the XDG Base Directory default for state data); nil
    /// without either (no history is kept). A relative XDG_STATE_HOME is ignored, as the XDG Base
    /// Directory Specification 0.8 asks of relative paths (docs/shell.md §2).
    package static func defaultPath(environment: (String) -> String?) -> String? {
        if let state = environment("XDG_STATE_HOME"), state.hasPrefix("/") { return state + "/secbridge/history" }
        if let home = environment("HOME"), home.hasPrefix("/") { return home + "/.local/state/secbridge/history" }
        return nil
    }

    /// Whether `line` is added to the history after `previous`: not blank, not the line just
    /// before it again, and not an APDU carrying a secret (a VERIFY with its PIN, a LOAD KEY with its
    /// key: what ``SecretDisplay/masked`` masks), which a history file would keep in clear.
    package static func keeps(_ line: String, after previous: String?) -> Bool {
        guard line.contains(where: { $0 != " " && $0 != "\t" }) else { return false }
        guard SecretDisplay.masked.argumentText(line) == line else { return false }
        return line != previous
    }

    /// The directories `path` needs, outermost first (`/a/b/history` → `/a`, `/a/b`).
    package static func directories(of path: String) -> [String] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).dropLast()
        var result: [String] = []
        var current = ""
        for part in parts {
            current += "/" + part
            result.append(current)
        }
        return result
    }
}

/// Reads the lines of an interactive `secbridge shell`: with libedit (line editing, history kept in
/// a file) when libedit.so.2 can be opened, else plain lines after a prompt.
package final class LineEditor {
    private let console: any Console
    private let historyPath: String?
    private let edits: Bool
    private var previous: String?
    private var historyFailureShown = false

    /// - Parameter historyPath: the history file, read now and written after every kept line; nil
    ///   keeps no history.
    package init(console: any Console, historyPath: String?) {
        self.console = console
        self.historyPath = historyPath
        edits = ceditline_open() == 0
        if edits {
            // libedit's history is one per process: this editor's starts from the file alone.
            _ = ceditline_clear_history()
            _ = ceditline_stifle_history(Int32(ShellHistory.limit))
            if let historyPath { _ = ceditline_read_history(historyPath) }
            let count = ceditline_history_length()
            if count > 0, let last = ceditline_history_entry(count - 1) { previous = String(cString: last) }
        } else {
            let why = ceditline_error().map { String(cString: $0) } ?? "unknown"
            console.err("secbridge: line editing is off (libedit could not be opened: \(why); install libedit2)\n")
        }
    }

    /// Whether libedit edits the lines.
    package var isEditing: Bool { edits }

    /// One line after `prompt`; nil at the end of input (Ctrl-D). Ctrl-C drops the line being
    /// typed: an empty line.
    package func readLine(prompt: String) -> String? {
        guard edits else {
            console.out(prompt)
            return console.readLine()
        }
        var interrupted: Int32 = 0
        guard let pointer = ceditline_readline_interruptible(prompt, &interrupted) else {
            // Ctrl-C drops the line being typed, as in other shells; Ctrl-D ends.
            if interrupted != 0 {
                console.out("\n")
                return ""
            }
            return nil
        }
        defer { free(pointer) }
        let line = String(cString: pointer)
        remember(line)
        return line
    }

    /// The history, oldest first.
    package var historyEntries: [String] {
        guard edits else { return [] }
        return (0..<max(0, Int(ceditline_history_length()))).compactMap { offset in
            ceditline_history_entry(Int32(offset)).map { String(cString: $0) }
        }
    }

    /// Adds `line` to the history (``ShellHistory/keeps(_:after:)``) and writes the history file.
    package func remember(_ line: String) {
        guard edits else { return }
        guard ShellHistory.keeps(line, after: previous) else { return }
        previous = line
        _ = ceditline_add_history(line)
        guard let historyPath else { return }
        for directory in ShellHistory.directories(of: historyPath) { _ = mkdir(directory, 0o700) }
        if ceditline_write_history(historyPath) != 0 && !historyFailureShown {
            historyFailureShown = true
            console.err("secbridge: cannot write the history file \(historyPath): \(String(cString: strerror(errno))); history is kept for this session only\n")
        }
    }
}
