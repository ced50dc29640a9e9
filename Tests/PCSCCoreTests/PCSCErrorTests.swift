import Testing

import PCSCCore

/// docs/cases.md P04: error codes arrive in several widths and all map to one 32-bit code and its name.
@Suite struct PCSCErrorTests {
    struct WidthVector: Sendable, CustomTestStringConvertible {
        let id: String
        let raw: Int
        let code: UInt32
        let name: String
        var testDescription: String { id }
    }

    static let widths: [WidthVector] = [
        // docs/cases.md P04: SCARD_E_NO_SERVICE as a 64-bit LONG (pcsc-lite on Linux x86_64).
        .init(id: "P04 64-bit LONG", raw: 0x8010_001D, code: 0x8010_001D, name: "SCARD_E_NO_SERVICE"),
        // docs/cases.md P04: the same code as a negative Int32 (Windows, some bindings): −2146435043.
        .init(id: "P04 negative Int32", raw: -2_146_435_043, code: 0x8010_001D, name: "SCARD_E_NO_SERVICE"),
        // docs/cases.md P04: SCARD_E_INSUFFICIENT_BUFFER sign-extended to 64 bits, 0xFFFFFFFF80100008.
        .init(
            id: "P04 sign-extended", raw: Int(bitPattern: 0xFFFF_FFFF_8010_0008), code: 0x8010_0008,
            name: "SCARD_E_INSUFFICIENT_BUFFER"),
        .init(id: "P09 not transacted", raw: 0x8010_0016, code: 0x8010_0016, name: "SCARD_E_NOT_TRANSACTED"),
        .init(id: "P09 unsupported", raw: 0x8010_001F, code: 0x8010_001F, name: "SCARD_E_UNSUPPORTED_FEATURE"),
        .init(id: "unknown code", raw: 0x1234_5678, code: 0x1234_5678, name: "SCARD_UNKNOWN_0x12345678"),
    ]

    @Test(arguments: widths)
    func normalizesWidth(_ vector: WidthVector) {
        let error = PCSCError(rawValue: vector.raw)
        #expect(error.code == vector.code)
        #expect(error.name == vector.name)
    }

    @Test func equalityIgnoresFunction() {
        #expect(PCSCError(code: 0x8010_000C, function: "SCardTransmit") == .noSmartcard)
        #expect(PCSCError(code: 0x8010_000C) != .noService)
    }

    @Test func descriptionNamesFunctionCodeAndRemedy() {
        let error = PCSCError(rawValue: 0x8010_001D, function: "SCardEstablishContext")
        #expect(
            error.description
                == "SCardEstablishContext failed: SCARD_E_NO_SERVICE (0x8010001D): the smart card resource manager (pcscd) is not running; start pcscd (e.g. `systemctl start pcscd`), or set PCSCLITE_CSOCK_NAME to the socket of a running one"
        )
        #expect(error.isServiceLost)
        #expect(PCSCError.serviceStopped.isServiceLost)
        #expect(!PCSCError.noSmartcard.isServiceLost)
    }

    @Test("A call cut by pcscd's death counts as the service lost for a held card, not for the context")
    func serviceLostOrCut() {
        // pcsc-lite 1.9.9: SCARD_F_COMM_ERROR (0x80100013) from SCardTransmit when pcscd dies in the call.
        #expect(PCSCError(code: 0x8010_0013).isServiceLostOrCut)
        #expect(!PCSCError(code: 0x8010_0013).isServiceLost)
        #expect(PCSCError.noService.isServiceLostOrCut)
        #expect(PCSCError.serviceStopped.isServiceLostOrCut)
        #expect(!PCSCError.removedCard.isServiceLostOrCut)
        #expect(!PCSCError(code: 0x8010_006A).isServiceLostOrCut)  // SCARD_W_SECURITY_VIOLATION
    }

    @Test func tableHasUniqueCodes() {
        let codes = PCSCError.knownCodes.map(\.code)
        #expect(Set(codes).count == codes.count)
        // pcsclite.h (1.9.9) defines 61 result codes; SCARD_E_UNEXPECTED and SCARD_E_UNSUPPORTED_FEATURE
        // share 0x8010001F, so 60 distinct values.
        #expect(PCSCError.knownCodes.count == 60)
    }
}
