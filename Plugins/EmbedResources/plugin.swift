import Foundation
import PackagePlugin

/// Generates Swift source that carries files of the repository as string
/// constants: `sql/*.sql` for the store (the migrations), `openapi.yaml` for
/// the server. The files stay the single source of truth; the binary needs no
/// source tree at run time.
@main
struct EmbedResources: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let root = context.package.directoryURL
        let inputs: [URL]
        let typeName: String
        switch target.name {
        case "ScrollbackStore":
            let sqlDir = root.appending(path: "sql")
            let names = try FileManager.default.contentsOfDirectory(atPath: sqlDir.path)
                .filter { $0.hasSuffix(".sql") }
                .sorted()
            inputs = names.map { sqlDir.appending(path: $0) }
            typeName = "EmbeddedMigrationFiles"
        case "ScrollbackServer":
            inputs = [root.appending(path: "openapi.yaml")]
            typeName = "EmbeddedAPIDescription"
        default:
            return []
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "\(typeName).swift")
        return [
            .buildCommand(
                displayName: "Embedding \(inputs.count) file(s) as \(typeName)",
                executable: try context.tool(named: "EmbedResourcesTool").url,
                arguments: [typeName, output.path] + inputs.map(\.path),
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
