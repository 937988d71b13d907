import Foundation
import PostgresNIO
import ScrollbackModels

extension ScrollbackStore {
    /// Revokes every token of `user` issued before now (to the second) and
    /// notifies every instance (`v:` on the change feed, in the same
    /// statement); returns the time tokens must be issued at or after. A
    /// later revocation moves it forward, an earlier one never back.
    public func revokeTokens(of user: UserID) async throws -> Date {
        let rows = try await rows(Self.revocation(of: user), writes: true, as: .revocations)
        guard let before = try rows.first?.decode(Date.self) else { throw StoreError.userNotFound }
        return before
    }

    /// The statement of a revocation, which answers its time.
    static func revocation(of user: UserID) -> PostgresQuery {
        """
        WITH revoked AS (
            INSERT INTO token_revocations (user_id, revoked_before)
            VALUES (\(user.rawValue), date_trunc('second', now()))
            ON CONFLICT (user_id) DO UPDATE
                SET revoked_before = greatest(token_revocations.revoked_before, EXCLUDED.revoked_before)
            RETURNING user_id, revoked_before
        )
        SELECT revoked_before, \(unescaped: FeedEvent.notify(
            "v", "(extract(epoch FROM revoked_before) * 1000000)::bigint::text", "user_id"))
        FROM revoked
        """
    }

    /// When `user`'s tokens were last revoked: tokens issued before it are
    /// refused; nil when they never were.
    public func tokensRevoked(of user: UserID) async throws -> Date? {
        let rows = try await rows(
            "SELECT revoked_before FROM token_revocations WHERE user_id = \(user.rawValue)", writes: false,
            as: .revocations)
        return try rows.first?.decode(Date.self)
    }
}
