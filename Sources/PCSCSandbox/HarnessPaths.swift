import Foundation

/// Where the harness finds the repository, vicc's virtual environment and the system tools, and
/// the check that everything `scripts/install-deps.sh` provides is there.
public enum HarnessPaths {
    /// The environment variable that overrides ``viccVirtualEnvironment``.
    public static let venvVariable = "SECBRIDGE_VICC_VENV"

    /// The directory that holds vicc's Python module (`virtualsmartcard/VirtualSmartcard.py`).
    ///
    /// Debian's `vsmartcard-vpicc` installs it where Python does not search, so vicc runs with this
    /// directory on `PYTHONPATH`.
    public static let viccModuleDirectoryCandidates = [
        "/usr/lib/python3/site-packages/virtualsmartcard",
        "/usr/lib/python3/dist-packages",
    ]

    /// The repository root: the nearest directory holding `Package.swift` above this source file,
    /// else above the current directory; `nil` when neither has one.
    public static var repositoryRoot: URL? {
        let fromSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let fromCurrent = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        for start in [fromSource, fromCurrent] {
            var directory = start
            for _ in 0..<12 {
                if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                    return directory
                }
                let parent = directory.deletingLastPathComponent()
                if parent.path == directory.path { break }
                directory = parent
            }
        }
        return nil
    }

    /// vicc's Python virtual environment: `$SECBRIDGE_VICC_VENV`, else `<repo>/.venv-vicc`
    /// (the location `scripts/install-deps.sh` uses).
    public static var viccVirtualEnvironment: URL? {
        if let override = ProcessInfo.processInfo.environment[venvVariable], !override.isEmpty {
            return URL(fileURLWithPath: override)
        }
        return repositoryRoot?.appendingPathComponent(".venv-vicc")
    }

    /// The absolute path of `name` on `PATH`, `/usr/sbin` or `/sbin`, or `nil`.
    public static func tool(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        for directory in directories where !directory.isEmpty {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The absolute path of a required tool.
    /// - Throws: ``HarnessError/Code/missingDependency`` naming the package and the script to run.
    static func requireTool(_ name: String, package: String) throws -> String {
        guard let path = tool(name) else {
            throw missing("\(name) (Debian package \(package)) is not installed")
        }
        return path
    }

    /// The directory to put on `PYTHONPATH` for vicc.
    /// - Throws: ``HarnessError/Code/missingDependency``.
    static func viccModuleDirectory() throws -> String {
        for candidate in viccModuleDirectoryCandidates
        where FileManager.default.fileExists(atPath: candidate + "/virtualsmartcard/VirtualSmartcard.py") {
            return candidate
        }
        throw missing("vicc's Python module virtualsmartcard (Debian package vsmartcard-vpicc) is not installed")
    }

    /// The venv's interpreter, after checking that `pycryptodome` (module `Crypto`) is installed in it.
    /// - Throws: ``HarnessError/Code/missingDependency``.
    static func viccPython() throws -> String {
        guard let venv = viccVirtualEnvironment else {
            throw missing("cannot locate the repository root to find .venv-vicc; set \(venvVariable)")
        }
        let python = venv.appendingPathComponent("bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw missing("vicc's virtual environment \(venv.path) does not exist")
        }
        let lib = venv.appendingPathComponent("lib")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? []
        let hasCrypto = versions.contains { version in
            FileManager.default.fileExists(atPath: lib.path + "/" + version + "/site-packages/Crypto/__init__.py")
        }
        guard hasCrypto else {
            throw missing("pycryptodome is not installed in vicc's virtual environment \(venv.path)")
        }
        return python
    }

    /// Checks every dependency of ``TestEnvironment`` at once.
    /// - Throws: ``HarnessError/Code/missingDependency`` for the first thing missing.
    public static func checkDependencies() throws {
        _ = try requireTool("pcscd", package: "pcscd")
        _ = try requireTool("pcsc_scan", package: "pcsc-tools")
        _ = try requireTool("unshare", package: "util-linux")
        _ = try requireTool("vicc", package: "vsmartcard-vpicc")
        _ = try viccModuleDirectory()
        _ = try viccPython()
        try ReaderConfEntry.vpcd(port: 0x9000).validate()
    }

    static func missing(_ what: String) -> HarnessError {
        HarnessError(code: .missingDependency, reason: "\(what): run scripts/install-deps.sh (as root)")
    }
}
