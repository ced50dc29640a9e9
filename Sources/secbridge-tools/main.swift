import SecbridgeCLI
import SecbridgeTools

#if canImport(Glibc)
import Glibc
#endif

// `secbridge replay|simulate|credentials|emulate|read|demo|transcript` run here (secbridge execs
// this binary for them); it takes the same arguments as secbridge.
let console = StandardConsole()
guard SecbridgeCLI.enableCallWatchdogFromEnvironment(console: console) else { SecbridgeCLI.exitProcess(SecbridgeCLI.exitUsage) }
SecbridgeCLI.exitProcess(SecbridgeTools.main(arguments: Array(CommandLine.arguments.dropFirst()), console: console))
