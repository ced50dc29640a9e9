extension TestEnvironment {
    /// Readers every first start of the shared pcscd includes, besides the vpcd reader: the two
    /// simulated ACR122U readers of ``SimulatedReaders`` (reader A and reader B, one shared RF field),
    /// served by the driver library `libSecbridgeACR122IFD.so` this package builds.
    ///
    /// Every test process's private pcscd thus has `Virtual PCD 00 00`/`00 01` and
    /// `ACS ACR122U PICC Interface 00 00` (A) and `… 01 00` (B). Entries are validated: a missing
    /// library makes the start fail with `.missingDependency` naming its path (build the package
    /// first: `swift build`), never a silently absent reader. The simulated readers run on
    /// ``SimulatedReaders/testTimeScale``.
    public static var standardExtraReaders: [ReaderConfEntry] {
        SimulatedReaders.readerConfEntries(timeScale: SimulatedReaders.testTimeScale)
    }
}
