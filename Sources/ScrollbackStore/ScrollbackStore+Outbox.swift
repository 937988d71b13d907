import Foundation
import PostgresNIO
import ScrollbackModels

/// A destination of the outbox's events (`sql/013_outbox.sql`).
public enum OutboxSink: String, Sendable, CaseIterable {
    case webhook
    case push
}

/// One event of the outbox for one sink, as a worker claimed it.
public struct OutboxEvent: Sendable, Equatable {
    /// The row: the order of delivery within a conversation.
    public var row: Int64
    /// The event's id, the same for every sink and attempt.
    public var event: Int64
    /// `message.created`, `message.edited`, `message.deleted`,
    /// `reaction.changed`, `member.added`, `member.removed`,
    /// `member.updated`, `read.moved`, `conversation.created`,
    /// `report.created`.
    public var type: String
    public var conversationID: UUID
    public var seq: Int64?
    public var version: Int64?
    /// The sender, the member added, removed or updated, the reader, the
    /// creator, the reporter.
    public var user: UserID?
    /// `member.updated`: the new role; `report.created`: the report's id.
    public var subject: String? = nil
    public var createdAt: Date
    /// Attempts made before this one.
    public var attempts: Int
    /// Recipients a push event reached in earlier attempts.
    public var doneUsers: [String]
    /// The claim's token: marks of a claim whose lease ran out (another
    /// worker may hold the event now) change nothing.
    public var lease: UUID
}

/// How many events of a sink wait, and how many gave up.
public struct OutboxCounts: Sendable, Equatable {
    public var pending: Int64
    public var dead: Int64
    /// Seconds the oldest pending event has waited (0 when none waits).
    public var oldestPendingSeconds: Double
}

extension ScrollbackStore {
    /// Makes `sink` receive the events written from now on (an instance
    /// configured with it calls this at start; registering twice is harmless).
    public func registerOutboxSink(_ sink: OutboxSink) async throws {
        _ = try await rows(
            "INSERT INTO outbox_sinks (name) VALUES (\(sink.rawValue)) ON CONFLICT DO NOTHING",
            writes: true, as: .outbox)
    }

    /// The sinks events are written for.
    public func outboxSinks() async throws -> [OutboxSink] {
        try await rows("SELECT name FROM outbox_sinks ORDER BY name", writes: false, as: .outbox)
            .compactMap { OutboxSink(rawValue: try $0.decode(String.self)) }
    }

    /// Claims up to `limit` due events of `sink` for `lease`: each the first
    /// undelivered event of its conversation, or one after such an event
    /// that this claim also took, in row order, of conversations none of
    /// whose events another claim holds. No other worker takes them until
    /// the lease ends (a worker that dies gives its events back when it
    /// does). Claims of one sink run one at a time (an advisory lock), so
    /// two workers never hold events of one conversation at once, even one
    /// whose rows commit out of id order (read markers take no lock of the
    /// conversation).
    ///
    /// Three statements: the conversations that look claimable (rows in id
    /// order, each checked against its conversation's, stopping at
    /// `limit`: cheap however long the backlog); a lock of their first
    /// undelivered rows, which waits for a mark in flight (a worker whose
    /// lease ran out may still be renewing it); then the choice among them
    /// again, over what is committed now, and the lease. Each statement
    /// judges every row at one instant, its start: with the clock read row
    /// by row, a retry falling due during the scan could be not yet due as
    /// itself but no longer waiting as the earlier event of the row after
    /// it, which would then be claimed ahead of it.
    public func claimOutbox(_ sink: OutboxSink, limit: Int, lease: Duration) async throws -> [OutboxEvent] {
        let leaseSeconds = Double(lease.nanoseconds) / 1e9
        let token = UUID()
        return try await withTransaction(as: .outbox) { [logger] connection in
            _ = try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtext('scrollback.outbox'), hashtext(\(sink.rawValue)))",
                logger: logger
            ).collect()
            let candidates = try await connection.query(
                """
                SELECT DISTINCT conversation_id FROM (
                    SELECT c.conversation_id FROM outbox c
                    WHERE c.sink = \(sink.rawValue) AND c.state = 'pending'
                      AND c.next_attempt_at <= statement_timestamp()
                      AND (c.leased_until IS NULL OR c.leased_until < statement_timestamp())
                      AND NOT EXISTS (
                          SELECT 1 FROM outbox p
                          WHERE p.sink = c.sink AND p.state = 'pending' AND p.conversation_id = c.conversation_id
                            AND p.id <> c.id
                            AND ((p.id < c.id AND p.next_attempt_at > statement_timestamp())
                                 OR p.leased_until >= statement_timestamp()))
                    ORDER BY c.id LIMIT \(limit)
                ) r
                """,
                logger: logger
            ).collect().map { try $0.decode(UUID.self) }
            guard !candidates.isEmpty else { return [] }
            // The rows a stale claim may still mark are the first undelivered
            // of their conversation (at most `limit`, and a few read markers
            // that committed late): locking twice as many covers them, without
            // locking the whole backlog of a busy conversation.
            _ = try await connection.query(
                """
                SELECT id FROM outbox
                WHERE id = ANY(ARRAY(
                    SELECT id FROM (
                        SELECT id, row_number() OVER (PARTITION BY conversation_id ORDER BY id) AS n
                        FROM outbox
                        WHERE sink = \(sink.rawValue) AND state = 'pending' AND conversation_id = ANY(\(candidates))
                    ) r
                    WHERE n <= \(2 * limit)))
                ORDER BY id FOR UPDATE
                """,
                logger: logger
            ).collect()
            // The choice among them: undelivered rows of conversations none
            // of whose rows is leased, before the conversation's first row
            // waiting for a retry, in row order.
            let rows = try await connection.query(
                """
                UPDATE outbox o SET leased_until = clock_timestamp() + make_interval(secs => \(leaseSeconds)),
                                    lease_token = \(token)
                FROM (
                    SELECT id FROM (
                        SELECT id,
                               min(id) FILTER (WHERE next_attempt_at > statement_timestamp()) OVER w AS waiting_from,
                               COALESCE(bool_or(leased_until >= statement_timestamp()) OVER w, false) AS held
                        FROM outbox
                        WHERE sink = \(sink.rawValue) AND state = 'pending' AND conversation_id = ANY(\(candidates))
                        WINDOW w AS (PARTITION BY conversation_id)
                    ) r
                    WHERE NOT held AND (waiting_from IS NULL OR id < waiting_from)
                    ORDER BY id LIMIT \(limit)
                ) picked
                WHERE o.id = picked.id
                RETURNING o.id, o.event, o.type, o.conversation_id, o.seq, o.version, o.user_id, o.created_at,
                          o.attempts, o.done_users, o.subject
                """,
                logger: logger
            ).collect()
            return try rows.map { row in
                let (id, event, type, conversation, seq, version, user, createdAt, attempts, done, subject) =
                    try row.decode(
                        (Int64, Int64, String, UUID, Int64?, Int64?, String?, Date, Int32, [String]?, String?).self)
                return OutboxEvent(
                    row: id, event: event, type: type, conversationID: conversation, seq: seq, version: version,
                    user: user.map(UserID.init(rawValue:)), subject: subject, createdAt: createdAt,
                    attempts: Int(attempts), doneUsers: done ?? [], lease: token)
            }.sorted { $0.row < $1.row }
        }
    }

    /// Marks claimed events delivered, and extends the lease of `renewing`
    /// (the claimed events still to go) by `lease` from now; `done` adds
    /// push recipients reached so far to `renewing`'s first (a push in
    /// progress). Only rows still held by claim `token` change.
    /// Answers whether the claim still held them all: when it did not, its
    /// lease ran out and another worker has them now, and this one must
    /// stop delivering them.
    @discardableResult
    public func outboxDelivered(
        _ rows: [Int64], renewing: [Int64] = [], lease: Duration = .zero, token: UUID, done: [String] = []
    ) async throws -> Bool {
        guard !rows.isEmpty || !renewing.isEmpty else { return true }
        let leaseSeconds = Double(lease.nanoseconds) / 1e9
        let marked = try await self.rows(
            """
            UPDATE outbox SET
                state = CASE WHEN id = ANY(\(rows)) THEN 'delivered' ELSE state END,
                finished_at = CASE WHEN id = ANY(\(rows)) THEN clock_timestamp() END,
                attempts = attempts + CASE WHEN id = ANY(\(rows)) THEN 1 ELSE 0 END,
                leased_until = CASE WHEN id = ANY(\(rows)) THEN NULL
                                    ELSE clock_timestamp() + make_interval(secs => \(leaseSeconds)) END,
                done_users = CASE WHEN cardinality(\(done)::text[]) > 0 AND id = \(renewing.first ?? -1)
                                  THEN COALESCE(done_users, '{}') || \(done)::text[] ELSE done_users END
            WHERE id = ANY(\(rows + renewing)) AND state = 'pending' AND lease_token = \(token)
            RETURNING 1
            """,
            writes: true, as: .outbox)
        return marked.count == Set(rows + renewing).count
    }

    /// Records a failed attempt of a claimed event: it is tried again after
    /// `retryAfter`, or, once `window` has passed since the event was
    /// written, it is dead (metrics count it; `replayOutbox` brings it back).
    /// `done` adds recipients a push reached before the failure. Answers
    /// whether the event is now dead.
    @discardableResult
    public func outboxFailed(
        _ row: Int64, token: UUID, error: String, retryAfter: Duration, window: Duration, done: [String] = []
    ) async throws -> Bool {
        let retrySeconds = Double(retryAfter.nanoseconds) / 1e9
        let windowSeconds = Double(window.nanoseconds) / 1e9
        let rows = try await rows(
            """
            UPDATE outbox SET
                attempts = attempts + 1, last_error = left(\(error), 500), leased_until = NULL,
                done_users = CASE WHEN cardinality(\(done)::text[]) = 0 THEN done_users
                                  ELSE COALESCE(done_users, '{}') || \(done)::text[] END,
                next_attempt_at = clock_timestamp() + make_interval(secs => \(retrySeconds)),
                state = CASE WHEN COALESCE(replayed_at, created_at) + make_interval(secs => \(windowSeconds))
                                  < clock_timestamp() + make_interval(secs => \(retrySeconds))
                             THEN 'dead' ELSE 'pending' END,
                finished_at = CASE WHEN COALESCE(replayed_at, created_at) + make_interval(secs => \(windowSeconds))
                                        < clock_timestamp() + make_interval(secs => \(retrySeconds))
                                   THEN clock_timestamp() END
            WHERE id = \(row) AND state = 'pending' AND lease_token = \(token)
            RETURNING state = 'dead'
            """,
            writes: true, as: .outbox)
        return try rows.first?.decode(Bool.self) ?? false
    }

    /// Gives claimed events back without an attempt (a worker stopping, or
    /// a conversation whose earlier event just failed).
    public func outboxRelease(_ rows: [Int64], token: UUID) async throws {
        guard !rows.isEmpty else { return }
        _ = try await self.rows(
            """
            UPDATE outbox SET leased_until = NULL
            WHERE id = ANY(\(rows)) AND state = 'pending' AND lease_token = \(token)
            """,
            writes: true, as: .outbox)
    }

    /// Makes dead events of `sink` pending again, due now (all of them, or
    /// those of `events`). Answers how many.
    public func replayOutbox(_ sink: OutboxSink, events: [Int64]? = nil) async throws -> Int {
        let rows = try await rows(
            """
            UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = clock_timestamp(),
                              finished_at = NULL, leased_until = NULL, last_error = NULL,
                              replayed_at = clock_timestamp()
            WHERE sink = \(sink.rawValue) AND state = 'dead'
              AND (\(events == nil) OR event = ANY(\(events ?? [])))
            RETURNING 1
            """,
            writes: true, as: .outbox)
        return rows.count
    }

    /// Deletes up to `limit` events delivered or dead more than `retention`
    /// ago. Answers how many.
    public func pruneOutbox(retention: Duration, limit: Int) async throws -> Int {
        let seconds = Double(retention.nanoseconds) / 1e9
        let rows = try await rows(
            """
            DELETE FROM outbox WHERE id IN (
                SELECT id FROM outbox
                WHERE state <> 'pending' AND finished_at < clock_timestamp() - make_interval(secs => \(seconds))
                LIMIT \(limit))
            RETURNING 1
            """,
            writes: true, as: .outbox)
        return rows.count
    }

    /// The pending and dead events of `sink`.
    public func outboxCounts(_ sink: OutboxSink) async throws -> OutboxCounts {
        let rows = try await rows(
            """
            SELECT count(*) FILTER (WHERE state = 'pending'),
                   count(*) FILTER (WHERE state = 'dead'),
                   COALESCE(extract(epoch FROM clock_timestamp() - min(created_at) FILTER (WHERE state = 'pending')), 0)::float8
            FROM outbox WHERE sink = \(sink.rawValue) AND state <> 'delivered'
            """,
            writes: false, as: .outbox)
        guard let row = rows.first else { return OutboxCounts(pending: 0, dead: 0, oldestPendingSeconds: 0) }
        let (pending, dead, oldest) = try row.decode((Int64, Int64, Double).self)
        return OutboxCounts(pending: pending, dead: dead, oldestPendingSeconds: oldest)
    }

    /// The messages of conversation `id` at `seqs` as they are stored now,
    /// for no reader in particular (every `me` false): what an event about
    /// them carries. A message deleted since carries no body.
    public func messages(in id: UUID, at seqs: [Int64]) async throws -> [Int64: Message] {
        guard !seqs.isEmpty else { return [:] }
        let rows = try await rows(
            """
            SELECT \(unescaped: MessageRow.positional("m", conversation: "m.conversation_id", readers: "ARRAY[]::text[]"))
            FROM messages m WHERE m.conversation_id = \(id) AND m.seq = ANY(\(seqs))
            """,
            writes: false, as: .outbox)
        var messages: [Int64: Message] = [:]
        for row in rows {
            var reader = RowReader(row)
            if let message = try MessageRow.message(reader.rawMessage(), conversation: id, personal: false) {
                messages[message.seq] = message
            }
        }
        return messages
    }

    /// The data of `users`' memberships of conversation `id`, as
    /// `member.updated` events carry it (members without data are absent).
    public func memberData(in id: UUID, of users: [UserID]) async throws -> [String: CustomData] {
        let rows = try await rows(
            """
            SELECT user_id, data FROM members
            WHERE conversation_id = \(id) AND user_id = ANY(\(users.map(\.rawValue))::text[]) AND data IS NOT NULL
            """,
            writes: false, as: .outbox)
        var data: [String: CustomData] = [:]
        for row in rows {
            let (user, json) = try row.decode((String, String).self)
            data[user] = try Self.storedData(json)
        }
        return data
    }

    /// Conversation `id` as a `conversation.created` event carries it: its
    /// creator, title, description, data and members as stored now; nil
    /// when there is none.
    public func conversationForEvent(_ id: UUID) async throws -> ConversationEventData? {
        let rows = try await rows(
            """
            SELECT c.title, c.created_by, c.created_at,
                   ARRAY(SELECT user_id FROM members WHERE conversation_id = c.id ORDER BY user_id),
                   c.description, c.data
            FROM conversations c WHERE c.id = \(id)
            """,
            writes: false, as: .outbox)
        guard let row = rows.first else { return nil }
        let (title, creator, createdAt, members, description, data) = try row.decode(
            (String?, String, Date, [String], String?, String?).self)
        return ConversationEventData(
            id: id, title: title, createdBy: creator, createdAt: createdAt, members: members, description: description,
            data: try Self.storedData(data))
    }
}

/// A user a push goes to, with their devices and their inbox's counts.
public struct PushRecipient: Sendable, Equatable {
    public var user: UserID
    public var devices: [PushDevice]
    public var counts: UnreadCounts
    /// The message mentions them.
    public var mentioned: Bool
}

extension ScrollbackStore {
    /// Who a push of message `seq` of conversation `id` by `sender` goes
    /// to: the members other than the sender who have not muted the
    /// conversation nor blocked the sender, have a device, are not among `done`, and (unless
    /// `evenOnline`) have no live socket on any instance; each with the
    /// counts their inbox shows now.
    public func pushRecipients(
        of seq: Int64, in id: UUID, sender: UserID, excluding done: [String], evenOnline: Bool
    ) async throws -> [PushRecipient] {
        try await rows(
            """
            SELECT me.user_id,
                   EXISTS (SELECT 1 FROM mentions mn WHERE mn.conversation_id = me.conversation_id
                           AND mn.seq = \(seq) AND mn.user_id = me.user_id),
            \(unescaped: Self.pushColumns)
            FROM members me \(unescaped: Self.unreadCountsJoin)
            WHERE me.conversation_id = \(id) AND me.user_id <> \(sender.rawValue) AND NOT \(unescaped: Self.mutedNow)
              AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.blocker = me.user_id AND b.blocked = \(sender.rawValue))
              AND me.user_id <> ALL(\(done)::text[])
              AND EXISTS (SELECT 1 FROM devices d WHERE d.user_id = me.user_id)
              AND (\(evenOnline) OR NOT EXISTS (
                  SELECT 1 FROM presence p JOIN presence_instances i ON i.instance_id = p.instance_id
                  WHERE p.user_id = me.user_id AND i.expires_at > now()))
            ORDER BY me.user_id
            """,
            writes: false, as: .outbox
        ).map(Self.pushRecipient(from:))
    }

    /// `user` as the recipient of a silent counts update; nil without devices.
    public func pushCounts(for user: UserID) async throws -> PushRecipient? {
        try await rows(
            """
            SELECT me.user_id, false, \(unescaped: Self.pushColumns)
            FROM (SELECT \(user.rawValue)::text AS user_id) me \(unescaped: Self.unreadCountsJoin)
            WHERE EXISTS (SELECT 1 FROM devices d WHERE d.user_id = me.user_id)
            """,
            writes: false, as: .outbox
        ).first.map(Self.pushRecipient(from:))
    }

    /// Forgets the devices of `user` with one of `tokens` (the gateway said
    /// they are no longer valid). Answers how many.
    @discardableResult
    public func removeDevices(of user: UserID, withTokens tokens: [String]) async throws -> Int {
        guard !tokens.isEmpty else { return 0 }
        return try await rows(
            "DELETE FROM devices WHERE user_id = \(user.rawValue) AND token = ANY(\(tokens)) RETURNING 1",
            writes: true, as: .devices
        ).count
    }

    /// The devices and the inbox's counts of the user `me.user_id`.
    private static let pushColumns = """
        t.unread, t.conversations,
        ARRAY(SELECT d.device_id FROM devices d WHERE d.user_id = me.user_id ORDER BY d.device_id),
        ARRAY(SELECT d.platform FROM devices d WHERE d.user_id = me.user_id ORDER BY d.device_id),
        ARRAY(SELECT d.token FROM devices d WHERE d.user_id = me.user_id ORDER BY d.device_id),
        ARRAY(SELECT COALESCE(d.app_id, '') FROM devices d WHERE d.user_id = me.user_id ORDER BY d.device_id),
        ARRAY(SELECT COALESCE(d.environment, '') FROM devices d WHERE d.user_id = me.user_id ORDER BY d.device_id)
        """

    private static func pushRecipient(from row: PostgresRow) throws -> PushRecipient {
        let (user, mentioned, unread, conversations, ids, platforms, tokens, apps, environments) = try row.decode(
            (String, Bool, Int64, Int64, [String], [String], [String], [String], [String]).self)
        let devices = ids.indices.compactMap { index -> PushDevice? in
            guard let platform = DevicePlatform(rawValue: platforms[index]), index < tokens.count,
                index < apps.count, index < environments.count
            else { return nil }
            return PushDevice(
                deviceId: ids[index], platform: platform, token: tokens[index],
                appId: apps[index].isEmpty ? nil : apps[index], environment: DeviceEnvironment(rawValue: environments[index]))
        }
        return PushRecipient(
            user: UserID(rawValue: user), devices: devices,
            counts: UnreadCounts(unreadMessages: unread, unreadConversations: conversations), mentioned: mentioned)
    }
}
