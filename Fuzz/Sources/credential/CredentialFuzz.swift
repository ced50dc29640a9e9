import FuzzSupport
import SecureElementCredential

/// CredentialFile(json:) (Fixtures/credentials/README.md): never traps; a file it accepts whose
/// secure element is host applets builds its credential (makeCredential) without trapping, its
/// transcript applets' files resolved against Fixtures/credentials as for the fixtures.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCredential(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput.bytes(data, size)
    do {
        let file = try CredentialFile(json: input, baseDirectory: credentialsDirectory)
        if case .applets = file.secureElement {
            _ = try? file.makeCredential()
        }
    } catch {
        FuzzInput.require(error.path.hasPrefix("$"), "a credential error without a JSON path: \(error)")
    }
    return 0
}

/// Fixtures/credentials of this checkout.
private let credentialsDirectory: String = {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(4)  // Fuzz/Sources/credential/CredentialFuzz.swift
    return parts.joined(separator: "/") + "/Fixtures/credentials"
}()
