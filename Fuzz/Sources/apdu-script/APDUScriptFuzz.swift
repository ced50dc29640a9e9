import FuzzSupport
import ISO7816
import SecbridgeCLI

/// APDUScript(parsing:fileName:), what `secbridge run` and `secbridge shell` read (scriptor's
/// format and the shell's statements): never traps; steps come in line order, every APDU has at
/// least 4 bytes; the byte-carrying steps written back (an APDU in hex, `reset`, `control HEX`, one
/// per line) parse to the same steps. `reader`, `record` and `help` carry no bytes and free text
/// (a reader name may hold a `#`), so they are left out of the round trip.
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
        case .control(let bytes, let line):
            FuzzInput.require(!bytes.isEmpty, "an empty control command on line \(line)")
            FuzzInput.require(line > lastLine, "steps out of line order")
            lastLine = line
            written += "control " + HexBytes.format(bytes) + "\n"
        case .reader(_, let line), .record(_, let line), .help(let line):
            FuzzInput.require(line > lastLine, "steps out of line order")
            lastLine = line
        }
    }
    guard let again = try? APDUScript(parsing: written, fileName: "written.apdu") else {
        fatalError("property violated: the written script does not parse:\n\(written)")
    }
    FuzzInput.require(again.steps.compactMap(content) == script.steps.compactMap(content), "the written script has other steps:\n\(written)")
    return 0
}

/// A byte-carrying step without its line number; nil for the steps left out of the round trip.
private func content(_ step: APDUScript.Step) -> String? {
    switch step {
    case .apdu(let bytes, _): "apdu " + HexBytes.format(bytes)
    case .reset: "reset"
    case .control(let bytes, _): "control " + HexBytes.format(bytes)
    case .reader, .record, .help: nil
    }
}
