extension TestEnvironment {
    /// Readers every first start of the shared pcscd includes, besides the vpcd reader.
    ///
    /// The extension point for simulated drivers: add an entry here (for example the simulated
    /// ACR122U driver, `FRIENDLYNAME "ACS ACR122U PICC Interface"` with `LIBPATH` the built
    /// library and `DEVICENAME` its control endpoint) so the pcscd that serves the whole test
    /// process has it, whichever suite starts first. Entries are validated: a missing library
    /// makes the start fail with `.missingDependency`, never a silently absent reader.
    public static var standardExtraReaders: [ReaderConfEntry] { [] }
}
