import Foundation

/// The wrapping of every cursor the API hands out: base64url without
/// padding, so a client treats it as an opaque token and it travels in a
/// query string unescaped.
enum OpaqueCursor {
    static func wrap(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The text inside `cursor`, or nil when it is not one of ours.
    static func unwrap(_ cursor: String) -> String? {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard cursor.count <= 96, let data = Data(base64Encoded: base64) else { return nil }
        return String(data: data, encoding: .utf8)
    }
}
