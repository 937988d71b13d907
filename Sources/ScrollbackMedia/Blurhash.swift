/// A client-supplied BlurHash (https://github.com/woltapp/blurhash), checked
/// without decoding it.
///
/// The format, in base 83: one character for the component counts
/// (`(y - 1) * 9 + (x - 1)`, each count 1...9), one for the quantised maximum
/// AC value, four for the DC colour (24-bit sRGB), and two for each of the
/// `x * y - 1` AC components (three base-19 digits, so below 19³). The length
/// is therefore `4 + 2 * x * y`, from 6 to 166 characters. Every hash the
/// reference encoder produces passes; a value out of those ranges is refused
/// because decoders would turn it into nonsense colours.
public struct Blurhash: Sendable, Hashable, CustomStringConvertible {
    /// The hash as given.
    public let string: String
    /// Horizontal components, 1...9.
    public let componentsX: Int
    /// Vertical components, 1...9.
    public let componentsY: Int

    /// The base 83 alphabet, in digit order.
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~".utf8)

    private static let digitValues: [UInt8: Int] = Dictionary(
        uniqueKeysWithValues: alphabet.enumerated().map { ($0.element, $0.offset) })

    /// Checks `string` against the format.
    /// - Throws: ``BlurhashError`` naming what is wrong.
    public init(validating string: some StringProtocol) throws(BlurhashError) {
        var digits: [Int] = []
        for scalar in string.unicodeScalars {
            // Every scalar before this one was an ASCII digit, so the count is the position.
            guard scalar.isASCII, let value = Self.digitValues[UInt8(scalar.value)] else {
                throw .invalidCharacter(String(scalar), offset: digits.count)
            }
            digits.append(value)
        }
        guard !digits.isEmpty else { throw .empty }
        let sizeFlag = digits[0]
        let componentsX = sizeFlag % 9 + 1
        let componentsY = sizeFlag / 9 + 1
        guard componentsY <= 9 else { throw .componentsOutOfRange(sizeFlag: sizeFlag) }
        let expected = 4 + 2 * componentsX * componentsY
        guard digits.count == expected else {
            throw .wrongLength(actual: digits.count, expected: expected, componentsX: componentsX, componentsY: componentsY)
        }
        let dc = digits[2...5].reduce(0) { $0 * 83 + $1 }
        guard dc <= 0xFF_FFFF else { throw .colourOutOfRange(offset: 2) }
        for component in 1..<(componentsX * componentsY) {
            let offset = 4 + 2 * component
            guard digits[offset] * 83 + digits[offset + 1] < 19 * 19 * 19 else { throw .colourOutOfRange(offset: offset) }
        }
        self.string = String(string)
        self.componentsX = componentsX
        self.componentsY = componentsY
    }

    public var description: String { string }
}

/// Why a string is not a BlurHash. ``reason`` is a sentence fit for a 4xx body.
public enum BlurhashError: Error, Sendable, Hashable, CustomStringConvertible {
    case empty
    /// A character outside the base 83 alphabet, at a position counted from 0.
    case invalidCharacter(String, offset: Int)
    /// The first character gives more than 9 vertical components.
    case componentsOutOfRange(sizeFlag: Int)
    /// The length is not `4 + 2 * x * y` for the components the first character gives.
    case wrongLength(actual: Int, expected: Int, componentsX: Int, componentsY: Int)
    /// A colour at this offset is beyond what the format can encode.
    case colourOutOfRange(offset: Int)

    public var reason: String {
        switch self {
        case .empty:
            "the blurhash is empty"
        case .invalidCharacter(let character, let offset):
            "the blurhash has \"\(character)\" at position \(offset), which is not a base 83 digit"
        case .componentsOutOfRange(let sizeFlag):
            "the blurhash's first character gives \(sizeFlag / 9 + 1) vertical components; at most 9 are allowed"
        case .wrongLength(let actual, let expected, let x, let y):
            "the blurhash is \(actual) characters long; with \(x)×\(y) components it must be \(expected)"
        case .colourOutOfRange(let offset):
            "the blurhash's colour at offset \(offset) is out of range"
        }
    }

    public var description: String { reason }
}
