#if canImport(Network)
import Foundation
import Network
import NIOConcurrencyHelpers

// Apple platforms only (this file is not compiled on Linux): what the
// device and the app say, handed to the client's `networkAvailable()`,
// `backgrounded()` and `foregrounded()`.
extension ScrollbackClient {
    /// Watches the network path (`NWPathMonitor`) and, with UIKit, the
    /// app's background and foreground notifications, and tells the client
    /// of each change until the returned observation is cancelled (or let go).
    public func observeSystem() -> SystemObservation {
        SystemObservation(client: self)
    }
}

/// What `ScrollbackClient.observeSystem()` watches; `cancel()` (or letting
/// it go) stops watching.
public final class SystemObservation: @unchecked Sendable {
    // Unchecked: the monitor and the observers are set in init and only
    // cancelled after; NWPathMonitor and NotificationCenter are thread-safe.
    private let monitor = NWPathMonitor()
    private var observers: [NSObjectProtocol] = []

    init(client: ScrollbackClient) {
        let wasSatisfied = NIOLockedValueBox(true)
        monitor.pathUpdateHandler = { path in
            let satisfied = path.status == .satisfied
            let before = wasSatisfied.withLockedValue { value in
                defer { value = satisfied }
                return value
            }
            if satisfied, !before { client.networkAvailable() }
        }
        monitor.start(queue: DispatchQueue(label: "scrollback.network-path"))
        #if canImport(UIKit) && !os(watchOS)
        let center = NotificationCenter.default
        // UIApplication's notification names, by value (the constants are
        // the main actor's; these observers are registered from anywhere).
        let background = Notification.Name("UIApplicationDidEnterBackgroundNotification")
        let foreground = Notification.Name("UIApplicationWillEnterForegroundNotification")
        observers.append(
            center.addObserver(forName: background, object: nil, queue: nil) { _ in client.backgrounded() })
        observers.append(
            center.addObserver(forName: foreground, object: nil, queue: nil) { _ in client.foregrounded() })
        #endif
    }

    deinit { cancel() }

    public func cancel() {
        monitor.cancel()
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
        observers = []
    }
}
#endif
