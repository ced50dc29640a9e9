import PN53x
import Testing

// The spellings of a serial board's name: a path, nfcpy's short form and its driver field
// (nfcpy docs/overview.rst, v0.10.2: `tty:USB0:pn532`, `tty:AMA0:pn532`; docs/pn532-uart.md §7).
@Suite("PN532 device names")
struct PN532DeviceNameTests {
    @Test(
        "The forms a board is named by",
        arguments: [
            ("tty:/dev/ttyUSB0", "/dev/ttyUSB0"),
            ("tty:USB0", "/dev/ttyUSB0"),
            ("tty:AMA0", "/dev/ttyAMA0"),
            ("tty:S0", "/dev/ttyS0"),
            ("tty:pts/3", "/dev/pts/3"),
            ("tty:USB0:pn532", "/dev/ttyUSB0"),
            ("tty:AMA0:pn532", "/dev/ttyAMA0"),
            ("tty:/dev/ttyACM0:pn532", "/dev/ttyACM0"),
            ("tty:/dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0-port0", "/dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0-port0"),
        ])
    func forms(name: String, path: String) throws {
        let device = try PN532DeviceName(parsing: name)
        #expect(device.path == path)
        #expect(device.description == "tty:" + path)
    }

    @Test(
        "Each mistake is named",
        arguments: [
            ("/dev/ttyUSB0", PN532DeviceNameError.Reason.notSerial),
            ("ACS ACR122U 00 00", .notSerial),
            ("tty:", .noDevice),
            ("tty:/dev/", .noDevice),
            ("tty:USB0\u{0}", .noDevice),
            ("tty:serial/by-id/x", .relativePath),
            ("tty:USB0:arygon", .driver("arygon")),
            ("tty:USB0:", .driver("")),
        ])
    func mistakes(name: String, reason: PN532DeviceNameError.Reason) {
        #expect(throws: PN532DeviceNameError(name: name, reason: reason)) { try PN532DeviceName(parsing: name) }
    }

    @Test("The message says what to write")
    func messages() {
        #expect(
            PN532DeviceNameError(name: "tty:USB0:arygon", reason: .driver("arygon")).description
                == "'tty:USB0:arygon' names the driver 'arygon': only a PN532 board is supported (tty:USB0:pn532, or leave the driver off)")
        #expect(
            PN532DeviceNameError(name: "/dev/ttyUSB0", reason: .notSerial).description
                == "'/dev/ttyUSB0' is not a serial device: write tty:/dev/ttyUSB0 (a path) or tty:USB0 (nfcpy's form, /dev/ttyUSB0)")
    }
}
