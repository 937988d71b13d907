import ArgumentParser
import Foundation
import Hummingbird
import PostgresNIO
import ScrollbackEmbeddedPostgres
import ScrollbackServer
import ScrollbackStore

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP server (on the embedded PostgreSQL unless DATABASE_URL is set).")

    @Option(help: "Address to listen on (env HOST).")
    var host: String = ProcessInfo.processInfo.environment["HOST"] ?? "127.0.0.1"

    @Option(help: "Port to listen on (env PORT).")
    var port: Int = Int(ProcessInfo.processInfo.environment["PORT"] ?? "") ?? 8080

    func run() async throws {
        let logger = Environment.logger("scrollback")
        let secret = try Environment.jwtSecret()
        let queryTimeout = try Environment.queryTimeout()
        let database = try Environment.database(logger: logger)
        defer { if let (launcher, running) = database.embedded { launcher.stop(running) } }
        logger.info("using database", metadata: ["url": "\(database.url.redacted)"])
        let client = PostgresClient(configuration: try database.url.clientConfiguration(), backgroundLogger: logger)
        let store = ScrollbackStore(client: client, logger: logger, queryTimeout: queryTimeout)
        let app = try await buildApplication(
            configuration: ServerConfiguration(host: host, port: port, jwtSecret: secret),
            store: store, logger: logger)
        try await app.runService()
    }
}
