import Foundation
import PCSCSandbox
import Testing

/// What the loader does when `secbridge` or `secbridge-tools` starts (Package.swift,
/// `staticCxxRuntime`; docs/benchmarks.md §9): the C++ runtime is linked in, so the binaries need
/// only libpcsclite, libm, libc and the loader, and their dynamic symbol table holds what they import, not
/// every symbol of the package's modules.
@Suite struct StartupLinkTests {
    /// `readelf` output of `arguments` on the built binary `name`.
    func readelf(_ arguments: [String], _ name: String) async throws -> String {
        try requireBuiltBinaries()
        let binary = try secbridgeBinary().deletingLastPathComponent().appendingPathComponent(name)
        guard let readelf = HarnessPaths.tool("readelf") else {
            throw HarnessError(code: .missingDependency, reason: "readelf is not installed (binutils, scripts/install-deps.sh)")
        }
        let result = try await runProgram(URL(fileURLWithPath: readelf), ["-W"] + arguments + [binary.path], environment: [:])
        #expect(result.status == 0, "\(result.err)")
        return result.out
    }

    @Test(arguments: ["secbridge", "secbridge-tools"])
    func theLoaderMapsNoCxxRuntime(_ name: String) async throws {
        let dynamic = try await readelf(["-d"], name)
        let needed = dynamic.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
            line.split(separator: "[").last.map { String($0.dropLast()) }
        }
        // ld-linux-x86-64.so.2, the loader itself (always mapped), for the two functions the static
        // C++ runtime takes from it: __tls_get_addr and libgcc's unwinder's _dl_find_object.
        #expect(Set(needed) == ["libpcsclite.so.1", "libm.so.6", "libc.so.6", "ld-linux-x86-64.so.2"], "\(name) needs \(needed)")
    }

    @Test(arguments: ["secbridge", "secbridge-tools"])
    func theDynamicSymbolTableHoldsOnlyImports(_ name: String) async throws {
        // With -export-dynamic (what -static-stdlib asks for) `secbridge` exported tens of thousands
        // of its own symbols; every one defined in the binary would show a section index here.
        let symbols = try await readelf(["--dyn-syms"], name)
        let defined = symbols.split(separator: "\n").filter { line in
            let fields = line.split(separator: " ")
            return fields.count >= 8 && fields[0].hasSuffix(":") && fields[6] != "UND" && fields[6] != "Ndx"
        }
        #expect(defined.count < 50, "\(name) exports \(defined.count) symbols, e.g. \(defined.prefix(3))")
    }
}
