// swift-tools-version: 6.0
// An app's package that depends on secbridge by path, as a package outside the repository would:
// its tests run a CredentialSession against the in-process simulated ACR122U with a simulated
// phone, with no pcscd, using only public API (README.md, "Testing an app without hardware").
import PackageDescription

let package = Package(
    name: "AppTests",
    dependencies: [.package(name: "secbridge", path: "../..")],
    targets: [
        // The app's own code: presents a badge credential the way an iOS app does.
        .target(name: "BadgeApp", dependencies: [.product(name: "SecureElementCredential", package: "secbridge")]),
        .testTarget(
            name: "BadgeAppTests",
            dependencies: ["BadgeApp", .product(name: "SecbridgeTesting", package: "secbridge")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
