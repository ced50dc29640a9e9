import Testing

@testable import PCSC

/// docs/cases.md P11 (event counter) and P13 (reader names, multi-strings).
@Suite struct ReaderStateTests {
    struct EventVector: Sendable, CustomTestStringConvertible {
        let id: String
        let value: UInt
        let flags: ReaderStateFlags
        let counter: UInt16
        var testDescription: String { id }
    }

    // P11: dwEventState values 0x004A0012, 0x004B0022, 0x004C0012.
    static let events: [EventVector] = [
        .init(id: "P11 empty, counter 0x4A", value: 0x004A_0012, flags: [.changed, .empty], counter: 0x4A),
        .init(id: "P11 present, counter 0x4B", value: 0x004B_0022, flags: [.changed, .present], counter: 0x4B),
        .init(id: "P11 empty, counter 0x4C", value: 0x004C_0012, flags: [.changed, .empty], counter: 0x4C),
    ]

    @Test(arguments: events)
    func splitsFlagsAndCounter(_ vector: EventVector) {
        var state = ReaderState(readerName: "r")
        state.eventState = vector.value
        #expect(state.eventFlags == vector.flags)
        #expect(state.eventCounter == vector.counter)
    }

    @Test func acknowledgeFeedsEventStateBackWithoutChangedBit() {
        var state = ReaderState(readerName: "r")
        state.eventState = 0x004B_0022
        state.acknowledge()
        #expect(state.currentState == 0x004B_0020)
        #expect(state.currentCounter == 0x4B)
        #expect(state.currentFlags == .present)
    }

    struct MultiStringVector: Sendable, CustomTestStringConvertible {
        let id: String
        let bytes: [UInt8]
        let names: [String]
        var testDescription: String { id }
    }

    static let multiStrings: [MultiStringVector] = [
        .init(id: "P13 A\\0B\\0\\0", bytes: Array("A\0B\0\0".utf8), names: ["A", "B"]),
        .init(id: "empty list \\0", bytes: [0], names: []),
        .init(id: "stops at double NUL", bytes: Array("A\0\0B\0\0".utf8), names: ["A"]),
        .init(id: "missing terminator", bytes: Array("A\0B".utf8), names: ["A", "B"]),
        .init(
            id: "P13 two slots",
            bytes: Array("Microchip SEC1210 [CCID Interface] (12345678) 00 00\0Microchip SEC1210 [CCID Interface] (12345678) 00 01\0\0".utf8),
            names: [
                "Microchip SEC1210 [CCID Interface] (12345678) 00 00",
                "Microchip SEC1210 [CCID Interface] (12345678) 00 01",
            ]),
    ]

    @Test(arguments: multiStrings)
    func parsesMultiString(_ vector: MultiStringVector) {
        #expect(parseMultiString(vector.bytes) == vector.names)
    }

    struct NameVector: Sendable, CustomTestStringConvertible {
        let name: String
        let friendly: String
        let index: UInt8?
        let slot: UInt8?
        var testDescription: String { name }
    }

    static let names: [NameVector] = [
        .init(name: "ACS ACR122U PICC Interface 00 00", friendly: "ACS ACR122U PICC Interface", index: 0, slot: 0),
        .init(name: "ACS ACR122U 00 00", friendly: "ACS ACR122U", index: 0, slot: 0),
        .init(
            name: "Microchip SEC1210 [CCID Interface] (12345678) 01 00",
            friendly: "Microchip SEC1210 [CCID Interface] (12345678)", index: 1, slot: 0),
        .init(
            name: "Gemalto Prox-DU [Prox-DU Contactless_0A1B2C3D] (0A1B2C3D) 01 00",
            friendly: "Gemalto Prox-DU [Prox-DU Contactless_0A1B2C3D] (0A1B2C3D)", index: 1, slot: 0),
        .init(name: "\\\\?PnP?\\Notification", friendly: "\\\\?PnP?\\Notification", index: nil, slot: nil),
    ]

    @Test(arguments: names)
    func splitsReaderName(_ vector: NameVector) {
        let name = ReaderName(vector.name)
        #expect(name.friendlyName == vector.friendly)
        #expect(name.index == vector.index)
        #expect(name.slot == vector.slot)
        #expect(name.full == vector.name)
    }

    @Test func pnpNotificationName() {
        #expect(ReaderState.pnpNotification == #"\\?PnP?\Notification"#)
    }
}
