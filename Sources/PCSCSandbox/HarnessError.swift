import Foundation
import PCSCCore

/// A failure of the test harness: a missing dependency, a process that would not start or stop,
/// a wait that ran out of time.
///
/// The ``code`` is an open set (unknown codes still fit); equality compares the code only, so tests
/// can match `HarnessError(code: .timeout, reason: "")` without spelling the reason. ``reason`` says
/// what was wrong and what to do; ``logTail`` carries the last lines a failing process wrote.
public struct HarnessError: CodedError {
    /// The kind of failure. Open: new codes can be added without breaking callers.
    public struct Code: ErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A tool, package or the vicc virtual environment is missing: run `scripts/install-deps.sh`.
        public static let missingDependency = Code(rawValue: "missingDependency")
        /// The host refuses what the harness needs (a mount namespace without root).
        public static let notPermitted = Code(rawValue: "notPermitted")
        /// A reader.conf entry or an argument is unusable (relative path, bad characters).
        public static let invalidConfiguration = Code(rawValue: "invalidConfiguration")
        /// A process could not be launched, or exited while the harness waited for it.
        public static let launchFailed = Code(rawValue: "launchFailed")
        /// A bounded wait ran out (readiness, card insertion or removal, process exit).
        public static let timeout = Code(rawValue: "timeout")
        /// The shared environment already runs with a different configuration.
        public static let alreadyStarted = Code(rawValue: "alreadyStarted")
    }

    public let code: Code
    /// What went wrong and what to do about it.
    public let reason: String
    /// The last lines of the relevant process log, when there is one.
    public let logTail: String?

    /// An error with its code, a reason that says what went wrong and what to do, and the tail of the
    /// process log concerned when there is one.
    public init(code: Code, reason: String, logTail: String? = nil) {
        self.code = code
        self.reason = reason
        self.logTail = logTail
    }

    /// Compares the codes only.

    public var description: String {
        var text = "HarnessError.\(code): \(reason)"
        if let logTail, !logTail.isEmpty {
            text += "\n--- log tail ---\n" + logTail
        }
        return text
    }
}
