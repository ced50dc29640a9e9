import ISO7816

/// MIFARE Classic value blocks: on air (INCREMENT C1, DECREMENT C0, RESTORE C2, TRANSFER B0;
/// MF1S50YYX_V1 §8.6, §10) and through the ACR122U's pseudo-APDUs (Value Block Operation
/// `FF D7`, Read Value Block `FF B1`, Restore Value Block `FF D7 … 03`; ACR122U API v2.04 §5.5–§5.7;
/// docs/acr122-clones.md §5).
///
/// A value block holds a signed 32-bit value three times, the middle copy inverted, each least
/// significant byte first, then an address byte four times, the second and fourth inverted:
/// `v0 v1 v2 v3 ~v0 ~v1 ~v2 ~v3 v0 v1 v2 v3 a ~a a ~a`.
extension MIFAREClassicMemory {
    /// The 16 bytes of a value block holding `value` with address byte `address`.
    public static func valueBlock(_ value: Int32, address: UInt8) -> [UInt8] {
        let v = withUnsafeBytes(of: value.littleEndian) { Array($0) }
        return v + v.map { ~$0 } + v + [address, ~address, address, ~address]
    }

    /// The value and address byte of a block in value-block format, or nil when `data` is not one.
    public static func value(ofBlock data: [UInt8]) -> (value: Int32, address: UInt8)? {
        guard data.count == 16 else { return nil }
        let v = Array(data[0..<4])
        guard Array(data[4..<8]) == v.map({ ~$0 }), Array(data[8..<12]) == v,
              data[13] == ~data[12], data[14] == data[12], data[15] == ~data[12] else { return nil }
        let value = v.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
        return (Int32(bitPattern: value), data[12])
    }

    /// Who may increment, and who may decrement, transfer and restore, a data block with access
    /// bits `c` (C1 C2 C3, MF1S50YYX_V1 §8.7.3): 000 A|B both, 110 B and A|B, 001 never and A|B,
    /// every other combination never.
    static func valuePermissions(_ c: UInt8) -> (increment: MIFAREAccessConditions.Permission, decrement: MIFAREAccessConditions.Permission) {
        switch c & 0x07 {
        case 0b000: (.keyAOrB, .keyAOrB)
        case 0b110: (.keyB, .keyAOrB)
        case 0b001: (.never, .keyAOrB)
        default: (.never, .never)
        }
    }

    /// INCREMENT `C1 block operand(4, LSB first)`, DECREMENT `C0 …`, RESTORE `C2 block xx xx xx xx`:
    /// the block's value (plus, minus, or as it is) goes into the card's transfer buffer; the
    /// block itself is unchanged until TRANSFER. The PN532 sends both parts in one InDataExchange
    /// and the card's silence after the operand is its success (reported as the ACK here,
    /// decision). NAK when not authenticated for the block's sector, the access bits forbid it,
    /// the block is a trailer or not in value-block format, or the result leaves the signed
    /// 32-bit range (decision: the data sheet leaves overflow open).
    ///
    /// RESTORE is also taken as `C2 block` alone, without the operand: ACS's ACR122S and ACR122L
    /// communication protocol manuals restore a value block with `D4 40 01 C2 05` and show
    /// `D5 41 00 90 00`, the next READ of the TRANSFER's target holding the value
    /// (docs/acr122-clones.md §5). What the PN532 then sends as part 2 is not documented (U).
    mutating func valueCommand(_ command: [UInt8]) -> TagAnswer {
        guard command.count == 6 || (command.count == 2 && command[0] == 0xC2) else { return .nak(0x0) }
        let block = Int(command[1])
        guard let (sector, keyB, conditions) = session(for: block) else {
            resetAuthentication()
            return .nak(0x4)
        }
        let group = accessGroup(ofBlock: block, sector: sector)
        let permissions = Self.valuePermissions(conditions.groups[min(group, 2)])
        let allowed = command[0] == 0xC1 ? permissions.increment : permissions.decrement
        guard group != 3, allowed.allows(keyB: keyB), let stored = Self.value(ofBlock: self.block(block) ?? []) else {
            resetAuthentication()
            return .nak(0x4)
        }
        let operand = Int32(bitPattern: command.dropFirst(2).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) })
        let result: (Int32, Bool)
        switch command[0] {
        case 0xC1: result = stored.value.addingReportingOverflow(operand)
        case 0xC0: result = stored.value.subtractingReportingOverflow(operand)
        default: result = (stored.value, false)
        }
        guard !result.1 else {
            resetAuthentication()
            return .nak(0x4)
        }
        transferBuffer = Self.valueBlock(result.0, address: stored.address)
        return .ack
    }

    /// TRANSFER `B0 block`: writes the transfer buffer into `block` (decrement rights needed) → ACK;
    /// NAK without a buffer, authentication or permission.
    mutating func transfer(_ command: [UInt8]) -> TagAnswer {
        guard command.count == 2 else { return .nak(0x0) }
        let block = Int(command[1])
        guard let buffer = transferBuffer, let (sector, keyB, conditions) = session(for: block) else {
            resetAuthentication()
            return .nak(0x4)
        }
        let group = accessGroup(ofBlock: block, sector: sector)
        guard group != 3, block != 0, Self.valuePermissions(conditions.groups[group]).decrement.allows(keyB: keyB) else {
            resetAuthentication()
            return .nak(0x4)
        }
        overwrite(block: block, with: buffer)
        transferBuffer = nil
        return .ack
    }
}

extension DeviceState {
    /// Value Block Operation `FF D7 00 block 05 op value(4, MSB first)` (op 00 store, 01 increment,
    /// 02 decrement) and Restore Value Block `FF D7 00 source 02 03 target` (ACR122U API v2.04
    /// §5.5, §5.7) on the MIFARE Classic card last authenticated: store is a WRITE of the
    /// value-block format (address byte = the block number), increment and decrement are
    /// C1/C0 then TRANSFER to the same block, restore is C2 source then TRANSFER target. 90 00 on
    /// success; 63 00 otherwise (no Classic card, a NAK, a bad length or op).
    func valueBlockOperation(block: UInt8, lc: UInt8, data: [UInt8], world: FieldWorld) -> [UInt8] {
        guard let tag = polledTag(world: world), tag.isClassic, Int(lc) == data.count else { return Self.failed }
        switch (lc, data.first) {
        case (0x05, 0x00?):
            let value = Int32(bitPattern: data[1...4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            let write = [0xA0, block] + MIFAREClassicMemory.valueBlock(value, address: block)
            return onAir(tag, write, world: world) == .ack ? Self.ok : Self.failed
        case (0x05, 0x01?), (0x05, 0x02?):
            // The operand goes on air least significant byte first.
            let operand = Array(data[1...4].reversed())
            let code: UInt8 = data[0] == 0x01 ? 0xC1 : 0xC0
            guard onAir(tag, [code, block] + operand, world: world) == .ack, onAir(tag, [0xB0, block], world: world) == .ack else { return Self.failed }
            return Self.ok
        case (0x02, 0x03?):
            let target = data[1]
            guard onAir(tag, [0xC2, block, 0x00, 0x00, 0x00, 0x00], world: world) == .ack, onAir(tag, [0xB0, target], world: world) == .ack else {
                return Self.failed
            }
            return Self.ok
        default:
            return Self.failed
        }
    }

    /// Read Value Block `FF B1 00 block 04` → value (4 bytes, MSB first) + 90 00 (ACR122U API
    /// v2.04 §5.6): a READ of the block, 63 00 when it fails or the block is not in value-block
    /// format.
    func readValueBlock(block: UInt8, le: UInt8, hasData: Bool, world: FieldWorld) -> [UInt8] {
        guard !hasData, le == 0x04, let tag = polledTag(world: world), tag.isClassic,
              case .data(let bytes)? = onAir(tag, [0x30, block], world: world),
              let (value, _) = MIFAREClassicMemory.value(ofBlock: bytes) else { return Self.failed }
        let raw = UInt32(bitPattern: value)
        return [UInt8(raw >> 24), UInt8((raw >> 16) & 0xFF), UInt8((raw >> 8) & 0xFF), UInt8(raw & 0xFF)] + Self.ok
    }
}
