import Foundation
import NIOSSL
import PostgresNIO

/// A `postgres://user:password@host:port/database?sslmode=...` address.
///
/// It may name several servers, as libpq does (`postgres://a:5432,b:5433/db`):
/// the store then works on whichever of them accepts writes (libpq's
/// `target_session_attrs=read-write`), and moves to another when a standby
/// is promoted (see `PrimaryPool`). `host` and `port` are the first.
public struct DatabaseURL: Sendable, Equatable {
    public enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    /// One server of the address.
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    public var host: String {
        get { endpoints[0].host }
        set { endpoints[0].host = newValue }
    }
    public var port: Int {
        get { endpoints[0].port }
        set { endpoints[0].port = newValue }
    }
    /// Every server named, in the order given (never empty).
    public var endpoints: [Endpoint]
    public var username: String
    public var password: String?
    public var database: String?
    public var tls: TLSMode

    public init(host: String, port: Int, username: String, password: String?, database: String?, tls: TLSMode = .disable) {
        self.endpoints = [Endpoint(host: host, port: port)]
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    public struct ParseError: Error, CustomStringConvertible {
        public var description: String
    }

    public init(_ text: String) throws {
        let shape = "DATABASE_URL must look like postgres://user:password@host:5432/database (or host1:5432,host2:5432 for a primary and its standbys)"
        // URLComponents takes one host: the list is parsed here and a
        // placeholder stands in for it.
        guard let schemeEnd = text.range(of: "://") else { throw ParseError(description: shape) }
        let afterScheme = text[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex { "/?#".contains($0) } ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        let at = authority.lastIndex(of: "@")
        let hostList = at.map { authority[authority.index(after: $0)...] } ?? authority
        let placeholder = text[..<hostList.startIndex] + "placeholder" + text[hostList.endIndex...]
        guard let components = URLComponents(string: String(placeholder)),
            let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else {
            throw ParseError(description: shape)
        }
        var endpoints: [Endpoint] = []
        for item in hostList.split(separator: ",", omittingEmptySubsequences: false) {
            guard let endpoint = Self.endpoint(item) else { throw ParseError(description: shape) }
            endpoints.append(endpoint)
        }
        let query = components.queryItems ?? []
        let mode = query.first { $0.name == "sslmode" }?.value ?? "disable"
        guard let tls = TLSMode(rawValue: mode) else {
            throw ParseError(description: "DATABASE_URL sslmode must be disable, prefer or require (got \(mode))")
        }
        if let target = query.first(where: { $0.name == "target_session_attrs" })?.value,
            !["read-write", "primary"].contains(target)
        {
            throw ParseError(
                description: "DATABASE_URL target_session_attrs may only be read-write or primary (got \(target)): Scrollback writes, so it always works on the server that accepts writes; name read replicas in SCROLLBACK_REPLICA_URLS")
        }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.init(
            host: endpoints[0].host, port: endpoints[0].port,
            username: components.user ?? "postgres",
            password: components.password,
            database: path.isEmpty ? nil : path,
            tls: tls)
        self.endpoints = endpoints
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`; nil when malformed.
    private static func endpoint(_ text: Substring) -> Endpoint? {
        var host: Substring
        var port: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                port = rest.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        } else {
            host = text
        }
        guard !host.isEmpty, !host.contains(":") || text.hasPrefix("[") else { return nil }
        let number = port.map { Int($0) } ?? 5432
        guard let number, (1...65_535).contains(number) else { return nil }
        return Endpoint(host: String(host), port: number)
    }

    /// The same address on `endpoint` alone.
    public func on(_ endpoint: Endpoint) -> DatabaseURL {
        var url = self
        url.endpoints = [endpoint]
        return url
    }

    /// Without the password: safe to log.
    public var redacted: String {
        "postgres://\(username)@\(endpoints.map(\.description).joined(separator: ","))/\(database ?? "")"
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
