import CPCSCLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The only place in the package that calls pcsc-lite's `SCard*` functions.
///
/// Each wrapper makes one C call, turns a non-success result into a ``PCSCError`` naming the function,
/// and hands back plain Swift values. Every call here may block the calling thread (each is an IPC
/// round trip to pcscd, and SCardGetStatusChange waits for events): callers run them on a dedicated
/// thread (``BlockingExecutor``), never on Swift's shared concurrency pool. Every result passes
/// through ``SCard/check(_:_:)``, the one place where a trace or fault-injection hook would attach;
/// none is installed (tests inject faults with the simulated reader's `fault` control verb, and
/// record exchanges with Transcript's `RecordingChannel` above this layer). Every C call passes
/// through ``CallGate/pcscLite``, which the binaries close before exit(3).
enum SCard {
    typealias Context = SCARDCONTEXT
    typealias Handle = SCARDHANDLE
    typealias ResultCode = LONG

    static let gate = CallGate.pcscLite

    @inline(__always)
    static func check(_ result: LONG, _ function: String) throws(PCSCError) {
        if result != LONG(SCARD_S_SUCCESS) { throw PCSCError(rawValue: Int(result), function: function) }
    }

    static func establishContext(scope: UInt) throws(PCSCError) -> Context {
        var context: SCARDCONTEXT = 0
        try check(gate.call { SCardEstablishContext(DWORD(scope), nil, nil, &context) }, "SCardEstablishContext")
        return context
    }

    static func releaseContext(_ context: Context) throws(PCSCError) {
        try check(gate.call { SCardReleaseContext(context) }, "SCardReleaseContext")
    }

    static func isValidContext(_ context: Context) -> Bool {
        gate.call { SCardIsValidContext(context) } == LONG(SCARD_S_SUCCESS)
    }

    static func cancel(_ context: Context) throws(PCSCError) {
        try check(gate.call { SCardCancel(context) }, "SCardCancel")
    }

    /// The reader multi-string ("A\0B\0\0"), or nil when no reader is available.
    static func listReaders(_ context: Context) throws(PCSCError) -> [UInt8]? {
        // Two calls: ask for the size, then fetch. A reader can appear between them; then the second
        // call says the buffer is too small and we ask again (bounded).
        for _ in 0..<4 {
            var length: DWORD = 0
            var result = gate.call { SCardListReaders(context, nil, nil, &length) }
            if result == LONG(bitPattern: UInt(PCSCError.noReadersAvailable.code)) { return nil }
            try check(result, "SCardListReaders")
            var buffer = [UInt8](repeating: 0, count: Int(length))
            result = buffer.withUnsafeMutableBufferPointer { raw in
                raw.baseAddress!.withMemoryRebound(to: CChar.self, capacity: raw.count) { multiString in
                    gate.call { SCardListReaders(context, nil, multiString, &length) }
                }
            }
            if result == LONG(bitPattern: UInt(PCSCError.noReadersAvailable.code)) { return nil }
            if result == LONG(bitPattern: UInt(PCSCError.insufficientBuffer.code)) { continue }
            try check(result, "SCardListReaders")
            return Array(buffer.prefix(Int(length)))
        }
        throw PCSCError(code: PCSCError.insufficientBuffer.code, function: "SCardListReaders")
    }

    static func connect(
        _ context: Context, reader: String, share: UInt, protocols: UInt
    ) throws(PCSCError) -> (Handle, UInt) {
        var handle: SCARDHANDLE = 0
        var active: DWORD = 0
        try check(
            gate.call { SCardConnect(context, reader, DWORD(share), DWORD(protocols), &handle, &active) }, "SCardConnect")
        return (handle, UInt(active))
    }

    static func reconnect(
        _ handle: Handle, share: UInt, protocols: UInt, initialization: UInt
    ) throws(PCSCError) -> UInt {
        var active: DWORD = 0
        try check(
            gate.call { SCardReconnect(handle, DWORD(share), DWORD(protocols), DWORD(initialization), &active) },
            "SCardReconnect")
        return UInt(active)
    }

    static func disconnect(_ handle: Handle, disposition: UInt) throws(PCSCError) {
        try check(gate.call { SCardDisconnect(handle, DWORD(disposition)) }, "SCardDisconnect")
    }

    static func beginTransaction(_ handle: Handle) throws(PCSCError) {
        try check(gate.call { SCardBeginTransaction(handle) }, "SCardBeginTransaction")
    }

    static func endTransaction(_ handle: Handle, disposition: UInt) throws(PCSCError) {
        try check(gate.call { SCardEndTransaction(handle, DWORD(disposition)) }, "SCardEndTransaction")
    }

    struct RawStatus {
        var readerName: [UInt8]
        var state: UInt
        var protocolValue: UInt
        var atr: [UInt8]
    }

    static func status(_ handle: Handle) throws(PCSCError) -> RawStatus {
        var nameLength: DWORD = 0
        var state: DWORD = 0
        var protocolValue: DWORD = 0
        var atr = [UInt8](repeating: 0, count: Int(MAX_ATR_SIZE))
        var atrLength = DWORD(atr.count)
        try check(
            gate.call { SCardStatus(handle, nil, &nameLength, &state, &protocolValue, &atr, &atrLength) }, "SCardStatus")
        var name = [UInt8](repeating: 0, count: Int(nameLength))
        atrLength = DWORD(atr.count)
        let result = name.withUnsafeMutableBufferPointer { raw in
            raw.baseAddress!.withMemoryRebound(to: CChar.self, capacity: raw.count) { nameBytes in
                gate.call { SCardStatus(handle, nameBytes, &nameLength, &state, &protocolValue, &atr, &atrLength) }
            }
        }
        try check(result, "SCardStatus")
        return RawStatus(
            readerName: Array(name.prefix(Int(nameLength))), state: UInt(state),
            protocolValue: UInt(protocolValue), atr: Array(atr.prefix(Int(atrLength))))
    }

    static func getAttribute(_ handle: Handle, id: UInt32) throws(PCSCError) -> [UInt8] {
        var length: DWORD = 0
        try check(gate.call { SCardGetAttrib(handle, DWORD(id), nil, &length) }, "SCardGetAttrib")
        var buffer = [UInt8](repeating: 0, count: Int(length))
        try check(gate.call { SCardGetAttrib(handle, DWORD(id), &buffer, &length) }, "SCardGetAttrib")
        return Array(buffer.prefix(Int(length)))
    }

    /// One SCardTransmit. `receive` must hold at least the largest possible answer (docs/cases.md P04);
    /// the answer is written to its front and its length to `length`. Returns pcsc-lite's result
    /// code unchecked: the caller runs this inside non-throwing closures (its lock,
    /// `withUnsafeBytes`) and passes the code to ``check(_:_:)`` outside them, so no error has to
    /// cross a closure on the way.
    @inline(__always)
    static func transmit(
        _ handle: Handle, protocolValue: UInt, command: UnsafeRawBufferPointer,
        receive: UnsafeMutableRawBufferPointer, length: inout Int
    ) -> ResultCode {
        // The PCI is the protocol plus the structure's own length, as g_rgSCardT0Pci/T1Pci/RawPci hold.
        var sendPCI = SCARD_IO_REQUEST(
            dwProtocol: DWORD(protocolValue), cbPciLength: DWORD(MemoryLayout<SCARD_IO_REQUEST>.size))
        // pcsc-lite accepts a NULL receive PCI, but its spy library (libpcscspy 1.9.9) reads it and
        // crashes: pass one, as most clients do.
        var receivePCI = sendPCI
        var received = DWORD(receive.count)
        let result = gate.call {
            SCardTransmit(
                handle, &sendPCI, command.baseAddress?.assumingMemoryBound(to: UInt8.self),
                DWORD(command.count), &receivePCI, receive.baseAddress?.assumingMemoryBound(to: UInt8.self), &received)
        }
        length = Int(received)
        return result
    }

    /// Whether a result code is SCARD_S_SUCCESS.
    @inline(__always)
    static func succeeded(_ result: ResultCode) -> Bool { result == LONG(SCARD_S_SUCCESS) }

    static func control(
        _ handle: Handle, code: UInt32, command: UnsafeRawBufferPointer,
        receive: UnsafeMutableRawBufferPointer
    ) throws(PCSCError) -> Int {
        var returned: DWORD = 0
        let result = gate.call {
            SCardControl(
                handle, DWORD(code), command.baseAddress, DWORD(command.count), receive.baseAddress,
                DWORD(receive.count), &returned)
        }
        try check(result, "SCardControl")
        return Int(returned)
    }

    /// One SCardGetStatusChange over `states`. Returns false when the timeout expired.
    static func getStatusChange(
        _ context: Context, timeoutMilliseconds: UInt, states: inout [ReaderState]
    ) throws(PCSCError) -> Bool {
        // Keep the reader names alive as C strings for the duration of the call.
        let names = states.map { strdup($0.readerName) }
        defer { names.forEach { free($0) } }
        var raw = [SCARD_READERSTATE](repeating: SCARD_READERSTATE(), count: states.count)
        for index in states.indices {
            raw[index].szReader = UnsafePointer(names[index])
            raw[index].dwCurrentState = DWORD(states[index].currentState)
        }
        let result = gate.call { SCardGetStatusChange(context, DWORD(timeoutMilliseconds), &raw, DWORD(raw.count)) }
        if result == LONG(bitPattern: UInt(PCSCError.timeout.code)) { return false }
        try check(result, "SCardGetStatusChange")
        for index in states.indices {
            states[index].eventState = UInt(raw[index].dwEventState)
            let count = min(Int(raw[index].cbAtr), Int(MAX_ATR_SIZE))
            states[index].atr = withUnsafeBytes(of: raw[index].rgbAtr) { Array($0.prefix(count)) }
        }
        return true
    }
}

extension CallGate {
    /// The gate every libpcsclite call of the process passes (`SCard`, the package's only caller of
    /// pcsc-lite's `SCard*` functions). The binaries close it before exit(3), whose run of
    /// libpcsclite 1.9.9's library destructor frees the client's context list: a call still inside
    /// pcsc-lite on another thread then dies of SIGSEGV (docs/test-infrastructure.md,
    /// "pcsc-lite at exit").
    package static let pcscLite = CallGate()
}
