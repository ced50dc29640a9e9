import FuzzSupport
import ISO7816
import SecbridgeCLI

/// APDUScript(parsing:fileName:), what `secbridge run` reads (scriptor's format): never traps;
/// every step is a reset or an APDU of at least 4 bytes, in line order, and the script written
/// back (one APDU in hex or `reset` per line) parses to the same steps.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAPDUScript(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = FuzzInput.text(data, size)
    guard let script = try? APDUScript(parsing: text, fileName: "fuzz.apdu") else { return 0 }
    var lastLine = 0
    var written = ""
    for step in script.steps {
        switch step {
        case .apdu(let bytes, let line):
            FuzzInput.require(bytes.count >= 4, "a step of \(bytes.count) bytes on line \(line)")
            FuzzInput.require(line > lastLine, "steps out of line order")
            lastLine = line
            written += HexBytes.format(bytes) + "\n"
        case .reset(let line):
            FuzzInput.require(line > lastLine, "steps out of line order")
            lastLine = line
            written += "reset\n"
        }
    }
    guard let again = try? APDUScript(parsing: written, fileName: "written.apdu") else {
        fatalError("property violated: the written script does not parse:\n\(written)")
    }
    FuzzInput.require(again.steps.map(content) == script.steps.map(content), "the written script has other steps:\n\(written)")
    return 0
}

/// A step without its line number.
private func content(_ step: APDUScript.Step) -> [UInt8]? {
    switch step {
    case .apdu(let bytes, _): bytes
    case .reset: nil
    }
}
