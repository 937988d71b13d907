import Foundation

/// The wire form of every cursor: its text in unpadded base64url, so clients
/// treat it as opaque and pass it back unchanged.
enum OpaqueCursor {
    static func encode(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The text inside `cursor`; nil when it is longer than `maxLength` or
    /// not base64url of UTF-8.
    static func decode(_ cursor: String, maxLength: Int = 96) -> String? {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard cursor.count <= maxLength, let data = Data(base64Encoded: base64) else { return nil }
        return String(data: data, encoding: .utf8)
    }
}
