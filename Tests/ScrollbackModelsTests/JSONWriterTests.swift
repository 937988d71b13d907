import Foundation
import PropertyBased
import ScrollbackModels
import Testing

/// The direct writer against the encoder it stands in for, on random values:
/// the same bytes, every time. Seeded, so a failure repeats.
@Suite struct JSONWriterTests {
    typealias Generator = Xoshiro

    /// Scalars that need care: controls, quotes, backslashes, slashes,
    /// DEL, line separators, accents, emoji and combining marks.
    static let alphabet: [Unicode.Scalar] =
        (0..<0x20).map { Unicode.Scalar(UInt8($0)) } + Array("\"\\/ aZ09{}[]:,\u{7F}\u{80}\u{2028}\u{2029}é€😀\u{301}".unicodeScalars)

    static func text(_ rng: inout Generator, maxLength: Int = 40) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...maxLength, using: &rng) {
            scalars.append(alphabet.randomElement(using: &rng)!)
        }
        return String(scalars)
    }

    static func date(_ rng: inout Generator) -> Date {
        let range = ScrollbackJSON.timestampRange
        let seconds = Double.random(
            in: range.lowerBound.timeIntervalSince1970..<range.upperBound.timeIntervalSince1970, using: &rng)
        return Date(timeIntervalSince1970: seconds)
    }

    static func message(_ rng: inout Generator) -> Message {
        var message = Message(
            conversationId: UUID(), seq: Int64.random(in: 1...Int64.max, using: &rng), sender: text(&rng, maxLength: 8),
            body: text(&rng), clientId: Bool.random(using: &rng) ? text(&rng, maxLength: 10) : nil,
            createdAt: date(&rng), version: Int64.random(in: 1...Int64.max, using: &rng),
            editedAt: Bool.random(using: &rng) ? date(&rng) : nil, deleted: Bool.random(using: &rng))
        if Int.random(in: 0..<3, using: &rng) == 0, case .object(let fields) = json(&rng, depth: 1, object: true) {
            message.data = try? CustomData(fields)
        }
        if Int.random(in: 0..<3, using: &rng) == 0 { message.type = "order_status" }
        return message
    }

    /// A random JSON value nesting at most `APILimits.maxCustomDataDepth` deep from `depth`.
    static func json(_ rng: inout Generator, depth: Int, object: Bool = false) -> JSONValue {
        let nests = depth < APILimits.maxCustomDataDepth
        switch object ? 6 : Int.random(in: 0..<(nests ? 7 : 5), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .integer(Int64.random(in: Int64.min...Int64.max, using: &rng))
        case 3: return .number(number(&rng) * (Bool.random(using: &rng) ? -1 : 1))
        case 4: return .string(text(&rng, maxLength: 12))
        case 5: return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in json(&rng, depth: depth + 1) })
        default:
            var fields: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &rng) { fields[text(&rng, maxLength: 8)] = json(&rng, depth: depth + 1) }
            return .object(fields)
        }
    }

    static func number(_ rng: inout Generator) -> Double {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: Double(Int.random(in: 0...2000, using: &rng))
        case 1: Double(Int.random(in: 0...2000, using: &rng)) / 8
        case 2: Double.random(in: 0...1e6, using: &rng)
        default: Double(bitPattern: UInt64.random(in: 0..<0x7FF0_0000_0000_0000, using: &rng))
        }
    }

    static func hints(_ rng: inout Generator) -> PageLayoutHints {
        PageLayoutHints(
            viewportHeight: number(&rng), viewportWidth: number(&rng),
            itemHeights: (0..<Int.random(in: 0...5, using: &rng)).map { _ in number(&rng) },
            contentHeight: number(&rng), bottomPadding: number(&rng),
            metrics: .init(
                fontSize: number(&rng), lineHeight: number(&rng), averageCharacterWidth: number(&rng),
                horizontalPadding: number(&rng), verticalPadding: number(&rng), maxWidthFraction: number(&rng),
                maxAttachmentHeight: number(&rng), attachmentRowHeight: number(&rng), attachmentSpacing: number(&rng),
                spacing: number(&rng)))
    }

    static func expectSameBytes<Value: JSONWritable>(_ value: Value) throws {
        let encoded = try ScrollbackJSON.encoder().encode(value)
        let written = Data(value.jsonBytes)
        #expect(
            written == encoded,
            "written:\n\(String(decoding: written, as: UTF8.self))\nencoded:\n\(String(decoding: encoded, as: UTF8.self))")
    }

    @Test func everyHotResponseIsWrittenAsTheEncoderWritesIt() throws {
        var rng = Generator(seed: (20_261_122, 1, 2, 3))
        for _ in 0..<300 {
            let messages = (0..<Int.random(in: 0...4, using: &rng)).map { _ in Self.message(&rng) }
            let page = MessagePage(
                messages: messages, hasOlder: Bool.random(using: &rng), hasNewer: Bool.random(using: &rng),
                lastSeq: Int64.random(in: 0...Int64.max, using: &rng), version: Int64.random(in: 0...Int64.max, using: &rng),
                layout: Bool.random(using: &rng) ? Self.hints(&rng) : nil)
            try Self.expectSameBytes(page)
            try Self.expectSameBytes(MessageEnvelope(message: Self.message(&rng)))
            try Self.expectSameBytes(
                ChangeSet(messages: messages, hasMore: Bool.random(using: &rng), version: Int64.random(in: 0...99, using: &rng)))
            let conversation = Conversation(
                id: UUID(), title: Bool.random(using: &rng) ? Self.text(&rng) : nil, createdBy: Self.text(&rng, maxLength: 8),
                createdAt: Self.date(&rng), lastSeq: Int64.random(in: 0...Int64.max, using: &rng),
                members: (0..<Int.random(in: 0...3, using: &rng)).map { _ in Self.text(&rng, maxLength: 8) },
                readSeq: Int64.random(in: 0...9, using: &rng), unreadCount: Int64.random(in: 0...9, using: &rng),
                unreadMentions: Int64.random(in: 0...9, using: &rng), lastMessage: messages.first)
            try Self.expectSameBytes(conversation)
            try Self.expectSameBytes(
                ConversationList(
                    conversations: [conversation], nextCursor: Bool.random(using: &rng) ? Self.text(&rng) : nil,
                    activityChanged: Bool.random(using: &rng)))
            try Self.expectSameBytes(
                ReadMarker(
                    conversationId: UUID(), readSeq: Int64.random(in: 0...9, using: &rng), unreadCount: 3,
                    unreadMentions: Int64.random(in: 0...3, using: &rng)))
            try Self.expectSameBytes(
                MentionPage(
                    mentions: messages.map {
                        Mention(conversationId: $0.conversationId, seq: $0.seq, message: $0, read: Bool.random(using: &rng))
                    },
                    next: Bool.random(using: &rng) ? Self.text(&rng) : nil))
            try Self.expectSameBytes(
                APIErrorBody(code: APIErrorCode(rawValue: Self.text(&rng, maxLength: 12)), message: Self.text(&rng)))
        }
    }

    /// The arithmetic formatter against Foundation's ISO 8601 formatter on
    /// whole seconds, with the milliseconds counted in integers (formatting
    /// a Double of seconds can land one millisecond low), across the range
    /// the API accepts from 1583 on. Before that Foundation's calendar turns
    /// Julian, while RFC 3339 and PostgreSQL count in the proleptic Gregorian
    /// calendar, as the formatter does: the range's first instant is
    /// 0001-01-01.
    @Test func timestampsAreFormattedAsTheISO8601FormatterDoes() {
        var rng = Generator(seed: (9_999, 1, 2, 3))
        let gregorianFrom = Date(timeIntervalSince1970: -12_212_553_600)  // 1583-01-01
        let range = ScrollbackJSON.timestampRange
        let edges = [
            range.upperBound.addingTimeInterval(-0.001), Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: -0.001), Date(timeIntervalSince1970: 951_782_400),  // 2000-02-29
            Date(timeIntervalSince1970: 1_795_325_799.9999), gregorianFrom,
        ]
        let style = Date.ISO8601FormatStyle(timeZone: .gmt)
        for date in edges + (0..<5_000).map({ _ in Self.date(&rng) }) where date >= gregorianFrom {
            // Truncated, but within half a microsecond of a millisecond is that millisecond.
            let scaled = date.timeIntervalSince1970 * 1000
            let millis = Int64(abs(scaled - scaled.rounded()) < 0.0005 ? scaled.rounded() : scaled.rounded(.down))
            let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
            let whole = Date(timeIntervalSince1970: Double(seconds)).formatted(style)  // ...T05:36:39Z
            let fraction = String(millis - seconds * 1000)
            let expected = whole.dropLast() + "." + String(repeating: "0", count: 3 - fraction.count) + fraction + "Z"
            #expect(ScrollbackJSON.formatTimestamp(date) == expected, "\(date.timeIntervalSince1970)")
        }
        #expect(ScrollbackJSON.formatTimestamp(range.lowerBound) == "0001-01-01T00:00:00.000Z")
        #expect(ScrollbackJSON.formatTimestamp(Date(timeIntervalSince1970: -0.0005)) == "1969-12-31T23:59:59.999Z")
        #expect(ScrollbackJSON.formatTimestamp(Date(timeIntervalSince1970: -0.001)) == "1969-12-31T23:59:59.999Z")
        #expect(ScrollbackJSON.formatTimestamp(Date(timeIntervalSince1970: 1_795_325_799.1239)) == "2026-11-22T05:36:39.123Z")
    }

    /// A timestamp read back from its text is written as the same text:
    /// a value that went through a client (or the page cache's bytes)
    /// keeps its millisecond.
    @Test func aParsedTimestampIsWrittenBackTheSame() throws {
        var rng = Generator(seed: (4, 3, 2, 1))
        for _ in 0..<20_000 {
            let millis = Int64.random(in: 631_152_000_000...4_102_444_800_000, using: &rng)  // 1990 to 2100
            let text = ScrollbackJSON.formatTimestamp(Date(timeIntervalSince1970: Double(millis) / 1000))
            let parsed = try #require(ScrollbackJSON.parseTimestamp(text))
            #expect(ScrollbackJSON.formatTimestamp(parsed) == text)
        }
    }

    /// A number JSON cannot carry is not written as if it were one.
    @Test func aNonFiniteNumberMakesTheWriterUnfaithful() {
        var hints = Values.hints
        hints.contentHeight = .infinity
        var writer = JSONWriter()
        hints.write(to: &writer)
        #expect(!writer.isFaithful)
        var fine = JSONWriter()
        Values.hints.write(to: &fine)
        #expect(fine.isFaithful)
    }
}
