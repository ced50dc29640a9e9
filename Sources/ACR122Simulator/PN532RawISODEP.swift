import ISO7816

/// ISO-DEP blocks sent raw through InCommunicateThru to an ISO/IEC 14443-4 card the host
/// activated itself (automatic RATS off with SetParameters, then a raw RATS `E0 param`): the
/// half-duplex block protocol runs in the host, as nfcpy's pn53x driver does for a Type 4A Tag
/// (its `sense_tta` sends SetParameters 00 and its Type 4 tag code sends RATS and every block
/// with InCommunicateThru; docs/pn532-uart.md §10).
///
/// The card's side of ISO/IEC 14443-4 §7 (blocks §7.1, rules §7.5):
/// - I-block `PCB [CID] [NAD] INF` (PCB `0000 xx1b` with b5 chaining, b4 CID, b3 NAD, b1 block
///   number): a chained part is kept and answered R(ACK) `A2|bn`; the last part completes the
///   C-APDU, answered by an I-block with the same block number, the R-APDU as INF. An R-APDU
///   longer than FSD − 3 − CID goes in chained I-blocks, the next one on each R(ACK) of the
///   other block number.
/// - R(NAK) `B2|bn`, or R(ACK) `A2|bn` with the block number of the card's last block: that
///   block again.
/// - S(DESELECT) `C2`: answered `C2`; the card is deselected (HALT, ISO/IEC 14443-4 §8).
/// A CID byte the host sends is echoed in the answer (PCB b4 kept); a NAD is not echoed (the
/// card answers without one, which the standard allows). The answer gets a CRC_A when the host
/// reads CRCs itself (RxCRCEn cleared).
extension DeviceState {
    /// The answer `Status block` to one ISO-DEP block, or nil when the first target is not an
    /// ISO/IEC 14443-4 card activated with a raw RATS (the caller goes on).
    func rawISODEPBlock(_ frame: [UInt8], hostGetsCRC: Bool, world: FieldWorld) -> [UInt8]? {
        guard let pcb = frame.first, case .initiator(var targets) = role,
              let index = targets.firstIndex(where: { !$0.deselected }), targets[index].isoDEP,
              case .card(let card) = targets[index].peer else {
            return nil
        }
        func mute() -> [UInt8] {
            lastError = 0x01
            return [0x01]
        }
        guard stillPresent(targets[index].peer, world: world) else { return mute() }
        let hasCID = pcb & 0x08 != 0
        let cid: [UInt8] = hasCID && frame.count >= 2 ? [frame[1]] : []
        let header = 1 + (hasCID ? 1 : 0) + (pcb & 0x04 != 0 && pcb & 0xE2 == 0x02 ? 1 : 0)
        guard frame.count >= header else { return mute() }
        let room = max(1, min(targets[index].frameSizeForReader - 3 - cid.count, Self.frameDataLimit - 1 - cid.count))
        func send(_ block: [UInt8]) -> [UInt8] {
            targets[index].lastBlock = block
            role = .initiator(targets)
            lastError = 0x00
            return [0x00] + block + (hostGetsCRC ? Self.crcA(block) : [])
        }
        func nextPart(blockNumber: UInt8) -> [UInt8] {
            let part = Array(targets[index].pendingAnswer.prefix(room))
            targets[index].pendingAnswer.removeFirst(part.count)
            let chaining: UInt8 = targets[index].pendingAnswer.isEmpty ? 0x00 : 0x10
            return send([0x02 | chaining | blockNumber | (hasCID ? 0x08 : 0x00)] + cid + part)
        }
        switch pcb {
        case let p where p & 0xE2 == 0x02:  // I-block
            let blockNumber = p & 0x01
            targets[index].commandChain += frame.dropFirst(header)
            if p & 0x10 != 0 {
                return send([0xA2 | blockNumber | (hasCID ? 0x08 : 0x00)] + cid)
            }
            let apdu = targets[index].commandChain
            targets[index].commandChain = []
            guard let answer = card.answer(apdu) else {
                world.removePeer(card)
                return mute()
            }
            targets[index].pendingAnswer = answer
            return nextPart(blockNumber: blockNumber)
        case let p where p & 0xE6 == 0xA2:  // R-block
            let blockNumber = p & 0x01
            let last = targets[index].lastBlock
            let lastNumber = last.first.map { $0 & 0x01 }
            if p & 0x10 == 0, blockNumber != lastNumber, !targets[index].pendingAnswer.isEmpty {
                return nextPart(blockNumber: blockNumber)
            }
            guard !last.isEmpty else { return mute() }
            return send(last)
        case let p where p & 0xF7 == 0xC2:  // S(DESELECT)
            targets[index].deselected = true
            targets[index].isoDEP = false
            return send([p] + cid)
        default:
            return mute()
        }
    }
}
