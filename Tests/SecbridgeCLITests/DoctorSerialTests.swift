import PCSCCore
import PN53x
import Testing

@testable import SecbridgeCLI
@testable import SecbridgeTools

/// `secbridge doctor --device tty:…` (Sources/SecbridgeTools/DoctorSerial.swift): the device node,
/// its permissions, the wake-up and GetFirmwareVersion, each failure with its fix. The board is an
/// in-memory serial line on virtual time: a board that does not answer costs no real time.
@Suite struct DoctorSerialTests {
    static let usable = DoctorSerialNode(
        exists: true, isCharacterDevice: true, readWrite: true, group: "dialout", mode: 0o660, inGroup: true, candidates: [])

    /// Runs the checks with a line whose device end answers as `respond` (nil: nothing listens).
    static func checks(node: DoctorSerialNode = usable, respond: (@Sendable ([UInt8]) -> [UInt8]?)?) -> [DoctorCheck] {
        let time = VirtualTime()
        defer { time.close() }
        let clock = PN532SerialClock(virtualTime: time)
        let line = PN532InMemorySerialLine(clock: clock)
        defer { line.close() }
        let device = respond.map { PN532SerialDevice(stream: line.device, clock: clock, respond: $0) }
        defer { _ = device }
        return time.participate {
            DoctorSerial.evaluate(path: "/dev/ttyUSB0", node: node) { PN532SerialLink(stream: line.host, clock: clock) }
        }
    }

    @Test func tty_formsNameTheDeviceNode() throws {
        #expect(try SerialDeviceName.path("tty:/dev/ttyUSB0") == "/dev/ttyUSB0")
        #expect(try SerialDeviceName.path("tty:USB0") == "/dev/ttyUSB0")
        #expect(try SerialDeviceName.path("tty:AMA0") == "/dev/ttyAMA0")
        #expect(try SerialDeviceName.path("tty:pts/3") == "/dev/pts/3")
        for bad in ["usb:072f:2200", "tty:", "/dev/ttyUSB0", "tty:a/b"] {
            #expect(throws: CLIError.self, "\(bad)") { try SerialDeviceName.path(bad) }
        }
    }

    /// A board that answers SAMConfiguration and GetFirmwareVersion `32 01 06 07`: four oks.
    @Test func aHealthyBoardPassesEveryCheck() {
        let checks = Self.checks { frame in
            switch frame {
            case [0xD4, 0x02]: [0xD5, 0x03, 0x32, 0x01, 0x06, 0x07]
            case [0xD4, 0x14, 0x01, 0x00, 0x00]: [0xD5, 0x15]
            default: nil
            }
        }
        #expect(checks.map(\.check) == ["serial device", "permissions", "wake-up", "firmware"])
        #expect(checks.map(\.verdict) == [.ok, .ok, .ok, .ok], "\(checks)")
        #expect(checks.last?.detail == "PN532 firmware 1.6, support 07 (GetFirmwareVersion 32 01 06 07)")
    }

    @Test func aMissingDeviceSaysToPlugItIn() {
        var node = Self.usable
        node.exists = false
        node.candidates = ["/dev/ttyACM0"]
        let checks = Self.checks(node: node, respond: nil)
        #expect(checks.first?.verdict == .fail)
        #expect(checks.first?.detail == "/dev/ttyUSB0 does not exist (present: /dev/ttyACM0)")
        #expect(checks.first?.fix?.hasPrefix("plug in the USB-serial adapter") == true)
        #expect(checks.dropFirst().map(\.verdict) == [.skipped, .skipped, .skipped])
    }

    @Test func aPermissionProblemNamesTheDialoutGroup() {
        var node = Self.usable
        node.readWrite = false
        node.inGroup = false
        let checks = Self.checks(node: node, respond: nil)
        #expect(checks.map(\.verdict) == [.ok, .fail, .skipped, .skipped])
        #expect(checks[1].detail == "no read and write access to /dev/ttyUSB0 (group dialout, mode 0660, you are not in group dialout)")
        #expect(checks[1].fix == "add yourself to the group dialout: `sudo usermod -aG dialout $USER`, then log out and in again (check with `id`)")
    }

    /// Nothing answers: no ACK within the link's 100 ms (virtual), named with the wiring fix.
    @Test func aBoardThatDoesNotAnswerSaysWhatToCheck() {
        let checks = Self.checks(respond: nil)
        #expect(checks.map(\.verdict) == [.ok, .ok, .fail, .skipped])
        #expect(checks[2].detail.hasPrefix("the board did not answer the wake-up: the PN532 did not acknowledge SAMConfiguration within 0.1 seconds"), "\(checks[2].detail)")
        #expect(checks[2].fix?.contains("HSU") == true)
    }
}
