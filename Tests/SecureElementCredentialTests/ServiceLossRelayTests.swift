import Foundation
import ISO7816
import PCSCCore
import SecbridgeTesting
import Synchronization
import Testing
@testable import SecureElementCredential

/// A relayed PC/SC card across a pcscd restart (issue 33 item 1, docs/cases.md P12): the command
/// that meets the dead context is answered `secureElementChanged` (6F 00 to a terminal), a new
/// context and connection are opened at once, and the commands after it reach the card again.
@Suite struct ServiceLossRelayTests {
    static let select: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00]
    static let readCC: [UInt8] = [0x00, 0xB0, 0x00, 0x00, 0x0F]

    /// Hands out the scripted channels in order; counts the connects and the releases.
    final class Connector: @unchecked Sendable {
        // @unchecked: every field is touched under `lock` only.
        private let lock = NSLock()
        private var channels: [ScriptedCardChannel?]
        private var connectCount = 0
        private var releaseCount = 0
        init(_ channels: [ScriptedCardChannel?]) { self.channels = channels }
        var connects: Int { lock.withLock { connectCount } }
        var releases: Int { lock.withLock { releaseCount } }
        func connect() throws -> (any CardChannel, @Sendable () -> Void) {
            let next = lock.withLock { () -> ScriptedCardChannel? in
                connectCount += 1
                return channels.isEmpty ? nil : channels.removeFirst()
            }
            // nil: pcscd not back yet (SCardEstablishContext answers SCARD_E_NO_SERVICE).
            guard let next else { throw PCSCError.noService }
            return (next, { [self] in lock.withLock { releaseCount += 1 } })
        }
    }

    func element(_ connector: Connector) -> CardSecureElement {
        CardSecureElement(description: "PC/SC card in test reader") { try connector.connect() }
    }

    @Test(arguments: [PCSCError.noService, .serviceStopped, .commError])
    func aRestartLosesOneCommandAndTheNextReachesTheCardAgain(_ lost: PCSCError) async throws {
        let before = ScriptedCardChannel(.t1, [
            .transmit(expect: Self.select, reply: [0x90, 0x00]),
            .transmitThrows(expect: Self.readCC, error: lost),
        ])
        let after = ScriptedCardChannel(.t1, [.transmit(expect: Self.select, reply: [0x90, 0x00])])
        let connector = Connector([before, after])
        let element = element(connector)
        try await element.open()
        #expect(try await element.transceive(Self.select) == [0x90, 0x00])
        await #expect {
            _ = try await element.transceive(Self.readCC)
        } throws: { error in
            guard let error = error as? CredentialSessionError, error.code == .secureElementChanged else { return false }
            return error.reason.hasPrefix("pcscd stopped answering (\(lost.name)) during 00 B0 00 00 0F")
                && error.reason.hasSuffix("a new context and card session were opened for what follows")
        }
        #expect(connector.connects == 2)
        #expect(connector.releases == 1, "the dead connection was released")
        // The terminal's next command goes to the new card session.
        #expect(try await element.transceive(Self.select) == [0x90, 0x00])
        await element.close()
        before.assertFinished()
        after.assertFinished()
    }

    /// pcscd not back at once: the command after the one that met the loss tries again, fails
    /// with what to do, and a later one reaches the card when pcscd answers.
    @Test func whilePcscdIsNotBackEachCommandTriesAgain() async throws {
        let before = ScriptedCardChannel(.t1, [.transmitThrows(expect: Self.select, error: PCSCError.noService)])
        let after = ScriptedCardChannel(.t1, [.transmit(expect: Self.select, reply: [0x90, 0x00])])
        let connector = Connector([before, nil, nil, after])
        let element = element(connector)
        try await element.open()
        for expected in ["and it could not be reached again yet", "is still not connected"] {
            await #expect {
                _ = try await element.transceive(Self.select)
            } throws: { error in
                (error as? CredentialSessionError)?.code == .secureElementChanged && "\(error)".contains(expected)
            }
        }
        #expect(try await element.transceive(Self.select) == [0x90, 0x00])
        #expect(connector.connects == 4)
        await element.close()
        after.assertFinished()
    }
}
