import ArgumentParser
import PostgresNIO
import ScrollbackEmbeddedPostgres
import ScrollbackStore

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the schema migrations and exit (serve also applies them at start).")

    func run() async throws {
        let logger = Environment.logger("scrollback")
        let queryTimeout = try Environment.queryTimeout()
        let database = try Environment.database(logger: logger)
        defer { if let (launcher, running) = database.embedded { launcher.stop(running) } }
        let client = PostgresClient(configuration: try database.url.clientConfiguration(), backgroundLogger: logger)
        let store = ScrollbackStore(client: client, logger: logger, queryTimeout: queryTimeout)
        let applied = try await withThrowingTaskGroup(of: [String]?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await store.migrate()
        }
        print(applied.isEmpty ? "The schema is up to date." : "Applied: \(applied.joined(separator: ", "))")
    }
}
