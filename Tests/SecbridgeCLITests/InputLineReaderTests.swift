import Dispatch
import SecbridgeCLI
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The reader of standard input: whether a line is at hand is known exactly, so a script given
/// whole never waits, and a pause is seen within its bound (a pipe, poll(2)).
@Suite struct InputLineReaderTests {
    /// A pipe: its read and write descriptors, closed by `body`'s end.
    func withPipe(_ body: (_ reader: InputLineReader, _ write: (String) -> Void, _ closeWriter: () -> Void) throws -> Void) rethrows {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        var writerOpen = true
        defer {
            close(descriptors[0])
            if writerOpen { close(descriptors[1]) }
        }
        let reader = InputLineReader(descriptor: descriptors[0])
        try body(reader, { text in
            var text = text
            _ = text.withUTF8 { write(descriptors[1], $0.baseAddress, $0.count) }
        }, {
            close(descriptors[1])
            writerOpen = false
        })
    }

    /// Two lines written at once: after the first is read, the second is in the reader's buffer and
    /// the pipe is empty; the wait for it returns at once (stdio's buffer would have hidden it from
    /// poll(2), and the transaction been released for nothing).
    @Test func aLineAlreadyBufferedNeedsNoWait() {
        withPipe { reader, write, _ in
            write("00 A4 04 00 00\r\n00 B0 00 00 01\n")
            #expect(reader.waitForLine(upTo: .seconds(5)))
            #expect(reader.readLine() == "00 A4 04 00 00")
            let start = ContinuousClock.now
            #expect(reader.waitForLine(upTo: .seconds(5)))
            #expect(ContinuousClock.now - start < .seconds(1))
            #expect(!reader.mayWait)
            #expect(reader.readLine() == "00 B0 00 00 01")
            #expect(reader.mayWait)
        }
    }

    /// Nothing comes: the wait ends at its bound (20 ms here), not before and not long after.
    /// Half a line then a pause: still no line; the rest completes it, and nothing is lost.
    @Test func aPauseEndsTheWaitAtItsBound() {
        withPipe { reader, write, closeWriter in
            let start = ContinuousClock.now
            #expect(!reader.waitForLine(upTo: .milliseconds(20)))
            let waited = ContinuousClock.now - start
            #expect(waited >= .milliseconds(20) && waited < .seconds(2), "\(waited)")
            write("00 A4 04")
            #expect(!reader.waitForLine(upTo: .milliseconds(20)))
            write(" 00 00\nlast line without a line feed")
            #expect(reader.waitForLine(upTo: .seconds(5)))
            #expect(reader.readLine() == "00 A4 04 00 00")
            #expect(!reader.waitForLine(upTo: .milliseconds(20)))
            closeWriter()
            #expect(reader.waitForLine(upTo: .seconds(5)))  // the end of input is at hand too
            #expect(reader.readLine() == "last line without a line feed")
            #expect(reader.readLine() == nil)
        }
    }

    /// A pipe in non-blocking mode (O_NONBLOCK left on it by the program that started the tool):
    /// a read while the writer pauses fails with EAGAIN, which is no end of input. The reader
    /// waits for the next line as on a blocking pipe; before, the script ended there, exit 0, and
    /// the lines after the pause never ran.
    @Test func aNonBlockingPipeIsReadToItsEnd() {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        defer { close(descriptors[0]) }
        #expect(fcntl(descriptors[0], F_SETFL, fcntl(descriptors[0], F_GETFL) | O_NONBLOCK) == 0)
        let writer = descriptors[1]
        @Sendable func send(_ text: String) {
            var text = text
            _ = text.withUTF8 { write(writer, $0.baseAddress, $0.count) }
        }
        let reader = InputLineReader(descriptor: descriptors[0])
        send("00 A4 04 00 00\n")
        #expect(reader.readLine() == "00 A4 04 00 00")
        // The next line comes after a pause; the writer then closes the pipe.
        let written = DispatchSemaphore(value: 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
            send("00 B0 00 00 01\n")
            close(writer)
            written.signal()
        }
        #expect(reader.readLine() == "00 B0 00 00 01")
        written.wait()
        #expect(reader.readLine() == nil)
    }

    /// A read that fails (a directory: EISDIR) ends the input and says why; a true end says nothing.
    @Test func aFailedReadIsKeptApartFromTheEnd() {
        let directory = open("/", O_RDONLY)
        #expect(directory >= 0)
        defer { close(directory) }
        let failing = InputLineReader(descriptor: directory)
        #expect(failing.readLine() == nil)
        #expect(failing.readFailure == "Is a directory (errno 21)")
        withPipe { reader, write, closeWriter in
            write("last\n")
            closeWriter()
            #expect(reader.readLine() == "last" && reader.readLine() == nil)
            #expect(reader.readFailure == nil)
        }
    }
}
