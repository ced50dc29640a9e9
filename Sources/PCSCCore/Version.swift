/// secbridge's version, the one place it is written: `secbridge --version`, transcripts' `# tool:`
/// header, the man pages, the git tag of a release, the Debian package (scripts/package-deb.sh reads
/// this line) and CHANGELOG.md's newest release all take it from here.
///
/// Semantic Versioning 2.0.0: before 1.0.0 a minor version may change the public API
/// incompatibly; CHANGELOG.md records every such change, and scripts/check-api.sh holds the API
/// to its baseline (docs/versioning.md).
public enum SecbridgeVersion {
    /// `MAJOR.MINOR.PATCH`, e.g. `"0.1.0"`.
    public static let current = "0.1.0"
}
