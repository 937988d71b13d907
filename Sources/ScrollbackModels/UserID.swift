/// A user's id. Users belong to the integrating app; Scrollback only checks
/// the id's shape: 1 to 64 characters of `A-Z a-z 0-9 . _ @ -`.
///
/// A type of its own, so a call with a conversation's creator, a member to
/// add and the member adding them cannot swap two of them unnoticed. On the
/// wire it is a plain JSON string.
public struct UserID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public let rawValue: String

    /// An id as stored or as already checked; use `init?(validating:)` for input.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The id, when `text` has the shape of one.
    public init?(validating text: String) {
        guard Self.isValid(text) else { return nil }
        self.rawValue = text
    }

    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    public static func < (a: UserID, b: UserID) -> Bool { a.rawValue < b.rawValue }

    public static let maxLength = APILimits.maxUserIDLength

    /// The system: the sender of system messages (`kind: "system"`, an empty
    /// `sender` on the wire) and the actor of the operator's admin calls. No
    /// user id is empty, so no user can be it; it counts as a member of
    /// every conversation with the owner's rights.
    public static let system = UserID(rawValue: "")

    /// Who an erased user became where others keep a trace of them: the
    /// `sender` of their tombstones, the creator of a conversation they
    /// created, the one who banned someone. Not the shape of a user id (its
    /// parentheses), so no user can be it.
    public static let erased = UserID(rawValue: "(erased)")

    /// Whether `id` has the shape of a user id.
    public static func isValid(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard (1...maxLength).contains(utf8.count) else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "@"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }

    public static let rule = "1 to \(maxLength) characters of A-Z a-z 0-9 . _ @ -"
}
