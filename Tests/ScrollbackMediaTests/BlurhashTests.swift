import ScrollbackMedia
import Testing

@Suite struct BlurhashTests {
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")

    /// A hash laid out as the reference encoder writes it: size flag, maximum
    /// AC value, DC colour (4 digits), and a pair of digits per AC component.
    static func hash(x: Int, y: Int, dc: Int = 0x7F7F7F, ac: Int = 9 * 19 * 19 + 9 * 19 + 9) -> String {
        func digits(_ value: Int, _ count: Int) -> String {
            var value = value
            var out = ""
            for _ in 0..<count {
                out = String(alphabet[value % 83]) + out
                value /= 83
            }
            return out
        }
        return digits((y - 1) * 9 + (x - 1), 1) + digits(40, 1) + digits(dc, 4)
            + String(repeating: digits(ac, 2), count: x * y - 1)
    }

    @Test(arguments: [
        "LEHV6nWB2yk8pyo0adR*.7kCMdnj", "LGF5]+Yk^6#M@-5c,1J5@[or[Q6.", "L6PZfSi_.AyE_3t7t7R**0o#DgR4",
        "LKO2?U%2Tw=w]~RBVZRi};RPxuwH",
    ])
    func theReferenceExamplesAreValid(string: String) throws {
        let hash = try Blurhash(validating: string)
        #expect((hash.componentsX, hash.componentsY) == (4, 3))
        #expect(hash.string == string)
    }

    @Test(arguments: 1...9, 1...9) func everyComponentCountIsValidAtItsLength(x: Int, y: Int) throws {
        let string = Self.hash(x: x, y: y)
        #expect(string.count == 4 + 2 * x * y)
        let hash = try Blurhash(validating: string)
        #expect((hash.componentsX, hash.componentsY) == (x, y))
        // One character more or less is refused.
        #expect(throws: BlurhashError.wrongLength(actual: string.count + 1, expected: string.count, componentsX: x, componentsY: y)) {
            try Blurhash(validating: string + "0")
        }
        #expect(throws: BlurhashError.self) { try Blurhash(validating: String(string.dropLast())) }
    }

    @Test func extremeColoursTheEncoderWritesAreValid() throws {
        _ = try Blurhash(validating: Self.hash(x: 3, y: 3, dc: 0xFFFFFF, ac: 18 * 19 * 19 + 18 * 19 + 18))
        _ = try Blurhash(validating: Self.hash(x: 3, y: 3, dc: 0, ac: 0))
    }

    @Test func invalidHashesSayWhy() {
        let cases: [(String, BlurhashError, String)] = [
            ("", .empty, "the blurhash is empty"),
            ("L", .wrongLength(actual: 1, expected: 28, componentsX: 4, componentsY: 3),
             "the blurhash is 1 characters long; with 4×3 components it must be 28"),
            ("LEHV6nWB2yk8pyo0adR*.7kCMdn", .wrongLength(actual: 27, expected: 28, componentsX: 4, componentsY: 3),
             "the blurhash is 27 characters long; with 4×3 components it must be 28"),
            ("LEHV6nWB2yk8pyo0adR*.7kCMd/j", .invalidCharacter("/", offset: 26),
             "the blurhash has \"/\" at position 26, which is not a base 83 digit"),
            ("LEHV6nWB2yk8pyo0adR*.7kCMd j", .invalidCharacter(" ", offset: 26),
             "the blurhash has \" \" at position 26, which is not a base 83 digit"),
            ("LEHV6nWB2yk8pyo0adR*.7kCMdnj\n", .invalidCharacter("\n", offset: 28),
             "the blurhash has \"\n\" at position 28, which is not a base 83 digit"),
            ("LEHV6nWé2yk8pyo0adR*.7kCMdnj", .invalidCharacter("é", offset: 7),
             "the blurhash has \"é\" at position 7, which is not a base 83 digit"),
            ("~~~~~~", .componentsOutOfRange(sizeFlag: 82),
             "the blurhash's first character gives 10 vertical components; at most 9 are allowed"),
            ("00~~~~", .colourOutOfRange(offset: 2), "the blurhash's colour at offset 2 is out of range"),
            (String(Self.hash(x: 2, y: 1).dropLast(2)) + "~~", .colourOutOfRange(offset: 6),
             "the blurhash's colour at offset 6 is out of range"),
        ]
        for (string, error, reason) in cases {
            #expect(throws: error, "\(string)") { try Blurhash(validating: string) }
            #expect(error.reason == reason)
        }
    }

    @Test func aSubstringValidates() throws {
        let text = "blurhash=LEHV6nWB2yk8pyo0adR*.7kCMdnj;"
        let hash = try Blurhash(validating: text.dropFirst(9).dropLast())
        #expect(hash.string == "LEHV6nWB2yk8pyo0adR*.7kCMdnj")
    }
}
