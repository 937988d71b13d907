/// User ids belong to the integrating app; Scrollback only checks their shape.
public enum UserID {
    public static let maxLength = APILimits.maxUserIDLength

    /// 1 to 64 characters of `A-Z a-z 0-9 . _ @ -`.
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
