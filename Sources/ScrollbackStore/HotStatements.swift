/// The SQL of the statements on the hot path, exactly as the store sends
/// them, with their parameters as `$1`, `$2`, ... and what each one is. The
/// benchmark runs these texts with `pgbench -M prepared` beside the server,
/// so the SQL lives in one place.
public struct StatementText: Sendable, Codable, Equatable {
    public var sql: String
    /// What `$1`, `$2`, ... are, in order.
    public var parameters: [String]
}

extension ScrollbackStore {
    /// `newest_page` and `page` (the same statement: the newest page is
    /// `older_from` = 9223372036854775807, `older_limit` = the page size,
    /// `newer_from` = 9223372036854775807, `newer_limit` = 0), `send` (and
    /// `send_without_notify`, the same without its notification: what the
    /// change feed costs a send),
    /// `thread` (its anchors as the page's), and `search`.
    public static let hotStatements: [String: StatementText] = [
        "page": StatementText(sql: PageStatement.sql, parameters: PageStatement.parameters),
        "send": StatementText(sql: SendStatement.sql, parameters: SendStatement.parameters),
        "send_without_notify": StatementText(sql: SendSQL.alone(notifying: false), parameters: SendStatement.parameters),
        "search": StatementText(sql: SearchStatement.sql, parameters: SearchStatement.parameters),
        "thread": StatementText(sql: ThreadStatement.sql, parameters: ThreadStatement.parameters),
    ]
}
