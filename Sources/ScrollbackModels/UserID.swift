/// A user's id. Users belong to the integrating app and its identity
/// provider, whose ids Scrollback takes as they are written
/// (`auth0|5f7c8ec7c33c6c004bbafe82`, `google-oauth2|1234`, UUIDs, e-mail
/// addresses, `user_2abc`): 1 to 255 Unicode code points of printable text
/// (``isValid(_:)`` says which), stored, compared and returned exactly, with
/// no normalisation.
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

    // Exactly, byte for byte, as PostgreSQL compares them (and orders them
    // under `COLLATE "C"`): Swift's own String comparison takes canonically
    // equivalent strings (`é` and `e` with U+0301) for one, which would make
    // two users one.
    public static func == (a: UserID, b: UserID) -> Bool { a.rawValue.utf8.elementsEqual(b.rawValue.utf8) }

    public func hash(into hasher: inout Hasher) {
        for byte in rawValue.utf8 { hasher.combine(byte) }
        hasher.combine(0xFF as UInt8)  // never in UTF-8: ends the id
    }

    public static func < (a: UserID, b: UserID) -> Bool { a.rawValue.utf8.lexicographicallyPrecedes(b.rawValue.utf8) }

    public static let maxLength = APILimits.maxUserIDLength

    /// The system: the sender of system messages (`kind: "system"`, an empty
    /// `sender` on the wire) and the actor of the operator's admin calls. No
    /// user id is empty, so no user can be it; it counts as a member of
    /// every conversation with the owner's rights.
    public static let system = UserID(rawValue: "")

    /// Who an erased user became where others keep a trace of them: the
    /// `sender` of their tombstones, the creator of a conversation they
    /// created, the one who banned someone. Reserved (``isValid(_:)``
    /// refuses it), so no user can be it.
    public static let erased = UserID(rawValue: "(erased)")

    /// A character no user id holds (U+001F, a control character): what
    /// several user ids, or a user id and something else, are joined with
    /// in one string (the change feed's payloads, reaction pairs).
    public static let separator: Character = "\u{1F}"

    /// Whether `id` is a user id: 1 to ``maxLength`` Unicode code points
    /// (so at most ``APILimits/maxUserIDBytes`` bytes of UTF-8), none of them
    /// a control character (Cc), a line or paragraph separator (U+2028,
    /// U+2029), a bidirectional control (U+061C, U+200E, U+200F,
    /// U+202A-U+202E, U+2066-U+2069) or `/`; not beginning or ending with
    /// white space; not ``erased``.
    ///
    /// Code points rather than grapheme clusters: their count is the same in
    /// every Unicode version and every language (PostgreSQL's `length`,
    /// JSON Schema's `maxLength`). Unassigned code points and format
    /// characters other than the bidirectional controls are accepted: which
    /// code points are assigned changes with the Unicode version, and an id
    /// accepted once must stay valid on every instance; emoji sequences need
    /// U+200D and Persian U+200C.
    public static func isValid(_ id: String) -> Bool {
        let scalars = id.unicodeScalars
        guard let first = scalars.first, let last = scalars.last, !id.utf8.elementsEqual(erased.rawValue.utf8),
            !first.properties.isWhitespace, !last.properties.isWhitespace
        else { return false }
        var count = 0
        for scalar in scalars {
            count += 1
            guard count <= maxLength, isAllowed(scalar) else { return false }
        }
        return true
    }

    /// Whether `scalar` may stand anywhere in a user id.
    private static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F:  // Cc
            return false
        case 0x2F:  // `/`: a path segment cannot carry it, even encoded, through every proxy
            return false
        case 0x2028, 0x2029:  // they end a line as a line feed does
            return false
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:  // bidirectional controls
            return false
        default:
            return true
        }
    }

    public static let rule =
        "1 to \(maxLength) Unicode code points, without control characters, bidirectional controls or `/`, "
        + "not beginning or ending with white space, and not `(erased)`"
}
