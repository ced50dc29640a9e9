import ISO7816

/// Reads the NDEF message of an NFC Forum Type 4 Tag the way Android does (docs/iso14443-t4t-ndef.md §4),
/// through any transceive function: a `ReaderSession` (SecureElementCredential), a PC/SC card handle,
/// or a test double.
///
/// The sequence, byte for byte:
/// 1. SELECT the NDEF Tag Application `00 A4 04 00 07 D2 76 00 00 85 01 01 00` (mapping 2.0, with
///    Le); on failure, the mapping 1.0 AID `00 A4 04 00 07 D2 76 00 00 85 01 00` without Le;
/// 2. SELECT the capability container `00 A4 00 0C 02 E1 03`; READ BINARY `00 B0 00 00 0F`;
/// 3. SELECT the NDEF file named by the CC; READ BINARY `00 B0 00 00 02` (NLEN);
/// 4. READ BINARY from offset 2 in pieces of at most min(MLe, 255) bytes (Le never 00), until NLEN
///    bytes have arrived.
///
/// The file SELECTs (steps 2 and 3) carry P2 0C (no answer data) after the mapping 2.0 AID and
/// P2 00 after the 1.0 fallback, as AOSP's `rw_t4t_select_file` chooses by the version selected
/// (docs/terminal-models.md §1): a strict 1.0 tag refuses P2 0C (6A 86).
public enum Type4TagReader {
    /// What a read found.
    public struct Result: Sendable, Hashable {
        /// The capability container read from file E103.
        public var capabilityContainer: Type4CapabilityContainer
        /// The NDEF file's content after NLEN (NLEN bytes).
        public var ndefBytes: [UInt8]
        /// The NDEF message parsed from ``ndefBytes``.
        public var message: NDEFMessage
    }

    /// A reason the tag could not be read: the step, the command, and the status word or problem.
    public struct ReadError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The step that failed, in words, e.g. "SELECT capability container E103" or "READ BINARY NLEN".
        public var step: String
        /// The C-APDU of that step; empty for a step that sends nothing (parsing the message).
        public var command: [UInt8]
        /// The R-APDU (data and status word), when the tag answered.
        public var response: [UInt8]?
        /// What was wrong, e.g. the status word and its meaning.
        public var reason: String
        public var description: String {
            var text = "\(step) failed: \(reason) (> \(command.hexString)"
            if let response { text += ", < \(response.hexString)" }
            return text + ")"
        }
    }

    /// Reads the tag.
    /// - Parameter transceive: sends one C-APDU and returns the R-APDU with SW1 SW2.
    /// - Throws: ``ReadError`` naming the failing step; the transceiver's errors as they are.
    /// - Parameter rules: which capability containers to accept: ``Type4CapabilityContainer/Rules/android``
    ///   (Android 12 and later, the default) or ``Type4CapabilityContainer/Rules/lenient`` (Android 8–11:
    ///   a maximum NDEF size up to FFFE, as libnfc's nfc-emulate-forum-tag4 declares).
    public static func read(rules: Type4CapabilityContainer.Rules = .android, transceive: ([UInt8]) async throws -> [UInt8]) async throws -> Result {
        func expectSuccess(_ step: String, _ command: [UInt8]) async throws -> [UInt8] {
            let response = try await transceive(command)
            guard !response.isEmpty else {
                throw ReadError(
                    step: step, command: command, response: response,
                    reason: "no bytes at all, not even SW1 SW2: the card is mute (take it away and present it again)")
            }
            guard response.count >= 2 else {
                throw ReadError(step: step, command: command, response: response, reason: "an answer without a status word")
            }
            let sw = StatusWord(sw1: response[response.count - 2], sw2: response[response.count - 1])
            guard sw.isSuccess else {
                throw ReadError(step: step, command: command, response: response, reason: "SW \(sw.bytes.hexString): \(sw.meaning)")
            }
            return Array(response.dropLast(2))
        }
        let selectV2: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]
        let selectV1: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x00]
        var p2: UInt8 = 0x0C
        do {
            _ = try await expectSuccess("SELECT NDEF Tag Application (mapping 2.0)", selectV2)
        } catch is ReadError {
            _ = try await expectSuccess("SELECT NDEF Tag Application (mapping 1.0)", selectV1)
            p2 = 0x00
        }
        _ = try await expectSuccess("SELECT capability container E103", [0x00, 0xA4, 0x00, p2, 0x02, 0xE1, 0x03])
        let readCC: [UInt8] = [0x00, 0xB0, 0x00, 0x00, 0x0F]
        let ccBytes = try await expectSuccess("READ BINARY capability container", readCC)
        let cc: Type4CapabilityContainer
        do {
            cc = try Type4CapabilityContainer(parsing: ccBytes, rules: rules)
        } catch {
            throw ReadError(step: "capability container", command: readCC, response: ccBytes, reason: "\(error)")
        }
        let fileID = [UInt8(cc.ndefFileID >> 8), UInt8(cc.ndefFileID & 0xFF)]
        _ = try await expectSuccess("SELECT NDEF file", [0x00, 0xA4, 0x00, p2, 0x02] + fileID)
        let readNLEN: [UInt8] = [0x00, 0xB0, 0x00, 0x00, 0x02]
        let nlenBytes = try await expectSuccess("READ BINARY NLEN", readNLEN)
        guard nlenBytes.count == 2 else {
            throw ReadError(step: "READ BINARY NLEN", command: readNLEN, response: nlenBytes, reason: "expected 2 bytes, got \(nlenBytes.count)")
        }
        let nlen = Int(nlenBytes[0]) << 8 | Int(nlenBytes[1])
        guard nlen + 2 <= Int(cc.maximumNDEFFileSize) else {
            throw ReadError(step: "NLEN", command: readNLEN, response: nlenBytes, reason: "NLEN \(nlen) exceeds the file size \(cc.maximumNDEFFileSize) the capability container declares")
        }
        let piece = max(1, min(Int(cc.mle), 255))
        var ndef: [UInt8] = []
        while ndef.count < nlen {  // bounded: each round adds 1…255 bytes or throws
            let offset = 2 + ndef.count
            let length = min(piece, nlen - ndef.count)
            let command: [UInt8] = [0x00, 0xB0, UInt8(offset >> 8), UInt8(offset & 0xFF), UInt8(length)]
            let data = try await expectSuccess("READ BINARY NDEF at offset \(offset)", command)
            guard !data.isEmpty, data.count <= length else {
                throw ReadError(step: "READ BINARY NDEF", command: command, response: data, reason: "asked for \(length) bytes, got \(data.count)")
            }
            ndef += data
        }
        do {
            return Result(capabilityContainer: cc, ndefBytes: ndef, message: try NDEFMessage(parsing: ndef))
        } catch {
            throw ReadError(step: "NDEF message", command: [], response: ndef, reason: "\(error)")
        }
    }
}
