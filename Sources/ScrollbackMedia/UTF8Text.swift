/// Whether bytes are UTF-8 text: well-formed by the Unicode standard's
/// table 3-7 (no overlong forms, no surrogates, nothing past U+10FFFF) and
/// without NUL bytes, which no text file holds and PostgreSQL's `text`
/// refuses.
enum UTF8Text {
    /// - Parameter isWholeFile: when false, a sequence cut short by the end of
    ///   the bytes (a prefix of a longer file) is allowed.
    static func isText(_ bytes: [UInt8], isWholeFile: Bool) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 {
                guard lead != 0 else { return false }
                index += 1
                continue
            }
            // The allowed range of the second byte and the sequence length, by lead byte.
            let second: ClosedRange<UInt8>
            let length: Int
            switch lead {
            case 0xC2...0xDF: (second, length) = (0x80...0xBF, 2)
            case 0xE0: (second, length) = (0xA0...0xBF, 3)
            case 0xE1...0xEC, 0xEE...0xEF: (second, length) = (0x80...0xBF, 3)
            case 0xED: (second, length) = (0x80...0x9F, 3)
            case 0xF0: (second, length) = (0x90...0xBF, 4)
            case 0xF1...0xF3: (second, length) = (0x80...0xBF, 4)
            case 0xF4: (second, length) = (0x80...0x8F, 4)
            default: return false
            }
            for position in 1..<length {
                guard index + position < count else {
                    // Cut by the end: fine for a prefix, broken for a whole file.
                    return !isWholeFile
                }
                let byte = bytes[index + position]
                guard (position == 1 ? second : 0x80...0xBF).contains(byte) else { return false }
            }
            index += length
        }
        return true
    }
}
