import Foundation
import SecbridgeTesting
import SecureElementCredential
import Testing

/// The port check (issue 17): Apple-shaped client code (PresentmentApp.swift) compiles against this
/// package and, run against the in-process simulated ACR122U with a simulated phone, presents the
/// credential the phone then reads.
@Suite("Apple-shaped client code on the simulated ACR122U")
struct AppleShapedClientTests {
    /// The URI record `https://example.com` of Fixtures/credentials/uri-tag.json as a phone reads
    /// it: header D1 (MB ME SR, TNF 1), type length 01, payload length 0C, type "U", identifier
    /// code 04 ("https://"), then "example.com" (NFC Forum URI RTD 1.0 §3.2.2; docs/iso14443-t4t-ndef.md §5).
    static let exampleURIMessage: [UInt8] = [0xD1, 0x01, 0x0C, 0x55, 0x04] + Array("example.com".utf8)

    static func credential() throws -> Credential {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/credentials/uri-tag.json").path
        return try CredentialFile(contentsOfFile: path).makeCredential()
    }

    /// A card emulation window shorter than 60 s bounds every wait if the phone never reads.
    static var timings: SessionTimings {
        var timings = SessionTimings()
        timings.cardEmulationTimeLimit = .seconds(20)
        return timings
    }

    @Test("the transactionTask sequence: an Android phone reads the URI tag")
    func transactionTaskSequence() async throws {
        let desk = try await SimulatedSessionDesk.open(credentials: [try Self.credential()], timings: Self.timings)
        defer { desk.close() }
        try await desk.present(.android)
        let model = PresentmentModel()
        try await desk.asDefault {
            try await model.kickOff()
            try await model.present()
        }
        let failure = await model.failure
        #expect(failure == nil, "\(String(describing: failure))")
        let reading = try await desk.reading()
        #expect(reading.passed, "\(reading)")
        #expect(reading.ndefMessage == Self.exampleURIMessage, "\(reading)")
        #expect(await model.fieldStates == [.fieldPresent, .fieldAbsent])
        // SELECT of the NFC Forum Type 4 Tag application D2 76 00 00 85 01 01 (NFC Forum T4T 1.0 §5.4.2): 90 00.
        #expect(await model.wiredAnswer == Data([0x90, 0x00]))
        let session = try #require(await model.session)
        #expect(await session.state == .management, "the configuration's invalidation returns the session to management")
        #expect(await session.billingLog.count == 1)
        await model.tearDown()
        #expect(await session.state == .invalid)
    }

    @Test("performTransaction(using:) from a UIKit-style flow: an iPhone reads the URI tag")
    func performTransactionFlow() async throws {
        let desk = try await SimulatedSessionDesk.open(credentials: [try Self.credential()], timings: Self.timings)
        defer { desk.close() }
        try await desk.present(.iPhone, id: "iphone")
        let model = PresentmentModel()
        try await desk.asDefault {
            try await model.kickOff()
            try await model.presentFromUIKit()
        }
        let reading = try await desk.reading(of: "iphone")
        #expect(reading.passed, "\(reading)")
        #expect(reading.ndefMessage == Self.exampleURIMessage, "\(reading)")
        let session = try #require(await model.session)
        #expect(await session.state == .management)
        await model.tearDown()
    }

    @Test("catch CredentialSession.ErrorCode.userCanceledAuthorization matches a declined authorization")
    func canceledAuthorization() async throws {
        let desk = try await SimulatedSessionDesk.open(
            credentials: [try Self.credential()], authorizer: PolicyAuthorizer.declineAll, timings: Self.timings)
        defer { desk.close() }
        let model = PresentmentModel()
        let canceled = try await desk.asDefault {
            try await model.kickOff()
            return try await model.presentAllowingCancel()
        }
        #expect(canceled)
        let session = try #require(await model.session)
        let credential = try #require(await model.credential)
        #expect(await session.state == .wired(credential: credential), "a declined authorization leaves the state as it was")
        await model.tearDown()
    }
}
