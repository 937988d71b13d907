import Foundation
import Logging
import PostgresNIO
import ScrollbackEmbeddedPostgres
import ScrollbackStore

/// Settings read from the environment, with safe defaults for local use.
enum Environment {
    static var values: [String: String] { ProcessInfo.processInfo.environment }

    /// Local state (the embedded cluster, its password, the generated JWT
    /// secret) lives here, in the working directory.
    static var stateDirectory: String { values["SCROLLBACK_STATE_DIR"] ?? ".scrollback" }

    static var databaseURL: String? {
        guard let url = values["DATABASE_URL"], !url.isEmpty else { return nil }
        return url
    }

    /// `SCROLLBACK_DB_TIMEOUT`: seconds, more than 0 and at most 3600 (default 5).
    static func queryTimeout() throws -> Duration {
        guard let text = values["SCROLLBACK_DB_TIMEOUT"], !text.isEmpty else { return .seconds(5) }
        guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 3600 else {
            throw Failure(description: "SCROLLBACK_DB_TIMEOUT must be a number of seconds above 0 and at most 3600 (got \(text)).")
        }
        return .milliseconds(Int(seconds * 1000))
    }

    static func logger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = values["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        return logger
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// `SCROLLBACK_JWT_SECRET`, or with the embedded database a secret generated
    /// once and kept in the state folder (owner-only). With `DATABASE_URL` set
    /// a secret must be given: a generated one would differ between instances.
    static func jwtSecret() throws -> String {
        if let secret = values["SCROLLBACK_JWT_SECRET"], !secret.isEmpty {
            return secret
        }
        guard databaseURL == nil else {
            throw Failure(
                description: """
                    SCROLLBACK_JWT_SECRET is not set. With DATABASE_URL set, every instance must share one \
                    signing secret: set SCROLLBACK_JWT_SECRET (for example to the output of `openssl rand -hex 32`).
                    """)
        }
        return try StateFiles.readOrCreateSecret(at: stateDirectory + "/jwt-secret")
    }

    /// The database to use: `DATABASE_URL`, or the embedded cluster (started
    /// here if needed; `stop` is nil when nothing was started).
    static func database(logger: Logger) throws -> (url: DatabaseURL, embedded: (EmbeddedPostgres, EmbeddedPostgres.Running)?) {
        if let text = databaseURL {
            do {
                return (try DatabaseURL(text), nil)
            } catch let error as DatabaseURL.ParseError {
                throw Failure(description: error.description)
            }
        }
        let launcher = EmbeddedPostgres(stateDirectory: stateDirectory, logger: logger)
        let running: EmbeddedPostgres.Running
        do {
            running = try launcher.start()
        } catch let error as EmbeddedPostgres.LaunchError {
            throw Failure(description: error.description)
        }
        return (try DatabaseURL(running.url), (launcher, running))
    }
}
