import Foundation
import PostgresNIO
import ScrollbackModels

extension ScrollbackStore {
    /// A page of history, newest first, with the conversation's last seq and
    /// version read in the same statement (one snapshot, one round trip),
    /// as values read from the database (from a replica when one is
    /// configured and has reached `minVersion`). The server answers pages
    /// with `encodedPage`, which the page cache serves.
    public func page(
        of id: UUID, for user: UserID, anchor: PageAnchor, limit: Int, minVersion: Int64 = 0
    ) async throws -> MessagePage {
        try await replicated(for: user, atLeast: minVersion, version: \.version) {
            try await readPage(of: id, for: user, anchor: anchor, limit: limit)
        }
    }

    /// The same page as the JSON it is answered with (`EncodedPage`).
    ///
    /// A newest page, or one `after` a recent seq, may come from the page
    /// cache: the same page, read earlier at a version nothing has changed
    /// since, as far as the change feed proves, never below `minVersion`,
    /// answered with the bytes written when it was read. A newest page that
    /// does not is read with at least the cache's fill size, encoded once,
    /// and kept.
    public func encodedPage(
        of id: UUID, for user: UserID, anchor: PageAnchor, limit: Int, minVersion: Int64 = 0
    ) async throws -> EncodedPage {
        if let page = pageCache.page(of: id, for: user, anchor: anchor, limit: limit, minVersion: minVersion) {
            return page
        }
        guard anchor == .newest, let ticket = pageCache.beginFill(of: id) else {
            return EncodedPage(try await page(of: id, for: user, anchor: anchor, limit: limit, minVersion: minVersion))
        }
        // A fill reads from the primary: its ticket proves it current
        // against the notifications this instance has seen, which a
        // replica's snapshot may be older than.
        let fillLimit = max(limit, pageCache.fillLimit)
        // Kept unless the read failed or something voided the ticket meanwhile.
        var read: EncodedPage?
        defer { pageCache.finishFill(ticket, for: user, page: read, limit: fillLimit) }
        let page = EncodedPage(try await readPage(of: id, for: user, anchor: .newest, limit: fillLimit))
        read = page.compacted
        return PageCache.slice(page, complete: page.messages.count < fillLimit, anchor: .newest, limit: limit) ?? page
    }

    /// A page read from the database.
    func readPage(of id: UUID, for user: UserID, anchor: PageAnchor, limit: Int) async throws -> MessagePage {
        let scan = PageScan(anchor: anchor, limit: limit)
        let rows = try await rows(PageStatement(conversation: id, user: user, scan: scan), writes: false, as: .page)
        guard let head = rows.first else { throw StoreError.conversationNotFound }
        let messages = rows.compactMap(\.message)
        // UNION ALL promises no order across its branches: `sides` restores each side's.
        let (older, newer) = scan.sides(of: messages)
        let page = PageAssembly.assemble(
            anchor: anchor, limit: limit, firstSeq: head.firstSeq, lastSeq: head.lastSeq, older: older, newer: newer,
            seq: \.seq)
        return MessagePage(
            messages: page.rows, hasOlder: page.hasOlder, hasNewer: page.hasNewer, lastSeq: head.lastSeq,
            version: head.version, firstSeq: head.firstSeq)
    }

    /// The seq to open history at for a point in time: the first message at
    /// or after `time`, or the newest when none is (nil while the
    /// conversation is empty).
    public func seq(at time: Date, in id: UUID, for user: UserID) async throws -> Int64? {
        // The driver traps on dates far outside PostgreSQL's range; nothing is
        // stored outside the API's range anyway, so clamp to it.
        let range = ScrollbackJSON.timestampRange
        let time = min(max(time, range.lowerBound), range.upperBound.addingTimeInterval(-1))
        let rows = try await rows(
            """
            SELECT c.last_seq,
                   (SELECT m.seq FROM messages m
                    WHERE m.conversation_id = c.id AND m.created_at >= \(time)
                    ORDER BY m.created_at, m.seq LIMIT 1)
            FROM conversations c
            WHERE c.id = \(id)
              AND EXISTS (SELECT 1 FROM members WHERE conversation_id = c.id AND user_id = \(user.rawValue))
            """,
            writes: false, as: .seqAtTime)
        guard let (lastSeq, seq) = try rows.first?.decode((Int64, Int64?).self) else {
            throw StoreError.conversationNotFound
        }
        return seq ?? (lastSeq > 0 ? lastSeq : nil)
    }

    /// The messages created, edited or deleted after `version`, oldest change
    /// first, each once in its latest state. Versions are dense and commit in
    /// order, so a client that applies these to any window it holds ends with
    /// what a fresh fetch of that window returns. A set stops at `limit`
    /// messages or at about ``StoreOptions/maxResponseBytes`` of JSON, whichever
    /// comes first, with `hasMore`.
    public func changes(in id: UUID, for user: UserID, since version: Int64, limit: Int) async throws -> ChangeSet {
        // A replica behind the version the client already has is not asked.
        try await replicated(for: user, atLeast: version, version: \.version) {
            try await readChanges(in: id, for: user, since: version, limit: limit)
        }
    }

    private func readChanges(in id: UUID, for user: UserID, since version: Int64, limit: Int) async throws -> ChangeSet {
        let rows = try await rows(
            """
            SELECT c.version AS conversation_version, c.first_seq AS first_seq,
                   \(unescaped: MessageRow.columns("m", conversation: "c.id", readers: MessageRow.readers(user)))
            FROM conversations c
            LEFT JOIN LATERAL (
                SELECT * FROM messages
                WHERE conversation_id = c.id AND version > \(version)
                ORDER BY version LIMIT \(limit + 1)
            ) m ON true
            WHERE c.id = \(id)
              AND EXISTS (SELECT 1 FROM members WHERE conversation_id = c.id AND user_id = \(user.rawValue))
            ORDER BY m.version
            """,
            writes: false, as: .changes)
        var current: Int64?
        var firstSeq: Int64 = 1
        var messages: [Message] = []
        for row in rows {
            let columns = row.makeRandomAccess()
            current = try columns["conversation_version"].decode(Int64.self)
            firstSeq = try columns["first_seq"].decode(Int64.self)
            if let message = try MessageRow.decode(columns, alias: "m", conversation: id) { messages.append(message) }
        }
        guard let current else { throw StoreError.conversationNotFound }
        // At most `limit` messages, and fewer when they would make a response of many megabytes.
        let kept = ResponseBudget.fittingCount(
            of: messages.prefix(limit), limit: options.maxResponseBytes, bytes: ResponseBudget.message)
        guard messages.count > kept else {
            return ChangeSet(messages: messages, hasMore: false, version: current, firstSeq: firstSeq)
        }
        messages.removeLast(messages.count - kept)
        return ChangeSet(messages: messages, hasMore: true, version: messages.last!.version, firstSeq: firstSeq)
    }
}

/// One page read, prepared once per connection: both sides of the anchor
/// (`PageScan`: up to `older_limit` rows at or below `older_from`, newest
/// first, and up to `newer_limit` rows from `newer_from` up), with the
/// conversation's last seq and version from the same snapshot, and the
/// membership check. Both sides are keyset scans on the primary key.
struct PageStatement: PostgresPreparedStatement {
    static let name = "scrollback_page_v3"
    static let sql = """
        SELECT c.last_seq, c.version, c.first_seq, \(MessageRow.positional("m", conversation: "c.id", readers: "ARRAY[$2]"))
        FROM conversations c
        LEFT JOIN LATERAL (
            (SELECT * FROM messages
             WHERE conversation_id = c.id AND seq <= $3
             ORDER BY seq DESC LIMIT $4)
            UNION ALL
            (SELECT * FROM messages
             WHERE conversation_id = c.id AND seq >= $5
             ORDER BY seq ASC LIMIT $6)
        ) m ON true
        WHERE c.id = $1
          AND EXISTS (SELECT 1 FROM members WHERE conversation_id = c.id AND user_id = $2)
        """
    static let parameters = ["conversation_id", "user_id", "older_from", "older_limit", "newer_from", "newer_limit"]
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .text, .int8, .int8, .int8, .int8]

    var conversation: UUID
    var user: UserID
    var scan: PageScan

    struct Row: Sendable {
        var lastSeq: Int64
        var version: Int64
        /// The oldest seq still stored (sql/022: retention).
        var firstSeq: Int64
        var message: Message?
    }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(conversation)
        bindings.append(user.rawValue)
        bindings.append(scan.olderFrom)
        bindings.append(Int64(scan.olderLimit))
        bindings.append(scan.newerFrom)
        bindings.append(Int64(scan.newerLimit))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        var reader = RowReader(row)
        return Row(
            lastSeq: try reader.required(Int64.self), version: try reader.required(Int64.self),
            firstSeq: try reader.required(Int64.self), message: try reader.message(in: conversation))
    }
}
