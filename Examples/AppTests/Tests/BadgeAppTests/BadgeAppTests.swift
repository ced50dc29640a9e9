import BadgeApp
import SecbridgeTesting
import SecureElementCredential
import Testing

@Suite struct BadgeAppTests {
    /// A badge that is an NFC Forum Type 4 Tag holding the URI https://example.org/badge.
    static let badge = """
        {"secbridge-credential": 1, "id": "badge", "name": "Badge",
         "applets": [{"type": "ndef-tag", "readOnly": true, "records": [{"uri": "https://example.org/badge"}]}]}
        """

    @Test func anAndroidPhoneReadsTheBadge() async throws {
        let credential = try CredentialFile(json: Array(Self.badge.utf8)).makeCredential()
        let desk = try await SimulatedSessionDesk.open(credentials: [credential])
        defer { desk.close() }
        try await desk.present(.android)
        let fields = try await desk.asDefault { try await BadgePresenter().presentFirstCredential() }
        #expect(fields == [.fieldPresent, .fieldAbsent])
        let reading = try await desk.reading()
        #expect(reading.passed, "\(reading)")
        // URI record: D1 01 <length> 55, identifier code 04 ("https://"), then the rest of the URI
        // (NFC Forum URI RTD 1.0 §3.2.2).
        let rest = Array("example.org/badge".utf8)
        #expect(reading.ndefMessage == [0xD1, 0x01, UInt8(rest.count + 1), 0x55, 0x04] + rest, "\(reading)")
    }
}
