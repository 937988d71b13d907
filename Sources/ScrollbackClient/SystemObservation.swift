#if canImport(Network)
import Foundation
import Network
#if canImport(UIKit)
import UIKit
#endif

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
        var wasSatisfied = true
        monitor.pathUpdateHandler = { path in
            let satisfied = path.status == .satisfied
            defer { wasSatisfied = satisfied }
            if satisfied, !wasSatisfied { client.networkAvailable() }
        }
        monitor.start(queue: DispatchQueue(label: "scrollback.network-path"))
        #if canImport(UIKit) && !os(watchOS)
        let center = NotificationCenter.default
        observers.append(
            center.addObserver(forName: UIApplication.didEnterBackgroundNotification, object: nil, queue: nil) { _ in
                client.backgrounded()
            })
        observers.append(
            center.addObserver(forName: UIApplication.willEnterForegroundNotification, object: nil, queue: nil) { _ in
                client.foregrounded()
            })
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
