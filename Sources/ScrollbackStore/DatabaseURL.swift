import Foundation
import NIOSSL
import PostgresNIO

/// A `postgres://user:password@host:port/database?sslmode=...` address.
public struct DatabaseURL: Sendable, Equatable {
    public enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String?
    public var tls: TLSMode

    public init(host: String, port: Int, username: String, password: String?, database: String?, tls: TLSMode = .disable) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    public struct ParseError: Error, CustomStringConvertible {
        public var description: String
    }

    public init(_ text: String) throws {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme),
            let host = components.host, !host.isEmpty
        else {
            throw ParseError(description: "DATABASE_URL must look like postgres://user:password@host:5432/database")
        }
        let mode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        guard let tls = TLSMode(rawValue: mode) else {
            throw ParseError(description: "DATABASE_URL sslmode must be disable, prefer or require (got \(mode))")
        }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.init(
            host: host,
            port: components.port ?? 5432,
            username: components.user ?? "postgres",
            password: components.password,
            database: path.isEmpty ? nil : path,
            tls: tls)
    }

    /// Without the password: safe to log.
    public var redacted: String {
        "postgres://\(username)@\(host):\(port)/\(database ?? "")"
    }

    /// A single connection's configuration (the feed's listener), named
    /// `application_name` so operators can tell it from the pool's.
    func connectionConfiguration(_ options: StoreOptions, applicationName: String) throws
        -> PostgresConnection.Configuration
    {
        let tlsSetting: PostgresConnection.Configuration.TLS
        switch tls {
        case .disable: tlsSetting = .disable
        case .prefer: tlsSetting = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: tlsSetting = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tlsSetting)
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.additionalStartupParameters =
            options.startupParameters.filter { $0.0 != "application_name" } + [("application_name", applicationName)]
        return configuration
    }

    /// A pool configuration with the session settings of `options`.
    func clientConfiguration(_ options: StoreOptions) -> PostgresClient.Configuration {
        let tlsSetting: PostgresClient.Configuration.TLS
        switch tls {
        case .disable: tlsSetting = .disable
        case .prefer: tlsSetting = .prefer(.makeClientConfiguration())
        case .require: tlsSetting = .require(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tlsSetting)
        configuration.options.maximumConnections = options.maximumConnections
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.additionalStartupParameters = options.startupParameters
        return configuration
    }
}
