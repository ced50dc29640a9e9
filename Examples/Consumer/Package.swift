// swift-tools-version: 6.0
// A package that depends on secbridge by version, as a package outside the repository does:
// `.package(url:from:)` on a git tag. scripts/check-consumer.sh clones the repository, tags the
// clone with the version of Sources/PCSCCore/Version.swift, points SECBRIDGE_URL at it and builds
// and tests this package (.ci/run runs it). A path dependency (Examples/AppTests) would not show
// what SwiftPM refuses only to a by-version dependency: a product whose targets carry unsafe flags.
// It uses every library product a user builds on.
import PackageDescription
#if canImport(Glibc)
import Glibc
#endif

/// The secbridge repository to depend on: SECBRIDGE_URL (a `file://` URL of the tagged clone), or
/// this repository itself (two directories up), which then needs a tag of the version.
let url: String = {
    if let value = getenv("SECBRIDGE_URL") { return String(cString: value) }
    return "file://" + Context.packageDirectory + "/../.."
}()
/// The lowest version accepted (`from:`, up to the next major version): SECBRIDGE_VERSION or 0.1.0.
let version: Version = {
    if let value = getenv("SECBRIDGE_VERSION"), let parsed = Version(String(cString: value)) { return parsed }
    return "0.1.0"
}()

let package = Package(
    name: "Consumer",
    dependencies: [.package(url: url, from: version)],
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
