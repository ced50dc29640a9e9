import FuzzSupport
import SecbridgeTesting

/// The simulated ACR122U as pcscd's driver drives it (SecbridgeTesting's SimulatorByteScript says
/// how the input becomes steps): pseudo-APDUs and card APDUs through `transmit`, escape commands
/// through `control`, power, protocol and card presence changes. Never traps; no answer is larger
/// than pcscd's receive buffer (MAX_BUFFER_SIZE_EXTENDED, 65 548 bytes).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSimulator(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    for step in SimulatorByteScript.run(FuzzInput.bytes(data, size)) {
        if case .success(let answer) = step.answer {
            FuzzInput.require(answer.count <= 65_548, "an answer of \(answer.count) bytes to op \(step.op)")
        }
    }
    return 0
}
