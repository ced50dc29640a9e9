import SecbridgeCLI

#if canImport(Glibc)
import Glibc
#endif

let console = StandardConsole()
// Every blocking PC/SC call of the tool is bounded (pcsc-lite has no timeouts of its own):
// 40 s by default, SECBRIDGE_CALL_TIMEOUT seconds (1…3600) when set.
var bound = Duration.seconds(40)
if let text = getenv("SECBRIDGE_CALL_TIMEOUT").map({ String(cString: $0) }), let seconds = Int(text), (1...3600).contains(seconds) {
    bound = .seconds(seconds)
}
SecbridgeCLI.enableCallWatchdog(bound: bound, console: console)
exit(SecbridgeCLI.main(arguments: Array(CommandLine.arguments.dropFirst()), console: console))
