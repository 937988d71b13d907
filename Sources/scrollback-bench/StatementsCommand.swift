import ArgumentParser
import Foundation
import ScrollbackStore

/// Prints the store's hot statements (`page`, `send`) as JSON, so that
/// pgbench runs exactly the SQL the server sends.
struct StatementsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "statements",
        abstract: "Print the server's hot statements (SQL and parameter names) as JSON.")

    func run() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(ScrollbackStore.hotStatements)
        print(String(decoding: data, as: UTF8.self))
    }
}
