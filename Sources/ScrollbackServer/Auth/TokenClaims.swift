import Foundation
import JWTKit

/// The claims of an identity provider's token, all of them, as JSON: which
/// claim holds the user id is a setting (`SCROLLBACK_JWT_USER_CLAIM`), and
/// the claims a provider adds (`scope`, `azp`, `email`, ...) are ignored.
/// Read only once the signature was checked (`JWKSProvider`); the times are
/// checked by `TokenAuthority`, with a leeway.
struct ProviderClaims: JWTPayload {
    var claims: [String: ClaimValue]

    init(claims: [String: ClaimValue]) {
        self.claims = claims
    }

    init(from decoder: any Decoder) throws {
        claims = try decoder.singleValueContainer().decode([String: ClaimValue].self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(claims)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// A NumericDate claim (seconds since 1970, whole or not); nil when
    /// absent, `.invalid` when not a number.
    func date(_ name: String) -> ClaimDate {
        switch claims[name] {
        case nil, .null?: .absent
        case .number(let seconds)?: .at(Date(timeIntervalSince1970: seconds))
        default: .invalid
        }
    }

    enum ClaimDate: Equatable {
        case absent, invalid
        case at(Date)
    }

    func string(_ name: String) -> String? {
        if case .string(let text)? = claims[name] { text } else { nil }
    }

    /// `aud` as a list: a string, or an array of strings.
    var audiences: [String] {
        switch claims["aud"] {
        case .string(let text)?: [text]
        case .array(let values)?: values.compactMap { if case .string(let text) = $0 { text } else { nil } }
        default: []
        }
    }
}

/// One JSON value of a claim.
indirect enum ClaimValue: Codable, Equatable, Sendable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case array([ClaimValue])
    case object([String: ClaimValue])
    case null

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([ClaimValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: ClaimValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}

/// What a token's header says, read before any key is chosen: its `alg`
/// picks who may have signed it (the secret, or a key set), its `kid` the key.
struct TokenHeader: Equatable {
    var alg: String
    var kid: String?

    /// The header of a compact JWS (`header.payload.signature`), or nil
    /// when it is not one.
    init?(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Self.base64URLDecoded(parts[0]),
            let object = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any],
            let alg = object["alg"] as? String
        else { return nil }
        self.alg = alg
        self.kid = object["kid"] as? String
    }

    static func base64URLDecoded(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
