import Foundation
import ScrollbackModels

/// What a row shows of a user: the name, the initials of a placeholder,
/// the avatar's box.
extension UserProfile {
    /// The name to show: the display name, or the id while there is none.
    public var shownName: String { displayName ?? id }

    /// Up to two initials of the shown name, uppercased (the first letter
    /// or digit of its first and of its last word: "Dóra Zimová" is "DZ",
    /// "alice" is "A"), for a placeholder while there is no avatar or it
    /// loads; "?" for a name without letters or digits.
    public var initials: String {
        let words = shownName.split { !($0.isLetter || $0.isNumber) }
        guard let first = words.first?.first else { return "?" }
        var initials = String(first).uppercased()
        if words.count > 1, let last = words.last?.first { initials += String(last).uppercased() }
        return initials
    }

    /// The box of the avatar in a square of `side` points: the picture's
    /// size (when the profile gives it) scaled to fit the square, aspect
    /// kept, so a list reserves it before the image loads; the square
    /// itself when the size is unknown or there is no avatar (the
    /// placeholder's).
    public func avatarBox(side: Double) -> (width: Double, height: Double) {
        guard let width = avatar?.width, let height = avatar?.height, width > 0, height > 0 else {
            return (side, side)
        }
        let scale = side / Double(max(width, height))
        return (Double(width) * scale, Double(height) * scale)
    }
}
