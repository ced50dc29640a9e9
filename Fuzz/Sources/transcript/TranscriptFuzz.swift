import FuzzSupport
import Transcript

/// Transcript(parsing:) (Fixtures/README.md, format version 1): never traps; a text it accepts
/// serializes back to itself exactly, and that text parses to the same transcript.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTranscript(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = FuzzInput.text(data, size)
    do {
        let transcript = try Transcript(parsing: text, fileName: "fuzz.trn")
        let written = transcript.serialized()
        FuzzInput.require(written == text, "write(parse(x)) != x:\n\(text)\n---\n\(written)")
        FuzzInput.require((try? Transcript(parsing: written, fileName: "fuzz.trn")) == transcript, "write(parse(x)) parses to other lines")
    } catch {
        FuzzInput.require(error.line >= 0 && error.column >= 0, "error position \(error.line):\(error.column)")
        _ = error.description
    }
    return 0
}
