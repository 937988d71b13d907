import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// The request context of WebSocket upgrades: it keeps the channel, so a
/// socket that stops reading can be closed from outside its writer.
///
/// hummingbird-websocket hands the socket handler over by storing it, with a
/// copy of this context, in the context's own `webSocket` reference: a
/// reference cycle that would keep every upgraded connection's context (and
/// with it the channel, its pipeline and its buffers) alive forever. So the
/// reference lives in `upgrade`, which lets go of it once the socket runs
/// (`upgradeStarted()`), and the channel is held weakly: the event loop owns
/// it while it is open.
public struct StreamRequestContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    let upgrade: StreamUpgrade

    public var webSocket: WebSocketHandlerReference<Self> { upgrade.reference ?? .init() }
    /// The connection, while it is open.
    var channel: (any Channel)? { upgrade.channel }

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        upgrade = StreamUpgrade(channel: source.channel)
    }

    /// The framework has read the handler: breaks the cycle.
    func upgradeStarted() { upgrade.release() }
}
