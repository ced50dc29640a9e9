import SimulatedACR122IFD

/// The round trip of the simulated reader's control lines through their typed form, for the fuzz
/// target `control-line` (Fuzz/Sources/control-line) and the FuzzRegressionTests replaying what it
/// kept: a line the driver's one parser accepts becomes a typed request (SimulatedACR122IFD's
/// `SimulatorRequest`, package scope), whose text form must parse to the same request, and
/// whose text form must be the same again (the text form is canonical). The control protocol's
/// verbs are the table of `Sources/SimulatedACR122IFD/ControlProtocol.swift`.
public enum ControlLineRoundTrip {
    /// Checks the round trip of `line` (one control line, without its `\n`).
    /// - Returns: nil when `line` is no request (the parser's error is the socket's reply, not a
    ///   failure here) or when the round trip holds; otherwise what broke, with both text forms.
    public static func failure(_ line: String) -> String? {
        guard let request = try? SimulatorRequest(parsing: line) else { return nil }
        let text = request.line
        let again: SimulatorRequest
        do {
            again = try SimulatorRequest(parsing: text)
        } catch {
            return "'\(line)' parsed, but its text form '\(text)' did not: \(error)"
        }
        guard again == request else { return "'\(line)' and its text form '\(text)' parse to different requests" }
        guard again.line == text else { return "the text form of '\(line)' is not canonical: '\(text)', then '\(again.line)'" }
        return nil
    }
}
