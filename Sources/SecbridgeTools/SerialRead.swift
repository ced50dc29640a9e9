// `secbridge read --pn532 --device tty:…`: the read through a PN532 board on a serial line
// (docs/pn532-uart.md §8): the same initiator commands as the ACR122U's PN532 path, framed for the
// high-speed UART instead of wrapped in Direct Transmit.
import SecbridgeCLI
import ISO7816
import NFCTags
import PN53x

extension SecbridgeCLI {
    /// The options `read --device` does not take yet, each named in the refusal.
    static let serialReadRefused = ["wait", "record", "dump", "keys", "key", "key-b", "blocks"]

    /// `read --pn532 --device tty:PATH`: wake-up, RFConfiguration MxRtyPassiveActivation 20
    /// (the chip's default FF would wait for a card for ever; UM0701-02 §7.3.1 item 05), up to 8
    /// InListPassiveTarget polls of 33 attempts, then the C-APDUs with InDataExchange (Tg 1) and
    /// InRelease at the end (UM0701-02 §7.3.5, §7.3.8, §7.3.11).
    ///
    /// Every exchange runs on the connection's own thread (`PN532SerialConnection`), never on
    /// Swift's shared pool; each is bounded (the ACK 100 ms, a poll 2 s, an APDU 5 s).
    /// - Throws: a usage error for an option the serial path does not take; a failure naming the
    ///   device and what to check (`doctor --device`).
    static func runSerialRead(_ invocation: Invocation, device: String, aid: AID?, rules: Type4CapabilityContainer.Rules) throws -> Int32 {
        let arguments = invocation.arguments
        guard arguments.has("pn532") else {
            throw CLIError.usage("--device \(device) is a PN532 board on a serial line: add --pn532 (it is read with PN532 initiator commands)")
        }
        if arguments.value("reader") != nil {
            throw twoReadersNamed(device: device)
        }
        for option in serialReadRefused where arguments.value(option) != nil || arguments.has(option) {
            throw CLIError.usage("--\(option) is not available with --device yet; read without it (or through a PC/SC reader)")
        }
        let path = try SerialDeviceName.path(device)
        let stream: PN532TTY
        do { stream = try PN532TTY(path: path) } catch {
            throw CLIError.failure("cannot open \(path): \(error); `secbridge doctor --device tty:\(path)` checks the device")
        }
        let connection = PN532SerialConnection(PN532SerialLink(stream: stream), name: "pn532-tty")
        struct Outcome: Sendable {
            var target: ISO14443ATarget
            var exchanges: [(command: [UInt8], response: [UInt8])] = []
            var selectResponse: [UInt8]?
            var tag: Type4TagReader.Result?
            var tagError: String?
        }
        let outcome: Outcome
        do {
            outcome = try awaitResult("the serial read", timeout: .seconds(90)) {
                try await connection.wakeUp()
                try await connection.send(PN532.RFConfiguration(.maxRetries(atr: 0x00, psl: 0x01, passiveActivation: 0x20)))
                var found: ISO14443ATarget?
                for _ in 0..<8 where found == nil {
                    found = try await connection.send(PN532.InListPassiveTarget(maxTargets: 1), timeout: .seconds(2)).first
                }
                guard let target = found else {
                    throw CLIError.failure("no ISO 14443-A card answered InListPassiveTarget on \(path) (8 polls); place the card or phone on the board's antenna")
                }
                var outcome = Outcome(target: target)
                let log = ExchangeLog()
                let transceive: @Sendable ([UInt8]) async throws -> [UInt8] = { command in
                    var response = try await connection.send(PN532.InDataExchange(target: target.logicalNumber, data: command), timeout: .seconds(5))
                    var answer = response.data
                    var frames = 1
                    while response.moreInformation {
                        guard frames < 64 else { throw CLIError.failure("the card's answer spans more than 64 frames (MI chaining); stopped") }
                        frames += 1
                        response = try await connection.send(PN532.InDataExchange(target: target.logicalNumber, data: []), timeout: .seconds(5))
                        answer += response.data
                    }
                    log.append(command, answer)
                    return answer
                }
                if let aid {
                    outcome.selectResponse = try await transceive(CommandAPDU.select(aid: aid).serialized())
                } else {
                    do {
                        outcome.tag = try await Type4TagReader.read(rules: rules, transceive: transceive)
                    } catch let error as Type4TagReader.ReadError {
                        outcome.tagError = error.description
                    }
                }
                _ = try? await connection.exchange(.inRelease, [0x00])
                outcome.exchanges = log.all
                return outcome
            }
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError.failure("reading through the PN532 on \(path) failed: \(error); `secbridge doctor --device tty:\(path)` checks the board")
        }
        let reader = "tty:" + path
        if invocation.json {
            var members: [(String, JSONValue)] = [
                ("reader", .string(reader)), ("uid", .hex(outcome.target.uid)),
                ("ats", outcome.target.ats.map { .hex($0) } ?? .null),
                ("exchanges", .array(outcome.exchanges.map { JSONValue.object([("command", SecretDisplay.masked.json($0.command)), ("response", SecretDisplay.masked.json(response: $0.response, answering: $0.command))]) })),
            ]
            if let response = outcome.selectResponse { members.append(("select", .hex(response))) }
            if let tag = outcome.tag { members.append(("ndef", .array(tag.message.records.map(recordJSON)))) }
            if let error = outcome.tagError { members.append(("error", .string(error))) }
            invocation.out(JSONValue.object(members).prettySerialized())
        } else {
            invocation.out("reader: \(reader)")
            var identity = ["UID \(outcome.target.uid.hexString)"]
            if let ats = outcome.target.ats { identity.append("ATS \(ats.isEmpty ? "none" : ats.hexString)") }
            invocation.out(identity.joined(separator: "  "))
            printReadBody(invocation, exchanges: outcome.exchanges, aid: aid, selectResponse: outcome.selectResponse, tag: outcome.tag)
        }
        if let error = outcome.tagError {
            throw CLIError.failure("not readable as an NFC Forum Type 4 Tag: \(error)")
        }
        return exitSuccess
    }
}
