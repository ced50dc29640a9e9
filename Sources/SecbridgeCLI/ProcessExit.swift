import PCSC
import PCSCCore

#if canImport(Glibc)
import Glibc
#endif

extension SecbridgeCLI {
    /// How long the binaries wait at exit for PC/SC calls still in progress on other threads.
    package static let exitDrainBound = Duration.seconds(2)

    /// Ends the process with `status`, the binaries' one way out after a command returned.
    ///
    /// exit(3) runs libpcsclite 1.9.9's library destructor, which frees the client's context list;
    /// a PC/SC call still inside pcsc-lite on another thread (a monitor's SCardReleaseContext, a
    /// probe, an executor's release) then dies of SIGSEGV after the command printed everything
    /// (docs/test-infrastructure.md, "pcsc-lite at exit"). So this first closes
    /// `CallGate.pcscLite`: no PC/SC call starts any more (a thread that tries waits for the end),
    /// and the calls in progress get at most `exitDrainBound` (2 s) to return. Then exit(3). When
    /// a call is still in progress after that (pcscd stopped with SIGSTOP, or stuck in a driver),
    /// the process flushes its output and ends with _exit(2) and the same status, without running
    /// the destructor that the stuck call would race.
    public static func exitProcess(_ status: Int32) -> Never {
        if CallGate.pcscLite.close(waitingAtMost: exitDrainBound) { exit(status) }
        fflush(nil)
        _exit(status)
    }
}
