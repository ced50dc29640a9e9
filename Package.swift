// swift-tools-version: 6.0
// secbridge: Apple's SecureElementCredential session model on PC/SC readers (pcsc-lite) for Linux.
import PackageDescription

// The C++ runtime the Swift runtime needs, linked into the two executables instead of loaded at
// every start: Linker/static-libstdc++ holds a linker script named libstdc++.so that stands for
// libstdc++.a (the toolchain's -static-stdlib asks for -lstdc++ by name), and -static-libgcc takes
// libgcc_eh.a for libgcc_s.so.1. The loader then maps only libc, libm and libpcsclite and resolves
// a few hundred symbols instead of libstdc++'s thousands: a static-stdlib "hello" starts in 0.32 M
// instructions instead of 2.0 M (docs/benchmarks.md §9). Both need lld (-use-ld=lld).
//
// --no-export-dynamic undoes the -export-dynamic of -static-stdlib (last one wins): it put every
// symbol of the package's modules into the dynamic symbol table, which the Swift runtime's
// start-up `dladdr` (the backtracer's path look-up) then searched one by one (0.21 M instructions
// in `secbridge`, 0.28 M in `secbridge-tools`). Nothing looks symbols of the executables up by name:
// the in-process driver is called directly (InProcessPCSC/DriverCalls.swift), and libedit,
// the one library opened with dlopen, needs nothing from them.
let staticCxxRuntime = [
    "-L", Context.packageDirectory + "/Linker/static-libstdc++", "-Xclang-linker", "-static-libgcc",
    "-Xlinker", "--no-export-dynamic",
]

let package = Package(
    name: "secbridge",
    products: [
        .library(name: "PCSCCore", targets: ["PCSCCore"]),
        .library(name: "PCSC", targets: ["PCSC"]),
        .library(name: "ISO7816", targets: ["ISO7816"]),
        .library(name: "Transcript", targets: ["Transcript"]),
        .library(name: "PN53x", targets: ["PN53x"]),
        .library(name: "NFCTags", targets: ["NFCTags"]),
        .library(name: "SecureElementCredential", targets: ["SecureElementCredential"]),
        .library(name: "ACR122Simulator", targets: ["ACR122Simulator"]),
        // The command tree of `secbridge` as a library (the fuzz targets under Fuzz/ read its APDU
        // scripts through it).
        .library(name: "SecbridgeCLI", targets: ["SecbridgeCLI"]),
        // Test doubles for code built on this package: a scripted card channel that reports
        // leftovers, hex literals, a channel straight onto a simulated reader.
        .library(name: "SecbridgeTesting", targets: ["SecbridgeTesting"]),
        // The simulated ACR122U as a pcscd driver (IFD handler): LIBPATH in a reader.conf file.
        .library(name: "SecbridgeACR122IFD", type: .dynamic, targets: ["SimulatedACR122IFD"]),
        .executable(name: "secbridge", targets: ["secbridge"]),
        .executable(name: "secbridge-tools", targets: ["secbridge-tools"]),
        .executable(name: "secbridge-bench", targets: ["secbridge-bench"]),
        .executable(name: "secbridge-testbed", targets: ["secbridge-testbed"]),
    ],
    targets: [
        // The PC/SC vocabulary, pure Swift and no C: result codes (PCSCError), protocol, share,
        // disposition and state bits, control codes, the part 10 feature list, pcscd's IFD → SCARD
        // mapping, CardChannel, and the threads blocking calls run on. Every library product stands
        // on it.
        .target(name: "PCSCCore"),
        // The C shim over pcsc-lite (libpcsclite-dev). Headers only; see CPCSCLite/include/shim.h.
        // A C target rather than a system library with `pkgConfig: "libpcsclite"`: pkg-config's flags
        // carry -pthread, which SwiftPM warns about on every build. Instead, forwarding headers in
        // include/ (on every dependent's include path) stand in for -I/usr/include/PCSC.
        .target(name: "CPCSCLite", linkerSettings: [.linkedLibrary("pcsclite")]),
        // libedit (libedit-dev) for `secbridge shell`'s line editing and history, opened with dlopen
        // when an interactive shell starts, so no other command loads it (see CEditLine/include/ceditline.h).
        .target(name: "CEditLine"),
        // The pcsc-lite client: contexts, card handles, transmit/control, status change, monitoring.
        .target(name: "PCSC", dependencies: ["PCSCCore", "CPCSCLite"]),
        // ISO/IEC 7816-4 APDUs, status words, ATR, BER-TLV, the card-APDU transport.
        .target(name: "ISO7816", dependencies: ["PCSCCore"]),
        // The tag reader/writer library: NDEF messages, the NFC Forum Type 2 Tag reader and writer, the
        // Type 4 Tag capability container and reader, storage cards through PC/SC part 3 pseudo-APDUs,
        // MIFARE Classic (its sector/block layout has its one home here).
        .target(name: "NFCTags", dependencies: ["PCSCCore", "ISO7816"]),
        // The transcript format, recording, redaction (MIFARE trailers by NFCTags' layout) and replay.
        .target(name: "Transcript", dependencies: ["PCSCCore", "ISO7816", "NFCTags"]),
        // ACR122U pseudo-APDUs and PN532 commands, both roles.
        .target(name: "PN53x", dependencies: ["PCSCCore", "ISO7816"]),
        // Apple's SecureElementCredential session model: CredentialSession, the session state
        // machine, transactions, assertions, authorization, credentials and their applets (host,
        // declarative, transcript, Type 4 Tag), a PC/SC card as secure element, the emulation
        // backends, and the host as terminal (ReaderSession).
        .target(
            name: "SecureElementCredential",
            dependencies: ["PCSCCore", "ISO7816", "PN53x", "Transcript", "PCSC", "NFCTags"]
        ),
        // A model of the ACR122U (and its CCID driver) with a simulated RF field: cards, tags with
        // memory, terminals. Its tag arithmetic is its own, on purpose: it is an oracle of the card
        // (see StorageCards.swift), checked against NFCTags by TagArithmeticCrossCheckTests.
        .target(name: "ACR122Simulator", dependencies: ["PCSCCore", "ISO7816", "Transcript", "NFCTags"]),
        // The simulated ACR122U as a pcscd driver: IFD handler entry points, the control socket.
        .target(name: "SimulatedACR122IFD", dependencies: ["ACR122Simulator", "PCSCCore", "CPCSCLite", "ISO7816", "Transcript", "PN53x"]),
        // The in-process PC/SC client: simulated readers driven through SimulatedACR122IFD's entry
        // points with pcscd's rules, no pcscd.
        .target(name: "InProcessPCSC", dependencies: ["SimulatedACR122IFD", "ACR122Simulator", "PCSCCore", "CPCSCLite", "ISO7816"]),
        // Test doubles, public and documented, for this package's tests and its users' own.
        .target(name: "SecbridgeTesting", dependencies: ["PCSCCore", "ISO7816", "PN53x", "ACR122Simulator", "InProcessPCSC", "PCSCSandbox", "SecureElementCredential", "SimulatedACR122IFD"]),
        // A sandbox for tests, benchmarks and demos: private pcscd instances in their own mount
        // namespaces, vpcd and vicc, `pcsc_scan` parsing.
        .target(name: "PCSCSandbox", dependencies: ["PCSCCore"]),
        // The command tree of the `secbridge` tool, as a library so tests can drive it.
        .target(
            name: "SecbridgeCLI",
            dependencies: ["PCSCCore", "PCSC", "ISO7816", "Transcript", "PN53x", "CEditLine"]
        ),
        // The commands that link Foundation (session engine, simulator launcher, transcript tools):
        // the `secbridge-tools` binary, which `secbridge` runs for them.
        .target(
            name: "SecbridgeTools",
            dependencies: [
                "SecbridgeCLI", "PCSC", "ISO7816", "Transcript", "PN53x", "PCSCSandbox",
                "SecureElementCredential", "NFCTags", "InProcessPCSC", "ACR122Simulator",
            ]
        ),
        // The hand-over to `secbridge-tools` before the Swift runtime starts (a constructor; see
        // handover.c).
        .target(name: "CSecbridgeHandOver"),
        .executableTarget(
            name: "secbridge",
            dependencies: ["SecbridgeCLI", "CSecbridgeHandOver"],
            swiftSettings: [.unsafeFlags(["-Osize"])],
            // A static standard library, no Foundation, and a position-dependent executable (no
            // relocations for the loader to apply): `secbridge readers` must start within 1.5× of
            // `pcsc_scan -r`, which one Foundation-linked binary does not (measurements in
            // docs/test-infrastructure.md, "Start-up time: one binary or two"). libstdc++ and
            // libgcc static too (``staticCxxRuntime``).
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xclang-linker", "-no-pie"] + staticCxxRuntime)]
        ),
        .executableTarget(
            name: "secbridge-tools",
            dependencies: ["SecbridgeCLI", "SecbridgeTools"],
            // Static standard library and Foundation, so the binary runs where only it is copied.
            // SwiftPM does not add Foundation's own static dependencies for -static-stdlib.
            // Position-dependent, as `secbridge`: as a PIE the loader applied 78 084 relative
            // relocations at every start (about 1.3 M of the 5.1 M instructions callgrind counts
            // for `decode atr`, and 200 copy-on-write page faults); without them 4.2 M.
            linkerSettings: [
                // lld (the toolchain's own linker) ignores the .gnu.warning notes in the static
                // Foundation (its mktemp use), which GNU ld prints as a warning on every link.
                .unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xclang-linker", "-no-pie"] + staticCxxRuntime),
                .linkedLibrary("CoreFoundation"), .linkedLibrary("_FoundationICU"),
                .linkedLibrary("_FoundationCShims"), .linkedLibrary("_FoundationCollections"),
                .linkedLibrary("FoundationInternationalization"), .linkedLibrary("FoundationEssentials"),
                .linkedLibrary("stdc++"),
            ]
        ),
        // The benchmark's C baseline: a plain SCardTransmit loop (not part of the library).
        .target(
            name: "CPCSCBaseline",
            // Only for pcsc-lite's headers (CPCSCLite's include/ directory); the shim itself is unused.
            dependencies: ["CPCSCLite"],
            linkerSettings: [.linkedLibrary("pcsclite")]
        ),
        // The benchmark (docs/benchmarks.md): paired comparisons against C, pcsc-tools and Python,
        // instruction counts under callgrind, memory figures, on a private pcscd (PCSCSandbox).
        .executableTarget(
            name: "secbridge-bench",
            dependencies: ["PCSC", "ISO7816", "PCSCSandbox", "CPCSCBaseline", "SecureElementCredential", "PN53x"]
        ),
        // A private pcscd with vpcd and vicc around a command, for demos and manual tests.
        .executableTarget(name: "secbridge-testbed", dependencies: ["PCSCSandbox"]),
        .testTarget(name: "PCSCCoreTests", dependencies: ["PCSCCore"]),
        // The benchmark's arithmetic (per-pair ratios, medians, instructions per APDU) and options.
        .testTarget(name: "SecbridgeBenchTests", dependencies: ["secbridge-bench", "ISO7816"]),
        .testTarget(name: "PCSCTests", dependencies: ["PCSC", "PCSCCore", "CPCSCLite"]),
        .testTarget(name: "ISO7816Tests", dependencies: ["ISO7816", "SecbridgeTesting"]),
        .testTarget(name: "TranscriptTests", dependencies: ["Transcript", "ISO7816", "SecbridgeTesting"]),
        .testTarget(name: "PN53xTests", dependencies: ["PN53x", "PCSCCore", "ISO7816", "SecbridgeTesting"]),
        .testTarget(name: "NFCTagsTests", dependencies: ["NFCTags", "ISO7816", "SecbridgeTesting"]),
        .testTarget(name: "SecureElementCredentialTests", dependencies: ["SecureElementCredential", "NFCTags", "ISO7816", "PN53x", "Transcript", "PCSC", "ACR122Simulator", "SecbridgeTesting"]),
        .testTarget(name: "ACR122SimulatorTests", dependencies: ["ACR122Simulator", "PN53x", "ISO7816", "Transcript", "SecbridgeTesting", "NFCTags"]),
        .testTarget(name: "InProcessPCSCTests", dependencies: ["InProcessPCSC", "SimulatedACR122IFD", "PN53x", "Transcript", "ACR122Simulator", "PCSC", "ISO7816", "PCSCSandbox", "SecbridgeTesting"]),
        .testTarget(
            name: "SecbridgeCLITests",
            dependencies: ["SecbridgeCLI", "SecbridgeTools", "CSecbridgeHandOver", "SecbridgeTesting", "PCSCCore", "PCSCSandbox", "NFCTags", "ISO7816", "PCSC", "PN53x", "ACR122Simulator"]
        ),
        // Replays the inputs the fuzz targets under Fuzz/ once failed on (Fuzz/Regressions/).
        .testTarget(
            name: "FuzzRegressionTests",
            dependencies: [
                "ISO7816", "PCSCCore", "PN53x", "Transcript", "NFCTags", "SecureElementCredential", "SecbridgeCLI",
                "ACR122Simulator", "InProcessPCSC", "PCSCSandbox", "SecbridgeTesting",
            ]
        ),
        // Apple's client flows written as an iOS app writes them, only UIKit/SwiftUI replaced, run
        // against the in-process simulated ACR122U with a simulated phone (docs/apple-api-map.md).
        .testTarget(name: "AppleShapedClientTests", dependencies: ["SecureElementCredential", "SecbridgeTesting"]),
        // The example of every library module's landing article, compiled and run (each article's
        // ```swift block is checked against the code here).
        .testTarget(
            name: "DocumentationExampleTests",
            dependencies: [
                "PCSCCore", "PCSC", "ISO7816", "Transcript", "PN53x", "NFCTags", "SecureElementCredential", "ACR122Simulator",
                "SecbridgeCLI", "SecbridgeTesting",
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "PCSC", "ISO7816", "PCSCSandbox", "SecbridgeCLI", "SecbridgeTools", "InProcessPCSC", "PN53x",
                "SecureElementCredential", "Transcript", "SecbridgeTesting",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Generic types (a `[String: String]`, a `Set<Int>`, a `Mutex<[UInt: DriverReader]>`) get their
// metadata through the accessor the compiler calls with the witness tables it already knows,
// instead of from a mangled name the runtime demangles: a mangled name makes the runtime check
// `Key: Hashable` by scanning every protocol conformance record of the binary (about 0.38 M
// instructions per first use of each type in the Foundation-linked `secbridge-tools`; 1.6 M of
// the 5.7 M a `replay --against simulated` spent; docs/benchmarks.md §9).
//
// Only on the Swift targets no library product reaches, directly or through its dependencies:
// SwiftPM refuses a product whose targets (any target in its closure) carry unsafe flags to a
// package that depends on this one by version (`error: … contains unsafe build flags`), and the
// library products are what users build on. So InProcessPCSC and PCSCSandbox, which
// SecbridgeTesting needs, are built without it (the cost: docs/benchmarks.md §9); the executables
// and SecbridgeTools keep it. Not the C targets, not the tests. The closure is computed here so a
// new dependency of a library target cannot bring an unsafe flag back.
let cTargets: Set<String> = ["CPCSCLite", "CEditLine", "CPCSCBaseline", "CSecbridgeHandOver"]
let targetsByName = Dictionary(uniqueKeysWithValues: package.targets.map { ($0.name, $0) })
func dependencyNames(_ target: Target) -> [String] {
    target.dependencies.compactMap { dependency in
        switch dependency {
        case .targetItem(let name, _), .byNameItem(let name, _): return name
        case .productItem: return nil  // another package's product: not a target here
        @unknown default: return nil
        }
    }
}
/// Every target a library product reaches: its own targets and, transitively, their dependencies.
var libraryClosure = Set<String>()
var pending = package.products.compactMap { $0 as? Product.Library }.flatMap(\.targets)
while let name = pending.popLast() {
    guard libraryClosure.insert(name).inserted, let target = targetsByName[name] else { continue }
    pending += dependencyNames(target)
}
for target in package.targets
where target.type != .test && !cTargets.contains(target.name) && !libraryClosure.contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? [])
        + [.unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"])]
}
