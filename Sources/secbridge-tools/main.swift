import SecbridgeCLI
import SecbridgeTools

#if canImport(Glibc)
import Glibc
#endif

// `secbridge replay|simulate|credentials|emulate|read|demo|transcript` run here (secbridge execs
// this binary for them); it takes the same arguments as secbridge.
let console = StandardConsole()
var bound = Duration.seconds(40)
if let text = getenv("SECBRIDGE_CALL_TIMEOUT").map({ String(cString: $0) }), let seconds = Int(text), (1...3600).contains(seconds) {
    bound = .seconds(seconds)
}
SecbridgeCLI.enableCallWatchdog(bound: bound, console: console)
exit(SecbridgeTools.main(arguments: Array(CommandLine.arguments.dropFirst()), console: console))
