import Foundation
import PCSCCore
import Testing

@Suite("Named threads")
struct ThreadTests {
    @Test("a BlockingExecutor's thread carries its name in /proc/thread-self/comm (15 bytes at most)")
    func executorThreadIsNamed() async throws {
        let executor = BlockingExecutor(name: "pcsc-test-name-longer")
        defer { executor.shutdown() }
        let comm = try await executor.run {
            try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        }
        // The kernel keeps TASK_COMM_LEN − 1 = 15 bytes of a thread's name.
        #expect(comm == "pcsc-test-name-\n")
    }
}
