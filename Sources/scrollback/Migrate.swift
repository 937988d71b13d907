import ArgumentParser
import ScrollbackStore

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the schema migrations and exit (serve also applies them at start).")

    func run() async throws {
        let configuration = try Startup.configuration()
        let logger = configuration.logger("scrollback")
        let database = try Startup.database(configuration, logger: logger)
        defer { if let (launcher, running) = database.embedded { launcher.stop(running) } }
        let store = ScrollbackStore(url: database.url, options: configuration.store, logger: logger)
        let applied = try await withThrowingTaskGroup(of: [String]?.self) { group in
            group.addTask {
                try await store.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await store.migrate()
        }
        print(applied.isEmpty ? "The schema is up to date." : "Applied: \(applied.joined(separator: ", "))")
    }
}
