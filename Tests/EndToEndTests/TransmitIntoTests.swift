import PCSC
import PCSCSandbox
import SecbridgeTesting
import Testing

// CardHandle.transmit(_:into:) through the private pcscd and the simulated ACR122U: the answer's
// bytes land at the front of a caller-owned buffer that is reused across calls, and an answer
// longer than the buffer is refused with SCARD_E_INSUFFICIENT_BUFFER naming both sizes.

extension SharedReader {
    @Suite struct TransmitIntoTests {
        /// SELECT of the Type 4 Tag application (docs/iso14443-t4t-ndef.md §4); the echo applet
        /// answers with the command and 90 00, 15 bytes.
        static let select = hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00")
        /// The ACR122U's Get UID pseudo-APDU (docs/acr122-pn532.md §2): the UID and 90 00, 6 bytes.
        static let getUID = hex("FF CA 00 00 00")

        /// Places the echo card in reader A and returns the reader's name.
        func placeEchoCard() async throws -> String {
            let environment = try await resetSimulatedReaders()
            try SimulatedReaders.controlA.send(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "into-card"))
            _ = try await waitForCard(in: environment.simulatedReaderA, present: true)
            return environment.simulatedReaderA
        }

        func removeEchoCard(_ reader: String) async throws {
            try SimulatedReaders.controlA.send(.remove(peer: "into-card"))
            _ = try await waitForCard(in: reader, present: false)
        }

        @Test func answersLandAtTheFrontOfOneReusedBufferAndTheRestIsLeftAsItWas() async throws {
            let reader = try await placeEchoCard()
            let (first, second, third, plain) = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 258, alignment: 1)
                defer { buffer.deallocate() }
                buffer.initializeMemory(as: UInt8.self, repeating: 0xEE)
                // The command from raw memory, then from an array, into the same buffer.
                let length1 = try Self.select.withUnsafeBytes { try card.transmit($0, into: buffer) }
                let first = Array(buffer[..<20])
                let length2 = try card.transmit(Self.getUID, into: buffer)
                let second = Array(buffer[..<20])
                let length3 = try card.transmit(Self.select, into: buffer)
                let third = Array(buffer[..<length3])
                let plain = try card.transmit(Self.getUID)
                try card.disconnect()
                return ((length1, first), (length2, second), third, plain)
            }
            #expect(first.0 == 15)
            #expect(first.1 == Self.select + hex("90 00") + [UInt8](repeating: 0xEE, count: 5))
            #expect(second.0 == 6)
            // 04 A1 B2 C3 90 00 over the first answer's start; its bytes 6 to 14 stay.
            #expect(second.1 == hex("04 A1 B2 C3 90 00") + Array(Self.select[6...]) + hex("90 00")
                + [UInt8](repeating: 0xEE, count: 5))
            #expect(third == Self.select + hex("90 00"))
            #expect(plain == hex("04 A1 B2 C3 90 00"))  // the array-returning call agrees
            let log = try SimulatedReaders.controlA.send(.cardLog(peer: "into-card"))
            #expect(log["count"] == "2")  // the two SELECTs reached the card; Get UID is the reader's
            try await removeEchoCard(reader)
        }

        /// transmit(_:) reuses the storage of the answer it returned last once the caller let go
        /// of it: answers the caller keeps, or changes, must stay as they were.
        @Test func answersKeptOrChangedByTheCallerStayIntactAcrossLaterCalls() async throws {
            let reader = try await placeEchoCard()
            let (kept, changed, dropped, last) = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                // 15, 6, 15, 15 bytes: the sizes change both ways and repeat.
                let kept = [try card.transmit(Self.select), try card.transmit(Self.getUID),
                            try card.transmit(Self.select), try card.transmit(Self.select)]
                var changed = try card.transmit(Self.getUID)
                changed[0] = 0x00
                var dropped: [[UInt8]] = []
                for command in [Self.getUID, Self.getUID, Self.select, Self.getUID] {
                    let answer = try card.transmit(command)  // released before the next call
                    dropped.append(Array(answer[...]))
                }
                let last = try card.transmit(Self.select)
                try card.disconnect()
                return (kept, changed, dropped, last)
            }
            let selected = Self.select + hex("90 00"), uid = hex("04 A1 B2 C3 90 00")
            #expect(kept == [selected, uid, selected, selected])
            #expect(changed == hex("00 A1 B2 C3 90 00"))
            #expect(dropped == [uid, uid, selected, uid])
            #expect(last == selected)
            try await removeEchoCard(reader)
        }

        @Test func anAnswerLongerThanTheBufferIsRefusedWithBothSizesAndTheHandleGoesOn() async throws {
            let reader = try await placeEchoCard()
            let (error, untouched, after) = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                let small = UnsafeMutableRawBufferPointer.allocate(byteCount: 14, alignment: 1)
                defer { small.deallocate() }
                small.initializeMemory(as: UInt8.self, repeating: 0xEE)
                var caught: PCSCError?
                do {
                    _ = try card.transmit(Self.select, into: small)
                } catch let error as PCSCError {
                    caught = error
                }
                let untouched = Array(small)
                let after = try card.transmit(Self.getUID, into: small)
                try card.disconnect()
                return (caught, untouched, Array(small[..<after]))
            }
            let refused = try #require(error)
            #expect(refused == .insufficientBuffer)
            #expect(refused.function == "SCardTransmit")
            #expect(refused.description == "SCardTransmit failed: SCARD_E_INSUFFICIENT_BUFFER (0x80100008): "
                + PCSCError.insufficientBuffer.meaning
                + "; the card's answer is 15 bytes, the receive buffer 14; the command reached the card and its answer was dropped: pass a buffer of at least 15 bytes (65 548 take every answer)")
            #expect(untouched == [UInt8](repeating: 0xEE, count: 14))  // nothing half-written
            #expect(after == hex("04 A1 B2 C3 90 00"))
            try await removeEchoCard(reader)
        }

        @Test func anEmptyCommandIsRefusedBeforeSending() async throws {
            let reader = try await placeEchoCard()
            let error = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 258, alignment: 1)
                defer { buffer.deallocate() }
                var caught: PCSCError?
                do { _ = try card.transmit([], into: buffer) } catch let error as PCSCError { caught = error }
                try card.disconnect()
                return caught
            }
            #expect(error == .invalidParameter)
            #expect(try SimulatedReaders.controlA.send(.cardLog(peer: "into-card"))["count"] == "0")
            try await removeEchoCard(reader)
        }
    }
}
