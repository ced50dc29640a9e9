import ACR122Simulator
import CPCSCLite
import PCSCCore

// The IFD handler entry points pcscd looks up in this library (pcsc-lite `ifdhandler.h`, IFD
// Handler API v3.0). Each one finds the reader by `Lun >> 16` (see `ReaderTable`) and calls its
// `IFDDevice`; IFD_* results and `IFDError` correspond as IFDDevice.swift documents:
//
// | IFDError | RESPONSECODE | what pcscd makes of it |
// |---|---|---|
// | noCard | IFD_ICC_NOT_PRESENT (616) | SCARD_E_NO_SMARTCARD / SCARD_W_REMOVED_CARD |
// | communicationError | IFD_COMMUNICATION_ERROR (612) | SCARD_E_NOT_TRANSACTED |
// | notSupported | IFD_ERROR_NOT_SUPPORTED (606) | SCARD_E_UNSUPPORTED_FEATURE |
// | protocolNotSupported | IFD_PROTOCOL_NOT_SUPPORTED (607) | SCARD_E_PROTO_MISMATCH |
// | responseTimeout | IFD_RESPONSE_TIMEOUT (613) | SCARD_E_NOT_TRANSACTED |
// | insufficientBuffer | IFD_ERROR_INSUFFICIENT_BUFFER (618) | SCARD_E_INSUFFICIENT_BUFFER |
//
// A call for a Lun that was never opened answers IFD_COMMUNICATION_ERROR. Nothing here traps on
// what pcscd passes: null pointers and short buffers give an error code.
//
// Threads: the driver reports TAG_IFD_THREAD_SAFE = 1, so pcscd gives each reader its own lock and
// calls two readers at once (a TgInitAsTarget blocking on one reader does not stall the other);
// pcscd still calls one reader from one thread at a time.

/// The RESPONSECODE of `error` (table above; the values are `IFDError.responseCode`'s).
func responseCode(_ error: IFDError) -> RESPONSECODE { RESPONSECODE(error.responseCode) }

private let success = RESPONSECODE(IFD_SUCCESS)
private let communicationError = RESPONSECODE(IFD_COMMUNICATION_ERROR)
/// An unplugged reader's answer (control verb `unplug`), as libccid's for a removed USB device.
private let noSuchDevice = RESPONSECODE(IFD_NO_SUCH_DEVICE)

/// Copies `bytes` into a C buffer of `capacity` bytes and stores the length.
/// - Returns: IFD_SUCCESS, or IFD_ERROR_INSUFFICIENT_BUFFER (length 0) when it does not fit.
private func copyOut(_ bytes: [UInt8], to buffer: UnsafeMutablePointer<UInt8>?, capacity: UInt,
                     length: UnsafeMutablePointer<DWORD>?) -> RESPONSECODE {
    guard UInt(bytes.count) <= capacity, bytes.isEmpty || buffer != nil else {
        length?.pointee = 0
        return RESPONSECODE(IFD_ERROR_INSUFFICIENT_BUFFER)
    }
    bytes.withUnsafeBufferPointer { source in
        if let base = source.baseAddress, let buffer { buffer.update(from: base, count: bytes.count) }
    }
    length?.pointee = DWORD(bytes.count)
    return success
}

private func bytes(_ pointer: UnsafeMutablePointer<UInt8>?, _ count: DWORD) -> [UInt8] {
    guard let pointer, count > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: pointer, count: Int(min(count, DWORD(Int32.max)))))
}

/// Opens the reader on `DeviceName` (see `DeviceName` for the syntax).
@_cdecl("IFDHCreateChannelByName")
public func IFDHCreateChannelByName(_ lun: DWORD, _ deviceName: UnsafeMutablePointer<CChar>?) -> RESPONSECODE {
    guard let deviceName else {
        DriverLog.write("IFDHCreateChannelByName without a DEVICENAME")
        return communicationError
    }
    return ReaderTable.open(lun: lun, deviceNameText: String(cString: deviceName)) == nil ? communicationError : success
}

/// Opens the reader for a reader.conf entry without DEVICENAME: the directory is
/// `/tmp/secbridge-acr122.channel-<CHANNELID>`, with the default personality and its own field.
@_cdecl("IFDHCreateChannel")
public func IFDHCreateChannel(_ lun: DWORD, _ channel: DWORD) -> RESPONSECODE {
    ReaderTable.open(lun: lun, deviceNameText: "/tmp/secbridge-acr122.channel-\(channel)") == nil ? communicationError : success
}

/// Closes the reader of `lun` (pcscd calls it when the reader goes away or pcscd stops): the
/// simulated device is powered down and its control socket stopped. Returns IFD_SUCCESS (0), or
/// IFD_COMMUNICATION_ERROR (612) for a `lun` that is not open (pcsc-lite `ifdhandler.h`).
@_cdecl("IFDHCloseChannel")
public func IFDHCloseChannel(_ lun: DWORD) -> RESPONSECODE {
    ReaderTable.close(lun: lun) ? success : communicationError
}

/// Capabilities: TAG_IFD_ATR / SCARD_ATTR_ATR_STRING (the last ATR), TAG_IFD_SIMULTANEOUS_ACCESS
/// (16 readers per pcscd), TAG_IFD_THREAD_SAFE (1), TAG_IFD_SLOTS_NUMBER (1),
/// TAG_IFD_SLOT_THREAD_SAFE (0), `PCSCAttribute/simulatorControlSocket` (the control socket's
/// path; IFD_ERROR_TAG with `control=none`); any other tag is asked of the device
/// (`IFDDevice.attribute`, e.g. SCARD_ATTR_MAXINPUT, SCARD_ATTR_VENDOR_NAME); IFD_ERROR_TAG when
/// it has none.
@_cdecl("IFDHGetCapabilities")
public func IFDHGetCapabilities(_ lun: DWORD, _ tag: DWORD, _ length: UnsafeMutablePointer<DWORD>?,
                                _ value: UnsafeMutablePointer<UInt8>?) -> RESPONSECODE {
    guard let length else { return communicationError }
    let capacity = length.pointee
    switch tag {
    case DWORD(TAG_IFD_SIMULTANEOUS_ACCESS):
        return copyOut([UInt8(ReaderTable.capacity)], to: value, capacity: capacity, length: length)
    case DWORD(TAG_IFD_THREAD_SAFE):
        return copyOut([1], to: value, capacity: capacity, length: length)
    case DWORD(TAG_IFD_SLOTS_NUMBER):
        return copyOut([1], to: value, capacity: capacity, length: length)
    case DWORD(TAG_IFD_SLOT_THREAD_SAFE):
        return copyOut([0], to: value, capacity: capacity, length: length)
    default:
        break
    }
    guard let reader = ReaderTable.reader(lun) else { return communicationError }
    if tag == DWORD(TAG_IFD_ATR) || tag == DWORD(cpcsc_attr_atr_string()) {
        return copyOut(reader.atr, to: value, capacity: capacity, length: length)
    }
    if tag == DWORD(PCSCAttribute.simulatorControlSocket.rawValue) {
        // The simulator's own attribute: where its control socket is (for `emulate` to ask its
        // terminals how their runs ended); none with `control=none`.
        guard reader.server != nil else {
            length.pointee = 0
            return RESPONSECODE(IFD_ERROR_TAG)
        }
        return copyOut(Array(reader.deviceName.socketPath.utf8) + [0], to: value, capacity: capacity, length: length)
    }
    guard tag <= DWORD(UInt32.max), let attribute = reader.device.attribute(UInt32(tag)) else {
        length.pointee = 0
        return RESPONSECODE(IFD_ERROR_TAG)
    }
    return copyOut(attribute, to: value, capacity: capacity, length: length)
}

/// No capability can be set (as libccid for these tags): IFD_NOT_SUPPORTED.
@_cdecl("IFDHSetCapabilities")
public func IFDHSetCapabilities(_ lun: DWORD, _ tag: DWORD, _ length: DWORD,
                                _ value: UnsafeMutablePointer<UInt8>?) -> RESPONSECODE {
    ReaderTable.reader(lun) == nil ? communicationError : RESPONSECODE(IFD_NOT_SUPPORTED)
}

/// Selects the protocol (an SCARD_PROTOCOL_* value: T=0 is 1, T=1 is 2). PTS flags are ignored:
/// a contactless ACR122U has no PPS.
@_cdecl("IFDHSetProtocolParameters")
public func IFDHSetProtocolParameters(_ lun: DWORD, _ protocolValue: DWORD, _ flags: UInt8,
                                      _ pts1: UInt8, _ pts2: UInt8, _ pts3: UInt8) -> RESPONSECODE {
    guard let reader = ReaderTable.reader(lun) else { return communicationError }
    if reader.binding.isUnplugged { return noSuchDevice }
    do {
        try reader.device.setProtocol(UInt(protocolValue))
        return success
    } catch {
        return responseCode(error)
    }
}

/// Powers the card up, down or resets it. A power-up or reset without a card answers
/// IFD_ERROR_POWER_ACTION, as `ifdhandler.h` documents for a failed power action.
@_cdecl("IFDHPowerICC")
public func IFDHPowerICC(_ lun: DWORD, _ action: DWORD, _ atr: UnsafeMutablePointer<UInt8>?,
                         _ atrLength: UnsafeMutablePointer<DWORD>?) -> RESPONSECODE {
    guard let reader = ReaderTable.reader(lun) else { return communicationError }
    if reader.binding.isUnplugged {
        atrLength?.pointee = 0
        return noSuchDevice
    }
    switch action {
    case DWORD(IFD_POWER_DOWN):
        reader.device.powerDown()
        reader.atr = []
        atrLength?.pointee = 0
        return success
    case DWORD(IFD_POWER_UP), DWORD(IFD_RESET):
        do {
            let answer = try reader.device.powerUp()
            reader.atr = answer
            // MAX_ATR_SIZE is 33; pcscd passes a buffer of that size.
            return copyOut(answer, to: atr, capacity: min(atrLength?.pointee ?? 33, 33), length: atrLength)
        } catch {
            reader.atr = []
            atrLength?.pointee = 0
            return error == .noCard ? RESPONSECODE(IFD_ERROR_POWER_ACTION) : responseCode(error)
        }
    default:
        return RESPONSECODE(IFD_NOT_SUPPORTED)
    }
}

/// Sends an APDU or pseudo-APDU to the card. `RecvPci.Protocol` echoes `SendPci.Protocol`
/// (0 for T=0, 1 for T=1).
@_cdecl("IFDHTransmitToICC")
public func IFDHTransmitToICC(_ lun: DWORD, _ sendPci: SCARD_IO_HEADER, _ txBuffer: UnsafeMutablePointer<UInt8>?,
                              _ txLength: DWORD, _ rxBuffer: UnsafeMutablePointer<UInt8>?,
                              _ rxLength: UnsafeMutablePointer<DWORD>?,
                              _ recvPci: UnsafeMutablePointer<SCARD_IO_HEADER>?) -> RESPONSECODE {
    guard let reader = ReaderTable.reader(lun), let rxLength else {
        rxLength?.pointee = 0
        return communicationError
    }
    if reader.binding.isUnplugged {
        rxLength.pointee = 0
        return noSuchDevice
    }
    let capacity = rxLength.pointee
    // The unit itself, not the binding: a replug meanwhile puts a fresh one behind the binding.
    let device = reader.binding.device
    do {
        let answer = try device.transmit(bytes(txBuffer, txLength))
        recvPci?.pointee.Protocol = sendPci.Protocol
        recvPci?.pointee.Length = DWORD(MemoryLayout<SCARD_IO_HEADER>.size)
        return copyOut(answer, to: rxBuffer, capacity: capacity, length: rxLength)
    } catch {
        rxLength.pointee = 0
        // Unplugged while the command was under way: the transfer failed with the device gone.
        return device.isDetached ? noSuchDevice : responseCode(error)
    }
}

/// Card presence, as the device reports it (pcscd asks about every 400 ms).
@_cdecl("IFDHICCPresence")
public func IFDHICCPresence(_ lun: DWORD) -> RESPONSECODE {
    guard let reader = ReaderTable.reader(lun) else { return communicationError }
    if reader.binding.isUnplugged { return noSuchDevice }
    return RESPONSECODE(reader.device.isCardPresent() ? IFD_ICC_PRESENT : IFD_ICC_NOT_PRESENT)
}

/// Sends a control command (SCardControl): escape commands, CM_IOCTL_GET_FEATURE_REQUEST.
@_cdecl("IFDHControl")
public func IFDHControl(_ lun: DWORD, _ controlCode: DWORD, _ txBuffer: UnsafeMutablePointer<UInt8>?,
                        _ txLength: DWORD, _ rxBuffer: UnsafeMutablePointer<UInt8>?, _ rxLength: DWORD,
                        _ bytesReturned: UnsafeMutablePointer<DWORD>?) -> RESPONSECODE {
    bytesReturned?.pointee = 0
    guard let reader = ReaderTable.reader(lun) else { return communicationError }
    if reader.binding.isUnplugged { return noSuchDevice }
    guard controlCode <= DWORD(UInt32.max) else { return RESPONSECODE(IFD_ERROR_NOT_SUPPORTED) }
    // The unit itself, not the binding: a replug meanwhile puts a fresh one behind the binding.
    let device = reader.binding.device
    do {
        let answer = try device.control(code: UInt32(controlCode), bytes(txBuffer, txLength))
        return copyOut(answer, to: rxBuffer, capacity: rxLength, length: bytesReturned)
    } catch {
        // Unplugged while the command was under way (TgInitAsTarget waiting for a terminal, …).
        return device.isDetached ? noSuchDevice : responseCode(error)
    }
}
