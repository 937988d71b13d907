import Foundation

// Usage: EmbedResourcesTool TypeName output.swift input...
// Writes `enum TypeName { static let files: [(name: String, contents: String)] }`
// with each input's file name and exact contents, in the order given.
let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: EmbedResourcesTool TypeName output.swift input...\n".utf8))
    exit(2)
}
let typeName = arguments[1]
let outputPath = arguments[2]
var source = "// Generated at build time from the repository's files. Do not edit.\n"
source += "enum \(typeName) {\n    static let files: [(name: String, contents: String)] = [\n"
for path in arguments.dropFirst(3) {
    let url = URL(fileURLWithPath: path)
    let contents = try String(contentsOf: url, encoding: .utf8)
    // A raw string with a delimiter longer than any run of # in the file.
    var hashes = "#"
    while contents.contains("\"" + hashes) { hashes += "#" }
    source += "        (name: \"\(url.lastPathComponent)\", contents: \(hashes)\"\"\"\n"
    source += contents
    if !contents.hasSuffix("\n") { source += "\n" }
    source += "\"\"\"\(hashes)),\n"
}
source += "    ]\n}\n"
try source.write(toFile: outputPath, atomically: true, encoding: .utf8)
