import PCSCCore

/// Runs `body` — blocking calls, or long CPU-bound work — on a thread of its own and returns its
/// result, so that a test never holds one of the threads of Swift's shared concurrency pool
/// (two on a 2-core machine: two such tests stall every other test of the run).
///
///     let citations = try await onOwnThread { try scanRepository() }
///     #expect(citations.count > 100)
///
/// Record expectations after it returns, in the test's own task: `body` runs outside it.
/// - Throws: what `body` throws.
public func onOwnThread<T: Sendable>(
    _ name: String = "test-work", _ body: @escaping @Sendable () throws -> T
) async throws -> T {
    let executor = BlockingExecutor(name: name)
    defer { executor.shutdown() }
    return try await executor.run(body)
}
