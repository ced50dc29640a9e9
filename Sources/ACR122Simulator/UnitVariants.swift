import ISO7816

/// What clones and Touchatag-era units do differently from a genuine ACR122U
/// (docs/acr122-clones.md §1, §2; the flags of ``ACR122Personality``).
extension DeviceState {
    /// Whether the driver reports a card present: no card once when pcscd still holds a card the
    /// unit this one replaced powered up (``owesAbsentReport``); else a pseudo-card always, else
    /// the card automatic polling found (none on a clone).
    func reportsPresence(world: FieldWorld) -> Bool {
        if owesAbsentReport {
            owesAbsentReport = false
            return false
        }
        return personality.pseudoCardATR != nil || reportsCardPresent(world: world)
    }

    /// Powers the pseudo-card up: its ATR, with no tag activated and the PN532 untouched; nil when
    /// the personality has none.
    func powerUpPseudoCard() -> [UInt8]? {
        guard let pseudo = personality.pseudoCardATR else { return nil }
        atr = pseudo
        negotiatedProtocol = nil
        pendingGetResponse = nil
        return pseudo
    }

    /// SCardTransmit to the pseudo-card: pseudo-APDUs (CLA FF) reach the MCU as with a card
    /// (libnfc's acr122_pcsc sends its PN532 frames so on a Touchatag); any other APDU gets `63 00`,
    /// as there is no card behind it (decision: no byte log of one was found, (U)).
    func pseudoCardTransmit(_ command: [UInt8], world: FieldWorld, lock: ConditionLock<FieldWorld>) throws(IFDError) -> [UInt8] {
        guard command.first == 0xFF else { return Self.failed }
        return try pseudoAPDU(command, viaTransmit: true, world: world, lock: lock)
    }

    /// SENS_RES (ATQA) as InListPassiveTarget reports it: most significant byte first
    /// (UM0701-02 §7.3.5), or least significant first on a clone.
    func sensRes(_ atqa: UInt16) -> [UInt8] {
        let msbFirst = [UInt8(atqa >> 8), UInt8(atqa & 0xFF)]
        return personality.sensResLeastSignificantFirst ? Array(msbFirst.reversed()) : msbFirst
    }

    /// Whether InDeselect halted this card or tag (an emulation is never halted).
    func isHalted(_ peer: ActivatedPeer) -> Bool {
        haltedPeers.contains { peer.isPeer($0) }
    }

    /// InDeselect on a genuine unit: the card or tag goes to HALT, so the next InListPassiveTarget
    /// does not list it again (libnfc's nfc_initiator_list_passive_targets relies on it to stop).
    func halt(_ peer: ActivatedPeer) {
        switch peer {
        case .card(let card): if !isHalted(peer) { haltedPeers.append(card) }
        case .tag(let tag): if !isHalted(peer) { haltedPeers.append(tag) }
        case .emulation, .other: break
        }
    }
}
