import Foundation
import ScrollbackModels
import ScrollbackTimeline

/// The feed for code that does not use async/await. Updates and results
/// arrive on the client's `completionQueue` (the main queue by default); a
/// send's echo shows before the call returns.
extension ConversationFeed {
    /// Hands `onUpdate` the current state (with an empty diff), then every
    /// update in order, until the feed ends or the returned task is
    /// cancelled; then calls `onEnd` once.
    @discardableResult
    public func observe(
        onUpdate: @escaping @Sendable (State, TimelineUpdate) -> Void, onEnd: @escaping @Sendable () -> Void = {}
    ) -> Task<Void, Never> {
        let (updates, client) = (self.updates, self.client)
        return Task {
            for await (state, update) in updates { client.deliver { onUpdate(state, update) } }
            client.deliver(onEnd)
        }
    }

    @discardableResult
    public func send(
        _ body: String, attachments: [Attachment] = [], clientId: String? = nil,
        completion: @escaping ScrollbackClient.Completion<ScrollbackClient.SendResult>
    ) -> Task<Void, Never> {
        let promise = begin(body, attachments: attachments, clientId: clientId)
        return client.complete(completion) { () async throws(ScrollbackError) in try await promise.outcome() }
    }

    @discardableResult
    public func retry(clientId: String, completion: @escaping ScrollbackClient.Completion<ScrollbackClient.SendResult>)
        -> Task<Void, Never>
    {
        let promise: SendPromise
        do throws(ScrollbackError) {
            promise = try beginRetry(clientId)
        } catch {
            return client.complete(completion) { () async throws(ScrollbackError) in throw error }
        }
        return client.complete(completion) { () async throws(ScrollbackError) in try await promise.outcome() }
    }

    @discardableResult
    public func markRead(completion: @escaping ScrollbackClient.Completion<ReadMarker?>) -> Task<Void, Never> {
        client.complete(completion) { () async throws(ScrollbackError) in try await self.markRead() }
    }
}
