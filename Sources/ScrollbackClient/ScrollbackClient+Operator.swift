import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ScrollbackModels

/// The operator's calls, for an app's own Swift backend holding a server
/// token (`scrollback token --server`): acting on behalf of any user, system
/// messages, the moderation queue and the audit log. Every call made with a
/// server token is in the audit log. Not for apps: a server token must never
/// reach a device.
extension ScrollbackClient {
    /// A copy of this client (made with a server token) whose user routes act
    /// for `user`, with `user`'s rights: `client.onBehalf(of: "buyer")
    /// .distinctConversation(with: ["seller"])` opens the buyer's
    /// conversation with the seller.
    public func onBehalf(of user: String) -> ScrollbackClient {
        var copy = self
        copy.onBehalfOf = user
        return copy
    }

    /// `On-Behalf-Of` for the user this client acts for, if any: the id
    /// percent-encoded (`String.headerEscaped`).
    func addOnBehalfOf(to headers: inout HTTPHeaders) {
        if let onBehalfOf { headers.add(name: "On-Behalf-Of", value: onBehalfOf.headerEscaped) }
    }

    /// Posts a system message in conversation `id`: no user sent it
    /// (`Message.isSystem`), it takes the next seq, counts as unread for
    /// every member and no member can edit it. Retried with the same
    /// `clientId` while the answer is missing, so it is stored once.
    public func sendSystemMessage(_ body: String, to id: UUID, clientId: String? = nil) async throws(ScrollbackError)
        -> SendResult
    {
        let request = SystemMessageRequest(body: body, clientId: clientId ?? UUID().uuidString.lowercased())
        let reply = try await retrying { () async throws(ScrollbackError) in
            try await self.exchange(.POST, "/v1/admin/conversations/\(id.wire)/messages", body: request)
        }
        let envelope: MessageEnvelope = try Self.decode(reply.body)
        return SendResult(message: envelope.message, replayed: reply.status == 200)
    }

    /// The moderation queue: reports in `status`, newest first; pass the
    /// previous page's `next` as `before`.
    public func moderationReports(status: ReportStatus = .open, limit: Int? = nil, before: String? = nil)
        async throws(ScrollbackError) -> ModerationReportPage
    {
        try await call(
            .GET, "/v1/admin/reports",
            query: [("status", status.rawValue), ("limit", limit.map(String.init)), ("before", before)])
    }

    /// One report, with the message as it was reported and its resolution.
    public func moderationReport(_ id: UUID) async throws(ScrollbackError) -> ModerationReport {
        try await call(.GET, "/v1/admin/reports/\(id.wire)")
    }

    /// Resolves report `id` with `action`, applied with the owner's rights
    /// (`conversation`: where to remove or ban a reported user). Safe to
    /// retry: the same action again answers the same resolution.
    @discardableResult
    public func resolveReport(
        _ id: UUID, action: ModerationAction, note: String? = nil, conversation: UUID? = nil
    ) async throws(ScrollbackError) -> ModerationReport {
        let request = ResolveReportRequest(action: action, note: note, conversationId: conversation)
        return try await retrying { () async throws(ScrollbackError) in
            try await self.call(.POST, "/v1/admin/reports/\(id.wire)/resolve", body: request)
        }
    }

    /// The calls made with server tokens, newest first; pass the previous
    /// page's `next` as `before`.
    public func auditLog(limit: Int? = nil, before: String? = nil) async throws(ScrollbackError) -> AuditPage {
        try await call(.GET, "/v1/admin/audit", query: [("limit", limit.map(String.init)), ("before", before)])
    }
}

/// A user's data, and history from another service.
extension ScrollbackClient {
    /// Erases `user`'s personal data (`DELETE /v1/admin/users/{user_id}`):
    /// their messages stay as tombstones, everything else of theirs goes.
    /// Safe to retry: an erasure that stopped halfway goes on.
    @discardableResult
    public func eraseUser(_ user: String) async throws(ScrollbackError) -> UserErasure {
        try await call(.DELETE, "/v1/admin/users/\(user.pathEscaped)")
    }

    /// Revokes every token of `user` issued before now (`POST
    /// /v1/admin/users/{user_id}/revoke`): they answer 401 from then on,
    /// and the user's sockets close with 4401 on every instance.
    @discardableResult
    public func revokeTokens(of user: String) async throws(ScrollbackError) -> TokenRevocation {
        try await call(.POST, "/v1/admin/users/\(user.pathEscaped)/revoke")
    }

    /// Everything about `user`, one record at a time, as the server streams
    /// it (memory stays flat); answers how many records came. Throws when
    /// the export was cut short (no `end` line).
    @discardableResult
    public func exportUser(_ user: String, each: (UserExportRecord) async throws -> Void) async throws -> Int {
        let path = "/v1/admin/users/\(user.pathEscaped)/export"
        var request = HTTPClientRequest(url: baseURL + path)
        request.headers.add(name: "Authorization", value: "Bearer \(try await token())")
        let response = try await http.execute(request, timeout: .hours(1))
        guard response.status == .ok else {
            let body = try await response.body.collect(upTo: 1 << 20)
            throw ScrollbackError(status: Int(response.status.code), body: Data(body.readableBytesView), retryAfter: nil)
        }
        let decoder = ScrollbackJSON.decoder()
        var pending = Data()
        var records = 0
        for try await chunk in response.body {
            pending.append(contentsOf: chunk.readableBytesView)
            // The whole lines of what arrived, then what is left of a line
            // kept once (not the rest copied after every line).
            var start = pending.startIndex
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let record = try decoder.decode(UserExportRecord.self, from: pending[start..<newline])
                start = pending.index(after: newline)
                if case .end(let count) = record {
                    guard count == records else { throw ScrollbackError.undecodable(message: "The export's end counts \(count) records, not \(records).") }
                    return records
                }
                try await each(record)
                records += 1
            }
            pending = Data(pending[start...])
        }
        throw ScrollbackError.transport(message: "The export of \(user) was cut short after \(records) records.")
    }

    /// Imports history from the NDJSON `file` (`ImportLine`, one per line),
    /// streamed as it is read; `progress` hears the bytes sent and the
    /// file's size. Answers the report: what was stored, or with
    /// `problemCount` above 0, every problem by line and nothing stored
    /// (with `dryRun`, nothing is stored either way).
    public func importHistory(
        from file: URL, dryRun: Bool = false, progress: (@Sendable (_ sent: Int64, _ total: Int64) -> Void)? = nil
    ) async throws -> ImportReport {
        let handle = try FileHandle(forReadingFrom: file)
        let total = Int64(try handle.seekToEnd())
        try handle.seek(toOffset: 0)
        let chunks = AsyncThrowingStream<ByteBuffer, any Error> {
            let data = try handle.read(upToCount: 1 << 20) ?? Data()
            guard !data.isEmpty else {
                try? handle.close()
                return nil
            }
            progress?(Int64(try handle.offset()), total)
            return ByteBuffer(bytes: data)
        }
        let path = "/v1/admin/import" + (dryRun ? "?dry_run=true" : "")
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(try await token())")
        request.headers.add(name: "Content-Type", value: "application/x-ndjson")
        request.body = .stream(chunks, length: .known(total))
        // The answer comes once the server has checked and stored it all,
        // minutes after the last byte for millions of lines: a client of its
        // own, with no read timeout shorter than that.
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(10), read: .hours(6))
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let body: Data
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .hours(6))
            body = Data(try await response.body.collect(upTo: 16 << 20).readableBytesView)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try? await client.shutdown()
        guard response.status == .ok || response.status == .unprocessableEntity,
            let report = try? ScrollbackJSON.decoder().decode(ImportReport.self, from: body)
        else {
            throw ScrollbackError(status: Int(response.status.code), body: body, retryAfter: nil)
        }
        return report
    }
}
