import NIOConcurrencyHelpers
import ScrollbackModels

/// What a user may do how often: `burst` at once, refilled at `burst` per
/// `period` (a token bucket). `SCROLLBACK_LIMIT_*` variables read
/// `BURST/SECONDS`; a burst of 0 turns the limit off.
public struct RateLimit: Sendable, Equatable, CustomStringConvertible {
    public var burst: Int
    public var period: Duration

    public init(burst: Int, per period: Duration) {
        self.burst = burst
        self.period = period
    }

    public static let off = RateLimit(burst: 0, per: .seconds(1))

    public var isOff: Bool { burst == 0 }

    public var description: String { isOff ? "off" : "\(burst)/\(period.seconds)" }
}

/// The actions that are limited, each with its own bucket per user.
public enum RateLimitedAction: String, Sendable, CaseIterable {
    /// A message sent, over HTTP or the live stream.
    case send
    /// A conversation created.
    case conversation
    /// A member added.
    case member
    /// A typing notice, over HTTP or the live stream.
    case typing
    /// A `subscribe` frame on the live stream.
    case subscribe
    /// An upload announced (`POST .../uploads`).
    case upload

    var refusal: String {
        switch self {
        case .send: "You are sending messages too fast"
        case .conversation: "You are creating conversations too fast"
        case .member: "You are adding members too fast"
        case .typing: "You are sending typing notices too fast"
        case .subscribe: "You are subscribing too fast"
        case .upload: "You are uploading too fast"
        }
    }
}

/// The rates of every limited action (the configuration table in docs/operations.md
/// lists the variables and defaults).
public struct RateLimits: Sendable, Equatable {
    public var send = RateLimit(burst: 30, per: .seconds(10))
    public var conversation = RateLimit(burst: 10, per: .seconds(60))
    public var member = RateLimit(burst: 100, per: .seconds(60))
    public var typing = RateLimit(burst: 10, per: .seconds(10))
    public var subscribe = RateLimit(burst: 50, per: .seconds(10))
    public var upload = RateLimit(burst: 20, per: .seconds(60))

    public init() {}

    /// Every limit off (tests and benchmarks that measure something else).
    public static let off: RateLimits = {
        var limits = RateLimits()
        for action in RateLimitedAction.allCases { limits[action] = .off }
        return limits
    }()

    public subscript(action: RateLimitedAction) -> RateLimit {
        get {
            switch action {
            case .send: send
            case .conversation: conversation
            case .member: member
            case .typing: typing
            case .subscribe: subscribe
            case .upload: upload
            }
        }
        set {
            switch action {
            case .send: send = newValue
            case .conversation: conversation = newValue
            case .member: member = newValue
            case .typing: typing = newValue
            case .subscribe: subscribe = newValue
            case .upload: upload = newValue
            }
        }
    }
}
