// swift-tools-version: 6.0
// secbridge: Apple's SecureElementCredential session model on PC/SC readers (pcsc-lite) for Linux.
import PackageDescription

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
        // mapping, CardChannel, and the threads blocking calls run on. Every other module stands on it.
        .target(name: "PCSCCore"),
        // The C shim over pcsc-lite (libpcsclite-dev). Headers only; see CPCSCLite/include/shim.h.
        // A C target rather than a system library with `pkgConfig: "libpcsclite"`: pkg-config's flags
        // carry -pthread, which SwiftPM warns about on every build. Instead, forwarding headers in
        // include/ (on every dependent's include path) stand in for -I/usr/include/PCSC.
        .target(name: "CPCSCLite", linkerSettings: [.linkedLibrary("pcsclite")]),
        // The pcsc-lite client: contexts, card handles, transmit/control, status change, monitoring.
        .target(name: "PCSC", dependencies: ["PCSCCore", "CPCSCLite"]),
        // ISO/IEC 7816-4 APDUs, status words, ATR, BER-TLV, the card-APDU transport.
        .target(name: "ISO7816", dependencies: ["PCSCCore"]),
        // The transcript format, recording, redaction and replay.
        .target(name: "Transcript", dependencies: ["PCSCCore", "ISO7816", "NFCTags"]),
        // ACR122U pseudo-APDUs and PN532 commands.
        .target(name: "PN53x", dependencies: ["PCSCCore", "ISO7816"]),
        // NFC Forum tags and storage cards from the reader's side: NDEF, the Type 2 Tag reader and
        // writer, the Type 4 Tag capability container and reader, PC/SC part 3 storage cards, MIFARE Classic.
        .target(name: "NFCTags", dependencies: ["ISO7816"]),
        .target(name: "SecureElementCredential", dependencies: ["ISO7816", "PN53x", "Transcript", "PCSC", "NFCTags"]),
        // Layer 5: a faithful model of the ACR122U (and its CCID driver) with a simulated RF field.
        .target(name: "ACR122Simulator", dependencies: ["PCSCCore", "ISO7816", "Transcript"]),
        // The simulated ACR122U exported as IFD handler entry points for pcscd.
        .target(name: "SimulatedACR122IFD", dependencies: ["ACR122Simulator", "PCSCCore", "CPCSCLite"]),
        .target(name: "InProcessPCSC", dependencies: ["SimulatedACR122IFD", "ACR122Simulator", "PCSCCore", "CPCSCLite", "ISO7816"]),
        // Test doubles, public and documented, for this package's tests and its users' own.
        .target(name: "SecbridgeTesting", dependencies: ["PCSCCore", "ISO7816", "ACR122Simulator", "InProcessPCSC", "PCSCSandbox"]),
        // A sandbox for tests, benchmarks and demos: private pcscd instances in their own mount
        // namespaces, vpcd and vicc, `pcsc_scan` parsing.
        .target(name: "PCSCSandbox"),
        // The command tree of the `secbridge` tool, as a library so tests can drive it.
        .target(
            name: "SecbridgeCLI",
            dependencies: ["PCSCCore", "PCSC", "ISO7816", "Transcript", "PN53x"]
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
        .executableTarget(
            name: "secbridge",
            dependencies: ["SecbridgeCLI"],
            swiftSettings: [.unsafeFlags(["-Osize"])],
            // A static standard library, no Foundation, and a position-dependent executable (no
            // relocations for the loader to apply): `secbridge readers` must start within 1.5× of
            // `pcsc_scan -r`, which one Foundation-linked binary does not (measurements in
            // docs/test-infrastructure.md, "Start-up time: one binary or two").
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-Xclang-linker", "-no-pie"])]
        ),
        .executableTarget(
            name: "secbridge-tools",
            dependencies: ["SecbridgeCLI", "SecbridgeTools"],
            // Static standard library and Foundation, so the binary runs where only it is copied.
            // SwiftPM does not add Foundation's own static dependencies for -static-stdlib.
            linkerSettings: [
                // lld (the toolchain's own linker) ignores the .gnu.warning notes in the static
                // Foundation (its mktemp use), which GNU ld prints as a warning on every link.
                .unsafeFlags(["-static-stdlib", "-use-ld=lld"]),
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
        .executableTarget(
            name: "secbridge-bench",
            dependencies: ["PCSC", "ISO7816", "PCSCSandbox", "CPCSCBaseline", "SecureElementCredential", "PN53x"]
        ),
        // A private pcscd with vpcd and vicc around a command, for demos and manual tests.
        .executableTarget(name: "secbridge-testbed", dependencies: ["PCSCSandbox"]),
        .testTarget(name: "PCSCCoreTests", dependencies: ["PCSCCore"]),
        .testTarget(name: "PCSCTests", dependencies: ["PCSC", "PCSCCore", "CPCSCLite"]),
        .testTarget(name: "ISO7816Tests", dependencies: ["ISO7816", "SecbridgeTesting"]),
        .testTarget(name: "TranscriptTests", dependencies: ["Transcript", "ISO7816"]),
        .testTarget(name: "PN53xTests", dependencies: ["PN53x", "PCSCCore", "ISO7816", "SecbridgeTesting"]),
        .testTarget(name: "NFCTagsTests", dependencies: ["NFCTags", "ISO7816", "SecbridgeTesting"]),
        .testTarget(name: "SecureElementCredentialTests", dependencies: ["SecureElementCredential", "NFCTags", "ISO7816", "PN53x", "Transcript", "PCSC", "ACR122Simulator", "SecbridgeTesting"]),
        .testTarget(name: "ACR122SimulatorTests", dependencies: ["ACR122Simulator", "PN53x", "ISO7816", "Transcript", "SecbridgeTesting", "NFCTags"]),
        .testTarget(name: "InProcessPCSCTests", dependencies: ["InProcessPCSC", "PN53x", "Transcript", "ACR122Simulator", "PCSC", "ISO7816", "PCSCSandbox", "SecbridgeTesting"]),
        .testTarget(name: "SecbridgeCLITests", dependencies: ["SecbridgeCLI", "SecbridgeTools", "SecbridgeTesting", "PCSCCore", "PCSCSandbox", "NFCTags"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["PCSC", "ISO7816", "PCSCSandbox", "SecbridgeCLI", "SecbridgeTools", "InProcessPCSC"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
