import Foundation

/// What went wrong driving the browser, in words a test failure can show as it is: which call,
/// what the browser said, and what its pages logged.
public struct BrowserError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The package to install when no browser is found, and the variable that skips the browser
/// tests on purpose (never silently: a test that skips says so).
public enum BrowserRequirement {
    /// Debian's package that provides the browser the harness drives.
    public static let package = "chromium"
    /// Set to `1` to skip the real-browser tests on a machine without Chromium.
    public static let skipVariable = "HUB_SKIP_BROWSER"

    /// True when `HUB_SKIP_BROWSER=1` is set.
    public static var skipRequested: Bool {
        ProcessInfoEnvironment.value(skipVariable) == "1"
    }

    static func missingMessage(_ looked: String) -> String {
        "no Chromium found (looked for \(looked)): "
            + "install Debian's `\(package)` package (`apt-get install \(package)`; scripts/setup-system does it for the tests), "
            + "or set \(skipVariable)=1 to skip the real-browser tests"
    }
}

enum ProcessInfoEnvironment {
    static func value(_ name: String) -> String? { ProcessInfo.processInfo.environment[name] }
}
