import ISO7816
import PN53x

/// The shell's session on a PN532 board on a serial line (`shell --device tty:PATH`, `reader
/// tty:PATH`; docs/shell.md §4): PN532 command frames `D4 cmd params` framed for the high-speed UART
/// (docs/pn532-uart.md §1–§3), answered `D5 cmd+1 data`.
///
/// Blocking: every call waits on the line (the ACK within 100 ms, the answer within ``answerBound``),
/// on the interpreter's thread, never on Swift's shared pool.
final class SerialBoardSession {
    /// The device node, e.g. /dev/ttyUSB0.
    let path: String
    private let link: PN532SerialLink
    /// How long a command may take once acknowledged: 5 s (the ACR122U's default MCU timeout,
    /// as `emulate --device` bounds TgGetData); a command still running then is aborted with the
    /// ACK frame (docs/pn532-uart.md §2).
    static let answerBound: Duration = .seconds(5)

    /// The reader name the session shows: `tty:PATH`.
    var reader: String { "tty:" + path }

    /// The device node a `tty:` name gives (``PN532DeviceName``: `tty:/dev/ttyUSB0`, nfcpy's `tty:USB0`).
    /// - Throws: the name's mistake.
    static func path(_ name: String) throws(CLIError) -> String {
        do {
            return try PN532DeviceName(parsing: name).path
        } catch {
            throw .failure("\(error)")
        }
    }

    /// Opens `path` and wakes the board (55 preamble, SAMConfiguration).
    /// - Throws: a failure naming `doctor --device` when the port does not open or the board does
    ///   not answer the wake-up.
    init(path: String, open: (String) throws -> PN532SerialLink = { PN532SerialLink(stream: try PN532TTY(path: $0)) }) throws(CLIError) {
        self.path = path
        do {
            link = try open(path)
        } catch {
            throw .failure("cannot open \(path): \(error); `secbridge doctor --device tty:\(path)` checks the device")
        }
        do {
            try link.wakeUp()
        } catch {
            throw .failure("the PN532 board on \(path) did not answer the wake-up: \(error); `secbridge doctor --device tty:\(path)` checks the device node, its permissions and the wake-up")
        }
    }

    /// Sends the frame `D4 cmd params` and returns the chip's `D5 cmd+1 data`.
    /// - Throws: a failure for a frame that is not `D4 cmd …`, or the link's error.
    func exchange(_ frame: [UInt8]) throws(CLIError) -> [UInt8] {
        try Self.check(frame)
        let code = PN532CommandCode(rawValue: frame[1])
        do {
            return [0xD5, code.responseCode] + (try link.exchange(code, Array(frame.dropFirst(2)), timeout: Self.answerBound))
        } catch {
            throw .failure("\(code.name) on \(path): \(error)")
        }
    }

    /// - Throws: a failure for a frame that is not `D4 cmd …`.
    static func check(_ frame: [UInt8]) throws(CLIError) {
        guard frame.count >= 2, frame[0] == 0xD4 else {
            throw .failure("a PN532 board takes PN532 command frames: D4, the command code and its parameters (e.g. D4 02, GetFirmwareVersion), not \(HexBytes.format(frame))")
        }
    }

    /// The frame inside the ACR122U's Direct Transmit pseudo-APDU `FF 00 00 00 Lc D4 …` (ACR122U
    /// API v2.04, Direct Transmit), nil for anything else.
    static func directTransmitFrame(_ apdu: [UInt8]) -> [UInt8]? {
        guard apdu.count > 6, apdu.starts(with: [0xFF, 0x00, 0x00, 0x00]), Int(apdu[4]) == apdu.count - 5, apdu[5] == 0xD4 else { return nil }
        return Array(apdu.dropFirst(5))
    }
}

/// The usage error of every command given both `--reader` and `--device`.
package func twoReadersNamed(device: String) -> CLIError {
    .usage("--reader and --device name two readers: give one (--device \(device) is a PN532 board on a serial line)")
}
