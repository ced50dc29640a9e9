import BadgeReader
import SecbridgeTesting
import SecureElementCredential
import Testing
import Transcript

@Suite struct BadgeReaderTests {
    /// A badge that is an NFC Forum Type 4 Tag holding the URI https://example.org/badge.
    static let badge = """
        {"secbridge-credential": 1, "id": "badge", "name": "Badge",
         "applets": [{"type": "ndef-tag", "readOnly": true, "records": [{"uri": "https://example.org/badge"}]}]}
        """

    /// A CredentialSession against the in-process simulated ACR122U, read by a simulated Android
    /// phone: no pcscd, no hardware.
    @Test func anAndroidPhoneReadsTheBadge() async throws {
        let credential = try CredentialFile(json: Array(Self.badge.utf8)).makeCredential()
        let desk = try await SimulatedSessionDesk.open(credentials: [credential])
        defer { desk.close() }
        try await desk.present(.android)
        let fields = try await desk.asDefault { try await BadgeReader.presentFirstCredential() }
        #expect(fields == [.fieldPresent, .fieldAbsent])
        let reading = try await desk.reading()
        #expect(reading.passed, "\(reading)")
        // URI record: D1 01 <length> 55, identifier code 04 ("https://") (NFC Forum URI RTD 1.0 §3.2.2).
        let message = try #require(reading.ndefMessage, "\(reading)")
        #expect(Array(message.prefix(5)) == [0xD1, 0x01, 0x12, 0x55, 0x04])
        #expect(try BadgeReader.uri(ofNDEFMessage: message) == "https://example.org/badge")
    }

    /// The firmware pseudo-APDU (secbridge's docs/acr122-pn532.md) and the SELECT (ISO/IEC 7816-4
    /// §11.2.2) go out byte for byte, and the transcript holds both exchanges.
    @Test func identifyRecordsBothExchanges() throws {
        let channel = ScriptedCardChannel(.t1, exchanges: [
            ("FF 00 48 00 00", "41 43 52 31 32 32 55 32 30 37"),
            ("00 A4 04 00 07 D2 76 00 00 85 01 01 00", "90 00"),
        ])
        let buffer = try TranscriptBuffer()
        let recorder = TranscriptRecorder(sink: buffer, clock: { .zero })
        let (firmware, select) = try BadgeReader.identify(over: channel, recorder: recorder)
        channel.assertFinished()
        #expect(firmware == "ACR122U207")
        #expect(select.sw1 == 0x90 && select.sw2 == 0x00)
        let records = buffer.transcript.lines.compactMap(\.record)
        #expect(records.count == 4)
        _ = BadgeReader.systemClient()
    }
}
