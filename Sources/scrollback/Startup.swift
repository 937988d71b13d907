import Foundation
import Logging
import ScrollbackEmbeddedPostgres
import ScrollbackServer
import ScrollbackStore

/// What every command does first: read the configuration, and find (or
/// start) the database.
enum Startup {
    /// The configuration from the environment, with the command line's flags
    /// (by variable name) winning; with the embedded database and no
    /// `SCROLLBACK_JWT_SECRET`, a secret generated once and kept in the state
    /// directory (owner-only).
    static func configuration(overrides: [String: String] = [:]) throws -> ScrollbackConfiguration {
        var configuration: ScrollbackConfiguration
        do {
            configuration = try ScrollbackConfiguration(
                environment: ProcessInfo.processInfo.environment, overrides: overrides)
        } catch let failure as ScrollbackConfiguration.Failure {
            throw Failure(description: failure.description)
        }
        if configuration.jwtSecret == nil {
            configuration.jwtSecret = try StateFiles.readOrCreateSecret(at: configuration.stateDirectory + "/jwt-secret")
        }
        return configuration
    }

    /// The database to use: `DATABASE_URL`, or the embedded cluster (started
    /// here if needed; `embedded` is nil when nothing was started).
    static func database(_ configuration: ScrollbackConfiguration, logger: Logger) throws -> (
        url: DatabaseURL, embedded: (EmbeddedPostgres, EmbeddedPostgres.Running)?
    ) {
        if let url = configuration.databaseURL { return (url, nil) }
        let launcher = EmbeddedPostgres(stateDirectory: configuration.stateDirectory, logger: logger)
        let running: EmbeddedPostgres.Running
        do {
            running = try launcher.start()
        } catch let error as EmbeddedPostgres.LaunchError {
            throw Failure(description: error.description)
        }
        return (try DatabaseURL(running.url), (launcher, running))
    }

    /// A start-up error: printed as it is, without a usage dump.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }
}
