import Foundation
import InProcessPCSC
import ISO7816
import PCSC
import Synchronization
import SecbridgeTesting
import Testing

// pcscd 1.9.9's rules, each against the simulated ACR122U driven in-process. Sources are files of
// pcsc-lite 1.9.9 (Debian 12): winscard.c, ifdwrapper.c, eventhandler.c, prothandler.c.

@Suite struct ReaderTableTests {
    @Test func readersAreNamedLikePcscdAndListedInCreationOrder() async throws {
        let bench = try await Bench.make(readers: 2)
        defer { bench.close() }
        let (first, second, afterClose, reused) = try await blocking {
            let first = try bench.addReaderOnThisThread("a")
            let second = try bench.addReaderOnThisThread("b")
            let listed = bench.readers.listReaders()
            try bench.readers.closeChannel(first)
            let afterClose = bench.readers.listReaders()
            let reused = try bench.addReaderOnThisThread("c")
            return ([first, second] == listed ? first : "order differs", second, afterClose, reused)
        }
        #expect(first == "ACS ACR122U PICC Interface 00 00")
        #expect(second == "ACS ACR122U PICC Interface 01 00")
        #expect(afterClose == ["ACS ACR122U PICC Interface 01 00"])
        #expect(reused == "ACS ACR122U PICC Interface 00 00")  // the lowest free index, as pcscd
    }

    @Test func aDeviceNameTheDriverRefusesIsAnErrorAndAnUnknownReaderIsUnknown() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        var refused: InProcessReaderError?
        do {
            // A Lun may be busy for a moment (desks of other tests draw from the same 16).
            // On a thread of its own: the wait for a free Lun must not hold a thread of Swift's pool,
            // which the tests whose desks hold the Luns need to finish (seen: 19 of 65 busy pool samples).
            _ = try await blocking { try bench.readers.createChannel(deviceName: bench.directory + "/a:colour=red", waitingUpTo: .seconds(300)) }
        } catch {
            refused = error as? InProcessReaderError
        }
        #expect(refused?.code == .channelRefused)
        #expect(bench.readers.listReaders().isEmpty)
        let unknown = pcscError { try bench.readers.connect(to: "ACS ACR122U PICC Interface 07 00", share: .direct, protocols: []) }
        #expect(unknown == .unknownReader)  // 0x80100009
    }

    /// `control=none` (DeviceName.swift): the reader answers through the entry points, but no
    /// socket is served and nothing is made on disk; the default serves `<dir>/control.sock` and
    /// names it in the simulator's attribute.
    @Test func aReaderWithoutControlSocketMakesNothingOnDiskAndStillAnswers() async throws {
        let bench = try await Bench.make(readers: 3)
        defer { bench.close() }
        let (firmware, noSocket, socket) = try await blocking {
            let quiet = try bench.readers.connect(to: try bench.addReaderOnThisThread("a", options: ":control=none"), share: .direct, protocols: [])
            let served = try bench.readers.connect(to: try bench.addReaderOnThisThread("b"), share: .direct, protocols: [])
            return (try quiet.control(code: ccidEscape, firmwareRequest), pcscError { try quiet.attribute(.simulatorControlSocket) },
                    try served.attribute(.simulatorControlSocket))
        }
        #expect(firmware == Array("ACR122U207".utf8))  // ACR122U API v2.04 §6.3, no SW
        #expect(noSocket == .unsupportedFeature)  // IFD_ERROR_TAG → SCARD_E_UNSUPPORTED_FEATURE
        #expect(socket == Array((bench.directory + "/b/control.sock").utf8) + [0])
        #expect(!FileManager.default.fileExists(atPath: bench.directory + "/a"))
        #expect(FileManager.default.fileExists(atPath: bench.directory + "/b/control.sock"))
        var refused: InProcessReaderError?
        do {
            _ = try await blocking { try bench.readers.createChannel(deviceName: bench.directory + "/c:control=off", waitingUpTo: .seconds(300)) }
        } catch {
            refused = error as? InProcessReaderError
        }
        #expect(refused?.code == .channelRefused)  // only socket or none
    }

    @Test func theControlSocketIsServedInProcess() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        try await bench.addReader("a", options: ":personality=acs-driver")
        let ping = try bench.control().send("ping")
        #expect(ping["driver"] == "secbridge-acr122")
        #expect(ping["reader"] == bench.directory + "/a")
        #expect(try bench.control().send("status")["personality"] == "acs-driver")
    }
}

@Suite struct ConnectRulesTests {
    @Test(arguments: [ShareMode.shared, .exclusive])
    func withoutACardANormalConnectFailsWithNoSmartcard(_ share: ShareMode) async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        let error = try await blocking { pcscError { try bench.readers.connect(to: name, share: share, protocols: .any) } }
        // winscard.c SCardConnect: "Card Not Inserted" → SCARD_E_NO_SMARTCARD (0x8010000C).
        #expect(error == .noSmartcard)
        #expect(error?.code == 0x8010_000C)
        #expect(error?.function == "SCardConnect")
    }

    @Test func directConnectHasProtocolZeroAndOnlyControlReachesTheReader() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        let (active, transmission, firmware, transmitError, features, maxInput, friendly) = try await blocking {
            let direct = try bench.readers.connect(to: name, share: .direct, protocols: [])
            return (direct.activeProtocol, direct.transmissionProtocol,
                    try direct.control(code: ccidEscape, firmwareRequest),
                    pcscError { try direct.transmit(firmwareRequest) },
                    try direct.features(), try direct.attribute(.maxInput), try direct.attribute(.deviceFriendlyName))
        }
        #expect(active.rawValue == 0)  // SCARD_PROTOCOL_UNDEFINED
        #expect(transmission == .undefined)
        #expect(firmware == Array("ACR122U207".utf8))  // 10 bytes, no status word (ACR122U API §6.3)
        // winscard.c SCardTransmit: no card → SCARD_E_NO_SMARTCARD before the driver is asked.
        #expect(transmitError == .noSmartcard)
        #expect(features == [PCSCFeature(tag: 0x12, controlCode: 0x4233_0012), PCSCFeature(tag: 0x13, controlCode: 0x4200_0001)])
        #expect(maxInput == [0x05, 0x01, 0x00, 0x00])  // 261, the ACR122U's short-APDU limit (docs/cases.md P06)
        // IFD_ERROR_TAG for SCARD_ATTR_DEVICE_FRIENDLY_NAME: pcscd answers with the reader name.
        #expect(friendly == Array("ACS ACR122U PICC Interface 00 00".utf8) + [0])
    }

    @Test func aPlacedCardIsPoweredUpAndT1IsSelectedThroughSetProtocolParameters() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        try bench.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], ats: [0x06, 0x75, 0x77, 0x81, 0x02, 0x80], applet: .echo))
        let (active, status, echoed, uid, readerState) = try await blocking {
            let card = try bench.readers.connect(to: name, share: .shared, protocols: .any)
            return (card.activeProtocol, try card.status(), try card.transmit(selectT4T),
                    try card.transmit(hex("FF CA 00 00 00")), try bench.readers.readerStatus(name))
        }
        // ATR 3B 81 80 01 80 80 announces T=0 (TD1) and T=1 (TD2); pcscd tries T=1 first and the
        // driver accepts IFDHSetProtocolParameters(2).
        #expect(active == .t1)
        #expect(status.atr == hex("3B 81 80 01 80 80"))
        #expect(status.activeProtocol == .t1)
        #expect(status.flags == [.present, .powered, .negotiable])
        #expect(status.state.rawValue >> 16 == 1)  // one insertion seen
        #expect(echoed == selectT4T + hex("90 00"))
        #expect(uid == hex("04 A1 B2 C3 90 00"))
        #expect(readerState.connections == 1)
    }

    @Test func directAfterANegotiationReportsTheCardProtocolAndAnOlderDirectHandleMismatches() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        let (early, mismatch, late, lateAnswer) = try await blocking {
            try bench.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo))
            let early = try bench.readers.connect(to: name, share: .direct, protocols: [])
            let shared = try bench.readers.connect(to: name, share: .shared, protocols: .any)
            _ = shared
            // winscard.c SCardTransmit: the PCI protocol (0) is not the card's (T=1).
            let mismatch = pcscError { try early.transmit(selectT4T) }
            let late = try bench.readers.connect(to: name, share: .direct, protocols: [])
            return (early.activeProtocol, mismatch, late.activeProtocol, try late.transmit(selectT4T))
        }
        #expect(early.rawValue == 0)
        #expect(mismatch == .protoMismatch)  // 0x8010000F
        #expect(late == .t1)  // winscard.c: *pdwActiveProtocol = cardProtocol, also for DIRECT
        #expect(lateAnswer == selectT4T + hex("90 00"))
    }

    struct ProtocolVector: Sendable, CustomTestStringConvertible {
        var id: String
        var personality: String
        var protocols: ProtocolSet
        var expected: Result<ProtocolSet, PCSCError>
        var source: String
        var testDescription: String { id }
    }

    static let protocolVectors = [
        ProtocolVector(id: "T=1 unit, any", personality: "ccid-escape-enabled", protocols: .any, expected: .success(.t1),
                       source: "prothandler.c: T=1 first, driver accepts"),
        ProtocolVector(id: "T=1 unit, T=1 only", personality: "ccid-escape-enabled", protocols: .t1, expected: .success(.t1),
                       source: "prothandler.c"),
        ProtocolVector(id: "T=1 unit, T=0 only", personality: "ccid-escape-enabled", protocols: .t0,
                       expected: .failure(.unresponsiveCard),
                       source: "prothandler.c: driver refuses T=0, the ATR default is T=0 = the request → PPS failed → SCARD_W_UNRESPONSIVE_CARD"),
        ProtocolVector(id: "T=0 unit, any", personality: "legacy-t0", protocols: .any, expected: .success(.t0),
                       source: "prothandler.c: driver refuses T=1 (IFD_PROTOCOL_NOT_SUPPORTED), fallback to the ATR default T=0"),
        ProtocolVector(id: "T=0 unit, T=1 only", personality: "legacy-t0", protocols: .t1, expected: .success(.t0),
                       source: "prothandler.c: the default T=0 differs from the request, so pcscd uses it anyway"),
        ProtocolVector(id: "RAW asked", personality: "ccid-escape-enabled", protocols: .raw, expected: .success(.raw),
                       source: "winscard.c SCardConnect: RAW is taken as is, no driver call"),
        ProtocolVector(id: "no protocol", personality: "ccid-escape-enabled", protocols: [], expected: .failure(.protoMismatch),
                       source: "winscard.c SCardConnect: no T=0/T=1/RAW for a non-DIRECT connection"),
    ]

    @Test(arguments: protocolVectors)
    func protocolSelection(_ vector: ProtocolVector) async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader("a", options: ":personality=\(vector.personality)")
        try bench.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3]))
        let outcome = try await blocking {
            Result { () throws(PCSCError) in try bench.readers.connect(to: name, share: .shared, protocols: vector.protocols).activeProtocol }
        }
        switch (outcome, vector.expected) {
        case (.success(let got), .success(let want)): #expect(got == want, "\(vector.source)")
        case (.failure(let got), .failure(let want)): #expect(got == want, "\(vector.source)")
        default: Issue.record("\(vector.id): got \(outcome), expected \(vector.expected) (\(vector.source))")
        }
    }
}

@Suite struct SharingRulesTests {
    @Test func anExclusiveConnectionBlocksEveryOtherAndSharedOnesCoexist() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        try bench.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo))
        let (blocked, exclusiveWhileShared, twoShared, answers) = try await blocking {
            let exclusive = try bench.readers.connect(to: name, share: .exclusive, protocols: .any)
            var blocked: [PCSCError?] = []
            for share in [ShareMode.shared, .exclusive, .direct] {
                blocked.append(pcscError { try bench.readers.connect(to: name, share: share, protocols: share == .direct ? [] : .any) })
            }
            try exclusive.disconnect()
            let first = try bench.readers.connect(to: name, share: .shared, protocols: .any)
            let second = try bench.readers.connect(to: name, share: .shared, protocols: .any)
            let exclusiveWhileShared = pcscError { try bench.readers.connect(to: name, share: .exclusive, protocols: .any) }
            let twoShared = try bench.readers.readerStatus(name).connections
            return (blocked, exclusiveWhileShared, twoShared, [try first.transmit(selectT4T), try second.transmit(selectT4T)])
        }
        // winscard.c SCardConnect: contexts == PCSCLITE_SHARING_EXCLUSIVE_CONTEXT → sharing violation.
        #expect(blocked == [.sharingViolation, .sharingViolation, .sharingViolation])
        #expect(exclusiveWhileShared == .sharingViolation)  // EXCLUSIVE needs no other connection
        #expect(twoShared == 2)
        #expect(answers == [selectT4T + hex("90 00"), selectT4T + hex("90 00")])
    }

    @Test func reconnectTurnsTheOnlySharedConnectionExclusiveAndBack() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        try bench.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo))
        let (whileExclusive, afterShared) = try await blocking {
            let card = try bench.readers.connect(to: name, share: .shared, protocols: .any)
            try card.reconnect(share: .exclusive, protocols: .any)
            let whileExclusive = pcscError { try bench.readers.connect(to: name, share: .shared, protocols: .any) }
            try card.reconnect(share: .shared, protocols: .any)
            let other = try bench.readers.connect(to: name, share: .shared, protocols: .any)
            return (whileExclusive, try other.transmit(selectT4T))
        }
        #expect(whileExclusive == .sharingViolation)
        #expect(afterShared == selectT4T + hex("90 00"))
    }
}

@Suite struct CardEventTests {
    @Test func aRemovedCardIsReportedOnTheNextTransmitAndStatusButControlStillWorks() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        try bench.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo, id: "card"))
        let (removed, status, control, reconnect, connect, counter) = try await blocking {
            let card = try bench.readers.connect(to: name, share: .shared, protocols: .any)
            _ = try card.transmit(selectT4T)
            try bench.control(.remove(peer: "card"))
            let removed = pcscError { try card.transmit(selectT4T) }
            let status = pcscError { try card.status() }
            // winscard.c SCardControl checks no card event: the reader still answers.
            let control = try card.control(code: ccidEscape, firmwareRequest)
            let reconnect = pcscError { try card.reconnect(share: .shared, protocols: .any) }
            let connect = pcscError { try bench.readers.connect(to: name, share: .shared, protocols: .any) }
            return (removed, status, control, reconnect, connect, try bench.readers.readerStatus(name).eventCounter)
        }
        #expect(removed == .removedCard)  // SCARD_W_REMOVED_CARD 0x80100069 (RFCheckReaderEventState)
        #expect(removed?.function == "SCardTransmit")
        #expect(status == .removedCard)
        #expect(control == Array("ACR122U207".utf8))
        #expect(reconnect == .noSmartcard)  // SCardReconnect(LEAVE) with SCARD_ABSENT
        #expect(connect == .noSmartcard)
        #expect(counter == 2)  // one insertion, one removal
    }

    @Test func aResetByOneHandleIsReportedToTheOtherUntilItReconnects() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        try bench.control(.placeCard(uid: [0x04, 0xA1, 0xB2, 0xC3], applet: .echo))
        let (reset, afterReconnect) = try await blocking {
            let first = try bench.readers.connect(to: name, share: .shared, protocols: .any)
            let second = try bench.readers.connect(to: name, share: .shared, protocols: .any)
            try first.disconnect(.reset)
            let reset = pcscError { try second.transmit(selectT4T) }
            try second.reconnect(share: .shared, protocols: .any)
            return (reset, try second.transmit(selectT4T))
        }
        #expect(reset == .resetCard)  // SCARD_W_RESET_CARD 0x80100068
        #expect(afterReconnect == selectT4T + hex("90 00"))
    }

    @Test func aDisconnectedHandleIsInvalidAndAClosedReaderUnavailable() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        let (invalid, unavailable) = try await blocking {
            let direct = try bench.readers.connect(to: name, share: .direct, protocols: [])
            try direct.disconnect()
            try direct.disconnect()  // a second disconnect does nothing
            let invalid = pcscError { try direct.control(code: ccidEscape, firmwareRequest) }
            let other = try bench.readers.connect(to: name, share: .direct, protocols: [])
            try bench.readers.closeChannel(name)
            return (invalid, pcscError { try other.control(code: ccidEscape, firmwareRequest) })
        }
        #expect(invalid == .invalidHandle)
        #expect(unavailable == .readerUnavailable)
    }
}

@Suite struct DriverErrorTests {
    struct MappingVector: Sendable, CustomTestStringConvertible {
        var id: String
        var ifd: Int
        var transmit: PCSCError?
        var control: PCSCError?
        var attribute: PCSCError?
        var testDescription: String { id }
    }

    /// pcsc-lite 1.9.9 ifdwrapper.c (IFDTransmit, IFDControl) and winscard.c (SCardGetAttrib).
    static let mappingVectors = [
        MappingVector(id: "IFD_SUCCESS", ifd: 0, transmit: nil, control: nil, attribute: nil),
        MappingVector(id: "IFD_COMMUNICATION_ERROR", ifd: 612, transmit: .notTransacted, control: .notTransacted, attribute: .notTransacted),
        MappingVector(id: "IFD_RESPONSE_TIMEOUT", ifd: 613, transmit: .notTransacted, control: .notTransacted, attribute: .notTransacted),
        MappingVector(id: "IFD_ICC_NOT_PRESENT", ifd: 616, transmit: .noSmartcard, control: .notTransacted, attribute: .notTransacted),
        MappingVector(id: "IFD_ERROR_NOT_SUPPORTED", ifd: 606, transmit: .notTransacted, control: .unsupportedFeature, attribute: .notTransacted),
        MappingVector(id: "IFD_NOT_SUPPORTED", ifd: 614, transmit: .notTransacted, control: .unsupportedFeature, attribute: .notTransacted),
        MappingVector(id: "IFD_PROTOCOL_NOT_SUPPORTED", ifd: 607, transmit: .notTransacted, control: .notTransacted, attribute: .notTransacted),
        MappingVector(id: "IFD_ERROR_INSUFFICIENT_BUFFER", ifd: 618, transmit: .notTransacted, control: .insufficientBuffer, attribute: .insufficientBuffer),
        MappingVector(id: "IFD_ERROR_TAG", ifd: 600, transmit: .notTransacted, control: .notTransacted, attribute: .unsupportedFeature),
        MappingVector(id: "IFD_NO_SUCH_DEVICE", ifd: 617, transmit: .readerUnavailable, control: .readerUnavailable, attribute: .notTransacted),
    ]

    @Test(arguments: mappingVectors)
    func ifdResultsBecomeSCardCodesPerFunction(_ vector: MappingVector) {
        #expect(IFDResultMapping.transmit(vector.ifd) == vector.transmit)
        #expect(IFDResultMapping.control(vector.ifd) == vector.control)
        #expect(IFDResultMapping.attribute(vector.ifd) == vector.attribute)
    }

    @Test func driverErrorsReachTheClientAsPcscdMapsThem() async throws {
        let bench = try await Bench.make()
        defer { bench.close() }
        let name = try await bench.addReader()
        let (unknownCode, unknownAttribute, late) = try await blocking {
            let direct = try bench.readers.connect(to: name, share: .direct, protocols: [])
            let unknownCode = pcscError { try direct.control(code: 0x4200_0DAC, firmwareRequest) }
            let unknownAttribute = pcscError { try direct.attribute(PCSCAttribute(rawValue: 0x0001_0101)) }
            try bench.control(.fault(lateReplies: 1))
            // A Direct Transmit whose answer comes after libccid's timeout: IFD_COMMUNICATION_ERROR.
            let late = pcscError { try direct.control(code: ccidEscape, hex("FF 00 00 00 04 D4 32 01 01")) }
            return (unknownCode, unknownAttribute, late)
        }
        #expect(unknownCode == .unsupportedFeature)  // IFD_ERROR_NOT_SUPPORTED → 0x8010001F
        #expect(unknownAttribute == .unsupportedFeature)  // IFD_ERROR_TAG → 0x8010001F
        #expect(late == .notTransacted)  // IFD_COMMUNICATION_ERROR → 0x80100016
    }
}

@Suite struct ATRProtocolTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        var id: String
        var atr: String
        var available: ProtocolSet
        var defaultProtocol: ProtocolSet
        var source: String
        var testDescription: String { id }
    }

    static let vectors = [
        Vector(id: "ISO 14443-4, no historical bytes", atr: "3B 80 80 01 01", available: .any, defaultProtocol: .t0,
               source: "docs/cases.md P05; TD1 80 (T=0), TD2 01 (T=1)"),
        Vector(id: "MIFARE 1K storage card", atr: "3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A",
               available: .any, defaultProtocol: .t0, source: "docs/cases.md P05; PC/SC part 3"),
        Vector(id: "no TD1", atr: "3B 02 14 50", available: .t0, defaultProtocol: .t0,
               source: "atrhandler.c: no TDx means T=0"),
        Vector(id: "TD1 T=1", atr: "3B 81 81 01", available: .t1, defaultProtocol: .t1, source: "ISO/IEC 7816-3 §8.2.3"),
        Vector(id: "specific mode TA2 T=1", atr: "3B 90 96 10 01", available: .t1, defaultProtocol: .t1,
               source: "atrhandler.c: TA2 present narrows to its protocol"),
        Vector(id: "TS not 3B or 3F", atr: "3C 80 80 01 01", available: [], defaultProtocol: [],
               source: "atrhandler.c: undecodable TS"),
        Vector(id: "TD1 names T=2", atr: "3B 81 02 00", available: [], defaultProtocol: [],
               source: "atrhandler.c: first TDi must be T=0 or T=1"),
        Vector(id: "too short", atr: "3B", available: [], defaultProtocol: [], source: "atrhandler.c: TS and T0 needed"),
    ]

    @Test(arguments: vectors)
    func decodesLikePcscd(_ vector: Vector) {
        let decoded = ATRProtocols(atr: hex(vector.atr))
        #expect(decoded.available == vector.available, "\(vector.source)")
        #expect(decoded.defaultProtocol == vector.defaultProtocol, "\(vector.source)")
    }

    @Test func everyPrefixOfAnATRDecodesWithoutTrapping() {
        let atr = hex("3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 00 01 00 00 00 00 6A")
        for length in 0...atr.count {
            let decoded = ATRProtocols(atr: Array(atr.prefix(length)))
            if length < 2 { #expect(decoded.available.isEmpty) } else { #expect(decoded.defaultProtocol == .t0) }
        }
    }
}
