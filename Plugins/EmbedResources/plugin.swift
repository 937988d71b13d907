import Foundation
import PackagePlugin

/// Generates Swift source that carries files of the repository as string
/// constants: `sql/*.sql` for the store (the migrations), `openapi.yaml` and
/// the web client (`Web/*.html`, `*.css`, `*.js`) for the server. The files
/// stay the single source of truth; the binary needs no source tree at run
/// time.
@main
struct EmbedResources: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let root = context.package.directoryURL
        let embeddings: [(typeName: String, inputs: [URL])]
        switch target.name {
        case "ScrollbackStore":
            embeddings = [("EmbeddedMigrationFiles", try Self.files(in: root.appending(path: "sql"), ending: [".sql"]))]
        case "ScrollbackServer":
            embeddings = [
                ("EmbeddedAPIDescription", [root.appending(path: "openapi.yaml")]),
                ("EmbeddedWebClient", try Self.files(in: root.appending(path: "Web"), ending: [".html", ".css", ".js"])),
            ]
        default:
            return []
        }
        return try embeddings.map { typeName, inputs in
            let output = context.pluginWorkDirectoryURL.appending(path: "\(typeName).swift")
            return .buildCommand(
                displayName: "Embedding \(inputs.count) file(s) as \(typeName)",
                executable: try context.tool(named: "EmbedResourcesTool").url,
                arguments: [typeName, output.path] + inputs.map(\.path),
                inputFiles: inputs,
                outputFiles: [output]
            )
        }
    }

    /// The files of `directory` whose names end in one of `suffixes`, by name.
    static func files(in directory: URL, ending suffixes: [String]) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { name in suffixes.contains { name.hasSuffix($0) } }
            .sorted()
            .map { directory.appending(path: $0) }
    }
}
