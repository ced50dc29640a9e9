import PCSC
import SecbridgeCLI

/// The `secbridge-tools` binary's entry point: the whole command tree, including the commands that
/// link Foundation (session engine, simulator launcher, transcript tools). `secbridge` hands these
/// commands over to it, so `secbridge readers` stays lean and starts fast.
public enum SecbridgeTools {
    /// The commands that live here, in help order.
    static var commands: [Command] {
        [
            SecbridgeCLI.replayCommand, SecbridgeCLI.simulateCommand, SecbridgeCLI.credentialsCommand,
            SecbridgeCLI.emulateCommand, SecbridgeCLI.readCommand, SecbridgeCLI.demoCommand,
            SecbridgeCLI.transcriptCommand, SecbridgeCLI.captureCommand, SecbridgeCLI.selftestCommand,
            SecbridgeCLI.doctorCommand, SecbridgeCLI.resetCommand,
            SecbridgeCLI.writeNDEFCommand, SecbridgeCLI.serveCommand,
        ]
    }

    /// Runs the full tool with `arguments` (without the program name); returns the exit status.
    /// - Parameter client: how commands reach readers; pcsc-lite by default, an in-process client
    ///   (InProcessPCSC) to run against simulated readers without pcscd.
    /// - Parameter timeScale: shrinks the 60 s card-emulation window (0.02: 1.2 s), for tests on
    ///   simulated readers whose device time is scaled too; other session rules keep real time.
    public static func main(
        arguments: [String], console: any Console = StandardConsole(), client: any PCSCClient = PCSCLiteClient(),
        timeScale: Double = 1
    ) -> Int32 {
        SecbridgeCLI.main(arguments: arguments, console: console, toolCommands: commands, client: client, timeScale: timeScale)
    }
}
