import Foundation
import HummingbirdWebSocket
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import ScrollbackModels

/// Counts kept across sockets, for the periodic log line and the metrics.
final class LiveCounters: Sendable {
    private let tooSlow = NIOLockedValueBox(0)
    private let slowConsumerCloses: Counter
    private let full = NIOLockedValueBox(0)
    private let onRefusedSocket: @Sendable () -> Void

    init(slowConsumerCloses: Counter, onRefusedSocket: @escaping @Sendable () -> Void = {}) {
        self.slowConsumerCloses = slowConsumerCloses
        self.onRefusedSocket = onRefusedSocket
    }

    func closedTooSlow() {
        tooSlow.withLockedValue { $0 += 1 }
        slowConsumerCloses.increment()
    }

    var closedForSlowness: Int { tooSlow.withLockedValue { $0 } }

    func refusedOverCapacity() {
        full.withLockedValue { $0 += 1 }
        onRefusedSocket()
    }

    /// Sockets closed with 1013 because the instance had as many as it takes.
    var refusedForCapacity: Int { full.withLockedValue { $0 } }
}
