/// The one rule for text people read (message bodies and conversation
/// titles): it must show something, and it carries no control characters
/// except, in a body, the line breaks and tabs of ordinary text.
///
/// A scalar is *invisible* when it is whitespace (White_Space), a control
/// (Cc), a format character (Cf: zero-width space, joiners, marks of
/// direction), a default-ignorable code point (variation selectors such as
/// U+FE0F, the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, tag
/// characters), or the blank Braille pattern U+2800. Text made only of
/// invisible scalars is refused, and so is text with a control other than
/// tab (U+0009), line feed (U+000A) or carriage return (U+000D) in a body,
/// or any control in a title. Nothing is stripped: what is stored is what
/// was sent.
public enum VisibleText {
    /// Whether `scalar` shows nothing on its own.
    public static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        return properties.isWhitespace || properties.isDefaultIgnorableCodePoint || scalar.value == 0x2800
            || properties.generalCategory == .control || properties.generalCategory == .format
    }

    /// Whether `text` has at least one scalar that is not invisible.
    public static func showsSomething(_ text: String) -> Bool {
        text.unicodeScalars.contains { !isInvisible($0) }
    }

    /// The first control character of `text` that the rule refuses: any
    /// control (Cc) except, when `allowingLineBreaks`, tab, line feed and
    /// carriage return.
    public static func forbiddenControl(in text: String, allowingLineBreaks: Bool) -> Unicode.Scalar? {
        text.unicodeScalars.first { scalar in
            guard scalar.properties.generalCategory == .control else { return false }
            return !(allowingLineBreaks && (scalar == "\t" || scalar == "\n" || scalar == "\r"))
        }
    }
}
