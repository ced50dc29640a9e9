// swift-tools-version: 6.0
// secbridge's fuzz targets: one libFuzzer executable per parser or byte-level entry point, in a
// package of their own so that the main package's products and normal builds are untouched.
// Build and run them with scripts/fuzz.sh (see Fuzz/README.md).
import Foundation
import PackageDescription

// The main package is the dependency at "..". SwiftPM names a path dependency after its
// directory (its identity), and its modules are compiled with that identity, sanitised, as their
// package name: a fresh clone may sit in a directory of any name, so both are computed here.
let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let mainIdentity = repository.lastPathComponent.lowercased()
let mainPackageName = String(mainIdentity.map { $0.isLetter || $0.isNumber ? $0 : "_" })

/// A fuzz target: `Sources/<name>/`, an executable whose `LLVMFuzzerTestOneInput` libFuzzer calls.
func fuzzTarget(_ name: String, _ products: [String], memberOfMainPackage: Bool = false) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzSupport"] + products.map { .product(name: $0, package: mainIdentity) },
        // APDUScript's parser is `package` in the main package: a target that needs it is compiled
        // as a member of that package (SwiftPM's own -package-name is turned off for it).
        packageAccess: !memberOfMainPackage,
        swiftSettings: memberOfMainPackage ? [.unsafeFlags(["-package-name", mainPackageName])] : []
    )
}

let package = Package(
    name: "secbridge-fuzz",
    dependencies: [.package(path: "..")],
    targets: [
        // What every target shares: the input as bytes, the check that reports a broken property.
        .target(name: "FuzzSupport", dependencies: [.product(name: "ISO7816", package: mainIdentity)]),
        fuzzTarget("command-apdu", ["ISO7816"]),
        fuzzTarget("response-apdu", ["ISO7816"]),
        fuzzTarget("atr", ["ISO7816"]),
        fuzzTarget("historical-bytes", ["ISO7816"]),
        fuzzTarget("ber-tlv", ["ISO7816"]),
        fuzzTarget("fci", ["ISO7816"]),
        fuzzTarget("pn532-frame", ["PN53x", "ISO7816"]),
        fuzzTarget("acr122-reply", ["PN53x", "ISO7816"]),
        fuzzTarget("pn532-uart", ["PN53x"]),
        fuzzTarget("transcript", ["Transcript"]),
        fuzzTarget("spy-import", ["Transcript"]),
        fuzzTarget("credential", ["SecureElementCredential"]),
        fuzzTarget("apdu-script", ["SecbridgeCLI", "ISO7816"], memberOfMainPackage: true),
        fuzzTarget("ndef", ["NFCTags"]),
        fuzzTarget("simulator", ["SecbridgeTesting"]),
        // SimulatedACR122IFD has no product of its own; SecbridgeTesting links it (through
        // InProcessPCSC), and its IFD handler entry points are public.
        fuzzTarget("control-line", ["SecbridgeTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
