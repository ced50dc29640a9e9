#if canImport(Glibc)
import Glibc
#endif

/// The driver's log: one line to standard error, which pcscd (in the foreground) leaves in its log.
enum DriverLog {
    static func write(_ message: String) {
        let line = "secbridge-acr122: " + message + "\n"
        var bytes = Array(line.utf8)
        let count = bytes.count
        bytes.withUnsafeMutableBytes { raw in
            _ = Glibc.write(2, raw.baseAddress, count)
        }
    }
}
