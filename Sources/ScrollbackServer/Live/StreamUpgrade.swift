import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// The part of `StreamRequestContext` that its copies share.
final class StreamUpgrade: Sendable {
    private struct State: Sendable {
        var reference: WebSocketHandlerReference<StreamRequestContext>?
        weak var channel: (any Channel)?
    }

    private let state: NIOLockedValueBox<State>

    init(channel: any Channel) {
        state = NIOLockedValueBox(State(reference: .init(), channel: channel))
    }

    var reference: WebSocketHandlerReference<StreamRequestContext>? { state.withLockedValue { $0.reference } }
    var channel: (any Channel)? { state.withLockedValue { $0.channel } }

    func release() { state.withLockedValue { $0.reference = nil } }
}
