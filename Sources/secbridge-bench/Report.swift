// The figures of one run: each part prints its figures as it measures them, each with its goal and
// pass/fail, and `--check` exits 1 when a gated figure fails. Only stable figures are gated
// (instruction counts, resident memory, counts of changes, the CPU/wall ratio of a CPU-bound run);
// wall-clock comparisons are printed with their goal but never gate, since on this shared machine
// two runs one after another get different machines.

import Foundation

/// How a figure is judged.
enum Verdict: Equatable {
    case pass
    case fail
    /// A figure without a goal, printed for comparison between runs.
    case info
    /// Not measured: a tool is missing or the part could not run (the reason is printed).
    case skipped(String)

    var word: String {
        switch self {
        case .pass: "pass"
        case .fail: "FAIL"
        case .info: "info"
        case .skipped: "skipped"
        }
    }
}

/// One measured figure with its goal.
struct Figure {
    var part: String
    var name: String
    /// The figure as printed, with its unit.
    var value: String
    /// The goal as printed (`≤ 1.05`, `≤ 64 MB`).
    var goal: String
    var verdict: Verdict
    /// Whether `--check` fails on this figure.
    var gated: Bool
}

/// Collects and prints the figures of one run.
final class Report {
    private(set) var figures: [Figure] = []

    /// Prints a part's heading.
    func part(_ title: String) {
        print("\n== \(title)")
        fflush(nil)
    }

    /// Prints an indented line of detail (per-pair figures, set-up facts).
    func detail(_ text: String) {
        print("   \(text)")
        fflush(nil)
    }

    /// Records and prints one figure: `figure: value (goal …): pass [gated]`.
    func figure(_ part: String, _ name: String, _ value: String, goal: String, passed: Bool, gated: Bool) {
        add(Figure(part: part, name: name, value: value, goal: goal, verdict: passed ? .pass : .fail, gated: gated))
    }

    /// Records and prints a figure without a goal.
    func info(_ part: String, _ name: String, _ value: String) {
        add(Figure(part: part, name: name, value: value, goal: "none", verdict: .info, gated: false))
    }

    /// Records a figure that could not be measured, with the reason.
    func skipped(_ part: String, _ name: String, goal: String, gated: Bool, reason: String) {
        add(Figure(part: part, name: name, value: "—", goal: goal, verdict: .skipped(reason), gated: gated))
    }

    private func add(_ figure: Figure) {
        figures.append(figure)
        let gate = figure.gated ? "gated" : "not gated"
        var line = " * \(figure.name): \(figure.value) (goal \(figure.goal)): \(figure.verdict.word) [\(gate)]"
        if case .skipped(let reason) = figure.verdict { line += " — \(reason)" }
        print(line)
        fflush(nil)
    }

    /// The gated figures that failed, and those that could not be measured.
    var gateFailures: [Figure] { figures.filter { $0.gated && $0.verdict == .fail } }

    /// Prints every figure again as one table.
    func printSummary() {
        print("\n== Summary (\(figures.count) figures; --check gates on the \(figures.filter(\.gated).count) marked gated)")
        for figure in figures {
            let gate = figure.gated ? "gated" : "     "
            print("\(figure.verdict.word.padding(toLength: 7, withPad: " ", startingAt: 0)) \(gate)  \(figure.part) — \(figure.name): \(figure.value) (goal \(figure.goal))")
        }
    }
}

func format(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }

/// `1 234 567`: thousands separated by spaces.
func grouped(_ value: Double) -> String {
    let rounded = Int(value.rounded())
    var digits = String(abs(rounded))
    var groups: [String] = []
    while digits.count > 3 {
        groups.insert(String(digits.suffix(3)), at: 0)
        digits.removeLast(3)
    }
    groups.insert(digits, at: 0)
    return (rounded < 0 ? "−" : "") + groups.joined(separator: " ")
}
