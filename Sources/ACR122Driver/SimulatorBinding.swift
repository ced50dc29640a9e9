import ACR122Simulator
import Synchronization

/// Binds one reader's control verbs to its simulated device. (Stand-in until the simulator model
/// lands: a device with no card that answers the firmware pseudo-APDU through escape.)
final class SimulatorBinding: Sendable {
    let device: any IFDDevice

    init(deviceName: DeviceName) throws(ControlError) {
        device = StandInDevice()
    }

    func handle(_ request: ControlRequest) throws(ControlError) -> ControlReply {
        switch request.verb {
        case "ping": return ControlReply([("driver", "secbridge-acr122")])
        default: throw ControlError(.unknownVerb, "no verb '\(request.verb)'")
        }
    }

    func close() {}
    static func release(_ device: any IFDDevice) {}
}

final class StandInDevice: IFDDevice {
    func isCardPresent() -> Bool { false }
    func powerUp() throws(IFDError) -> [UInt8] { throw .noCard }
    func powerDown() {}
    func setProtocol(_ protocolValue: UInt) throws(IFDError) { throw .noCard }
    func transmit(_ command: [UInt8]) throws(IFDError) -> [UInt8] { throw .noCard }
    func control(code: UInt32, _ command: [UInt8]) throws(IFDError) -> [UInt8] {
        guard code == 0x4200_0001 else { throw .notSupported }
        if command == [0xFF, 0x00, 0x48, 0x00, 0x00] { return Array("ACR122U207".utf8) }
        return [0x63, 0x00]
    }
    func attribute(_ tag: UInt32) -> [UInt8]? { nil }
}
