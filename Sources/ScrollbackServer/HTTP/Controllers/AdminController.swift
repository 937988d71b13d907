import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// The operator's routes (`/v1/admin/...`, behind `OperatorMiddleware`:
/// server tokens only, every call audited): system messages, the
/// moderation queue and the audit log.
struct AdminController {
    let store: ScrollbackStore
    /// This instance's, told of a revocation at once (the others hear of it
    /// through the change feed).
    var revocations: Revocations?

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.post("conversations/:id/messages", use: sendSystemMessage)
        group.get("reports", use: reports)
        group.get("reports/:report_id", use: report)
        group.post("reports/:report_id/resolve", use: resolve)
        group.get("audit", use: audit)
        group.get("users/:user_id/export", use: export)
        group.delete("users/:user_id", use: erase)
        group.post("users/:user_id/revoke", use: revoke)
        group.post("import", use: importHistory)
        group.put("conversations/:id/retention", use: setRetention)
    }

    /// A system message → 201, or 200 with the message stored the first
    /// time for a `client_id` sent before. It has the conversation's next
    /// seq, counts as unread for every member and no member can edit it.
    @Sendable func sendSystemMessage(_ request: Request, context: ScrollbackRequestContext) async throws
        -> JSONBody<MessageEnvelope>
    {
        let id = try ConversationController.conversationID(context)
        let input = try await RequestBody.decode(SystemMessageRequest.self, from: request, context: context)
        let body = try Validation.messageBody(input.body)
        let clientID = try Validation.clientID(input.clientId)
        let outcome = try await store.send(to: id, from: .system, body: body, clientID: clientID)
        context.auditDetail.withLockedValue {
            $0["conversation_id"] = id.uuidString.lowercased()
            $0["seq"] = "\(outcome.message.seq)"
        }
        switch outcome {
        case .created(let message): return JSONBody(MessageEnvelope(message: message), status: .created)
        case .replayed(let message): return JSONBody(MessageEnvelope(message: message))
        }
    }

    /// The moderation queue: `status` `open` (the default) or `resolved`,
    /// newest first; `before` is the `next` of the page before.
    @Sendable func reports(_ request: Request, context: ScrollbackRequestContext) async throws
        -> JSONBody<ModerationReportPage>
    {
        let query = QueryParameters(request)
        let status = try query.single("status").map { text in
            guard let status = ReportStatus(rawValue: text) else {
                throw APIError.badRequest(.invalidParameter, "`status` must be `open` or `resolved`.")
            }
            return status
        } ?? .open
        let limit = try query.integer("limit", in: APILimits.adminPageLimit) ?? APILimits.defaultAdminPageLimit
        let after = try query.single("before").map { try AdminCursor.decode($0, prefix: "r", as: UUID.init(uuidString:)) }
        let page = try await store.moderationReports(status: status, after: after, limit: limit)
        return JSONBody(
            ModerationReportPage(
                reports: page.reports, next: page.next.map { AdminCursor.encode($0.uuidString.lowercased(), prefix: "r") }))
    }

    @Sendable func report(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<ModerationReport> {
        JSONBody(try await store.moderationReport(try Self.reportID(context)))
    }

    /// Resolves a report with an action, applied as the system with the
    /// owner's rights → 200 with the report; again with the same action:
    /// the same answer; with another: 409.
    @Sendable func resolve(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<ModerationReport> {
        let id = try Self.reportID(context)
        let input = try await RequestBody.decode(ResolveReportRequest.self, from: request, context: context)
        guard let action = ModerationAction(rawValue: input.action) else {
            throw APIError.unprocessable(
                .invalidResolution,
                "Field `action` must be one of \(ModerationAction.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", ")).")
        }
        let note = try Validation.reportNote(input.note)
        context.auditDetail.withLockedValue {
            $0["report_id"] = id.uuidString.lowercased()
            $0["action"] = action.rawValue
        }
        let resolved = try await store.resolveReport(
            id, action: action, note: note, conversation: input.conversationId, by: context.operatorName ?? "")
        return JSONBody(resolved)
    }

    /// The calls made with server tokens, newest first; `before` is the
    /// `next` of the page before.
    @Sendable func audit(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<AuditPage> {
        let query = QueryParameters(request)
        let limit = try query.integer("limit", in: APILimits.adminPageLimit) ?? APILimits.defaultAdminPageLimit
        let before = try query.single("before").map { try AdminCursor.decode($0, prefix: "a", as: { Int64($0) }) }
        let page = try await store.auditLog(before: before, limit: limit)
        return JSONBody(AuditPage(entries: page.entries, next: page.next.map { AdminCursor.encode("\($0)", prefix: "a") }))
    }

    /// Everything about a user, as NDJSON (`UserExportRecord`, one per
    /// line, `end` last), streamed: memory stays flat however much they wrote.
    @Sendable func export(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        guard try await store.userExists(user) else { throw StoreError.userNotFound }
        let store = store
        let logger = context.logger
        let body = ResponseBody { writer in
            let encoder = ScrollbackJSON.encoder()
            var records = 0
            do {
                try await store.exportUser(user) { record in
                    var line = try encoder.encode(record)
                    line.append(UInt8(ascii: "\n"))
                    try await writer.write(ByteBuffer(bytes: line))
                    records += 1
                }
                var end = try encoder.encode(UserExportRecord.end(records: records))
                end.append(UInt8(ascii: "\n"))
                try await writer.write(ByteBuffer(bytes: end))
            } catch {
                // The head is sent: the export ends without its `end` line.
                logger.error("a user's export stopped", metadata: ["error": "\(error)"])
            }
            try await writer.finish(nil)
        }
        return Response(
            status: .ok,
            headers: [.contentType: "application/x-ndjson", .contentDisposition: "attachment; filename=\"\(user.rawValue).ndjson\""],
            body: body)
    }

    /// Erases a user's personal data → 200 with what went (`UserErasure`).
    @Sendable func erase(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<UserErasure> {
        let user = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        context.auditDetail.withLockedValue { $0["user_id"] = user.rawValue }
        let erasure = try await store.eraseUser(user)
        if let before = try await store.tokensRevoked(of: user) { revocations?.revoked(user, before: before) }
        context.auditDetail.withLockedValue { $0["messages"] = "\(erasure.messages)" }
        return JSONBody(erasure)
    }

    /// Revokes every token of a user issued before now → 200 with the time
    /// (`TokenRevocation`): refused from then on, and their sockets closed
    /// with 4401, on every instance. Any user id: one the service never saw
    /// is revoked ahead.
    @Sendable func revoke(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<TokenRevocation> {
        let user = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        context.auditDetail.withLockedValue { $0["user_id"] = user.rawValue }
        let before = try await store.revokeTokens(of: user)
        revocations?.revoked(user, before: before)
        return JSONBody(TokenRevocation(userId: user.rawValue, revokedBefore: before))
    }

    /// History from another service, as NDJSON (`ImportLine`), read as it
    /// arrives: 200 with what was stored, or 422 with every problem by line
    /// and nothing stored; `dry_run=true`: 200 with what would be stored
    /// and every problem, nothing stored.
    @Sendable func importHistory(_ request: Request, context: ScrollbackRequestContext) async throws
        -> JSONBody<ImportReport>
    {
        let dryRun = try QueryParameters(request).flag("dry_run")
        let reader = ImportReader(request.body)
        let report: ImportReport
        do {
            report = try await store.importHistory(reader.batches, dryRun: dryRun)
        } catch {
            // Stopped before the end of its body: the answer goes out, and the
            // connection closes instead of reading the rest.
            context.refuseRestOfRequest()
            throw error
        }
        guard report.lines > 0 else {
            throw APIError.badRequest(.invalidJSON, "The import is empty: send NDJSON, one line per conversation, member, message, reaction or read marker.")
        }
        context.auditDetail.withLockedValue {
            $0["dry_run"] = "\(dryRun)"
            $0["messages"] = "\(report.messages)"
            $0["problems"] = "\(report.problemCount)"
        }
        return JSONBody(report, status: report.problemCount > 0 && !dryRun ? .unprocessableContent : .ok)
    }

    /// How long conversation `id` keeps its messages: `days` (0: forever),
    /// or null for the server's default → 200 with it and the oldest seq
    /// still stored. The sweeper removes older messages at its next pass.
    @Sendable func setRetention(_ request: Request, context: ScrollbackRequestContext) async throws
        -> JSONBody<ConversationRetention>
    {
        let id = try ConversationController.conversationID(context)
        let input = try await RequestBody.decode(RetentionRequest.self, from: request, context: context)
        if let days = input.days, !(0...36_500).contains(days) {
            throw APIError.unprocessable(.invalidField, "Field `days` must be 0 (keep forever) to 36500, or null for the server's default.")
        }
        context.auditDetail.withLockedValue { $0["retention_days"] = input.days.map(String.init) ?? "default" }
        return JSONBody(try await store.setRetention(input.days, for: id))
    }

    static func reportID(_ context: ScrollbackRequestContext) throws -> UUID {
        guard let text = context.pathParameter("report_id"), let id = UUID(uuidString: text) else {
            throw StoreError.reportNotFound
        }
        return id
    }
}

/// The cursors of the admin lists: opaque to clients; inside, the last
/// report's id (`r:`) or the last audit entry's (`a:`).
enum AdminCursor {
    static func encode(_ value: String, prefix: String) -> String {
        OpaqueCursor.encode("\(prefix):\(value)")
    }

    static func decode<Value>(_ cursor: String, prefix: String, as make: (String) -> Value?) throws -> Value {
        guard let text = OpaqueCursor.decode(cursor), text.hasPrefix("\(prefix):"), let value = make(String(text.dropFirst(2)))
        else {
            throw APIError.badRequest(.invalidParameter, "`before` must be a `next` value returned by this endpoint.")
        }
        return value
    }
}
