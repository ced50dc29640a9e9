// swift-tools-version: 6.0
// An app's package built on secbridge, as a package outside the repository is: its code uses
// every library product a user builds on, and its tests run a CredentialSession against the
// in-process simulated ACR122U with a simulated phone (no pcscd, no hardware) and record
// exchanges through a scripted channel (README.md, "Testing code that uses secbridge").
//
// Two ways to depend on secbridge, chosen by the environment:
// - by default, by path (this repository, two directories up): `cd Examples/Consumer && swift test`
//   in a clone needs nothing else;
// - with SECBRIDGE_URL set, by URL and version (`.package(url:from:)` on a git tag), as a package
//   outside the repository does. scripts/check-consumer.sh (run by .ci/run) does this against a
//   tagged clone of HEAD: only then does SwiftPM refuse a library product whose targets carry
//   unsafe flags, which a path dependency is exempt from (docs/versioning.md §2).
import PackageDescription
#if canImport(Glibc)
import Glibc
#endif

/// secbridge by URL (SECBRIDGE_URL, a `file://` URL of a tagged clone) from SECBRIDGE_VERSION
/// (default 0.1.0) up to the next major version; else by path.
let secbridge: Package.Dependency = {
    guard let value = getenv("SECBRIDGE_URL") else { return .package(name: "secbridge", path: "../..") }
    var version: Version = "0.1.0"
    if let text = getenv("SECBRIDGE_VERSION"), let parsed = Version(String(cString: text)) { version = parsed }
    return .package(url: String(cString: value), from: version)
}()

let package = Package(
    name: "Consumer",
    dependencies: [secbridge],
    targets: [
        // The app's own code: reads a badge over any card channel, records what it sent.
        .target(
            name: "BadgeReader",
            dependencies: [
                .product(name: "SecureElementCredential", package: "secbridge"),
                .product(name: "PCSC", package: "secbridge"),
                .product(name: "ISO7816", package: "secbridge"),
                .product(name: "Transcript", package: "secbridge"),
                .product(name: "PN53x", package: "secbridge"),
                .product(name: "NFCTags", package: "secbridge"),
            ]
        ),
        .testTarget(
            name: "BadgeReaderTests",
            dependencies: [
                "BadgeReader",
                .product(name: "SecbridgeTesting", package: "secbridge"),
                .product(name: "SecureElementCredential", package: "secbridge"),
                .product(name: "Transcript", package: "secbridge"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
