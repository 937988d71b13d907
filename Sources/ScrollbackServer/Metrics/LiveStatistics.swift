import Foundation
import NIOCore
import ScrollbackModels
import ScrollbackStore

struct LiveStatistics: Sendable, Equatable {
    var sockets = 0
    var subscriptions = 0
    var inboxes = 0
    var conversations = 0
    var queuedFrames = 0
    var queuedBytes = 0
    var closedTooSlow = 0
}
