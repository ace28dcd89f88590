import Foundation
import PackagePlugin

/// Records the commit the package is built from in the target it is applied to, as
/// `let buildCommit = "<12 hex digits>"` (`unknown` outside a git checkout, or `HUB_BUILD_COMMIT`
/// when the environment sets it, as a build from a source tarball may). The file is rewritten only
/// when the commit changes, so an unchanged checkout compiles nothing again.
@main struct BuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        let script = """
            out="$2/BuildCommit.swift"
            mkdir -p "$2"
            c="${HUB_BUILD_COMMIT:-$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}"
            line="let buildCommit = \\"$c\\""
            [ "$(cat "$out" 2>/dev/null)" = "$line" ] || printf '%s\\n' "$line" > "$out"
            """
        return [
            .prebuildCommand(
                displayName: "Recording the commit \(target.name) is built from",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "sh", context.package.directoryURL.path, output.path],
                outputFilesDirectory: output)
        ]
    }
}
