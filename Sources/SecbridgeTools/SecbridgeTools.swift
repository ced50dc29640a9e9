import PCSC
import SecbridgeCLI
import SecureElementCredential

/// The `secbridge-tools` binary's entry point: the whole command tree, including the commands that
/// link Foundation (session engine, simulator launcher, transcript tools). `secbridge` hands these
/// commands over to it, so `secbridge readers` stays lean and starts fast.
public enum SecbridgeTools {
    /// The commands that live here, in help order.
    static var commands: [Command] { commands(relayClock: nil) }

    /// ``commands``, with `emulate` measuring a relayed card's call bound on `relayClock` (nil: real time).
    static func commands(relayClock: (any SessionClock)?) -> [Command] {
        [
            SecbridgeCLI.replayCommand, SecbridgeCLI.simulateCommand, SecbridgeCLI.credentialsCommand,
            relayClock.map { SecbridgeCLI.makeEmulateCommand(relayClock: $0) } ?? SecbridgeCLI.emulateCommand,
            SecbridgeCLI.readCommand, SecbridgeCLI.demoCommand,
            SecbridgeCLI.transcriptCommand, SecbridgeCLI.captureCommand, SecbridgeCLI.selftestCommand,
            SecbridgeCLI.doctorCommand, SecbridgeCLI.resetCommand,
            SecbridgeCLI.writeNDEFCommand, SecbridgeCLI.writeDumpCommand, SecbridgeCLI.serveCommand,
        ]
    }

    /// Runs the full tool with `arguments` (without the program name); returns the exit status.
    /// - Parameter client: how commands reach readers; pcsc-lite by default, an in-process client
    ///   (InProcessPCSC) to run against simulated readers without pcscd.
    /// - Parameter timeScale: shrinks the 60 s card-emulation window (0.02: 1.2 s), for tests on
    ///   simulated readers whose device time is scaled too; other session rules keep real time.
    /// - Parameter relayClock: what `emulate` measures a relayed PC/SC card's call bound on (40 s, or
    ///   `SECBRIDGE_CALL_TIMEOUT`): real time by default; a test passes a `VirtualSessionClock` and
    ///   advances it, so a card that stops answering is given up without a real 40 s wait.
    public static func main(
        arguments: [String], console: any Console = StandardConsole(), client: any PCSCClient = PCSCLiteClient(),
        timeScale: Double = 1, relayClock: (any SessionClock)? = nil
    ) -> Int32 {
        SecbridgeCLI.main(
            arguments: arguments, console: console, toolCommands: commands(relayClock: relayClock), client: client, timeScale: timeScale)
    }
}
