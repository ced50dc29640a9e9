import Foundation
import ISO7816
import NFCTags
import PN53x
import SecbridgeTesting
import Testing
@testable import SecureElementCredential

/// A phone reading an emulated Type 4 Tag through the PN532's frame (issue 34 item 1). The
/// readers here are written from the sources, not from the project's models: Android's order is
/// AOSP `rw_t4t.cc` (android-15.0.0_r23: SELECT the application with Le 00, SELECT E103 with P2
/// 0C, READ BINARY 0F, SELECT the NDEF file, READ BINARY 2, then the message from offset 2 in
/// chunks of at most MLe); iOS's is the public byte log of docs/iso14443-t4t-ndef.md §4 (the same
/// detection, then the file from offset 0 in chunks of at most min(MLe, 255)). Both accept only
/// 90 00 on a read (docs/terminal-models.md §1–§2).
@Suite("Frame limit: every tag the loader accepts is read by a phone (issue 34)")
struct FrameLimitTests {
    enum Order { case android, iOS }
    enum Outcome: Equatable { case read([UInt8]), stopped(String) }

    /// One C-APDU through the emulation's own split (EmulationRunner's ResponseSplitter with the
    /// PN532's 252-byte TgSetData limit): what the phone receives.
    static func exchange(_ element: any SecureElement, _ splitter: inout ResponseSplitter, _ command: [UInt8]) async throws -> [UInt8] {
        if let pending = splitter.getResponse(command) { return pending }
        return splitter.split(try await element.transceive(command))
    }

    /// The NDEF file's bytes after NLEN, or the first C-APDU whose answer was not 90 00.
    static func read(_ element: any SecureElement, order: Order) async throws -> Outcome {
        var splitter = ResponseSplitter(maximumLength: PN532HostFrame.maximumParameterLength)
        func send(_ command: [UInt8]) async throws -> [UInt8]? {
            let response = try await exchange(element, &splitter, command)
            return response.suffix(2) == [0x90, 0x00] ? Array(response.dropLast(2)) : nil
        }
        func fail(_ command: [UInt8]) -> Outcome { .stopped(command.hexString) }
        let detection: [[UInt8]] = [hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), hex("00 A4 00 0C 02 E1 03")]
        for command in detection where try await send(command) == nil { return fail(command) }
        guard let cc = try await send(hex("00 B0 00 00 0F")), cc.count >= 15 else { return fail(hex("00 B0 00 00 0F")) }
        let mle = Int(cc[3]) << 8 | Int(cc[4])
        let selectNDEF = hex("00 A4 00 0C 02") + Array(cc[9...10])
        guard try await send(selectNDEF) != nil else { return fail(selectNDEF) }
        guard let nlenBytes = try await send(hex("00 B0 00 00 02")), nlenBytes.count == 2 else { return fail(hex("00 B0 00 00 02")) }
        let nlen = Int(nlenBytes[0]) << 8 | Int(nlenBytes[1])
        var file: [UInt8] = []
        var offset = order == .android ? 2 : 0
        let chunk = order == .android ? mle : min(mle, 255)
        while offset < 2 + nlen {
            let le = min(chunk, 2 + nlen - offset)
            let command = [0x00, 0xB0, UInt8(offset >> 8), UInt8(offset & 0xFF), UInt8(le & 0xFF)]
            guard let data = try await send(command), data.count == le else { return fail(command) }
            file += data
            offset += le
        }
        return .read(order == .android ? file : Array(file.dropFirst(2)))
    }

    /// A tag of `mle` whose NDEF file (NLEN + message) is `fileSize` bytes: one MIME record.
    static func credentialJSON(mle: Int, fileSize: Int) -> (json: String, message: [UInt8]) {
        // A long-form MIME record "x/y": header 1 + type length 1 + payload length 4 + type 3.
        let payload = [UInt8](repeating: 0x41, count: fileSize - 2 - 9)
        let json = #"{"secbridge-credential": 1, "id": "t", "applets": [{"type": "ndef-tag", "mle": \#(mle), "maxFileSize": \#(fileSize), "records": [{"mime": "x/y", "payload": "\#(payload.hexString)"}]}]}"#
        let message = (try? NDEFMessage(records: [NDEFRecord(tnf: .mimeMedia, type: Array("x/y".utf8), payload: payload)]))?.serialized() ?? []
        return (json, message)
    }

    @Test("Android and iOS orders read every accepted MLe (15 … 250) to the end, NDEF files of 600 and 2 000 bytes",
          arguments: [15, 16, 59, 127, 128, 200, 249, 250], [600, 2000])
    func everyAcceptedMLeIsRead(mle: Int, fileSize: Int) async throws {
        let (json, message) = Self.credentialJSON(mle: mle, fileSize: fileSize)
        #expect(message.count + 2 == fileSize)
        for order in [Order.android, .iOS] {
            let element = try CredentialFile(json: Array(json.utf8)).makeCredential().secureElement
            let result = try await Self.read(element, order: order)
            #expect(result == .read(message), "\(order) MLe \(mle) file \(fileSize): \(result)")
        }
    }

    @Test("an MLe above 250 is refused with the frame limit and its source", arguments: [251, 252, 255, 600, 0xFFFF])
    func largerMLeRefused(mle: Int) {
        let json = Self.credentialJSON(mle: mle, fileSize: 600).json
        #expect(throws: CredentialFileError.self) { try CredentialFile(json: Array(json.utf8)) }
        do {
            _ = try CredentialFile(json: Array(json.utf8))
        } catch {
            #expect(error.path == "$.applets[0].mle")
            #expect(error.reason.contains("MLe \(mle)"), "\(error)")
            #expect(error.reason.contains("TgSetData") && error.reason.contains("at most 250"), "\(error)")
        }
    }

    @Test("a given capability container with MLe 00FF is refused the same way")
    func rawContainerRefused() {
        let json = #"{"secbridge-credential": 1, "id": "t", "applets": [{"type": "ndef-tag", "capabilityContainer": "00 0F 20 00 FF 00 7F 04 06 E1 04 04 00 00 00"}]}"#
        do {
            _ = try CredentialFile(json: Array(json.utf8))
            Issue.record("accepted MLe 00FF")
        } catch {
            #expect(error.path == "$.applets[0].capabilityContainer")
            #expect(error.reason.contains("MLe 255"), "\(error)")
        }
    }

    /// What the loader now refuses is what a phone could not read: MLe 251 served by an applet
    /// built past the loader goes out as 250 bytes + 61 01, and both orders stop there.
    @Test("MLe 251 built directly: the phone gets 61 01 and stops (why the loader refuses it)")
    func mle251FailsThroughTheFrame() async throws {
        let (_, message) = Self.credentialJSON(mle: 251, fileSize: 600)
        let cc = try Type4CapabilityContainer(mle: 251, maximumNDEFFileSize: 600, readOnly: true)
        let applet = try Type4TagApplet(message: try NDEFMessage(parsing: message), capabilityContainer: cc)
        let element = HostSecureElement(applets: [applet])
        var splitter = ResponseSplitter(maximumLength: PN532HostFrame.maximumParameterLength)
        for command in [hex("00 A4 04 00 07 D2 76 00 00 85 01 01 00"), hex("00 A4 00 0C 02 E1 04")] {
            _ = try await Self.exchange(element, &splitter, command)
        }
        let answer = try await Self.exchange(element, &splitter, hex("00 B0 00 02 FB"))
        #expect(answer.count == 252)
        #expect(answer.suffix(2) == [0x61, 0x01])
        #expect(try await Self.read(element, order: .android) == .stopped("00 B0 00 02 FB"))
    }
}
