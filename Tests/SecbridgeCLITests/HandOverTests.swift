import CSecbridgeHandOver
import Testing

@testable import SecbridgeCLI

/// The constructor in CSecbridgeHandOver hands `secbridge COMMAND …` to `secbridge-tools` before
/// the Swift runtime starts, for the commands named in its C list: that list must be the lean
/// binary's list of tool commands, in the same order (a command missing from it still works,
/// through SecbridgeCLI.main's hand-over, only later; one too many would be taken from the lean
/// binary).
@Suite struct HandOverTests {
    @Test func theConstructorsListIsTheToolCommands() {
        let list = secbridge_tool_commands()!
        var names: [String] = []
        var index = 0
        while let name = list[index] {
            names.append(String(cString: name))
            index += 1
        }
        #expect(names == SecbridgeCLI.toolCommandSummaries.map(\.name))
    }
}
