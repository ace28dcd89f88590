/// Which hub this is: the release number and the commit it was built from (`hub --version`, and
/// the data directory's `format.json`, which names the hub that last wrote it).
public enum HubRelease {
    /// The release number (the same as the repository's `VERSION` file, which `scripts/package` reads).
    public static let version = "0.9.0"
    /// The commit the binary was built from, 12 hex digits (`unknown` when built outside a git
    /// checkout without `HUB_BUILD_COMMIT`).
    public static var commit: String { buildCommit }
    /// `hub 0.9.0 (commit 3f09a2c1b7e4)`.
    public static var description: String { "hub \(version) (commit \(commit))" }
}
