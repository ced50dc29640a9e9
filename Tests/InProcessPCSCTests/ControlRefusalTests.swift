import Foundation
import PCSCCore
import SecbridgeTesting
import Testing

/// Control requests of a simulated reader that cannot be carried out: each reply names what was
/// wrong once, and a request never changes the device silently (the control protocol of
/// Sources/SimulatedACR122IFD/ControlProtocol.swift, through an in-process desk's socket).
@Suite struct ControlRefusalTests {
    /// `place-terminal transcript=` with a path it cannot use: the reason is given once (it was
    /// wrapped twice: "transcript P: bad-argument: transcript P: …").
    @Test func aTerminalTranscriptThatCannotBeReadIsNamedOnce() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let relative = try desk.control().exchange("place-terminal transcript=relative.trn")
        #expect(relative == "error bad-argument transcript path 'relative.trn' must be absolute (pcscd's working directory is not yours)")
        let missing = try desk.control().exchange("place-terminal transcript=/nonexistent/secbridge-terminal.trn")
        #expect(missing.hasPrefix("error bad-argument transcript /nonexistent/secbridge-terminal.trn: "), "\(missing)")
        #expect(!missing.contains("bad-argument:"), "\(missing)")
        #expect(missing.components(separatedBy: "transcript /nonexistent").count == 2, "the path once: \(missing)")
    }

    /// `place-card transcript=` and `place-terminal transcript=` naming a FIFO with no writer: the
    /// handler answers at once (the reader opens with O_NONBLOCK and reads regular files only)
    /// instead of blocking in open(2) until some process writes to the FIFO, and says what to give.
    @Test func aTranscriptPathNamingAFIFOIsRefusedWithoutBlocking() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        let fifo = NSTemporaryDirectory() + "secbridge-fifo-\(getpid())-\(UUID().uuidString.prefix(8)).trn"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        for verb in ["place-card uid=04A1B2C3", "place-terminal"] {
            let reply = try desk.control().exchange("\(verb) transcript=\(fifo)", timeout: .seconds(5))
            #expect(reply.hasPrefix("error bad-argument transcript \(fifo): "), "\(reply)")
            #expect(reply.contains("\(fifo) is a FIFO (named pipe), not a regular file: give the path of a transcript file"), "\(reply)")
        }
        #expect(try desk.control(.peers)["count"] == "0", "nothing was placed")
    }

    /// `replug` on a reader that is plugged in is refused: it replaced the device (LEDs, PICC
    /// parameter, a running session) while answering "plugged=yes" as if nothing happened.
    @Test func replugWhilePluggedInIsRefusedAndChangesNothing() async throws {
        let desk = try await SimulatedDesk.open()
        defer { desk.close() }
        // PICC operating parameter 00 (automatic polling off) through the escape path
        // (docs/acr122-pn532.md §2: FF 00 51 PP 00 answers 90 PP).
        let client = desk.client
        let name = desk.names[0]
        let answer = try await blocking {
            let context = try client.establishContext()
            defer { try? context.release() }
            let handle = try context.connect(to: name, share: .direct, protocols: .undefined)
            defer { try? handle.disconnect(.leave) }
            return try handle.control(code: 0x4200_0001, hex("FF 00 51 00 00"))
        }
        #expect(answer == hex("90 00"))
        #expect(try desk.control(.status)["picc"] == "00")
        let refused = try desk.control().exchange("replug")
        #expect(refused == "error refused the reader is plugged in; send unplug first (personality name=… replaces a plugged-in unit)")
        #expect(try desk.control(.status)["picc"] == "00", "the device is the same one")
        #expect(try desk.control(.unplug)["plugged"] == "no")
        #expect(try desk.control(.replug)["plugged"] == "yes")
        #expect(try desk.control(.status)["picc"] == "FF", "a replugged unit starts at its power-up settings")
    }

    /// `status` of an unplugged reader reports no card (pcscd hears IFD_NO_SUCH_DEVICE from it):
    /// it reported a card placed in its field through the other reader as present.
    @Test func anUnpluggedReaderReportsNoCardInItsStatus() async throws {
        let desk = try await SimulatedDesk.open(readers: 2)
        defer { desk.close() }
        #expect(try desk.control(.unplug)["plugged"] == "no")
        try desk.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .t4tNDEF), reader: 1)
        #expect(try desk.control(.status, reader: 1)["card"] == "present")
        #expect(try desk.control(.status)["card"] == "absent", "unplugged: no card")
        #expect(try desk.control(.replug)["plugged"] == "yes")
        #expect(try desk.control(.status)["card"] == "present", "plugged in again")
    }
}
