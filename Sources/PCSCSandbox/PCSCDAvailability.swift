import Foundation

/// Whether a private pcscd can start on this machine, and if not, why, for the test suites that
/// need one to skip themselves with that reason instead of failing.
///
/// A private pcscd is unavailable when:
/// - `SECBRIDGE_NO_PCSCD=1` is set (a user's choice: run every unit and CLI suite, skip those
///   that need pcscd);
/// - `pcscd` or `unshare` is not installed;
/// - the process is not root and the host forbids unprivileged user namespaces (pcscd hard-codes
///   /run/pcscd, so it needs a mount namespace of its own).
///
/// Anything else that goes wrong when starting pcscd is a failure, not a skip: a machine that can
/// run pcscd must run the suites that need it.
public enum PCSCDAvailability {
    /// The environment variable that turns the pcscd suites off: `SECBRIDGE_NO_PCSCD=1`.
    public static let disableVariable = "SECBRIDGE_NO_PCSCD"

    /// Why no private pcscd can start, or nil when one can (checked once per process).
    public static let unavailableReason: String? = {
        if let value = ProcessInfo.processInfo.environment[disableVariable], value == "1" {
            return "\(disableVariable)=1 is set: the suites that need a private pcscd are skipped"
        }
        let unshare: String
        do {
            _ = try HarnessPaths.requireTool("pcscd", package: "pcscd")
            unshare = try HarnessPaths.requireTool("unshare", package: "util-linux")
        } catch let error as HarnessError {
            return "no private pcscd can start: \(error.reason)"
        } catch {
            return "no private pcscd can start: \(error)"
        }
        do {
            _ = try PrivatePCSCD.namespaceArguments(unshare: unshare)
        } catch let error as HarnessError {
            return "no private pcscd can start: \(error.reason)"
        } catch {
            return "no private pcscd can start: \(error)"
        }
        return nil
    }()

    /// Whether a private pcscd can start.
    public static var isAvailable: Bool { unavailableReason == nil }
}
