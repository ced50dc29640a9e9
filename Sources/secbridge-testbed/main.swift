// secbridge-testbed: a private pcscd with a vpcd reader and a vicc card, for demos and manual tests.
//
//     secbridge-testbed -- COMMAND [ARGUMENT…]
//         starts pcscd and vicc, runs COMMAND with PCSCLITE_CSOCK_NAME set, stops both, and exits
//         with COMMAND's status.
//     secbridge-testbed
//         starts pcscd and vicc, prints the `export PCSCLITE_CSOCK_NAME=…` line, and waits for
//         Ctrl-C (or SIGTERM), then stops both.
//
// It needs root (or unprivileged user namespaces) and the packages of scripts/install-deps.sh.

import Foundation
import PCSCSandbox

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--help" || arguments.first == "-h" {
    print("""
        USAGE: secbridge-testbed [-- COMMAND [ARGUMENT…]]

        Starts a private pcscd (its own mount namespace, so the system pcscd is untouched) with a
        vpcd reader and a vicc ISO 7816 card, then runs COMMAND with PCSCLITE_CSOCK_NAME set, or
        waits for Ctrl-C when no command is given. Needs root and scripts/install-deps.sh.
        """)
    exit(0)
}
if arguments.first == "--" { arguments.removeFirst() }

let environment: TestEnvironment
do {
    environment = try TestEnvironment.shared.start()
} catch {
    FileHandle.standardError.write(Data("secbridge-testbed: cannot start the private pcscd and vicc: \(error)\n".utf8))
    exit(1)
}

func shutdown() {
    try? environment.card.stop()
    environment.pcscd.stop()
}

if arguments.isEmpty {
    FileHandle.standardOutput.write(Data("""
        export PCSCLITE_CSOCK_NAME=\(environment.socketPath)
        reader: \(environment.vpcdReaderName) (vicc card present); Ctrl-C stops pcscd and vicc

        """.utf8))
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    let sources = [SIGINT, SIGTERM].map { number in
        let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
        source.setEventHandler {
            shutdown()
            exit(0)
        }
        source.resume()
        return source
    }
    _ = sources
    dispatchMain()
}

let process = Process()
let command = arguments[0]
process.executableURL = URL(fileURLWithPath: command.contains("/") ? command : (HarnessPaths.tool(command) ?? command))
process.arguments = Array(arguments.dropFirst())
process.environment = environment.environmentForSubprocesses
do {
    try process.run()
} catch {
    FileHandle.standardError.write(Data("secbridge-testbed: cannot run \(command): \(error)\n".utf8))
    shutdown()
    exit(1)
}
process.waitUntilExit()
shutdown()
exit(process.terminationStatus)
