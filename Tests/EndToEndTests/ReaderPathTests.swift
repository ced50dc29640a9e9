import Foundation
import ISO7816
import PCSC
import PCSCSandbox
import Testing

/// vicc's `iso7816` card as pcscd 1.9.9 reports it (measured; see HarnessTests for the byte layout).
let viccATR: [UInt8] = [0x3B, 0x95, 0x13, 0x81, 0x01, 0x80, 0x73, 0xFF, 0x01, 0x00, 0x0B]

extension SharedReader {
    /// The PC/SC layer and the ISO 7816-4 transport against a real pcscd, vpcd and vicc.
    @Suite struct ReaderPathTests {
        @Test func listsTheVirtualReaderWithItsCard() async throws {
            let environment = try await sharedEnvironment()
            let (readers, states) = try await blocking {
                let context = try PCSCContext()
                let readers = try context.listReaders()
                var states = readers.map { ReaderState(readerName: $0) }
                _ = try context.getStatusChange(&states, timeout: .zero)
                return (readers, states)
            }
            #expect(readers.contains(environment.vpcdReaderName))
            let state = try #require(states.first { $0.readerName == environment.vpcdReaderName })
            #expect(state.eventFlags.contains(.present))
            #expect(state.atr == viccATR)
        }

        @Test func statusAndAttributes() async throws {
            let environment = try await sharedEnvironment()
            let reader = environment.vpcdReaderName
            let status = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                return try card.status()
            }
            #expect(status.readerName == reader)
            #expect(status.atr == viccATR)
            #expect(status.activeProtocol == .t1)  // the ATR announces only T=1 (TD1 81, TD2 01)
            #expect(status.state.contains(.present))
            #expect(status.state.contains(.powered))
        }

        @Test func selectUnknownAIDGives6A82AndReadBinaryWithoutEFGives6986() async throws {
            let environment = try await sharedEnvironment()
            let reader = environment.vpcdReaderName
            let (select, read, selectMF) = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                let transport = ISO7816Transport(channel: card)
                // Case 4S: SELECT of the NFC Forum Type 4 Tag application, which vicc does not have.
                let select = try transport.transmit(CommandAPDU.select(aid: try AID(hex: "D2 76 00 00 85 01 01")))
                // Case 1 in effect (P2 0C, no Le): SELECT MF without FCI.
                let selectMF = try transport.transmit(
                    CommandAPDU(cla: 0x00, ins: 0xA4, p1: 0x00, p2: 0x0C, data: [0x3F, 0x00], ne: 0))
                // Case 2S: READ BINARY, Ne = 256, with no current EF.
                let read = try transport.transmit(CommandAPDU(cla: 0x00, ins: 0xB0, p1: 0x00, p2: 0x00, data: [], ne: 256))
                return (select, read, selectMF)
            }
            #expect(select.statusWord == StatusWord(0x6A82))
            #expect(select.data.isEmpty)
            #expect(selectMF.statusWord == StatusWord.success)
            #expect(read.statusWord == StatusWord(0x6986))
        }

        @Test func getChallengeReturnsEightBytes() async throws {
            let environment = try await sharedEnvironment()
            let reader = environment.vpcdReaderName
            let answers = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                let transport = ISO7816Transport(channel: card)
                let command = try CommandAPDU(cla: 0x00, ins: 0x84, p1: 0x00, p2: 0x00, data: [], ne: 8)
                return [try transport.transmit(command), try transport.transmit(command)]
            }
            for answer in answers {
                #expect(answer.statusWord == StatusWord.success)
                #expect(answer.data.count == 8)
            }
            #expect(answers[0].data != answers[1].data)  // a fresh challenge each time
        }

        @Test func directConnectionReachesNoControlOnVpcd() async throws {
            let environment = try await sharedEnvironment()
            let reader = environment.vpcdReaderName
            let (active, features, controlError) = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .direct, protocols: .undefined)
                let features = try card.features()
                var controlError: PCSCError?
                do throws(PCSCError) { _ = try card.control(code: 0x4200_0001, [0xFF, 0x00, 0x48, 0x00, 0x00]) } catch { controlError = error }
                return (card.transmissionProtocol, features, controlError)
            }
            // pcsc-lite 1.9.9 reports the protocol the card already negotiated when one is powered
            // (measured: T=1); with no card, DIRECT gives 0 (the ACR122U target-mode path).
            #expect(active == .t1)
            // docs/test-infrastructure.md: vpcd does not implement IFDHControl.
            #expect(features.isEmpty)
            #expect(controlError == .unsupportedFeature)
        }

        @Test func receiveBufferIsNeverTooSmallP04() async throws {
            let environment = try await sharedEnvironment()
            let reader = environment.vpcdReaderName
            // docs/cases.md P04: GET DATA 9F7F with Le 2C failed with SCARD_E_INSUFFICIENT_BUFFER behind a 12-byte
            // receive buffer. Ours is always MAX_BUFFER_SIZE_EXTENDED, so the card's answer arrives.
            let answer = try await blocking {
                try PCSCContext().connect(to: reader, share: .shared, protocols: .any).transmit([0x80, 0xCA, 0x9F, 0x7F, 0x2C])
            }
            #expect(answer.count >= 2)
            // vicc's iso7816 card does not know class 80 GET DATA: a status word, not a PC/SC error.
            #expect(answer.suffix(2).first.map { $0 == 0x6A || $0 == 0x6D || $0 == 0x6E || $0 == 0x69 } == true, "\(answer)")
        }

        @Test func unknownReaderIsAnError() async throws {
            _ = try await sharedEnvironment()
            let error = try await blocking { () -> PCSCError? in
                do throws(PCSCError) {
                    _ = try PCSCContext().connect(to: "No Such Reader 00 00")
                    return nil
                } catch {
                    return error
                }
            }
            #expect(error == .unknownReader)
        }

        @Test func transactionScopesAndReleases() async throws {
            let environment = try await sharedEnvironment()
            let reader = environment.vpcdReaderName
            let answer = try await blocking {
                let card = try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                return try card.withTransaction {
                    try card.transmit([0x00, 0xA4, 0x00, 0x0C, 0x02, 0x3F, 0x00])
                }
            }
            #expect(answer == [0x90, 0x00])
        }

        @Test func cardRemovedMidSessionFailsClearlyAndComesBack() async throws {
            let environment = try await sharedEnvironment()
            let reader = environment.vpcdReaderName
            let card = try await blocking { try PCSCContext().connect(to: reader, share: .shared, protocols: .any) }
            try await blocking { try environment.card.stop() }
            let error = try await blocking { () -> PCSCError? in
                do throws(PCSCError) {
                    _ = try card.transmit([0x00, 0xA4, 0x00, 0x0C, 0x02, 0x3F, 0x00])
                    return nil
                } catch {
                    return error
                }
            }
            _ = try await blocking { try environment.card.start() }
            let removed: Set<PCSCError> = [.removedCard, .noSmartcard, .readerUnavailable, .notTransacted, .commError]
            #expect(error.map { removed.contains($0) } == true, "got \(String(describing: error))")
            // After vicc is back, a new connection works.
            let answer = try await blocking {
                try PCSCContext().connect(to: reader, share: .shared, protocols: .any)
                    .transmit([0x00, 0xA4, 0x00, 0x0C, 0x02, 0x3F, 0x00])
            }
            #expect(answer == [0x90, 0x00])
        }
    }
}
