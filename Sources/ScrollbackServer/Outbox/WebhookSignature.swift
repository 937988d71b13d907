import Crypto
import Foundation

/// The signature on every POST of the outbox (webhooks and the push
/// gateway): `Scrollback-Signature: t=<unix seconds>,v1=<hex>`, where the hex
/// is HMAC-SHA256 with the shared secret of `"<t>.<raw body>"`. A receiver
/// recomputes it over the bytes it received and refuses a `t` too far from
/// its clock (a replayed request).
public enum WebhookSignature {
    public static let header = "Scrollback-Signature"

    /// The header's value for `body` signed at `timestamp` (unix seconds).
    public static func sign(_ body: some Sequence<UInt8>, secret: String, timestamp: Int) -> String {
        "t=\(timestamp),v1=\(digest(body, secret: secret, timestamp: timestamp))"
    }

    static func digest(_ body: some Sequence<UInt8>, secret: String, timestamp: Int) -> String {
        var mac = HMAC<SHA256>(key: SymmetricKey(data: Array(secret.utf8)))
        mac.update(data: Array("\(timestamp).".utf8))
        mac.update(data: Array(body))
        return mac.finalize().map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Why a signature was refused.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case malformed
        case stale(seconds: Int)
        case mismatch

        public var description: String {
            switch self {
            case .malformed: "the header is not t=<unix seconds>,v1=<hex>"
            case .stale(let seconds): "the timestamp is \(seconds) s away from this clock"
            case .mismatch: "no v1 signature matches the body"
            }
        }
    }

    /// Checks `header` against `body`: one of its `v1` values (a sender
    /// rotating secrets may send several) matches, and `t` is within
    /// `tolerance` seconds of `now`.
    public static func verify(
        _ header: String, body: some Collection<UInt8>, secret: String, tolerance: Int = 300, now: Date = Date()
    ) throws(Refusal) {
        var timestamp: Int?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { throw .malformed }
            switch pair[0] {
            case "t": timestamp = Int(pair[1])
            case "v1": signatures.append(String(pair[1]).lowercased())
            default: continue
            }
        }
        // Years 1970 to 9999 only: no arithmetic on a value that would overflow.
        guard let timestamp, (0...253_402_300_799).contains(timestamp), !signatures.isEmpty else { throw .malformed }
        let skew = abs(Int(now.timeIntervalSince1970) - timestamp)
        guard skew <= tolerance else { throw .stale(seconds: skew) }
        let expected = Array(digest(body, secret: secret, timestamp: timestamp).utf8)
        // Compared in constant time: how much of a guess matched stays hidden.
        guard signatures.contains(where: { constantTimeEqual(Array($0.utf8), expected) }) else { throw .mismatch }
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
