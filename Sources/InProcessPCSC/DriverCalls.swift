import SimulatedACR122IFD
import CPCSCLite
import PCSCCore

/// The one place that calls SimulatedACR122IFD's IFD handler entry points (`IFDH*`, pcsc-lite
/// `ifdhandler.h` v3.0), as Swift functions: nothing is loaded dynamically. Each wrapper makes one
/// call with the buffer sizes pcscd uses and hands back the raw RESPONSECODE; the SCARD mapping is
/// the caller's (``ReaderContext``), per function, as pcscd's `ifdwrapper.c` and `winscard.c` do it.
///
/// Callers hold the reader's lock (pcscd's `mMutex`) around every call.
enum DriverCalls {
    /// `MAX_ATR_SIZE`: the ATR buffer pcscd passes to IFDHPowerICC.
    static let maximumATRSize = 33
    /// `MAX_BUFFER_SIZE`: the attribute buffer pcscd's SCardGetAttrib passes to IFDHGetCapabilities.
    static let attributeBufferSize = 264
    /// `MAX_BUFFER_SIZE_EXTENDED`: the receive buffer of pcscd's SCardTransmit and SCardControl.
    static let receiveBufferSize = 65548

    /// IFDHCreateChannelByName.
    static func createChannel(lun: UInt, deviceName: String) -> Int {
        var text = Array(deviceName.utf8CString)
        return text.withUnsafeMutableBufferPointer { SimulatedACR122IFD.IFDHCreateChannelByName(lun, $0.baseAddress) }
    }

    /// IFDHCloseChannel.
    static func closeChannel(lun: UInt) -> Int {
        SimulatedACR122IFD.IFDHCloseChannel(lun)
    }

    /// IFDHICCPresence.
    static func presence(lun: UInt) -> Int {
        SimulatedACR122IFD.IFDHICCPresence(lun)
    }

    /// IFDHPowerICC with IFD_POWER_UP, IFD_POWER_DOWN or IFD_RESET; the ATR on success.
    static func power(lun: UInt, action: Int32) -> (result: Int, atr: [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: maximumATRSize)
        var length = UInt(maximumATRSize)
        let result = buffer.withUnsafeMutableBufferPointer { SimulatedACR122IFD.IFDHPowerICC(lun, UInt(action), $0.baseAddress, &length) }
        return (result, result == IFDResponseCode.success ? Array(buffer.prefix(Int(min(length, UInt(maximumATRSize))))) : [])
    }

    /// IFDHSetProtocolParameters with an SCARD_PROTOCOL_* value and no PTS flags.
    static func setProtocol(lun: UInt, _ protocolValue: UInt) -> Int {
        SimulatedACR122IFD.IFDHSetProtocolParameters(lun, protocolValue, 0, 0, 0, 0)
    }

    /// IFDHTransmitToICC. `headerProtocol` is what pcscd puts in SendPci.Protocol: 0 for T=0, 1 for
    /// T=1, 4 (SCARD_PROTOCOL_RAW) for raw; SendPci.Length is the client's PCI length (16 bytes, an
    /// SCARD_IO_REQUEST on LP64).
    static func transmit(lun: UInt, headerProtocol: UInt, _ command: [UInt8]) -> (result: Int, answer: [UInt8]) {
        var command = command
        var length = UInt(receiveBufferSize)
        let header = SCARD_IO_HEADER(Protocol: headerProtocol, Length: UInt(MemoryLayout<SCARD_IO_REQUEST>.size))
        var received = SCARD_IO_HEADER(Protocol: headerProtocol, Length: UInt(MemoryLayout<SCARD_IO_REQUEST>.size))
        let count = UInt(command.count)
        return withReceiveBuffer { rx in
            let result = command.withUnsafeMutableBufferPointer { tx in
                SimulatedACR122IFD.IFDHTransmitToICC(lun, header, tx.baseAddress, count, rx, &length, &received)
            }
            return (result, length)
        }
    }

    /// IFDHControl.
    static func control(lun: UInt, code: UInt32, _ command: [UInt8]) -> (result: Int, answer: [UInt8]) {
        var command = command
        var returned: UInt = 0
        let count = UInt(command.count)
        return withReceiveBuffer { rx in
            let result = command.withUnsafeMutableBufferPointer { tx in
                SimulatedACR122IFD.IFDHControl(lun, UInt(code), tx.baseAddress, count, rx, UInt(receiveBufferSize), &returned)
            }
            return (result, returned)
        }
    }

    /// Runs `call` with a receive buffer of ``receiveBufferSize`` bytes, as pcscd passes one, and
    /// returns its RESPONSECODE with the bytes the driver reported writing (none on failure). The
    /// buffer is not zeroed first: only the reported bytes are read back, and clearing 64 KiB
    /// per call cost about 65 000 instructions, more than the driver's whole answer.
    private static func withReceiveBuffer(_ call: (UnsafeMutablePointer<UInt8>) -> (result: Int, length: UInt)) -> (result: Int, answer: [UInt8]) {
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: receiveBufferSize)
        defer { buffer.deallocate() }
        let (result, length) = call(buffer)
        guard result == IFDResponseCode.success else { return (result, []) }
        return (result, Array(UnsafeBufferPointer(start: buffer, count: Int(min(length, UInt(receiveBufferSize))))))
    }

    /// IFDHGetCapabilities with a buffer of `capacity` bytes.
    static func capability(lun: UInt, tag: UInt32, capacity: Int = attributeBufferSize) -> (result: Int, value: [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: capacity)
        var length = UInt(capacity)
        let result = buffer.withUnsafeMutableBufferPointer { SimulatedACR122IFD.IFDHGetCapabilities(lun, UInt(tag), &length, $0.baseAddress) }
        guard result == IFDResponseCode.success else { return (result, []) }
        return (result, Array(buffer.prefix(Int(min(length, UInt(capacity))))))
    }
}
