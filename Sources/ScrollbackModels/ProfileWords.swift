import Foundation

/// The one rule of user search (`GET /v1/users?q=`): a user is found by a
/// prefix of any word of the name they show or of their id.
///
/// Text is folded (lower case, without diacritics: `Émile` and `emile` are
/// one), then split into words at anything that is not a letter or a digit;
/// the whole folded text is a word too, so `mary jo` finds "Mary Jones".
/// Each word is cut to ``APILimits/maxUserQueryLength`` code points, the
/// longest query: a prefix of that length still finds it. The query is
/// folded the same way and matched as a prefix of the words. The store
/// keeps the words (`sql/030_profiles.sql`).
public enum ProfileWords {
    /// `text` folded: lower case, diacritics removed.
    public static func fold(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil).lowercased()
    }

    /// The words `text` is found by, distinct, in the order they appear.
    public static func words(of text: String) -> [String] {
        let folded = fold(text)
        var words = [cut(folded)]
        var current = String.UnicodeScalarView()
        func flush() {
            if !current.isEmpty { words.append(cut(String(current))) }
            current.removeAll()
        }
        for scalar in folded.unicodeScalars {
            if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                current.append(scalar)
            } else {
                flush()
            }
        }
        flush()
        var seen = Set<String>()
        return words.filter { !$0.isEmpty && seen.insert($0).inserted }
    }

    /// The query as the words are matched against: folded and cut; nil when
    /// nothing but spaces is left.
    public static func query(_ text: String) -> String? {
        let folded = cut(fold(text).trimmingCharacters(in: .whitespacesAndNewlines))
        return folded.isEmpty ? nil : folded
    }

    private static func cut(_ word: String) -> String {
        let scalars = word.unicodeScalars
        guard scalars.count > APILimits.maxUserQueryLength else { return word }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars.prefix(APILimits.maxUserQueryLength))
        return String(view)
    }
}
