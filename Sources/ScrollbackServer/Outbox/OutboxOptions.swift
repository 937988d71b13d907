import Foundation

/// Where the outbox's events go and how hard delivery tries
/// (docs/webhooks.md; docs/operations.md lists the variables).
public struct OutboxOptions: Sendable, Equatable {
    /// `SCROLLBACK_WEBHOOK_URL`: an http(s) URL that receives every event
    /// as a signed POST; nil (the default) sends none.
    public var webhookURL: String?
    /// `SCROLLBACK_WEBHOOK_SECRET`: the key of the signatures, at least 16
    /// bytes; required with a webhook URL.
    public var webhookSecret: String?
    /// `SCROLLBACK_PUSH_GATEWAY_URL`: an http(s) URL of a push gateway
    /// that receives one signed POST per recipient of each new message;
    /// nil (the default) pushes nothing.
    public var pushGatewayURL: String?
    /// `SCROLLBACK_PUSH_SECRET` (else the webhook secret): the key of the
    /// push gateway's signatures.
    public var pushSecret: String?
    /// `SCROLLBACK_PUSH_CONTENT=none`: pushes carry no excerpt of the body.
    public var withholdPushContent = false
    /// `SCROLLBACK_PUSH_WHEN=always`: push to members with a live socket
    /// too (by default only to those with none on any instance).
    public var pushEvenOnline = false
    /// `SCROLLBACK_WEBHOOK_TIMEOUT`: how long a receiver has to answer 2xx
    /// before the attempt counts as failed.
    public var deliveryTimeout = Duration.seconds(10)
    /// `SCROLLBACK_OUTBOX_RETRY_WINDOW`: how long after an event was written
    /// it is still retried; after that it is dead (counted in metrics, kept
    /// for `scrollback outbox replay`).
    public var retryWindow = Duration.seconds(24 * 3600)
    /// The wait after a first failed attempt; it doubles with each attempt,
    /// up to `backoffCap`, and each wait is drawn between half and all of it
    /// (jitter), so receivers that come back are not hit by every sender at once.
    public var firstBackoff = Duration.seconds(1)
    /// `SCROLLBACK_OUTBOX_BACKOFF_CAP`: the longest wait between attempts.
    public var backoffCap = Duration.seconds(300)
    /// `SCROLLBACK_OUTBOX_RETENTION`: how long delivered and dead events stay.
    public var retention = Duration.seconds(7 * 24 * 3600)
    /// How often an idle worker looks for new events.
    public var pollInterval = Duration.milliseconds(200)
    /// Events one claim takes.
    public var claimLimit = 64

    public init() {}

    /// The wait before attempt `attempts + 1`, jittered by `unit` (0...1).
    func backoff(afterAttempts attempts: Int, unit: Double = Double.random(in: 0...1)) -> Duration {
        let doubled = firstBackoff * (1 << min(max(attempts - 1, 0), 30))
        let capped = min(doubled, backoffCap)
        return capped * (0.5 + unit / 2)
    }

    /// A URL of `name` that must be http or https with a host.
    static func endpoint(_ text: String, _ name: String) throws -> String {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
        else {
            throw ScrollbackConfiguration.Failure(
                "\(name) must be an http:// or https:// URL with a host (got \(text)).")
        }
        return text
    }

    /// A secret of `name`: at least 16 bytes.
    static func secret(_ text: String?, _ name: String, for variable: String) throws -> String {
        guard let text else {
            throw ScrollbackConfiguration.Failure(
                "\(variable) is set but \(name) is not: set \(name) to a secret of at least 16 bytes that the receiver shares (for example `openssl rand -hex 32`).")
        }
        guard text.utf8.count >= 16 else {
            throw ScrollbackConfiguration.Failure("\(name) must be at least 16 bytes (got \(text.utf8.count)).")
        }
        return text
    }
}
