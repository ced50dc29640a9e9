import Synchronization

/// A PC/SC context that outlives a pcscd restart: the one rule of every long-running command.
///
/// A context whose call reports SCARD_E_NO_SERVICE (0x8010001D) or SCARD_E_SERVICE_STOPPED
/// (0x8010001E) (``PCSCError/isServiceLost``, docs/cases.md P12) stays dead: pcsc-lite's client
/// keeps its socket to the pcscd that went away, and every later call on it, or on a connection
/// made through it, fails with the same code although a new pcscd answers. This wrapper releases
/// such a context at once and establishes a new one at the next call; when that succeeds,
/// `restored` is called once (the command prints one line saying pcscd came back).
///
/// Connections made through it are ``Connection``s: a service-lost error on one of them drops the
/// context it was made on, and only that one (a connection from before a restart, disconnected
/// after it, does not drop the new context). They are not made again by themselves: the command
/// connects again after a loss (``losses`` tells that one happened during a call).
///
/// Every call blocks the calling thread as the wrapped context's does; the lock is never held
/// during a PC/SC call, so ``cancel()`` from another thread reaches a blocked wait.
package final class ReestablishingContext: PCSCClientContext, Sendable {
    private struct State {
        var context: (any PCSCClientContext)?
        /// Which context ``context`` is: 0 for the first, one more for each made after a loss.
        var generation = 0
        var losses = 0
        /// A loss happened and no context was established since.
        var announcePending = false
    }

    private let establish: @Sendable () throws(PCSCError) -> any PCSCClientContext
    private let restored: @Sendable () -> Void
    private let state: Mutex<State>

    /// Establishes the first context now.
    /// - Parameters:
    ///   - establish: SCardEstablishContext, e.g. bounded by a watchdog.
    ///   - restored: called after a new context was established following a loss (once per loss).
    /// - Throws: ``PCSCError`` from `establish`, e.g. SCARD_E_NO_SERVICE when pcscd is not running.
    package convenience init(
        establish: @escaping @Sendable () throws(PCSCError) -> any PCSCClientContext,
        restored: @escaping @Sendable () -> Void
    ) throws(PCSCError) {
        self.init(establishingAtFirstCall: establish, restored: restored)
        try establishNow()
    }

    /// Establishes the first context at the first call, not now: for a command that may never
    /// need PC/SC (a shell on a serial PN532 board until it changes to a PC/SC reader).
    package init(
        establishingAtFirstCall establish: @escaping @Sendable () throws(PCSCError) -> any PCSCClientContext,
        restored: @escaping @Sendable () -> Void
    ) {
        self.establish = establish
        self.restored = restored
        state = Mutex(State(context: nil))
    }

    /// Establishes the context now if none is live (the first, or the next after a loss).
    /// - Throws: ``PCSCError`` from `establish`.
    package func establishNow() throws(PCSCError) { _ = try current() }

    /// How many times a context was dropped because pcscd went away.
    package var losses: Int { state.withLock { $0.losses } }

    /// The live context and its generation, established now if the last one was dropped.
    private func current() throws(PCSCError) -> (any PCSCClientContext, Int) {
        if let live = state.withLock({ state in state.context.map { ($0, state.generation) } }) { return live }
        let fresh = try establish()
        let (installed, announce, extra) = state.withLock { state -> ((any PCSCClientContext, Int), Bool, (any PCSCClientContext)?) in
            if let other = state.context { return ((other, state.generation), false, fresh) }  // another thread was first
            state.context = fresh
            state.generation += 1
            let announce = state.announcePending
            state.announcePending = false
            return ((fresh, state.generation), announce, nil)
        }
        try? extra?.release()
        if announce { restored() }
        return installed
    }

    /// Drops the context of `generation` after a service-lost error on it.
    fileprivate func lost(_ error: PCSCError, generation: Int) {
        guard error.isServiceLost else { return }
        let dead = state.withLock { state -> (any PCSCClientContext)? in
            guard state.generation == generation, let context = state.context else { return nil }
            state.context = nil
            state.losses += 1
            state.announcePending = true
            return context
        }
        try? dead?.release()
    }

    private func using<T>(_ body: (any PCSCClientContext) throws(PCSCError) -> T) throws(PCSCError) -> T {
        let (context, generation) = try current()
        do {
            return try body(context)
        } catch {
            lost(error, generation: generation)
            throw error
        }
    }

    package func listReaders() throws(PCSCError) -> [String] { try using { context throws(PCSCError) in try context.listReaders() } }

    package func getStatusChange(_ states: inout [ReaderState], timeout: Duration?) throws(PCSCError) -> Bool {
        let (context, generation) = try current()
        do {
            return try context.getStatusChange(&states, timeout: timeout)
        } catch {
            lost(error, generation: generation)
            throw error
        }
    }

    package func connect(to reader: String, share: ShareMode, protocols: ProtocolSet) throws(PCSCError) -> Connection {
        let (context, generation) = try current()
        do {
            let inner: any PCSCConnection = try context.connect(to: reader, share: share, protocols: protocols)
            return Connection(inner, owner: self, generation: generation)
        } catch {
            lost(error, generation: generation)
            throw error
        }
    }

    /// Cancels a wait on the live context; nothing when there is none (no wait can be under way).
    package func cancel() throws(PCSCError) {
        guard let context = state.withLock({ $0.context }) else { return }
        try context.cancel()
    }

    /// Releases the live context; a later call establishes a new one.
    package func release() throws(PCSCError) {
        guard let context = state.withLock({ state -> (any PCSCClientContext)? in
            defer { state.context = nil }
            return state.context
        }) else { return }
        try context.release()
    }

    /// A connection made through a ``ReestablishingContext``: the wrapped connection's calls, and
    /// a service-lost error on it drops the context it was made on.
    package final class Connection: PCSCConnection, Sendable {
        package let inner: any PCSCConnection
        private let owner: ReestablishingContext
        private let generation: Int

        init(_ inner: any PCSCConnection, owner: ReestablishingContext, generation: Int) {
            self.inner = inner
            self.owner = owner
            self.generation = generation
        }

        private func watched<T>(_ body: () throws -> T) throws -> T {
            do {
                return try body()
            } catch let error as PCSCError {
                owner.lost(error, generation: generation)
                throw error
            }
        }

        private func typed<T>(_ body: () throws(PCSCError) -> T) throws(PCSCError) -> T {
            do {
                return try body()
            } catch {
                owner.lost(error, generation: generation)
                throw error
            }
        }

        package var readerName: String { inner.readerName }
        package var activeProtocol: ProtocolSet { inner.activeProtocol }
        package var transmissionProtocol: TransmissionProtocol { inner.transmissionProtocol }

        package func transmit(_ command: [UInt8]) throws -> [UInt8] { try watched { try inner.transmit(command) } }

        package func transmit(_ command: UnsafeRawBufferPointer, into response: UnsafeMutableRawBufferPointer) throws -> Int {
            try watched { try inner.transmit(command, into: response) }
        }

        package func control(code: UInt32, _ command: [UInt8]) throws -> [UInt8] { try watched { try inner.control(code: code, command) } }

        package func status() throws(PCSCError) -> CardStatus { try typed { () throws(PCSCError) in try inner.status() } }

        package func attribute(_ attribute: PCSCAttribute) throws(PCSCError) -> [UInt8] {
            try typed { () throws(PCSCError) in try inner.attribute(attribute) }
        }

        package func reconnect(share: ShareMode, protocols: ProtocolSet, initialization: Disposition) throws(PCSCError) {
            try typed { () throws(PCSCError) in try inner.reconnect(share: share, protocols: protocols, initialization: initialization) }
        }

        package func disconnect(_ disposition: Disposition) throws(PCSCError) {
            try typed { () throws(PCSCError) in try inner.disconnect(disposition) }
        }

        package func beginTransaction() throws(PCSCError) { try typed { () throws(PCSCError) in try inner.beginTransaction() } }

        package func endTransaction(_ disposition: Disposition) throws(PCSCError) {
            try typed { () throws(PCSCError) in try inner.endTransaction(disposition) }
        }

        package func features() throws -> [PCSCFeature] { try watched { try inner.features() } }
    }
}
