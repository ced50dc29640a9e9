import Testing

@testable import ACR122Simulator

/// What a simulated peer keeps of what it received: the latest entries and a count of the rest.
@Suite struct BoundedLogTests {
    @Test func keepsTheLatestInOrderAndCountsTheDropped() {
        var log = BoundedLog<Int>(capacity: 4)
        #expect(log.elements.isEmpty && log.last == nil && log.dropped == 0)
        for n in 1...3 { log.append(n) }
        #expect(log.elements == [1, 2, 3] && log.dropped == 0 && log.total == 3)
        for n in 4...10 { log.append(n) }
        #expect(log.elements == [7, 8, 9, 10])
        #expect(log.last == 10 && log.count == 4 && log.total == 10 && log.dropped == 6)
    }

    @Test func placedCardKeepsItsLatestAPDUsAndCountsEveryOne() {
        let card = ISO14443_4Card(uid: [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6]) { _ in [0x90, 0x00] }
        let extra = 25
        for n in 0..<(ISO14443_4Card.logCapacity + extra) {
            _ = card.answer([0x00, 0xB0, UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n), 0x02])
        }
        let log = card.receivedLog
        #expect(log.total == ISO14443_4Card.logCapacity + extra)
        #expect(log.dropped == extra)
        #expect(card.receivedAPDUs.count == ISO14443_4Card.logCapacity)
        #expect(card.receivedAPDUs.first == [0x00, 0xB0, 0x00, UInt8(extra), 0x02])
    }

    @Test func leavingAfterTheNthAPDUCountsPastTheKeptOnes() {
        let n = ISO14443_4Card.logCapacity + 3
        let card = ISO14443_4Card(uid: [0x04, 0x01, 0x02, 0x03], leavesAfter: n) { _ in [0x90, 0x00] }
        for _ in 1..<n { #expect(card.answer([0x00, 0x84, 0x00, 0x00, 0x08]) != nil) }
        #expect(card.answer([0x00, 0x84, 0x00, 0x00, 0x08]) == nil)
    }
}
