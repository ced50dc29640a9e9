import Foundation
import SecbridgeTesting
import Testing
@testable import SecureElementCredential

@Suite("Apple's surface: startSession()'s defaults, identifiers, errors and descriptions")
struct AppleSurfaceTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/credentials").path

    @Test("SECBRIDGE_CREDENTIALS, SECBRIDGE_READER and SECBRIDGE_AUTHORIZE are read; XDG_CONFIG_HOME is the default place")
    func defaultsFromTheEnvironment() async throws {
        let named = SessionDefaults.fromEnvironment(
            ["SECBRIDGE_CREDENTIALS": "/c", "SECBRIDGE_READER": "ACS ACR122U PICC Interface 00 00", "SECBRIDGE_AUTHORIZE": "approve"],
            standardInputIsTerminal: false)
        #expect(named.credentialsPath == "/c")
        #expect(named.credentialsPathIsExplicit)
        #expect(named.readerName == "ACS ACR122U PICC Interface 00 00")
        let request = AuthorizationRequest(credential: credentialA, kind: .performTransaction, readerName: "r")
        #expect(await named.authorizer.authorize(request) == .approved)

        let xdg = SessionDefaults.fromEnvironment(["XDG_CONFIG_HOME": "/x", "HOME": "/h"], standardInputIsTerminal: false)
        #expect(xdg.credentialsPath == "/x/secbridge/credentials")
        #expect(!xdg.credentialsPathIsExplicit)
        #expect(xdg.readerName == nil)
        #expect(await xdg.authorizer.authorize(request) == .declined, "no terminal and no policy: decline")

        let home = SessionDefaults.fromEnvironment(["HOME": "/h"], standardInputIsTerminal: true)
        #expect(home.credentialsPath == "/h/.config/secbridge/credentials")
        #expect(home.authorizer is TerminalAuthorizer)
    }

    /// A typo in SECBRIDGE_AUTHORIZE (`yes`, `Approve`) declined every transaction without a word;
    /// it is refused, naming the value. approve, decline, unset and empty are taken.
    @Test("SECBRIDGE_AUTHORIZE other than approve or decline is refused, naming the value")
    func unknownAuthorizePolicy() throws {
        for value in ["yes", "Approve", "approve ", "1", "approved"] {
            let defaults = SessionDefaults.fromEnvironment(["SECBRIDGE_AUTHORIZE": value], standardInputIsTerminal: false)
            #expect(defaults.unknownAuthorizePolicy == value)
            do {
                try defaults.checkPolicy()
                Issue.record("SECBRIDGE_AUTHORIZE=\(value) was taken")
            } catch {
                #expect(error.code == .invalidInput)
                #expect("\(error)".contains("SECBRIDGE_AUTHORIZE=\"\(value)\" is neither approve nor decline"), "\(error)")
            }
        }
        for environment in [["SECBRIDGE_AUTHORIZE": "approve"], ["SECBRIDGE_AUTHORIZE": "decline"], ["SECBRIDGE_AUTHORIZE": ""], [:]] {
            let defaults = SessionDefaults.fromEnvironment(environment, standardInputIsTerminal: false)
            #expect(defaults.unknownAuthorizePolicy == nil)
            try defaults.checkPolicy()
        }
    }

    @Test("a directory gives its *.json credential files in name order; a missing default directory none")
    func loadingCredentials() throws {
        var defaults = SessionDefaults.fromEnvironment(["SECBRIDGE_CREDENTIALS": Self.fixtures + "/uri-tag.json"], standardInputIsTerminal: false)
        let loaded = try defaults.loadCredentials()
        #expect(loaded.map(\.id) == ["example-uri-tag"])
        // The NDEF Tag Application's AID (NFC Forum Type 4 Tag 2.0 §5.4.2) is the one instance.
        #expect(loaded.first?.state == .installed(instances: [
            CredentialSession.Credential.InstanceInfo(instanceAID: Data([0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]), instanceType: .hostApplet),
        ]))
        defaults.credentialsPath = "/nonexistent/secbridge/credentials"
        defaults.credentialsPathIsExplicit = false
        #expect(try defaults.loadCredentials().isEmpty)
        defaults.credentialsPathIsExplicit = true
        #expect(throws: CredentialSession.ErrorCode.invalidInput) { try defaults.loadCredentials() }
    }

    @Test("identifier: a UUID id is kept; any other id gives the same version-8 UUID every time")
    func identifiers() throws {
        let uuid = try #require(UUID(uuidString: "6F1C2B8E-3D4A-4B5C-9E6F-7A8B9C0D1E2F"))
        #expect(CredentialSession.Credential.identifier(for: uuid.uuidString) == uuid)
        let derived = CredentialSession.Credential.identifier(for: "example-uri-tag")
        #expect(derived == CredentialSession.Credential.identifier(for: "example-uri-tag"))
        #expect(derived != CredentialSession.Credential.identifier(for: "example-uri-tah"))
        // RFC 9562 §4.1, §4.2: the version nibble is 8, the variant bits 10.
        let bytes = derived.uuid
        #expect(bytes.6 >> 4 == 8)
        #expect(bytes.8 >> 6 == 0b10)
        #expect(credentialA.state == .installed(instances: []))
    }

    @Test("catch CredentialSession.ErrorCode.<code> matches by code whatever the reason and cause")
    func catchingByCode() {
        func fail() throws { throw CredentialSessionError(.userCanceledAuthorization, "the authorizer declined", cause: .other("test")) }
        var caught = false
        do {
            try fail()
        } catch CredentialSession.ErrorCode.userAuthorizationTimedOut {
            Issue.record("matched another code")
        } catch CredentialSession.ErrorCode.userCanceledAuthorization {
            caught = true
        } catch {
            Issue.record("not matched: \(error)")
        }
        #expect(caught)
        let error = CredentialSessionError(.resourceUnavailable, "busy", cause: .pcsc(code: 0x8010_000B, name: "SCARD_E_SHARING_VIOLATION"))
        #expect(error.failureReason == "busy")
        #expect(error.description == "resourceUnavailable: busy [cause: PC/SC SCARD_E_SHARING_VIOLATION (0x8010000B)]")
    }

    @Test("events, credentials and options print as one readable line")
    func descriptions() {
        #expect("\(CredentialSession.Event.fieldStateChanged(info: .fieldPresent))" == "fieldStateChanged(info: fieldPresent)")
        #expect("\(CredentialSession.Event.sessionInvalidated(reason: InvalidationReason.invalidatedByClient.errorCode))"
            == "sessionInvalidated(reason: invalidate() was called)")
        #expect("\(CredentialSession.Event.apduExchanged(command: [0x00, 0xB0, 0x00, 0x00, 0x02], response: [0x00, 0x10, 0x90, 0x00]))"
            == "apduExchanged(00 B0 00 00 02 → 00 10 90 00)")
        #expect("\(CredentialSession.Event.readerEvent(.secureElementChanged("reset")))" == "readerEvent(secureElementChanged: reset)")
        #expect("\(credentialA)" == "A (A)")
        #expect("\(CredentialSession.CardEmulationOptions())" == "UID 08 00 B0 0B, ATQA 00 04, SAK 20")
        #expect(InvalidationReason.readerLost("gone").errorCode.code == .resourceUnavailable)
    }
}
