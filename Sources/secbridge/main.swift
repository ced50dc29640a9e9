import SecbridgeCLI

#if canImport(Glibc)
import Glibc
#endif

let console = StandardConsole()
// Every blocking PC/SC call of the tool is bounded (pcsc-lite has no timeouts of its own):
// 40 s by default, SECBRIDGE_CALL_TIMEOUT seconds (1…3600) when set.
guard SecbridgeCLI.enableCallWatchdogFromEnvironment(console: console) else { SecbridgeCLI.exitProcess(SecbridgeCLI.exitUsage) }
SecbridgeCLI.exitProcess(SecbridgeCLI.main(arguments: Array(CommandLine.arguments.dropFirst()), console: console))
