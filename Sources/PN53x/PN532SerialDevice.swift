import ISO7816
import PCSCCore

/// The chip side of the PN532 high-speed UART protocol: serves a PN532 model (a function from a
/// host frame `D4 cmd params` to the chip's `D5 cmd+1 data`) on one end of a byte line
/// (UM0701-02 §6.2; docs/pn532-uart.md §5).
///
/// - Asleep until a 55 byte arrives (the HSU wake-up); frames before it get nothing, as a chip in
///   power-down mode. A device created `awake` (a board just powered up) answers at once; a
///   PowerDown (`D4 16 …`) answered with status 00 puts it to sleep again after its response
///   (UM0701-02 §7.2.11; docs/pn532-uart.md §3).
/// - Each command frame is acknowledged with ACK, then answered with the model's response frame,
///   or with the error frame when the model refuses the command (nil).
/// - A host NACK makes it send its last response again; a host ACK while a command runs aborts it
///   (the model's `abort` is called, its answer dropped); a frame with a bad checksum gets NACK.
/// - The model runs on a thread of its own, so the line is read while a command blocks
///   (TgInitAsTarget waiting for a reader).
///
/// Fault injection for tests: ``inject(_:)``. The device serves until its line closes (a read
/// throws); a command the model is running then ends as the model's own bound says.
public final class PN532SerialDevice: Sendable {
    /// A fault the device applies once, to the next command or response.
    public enum Fault: Sendable, Hashable {
        /// Answer the next command with NACK instead of taking it.
        case nackNextCommand
        /// Neither acknowledge nor run the next command (a lost ACK).
        case dropNextCommand
        /// Send the next response with its DCS inverted, once; a NACK brings the good one.
        case corruptNextResponse
    }

    private let stream: any PN532ByteStream
    private let clock: PN532SerialClock
    private let respond: @Sendable ([UInt8]) -> [UInt8]?
    private let abort: @Sendable () -> Void
    private let state: State

    private final class State: @unchecked Sendable {
        let lock = ConditionLock()
        // Guarded by `lock`.
        var awake: Bool
        var faults: [Fault] = []
        var lastResponse: [UInt8]?
        /// The number of the command the model is running, nil when idle.
        var running: Int?
        var sequence = 0
        var stopped = false
        var commands: [[UInt8]] = []
        var aborted = 0
        init(awake: Bool) { self.awake = awake }
    }

    /// Starts serving on `stream`.
    /// - Parameters:
    ///   - stream: the device end of the line.
    ///   - clock: the line's clock: threads started here take part in its virtual time.
    ///   - awake: false (default) to wait for the 55 wake-up byte first; true for a board just
    ///     powered up, which answers the first frame without it (nfcpy's wake-up sends no 55).
    ///   - respond: the model: `D4 cmd params` → `D5 cmd+1 data`, nil for a refused command.
    ///   - abort: ends the model's current command early (called on a host ACK while it runs).
    public init(
        stream: any PN532ByteStream, clock: PN532SerialClock, awake: Bool = false,
        respond: @escaping @Sendable ([UInt8]) -> [UInt8]?, abort: @escaping @Sendable () -> Void = {}
    ) {
        self.stream = stream
        self.clock = clock
        self.respond = respond
        self.abort = abort
        state = State(awake: awake)
        clock.hold()
        let started = startThread(name: "pn532-serial") { [self] in
            clock.participate {
                clock.release()
                serve()
            }
        }
        if !started { clock.release() }
    }

    /// Applies `fault` once (they queue in order).
    public func inject(_ fault: Fault) {
        state.lock.lock()
        state.faults.append(fault)
        state.lock.unlock()
    }

    /// The host frames `D4 cmd params` the device took, oldest first.
    public var receivedCommands: [[UInt8]] {
        state.lock.lock()
        defer { state.lock.unlock() }
        return state.commands
    }

    /// How many running commands a host ACK aborted.
    public var abortedCommands: Int {
        state.lock.lock()
        defer { state.lock.unlock() }
        return state.aborted
    }

    /// Whether the device has been woken (55 received).
    public var isAwake: Bool {
        state.lock.lock()
        defer { state.lock.unlock() }
        return state.awake
    }

    /// Whether the model is running a command.
    public var isBusy: Bool {
        state.lock.lock()
        defer { state.lock.unlock() }
        return state.running != nil
    }

    private func serve() {
        var parser = PN532UARTFrameParser(receiving: PN532UARTFrame.hostTFI)
        while true {
            let bytes: [UInt8]
            do {
                bytes = try stream.read(maximumCount: 512, until: nil)
            } catch {
                state.lock.lock()
                state.stopped = true
                state.lock.unlock()
                return
            }
            state.lock.lock()
            if !state.awake, let wake = bytes.firstIndex(of: 0x55) {
                state.awake = true
                state.lock.unlock()
                parser.append(bytes[wake...])
            } else if state.awake {
                state.lock.unlock()
                parser.append(bytes)
            } else {
                state.lock.unlock()
                continue  // asleep: bytes before the wake-up are lost
            }
            while true {
                let frame: PN532UARTFrame?
                do {
                    frame = try parser.next()
                } catch .wrongTFI {
                    continue  // not for the chip: ignored
                } catch {
                    try? stream.write(PN532UARTFrame.nackBytes)
                    continue
                }
                guard let frame else { break }
                handle(frame)
            }
        }
    }

    private func handle(_ frame: PN532UARTFrame) {
        switch frame {
        case .ack:
            state.lock.lock()
            let wasRunning = state.running != nil
            if wasRunning {
                state.running = nil
                state.aborted += 1
            }
            state.lock.unlock()
            if wasRunning { abort() }
        case .nack:
            state.lock.lock()
            let last = state.lastResponse
            state.lock.unlock()
            if let last { try? stream.write(last) }
        case .applicationError:
            break
        case .information(let tfi, let data):
            let command = [tfi] + data
            state.lock.lock()
            let fault = state.faults.first
            if fault == .nackNextCommand || fault == .dropNextCommand { state.faults.removeFirst() }
            if fault == .nackNextCommand {
                state.lock.unlock()
                try? stream.write(PN532UARTFrame.nackBytes)
                return
            }
            if fault == .dropNextCommand {
                state.lock.unlock()
                return
            }
            let previous = state.running
            state.sequence += 1
            let number = state.sequence
            state.running = number
            state.commands.append(command)
            state.lock.unlock()
            if previous != nil { abort() }  // a new command replaces one still running
            try? stream.write(PN532UARTFrame.ackBytes)
            clock.hold()
            let started = startThread(name: "pn532-command") { [self] in
                clock.participate {
                    clock.release()
                    run(command, number: number)
                }
            }
            if !started {
                clock.release()
                finish(number: number, response: PN532UARTFrame.applicationErrorBytes)
            }
        }
    }

    private func run(_ command: [UInt8], number: Int) {
        let answer = respond(command)
        let bytes: [UInt8]
        if let answer, answer.first == PN532UARTFrame.chipTFI,
           let encoded = try? PN532UARTFrame.information(tfi: answer[0], data: Array(answer.dropFirst())).serialized() {
            bytes = encoded
        } else {
            bytes = PN532UARTFrame.applicationErrorBytes
        }
        // PowerDown `D4 16 …` → `D5 17 00`: the chip sleeps once it has answered (UM0701-02 §7.2.11).
        let sleeps = command.count >= 2 && command[1] == 0x16 && answer == [0xD5, 0x17, 0x00]
        finish(number: number, response: bytes, thenSleep: sleeps)
    }

    private func finish(number: Int, response: [UInt8], thenSleep: Bool = false) {
        state.lock.lock()
        guard state.running == number else {
            state.lock.unlock()
            return  // aborted or replaced: the answer is dropped
        }
        state.running = nil
        state.lastResponse = response
        var sent = response
        if state.faults.first == .corruptNextResponse, sent.count >= 2 {
            state.faults.removeFirst()
            sent[sent.count - 2] ^= 0xFF
        }
        // Written with the state lock held, so an abort cannot come between the check and the write.
        try? stream.write(sent)
        if thenSleep { state.awake = false }
        state.lock.unlock()
    }
}
