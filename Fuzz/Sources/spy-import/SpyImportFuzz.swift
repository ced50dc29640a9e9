import FuzzSupport
import Transcript

/// SpyLogImporter.importLog (pcsc-spy output, docs/test-infrastructure.md, "pcsc-spy output"):
/// never traps; what it imports is a valid transcript: written out, it parses to the same lines and
/// writes the same text again.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSpyImport(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = FuzzInput.text(data, size)
    do {
        let transcript = try SpyLogImporter.importLog(text, fileName: "fuzz.log", options: SpyImportOptions(tool: "fuzz", date: "2026-12-01T00:00:00Z"))
        let written = transcript.serialized()
        do {
            let parsed = try Transcript(parsing: written, fileName: transcript.fileName)
            FuzzInput.require(parsed == transcript, "the imported transcript parses to other lines:\n\(written)")
            FuzzInput.require(parsed.serialized() == written, "the imported transcript does not write back the same")
        } catch {
            fatalError("property violated: the imported transcript does not parse: \(error)\n\(written)")
        }
    } catch {
        _ = error.description
    }
    return 0
}
