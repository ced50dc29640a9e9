import ISO7816

/// ISO/IEC 14443-3 Type A activation sent raw through InCommunicateThru, as libnfc's `nfc-anticol`
/// does with CRC handling off and easy framing off (docs/acr122-pn532.md §4b).
extension DeviceState {
    /// Answers a raw Type A activation frame, or nil when `raw` is none (the caller goes on):
    /// - REQA `26` / WUPA `52` sent as 7 bits (BitFraming 633D TxLastBits 7) → `00 ATQA`, the ATQA
    ///   least significant byte first as on air (ISO/IEC 14443-3 §6.3.2); `01` with no peer.
    /// - ANTICOLLISION `93|95|97 20` → `00` and the UID part of that cascade level with its BCC:
    ///   a 4-byte UID whole at level 1; a 7-byte UID as `88 uid0–2`, then `uid3–6`; a 10-byte UID
    ///   as `88 uid0–2`, `88 uid3–5`, `uid6–9` (§6.5.4).
    /// - SELECT `93|95|97 70 part BCC` (plus its CRC_A when the host sends CRCs) → `00 SAK`, SAK 04
    ///   (cascade bit: UID not complete) before the last level, the peer's SAK at the last; with
    ///   RxCRCEn cleared the SAK comes with its CRC_A. A part that does not match → `01` (the
    ///   peer stays mute). The last SELECT makes the peer target 1 of the initiator role, as
    ///   InListPassiveTarget would, without RATS.
    /// The peer is the first Type A card or tag in the field; an emulation on another reader is
    /// not answered raw (decision).
    func rawAnticollision(_ raw: [UInt8], hostSendsCRC: Bool, hostGetsCRC: Bool, world: FieldWorld) -> [UInt8]? {
        let txLastBits = registerValue(0x633D) & 0x07
        func identity(_ peer: ActivatedPeer) -> TypeAIdentity? {
            switch peer {
            case .card(let c): c.identity
            case .tag(let t): t.identity
            case .emulation, .other: nil  // raw Type A frames reach Type A peers only
            }
        }
        let peer = candidates(world: world, uid: []).first { identity($0) != nil }
        func mute() -> [UInt8] {
            lastError = 0x01
            return [0x01]
        }
        if raw == [0x26] || raw == [0x52] {
            guard txLastBits == 7 else { return nil }
            guard let peer, let id = identity(peer) else { return mute() }
            if case .tag(let tag) = peer { tag.resetSession() }
            lastError = 0x00
            return [0x00, UInt8(id.atqa & 0xFF), UInt8(id.atqa >> 8)]
        }
        if raw.first == 0xE0 { return rawRATS(raw, hostSendsCRC: hostSendsCRC, hostGetsCRC: hostGetsCRC, world: world) }
        guard raw.count >= 2, let level = [0x93, 0x95, 0x97].firstIndex(of: raw[0]), raw[1] == 0x20 || raw[1] == 0x70 else {
            return nil
        }
        guard let peer, let id = identity(peer) else { return mute() }
        let parts = Self.cascadeParts(id.uid)
        guard level < parts.count else { return mute() }
        let part = parts[level] + [parts[level].reduce(0, ^)]
        if raw[1] == 0x20 {
            guard raw.count == 2 else { return mute() }
            lastError = 0x00
            return [0x00] + part
        }
        var select = Array(raw.dropFirst(2))
        if hostSendsCRC {
            guard select.count == 7, Array(select.suffix(2)) == Self.crcA(Array(raw.dropLast(2))) else { return mute() }
            select.removeLast(2)
        }
        guard select == part else { return mute() }
        let last = level == parts.count - 1
        let sak: UInt8 = last ? id.sak : 0x04
        if last {
            role = .initiator([ListedTarget(number: 1, peer: peer, isoDEP: false)])
        }
        lastError = 0x00
        return [0x00, sak] + (hostGetsCRC ? Self.crcA([sak]) : [])
    }

    /// RATS `E0 param` (plus its CRC_A when the host sends CRCs) to target 1 after a raw SELECT: an
    /// ISO/IEC 14443-4 card answers its ATS (TL first; with its CRC_A when RxCRCEn is cleared) and
    /// ISO-DEP is active (ISO/IEC 14443-4 §5.6); any other target stays mute (`01`).
    func rawRATS(_ raw: [UInt8], hostSendsCRC: Bool, hostGetsCRC: Bool, world: FieldWorld) -> [UInt8] {
        let length = hostSendsCRC ? 4 : 2
        guard raw.count == length, !hostSendsCRC || Array(raw.suffix(2)) == Self.crcA(Array(raw.prefix(2))),
              case .initiator(var targets) = role, let first = targets.first, !first.isoDEP,
              case .card(let card) = first.peer, stillPresent(first.peer, world: world) else {
            lastError = 0x01
            return [0x01]
        }
        targets[0].isoDEP = true
        // FSDI, the high nibble of the parameter byte → FSD (ISO/IEC 14443-4 §5.1, Table 1);
        // FSDI above 8 (RFU in that edition) is taken as 256.
        let fsd = [16, 24, 32, 40, 48, 64, 96, 128, 256]
        targets[0].frameSizeForReader = fsd[min(Int(raw[1] >> 4), 8)]
        targets[0].lastBlock = []
        role = .initiator(targets)
        lastError = 0x00
        return [0x00] + card.ats + (hostGetsCRC ? Self.crcA(card.ats) : [])
    }

    /// The UID's cascade levels without BCC (ISO/IEC 14443-3 §6.5.4): CT 88 in front of each level
    /// but the last.
    static func cascadeParts(_ uid: [UInt8]) -> [[UInt8]] {
        switch uid.count {
        case 7: [[0x88] + uid[0..<3], Array(uid[3..<7])]
        case 10: [[0x88] + uid[0..<3], [0x88] + uid[3..<6], Array(uid[6..<10])]
        default: [uid]
        }
    }
}
