import SecbridgeCLI

#if canImport(Glibc)
import Glibc
#endif

exit(SecbridgeCLI.main(arguments: Array(CommandLine.arguments.dropFirst())))
