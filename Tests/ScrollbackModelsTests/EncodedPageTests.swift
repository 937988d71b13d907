import Foundation
import PropertyBased
import ScrollbackModels
import Testing

/// A page kept as JSON bytes (`EncodedPage`, what the page cache holds)
/// against the encoder, on random pages: the same bytes for every reader's
/// block list, for every cut, and the same values read back.
@Suite struct EncodedPageTests {
    typealias Generator = Xoshiro

    static let senders = ["alice", "bob", "a-sender-longer-than-fifteen", ""]

    static func message(_ rng: inout Generator) -> Message {
        var message = JSONWriterTests.message(&rng)
        message.sender = senders.randomElement(using: &rng)!
        // Times a message is stored at: read back from JSON, they are the same
        // millisecond (far from now, a Double holds no millisecond exactly, and
        // before 1583 Foundation's parser turns Julian; JSONWriterTests covers the range).
        message.createdAt = Self.date(&rng)
        if message.editedAt != nil { message.editedAt = Self.date(&rng) }
        if Bool.random(using: &rng) {
            message.attachments = (0..<Int.random(in: 1...3, using: &rng)).map { _ in
                Attachment(
                    id: UUID(), kind: Bool.random(using: &rng) ? .image : .file, contentType: "image/png",
                    size: Int64.random(in: 1...1 << 30, using: &rng), filename: JSONWriterTests.text(&rng, maxLength: 12),
                    width: Bool.random(using: &rng) ? 640 : nil, height: 480,
                    blurhash: Bool.random(using: &rng) ? "LEHV6nWB2yk8" : nil, url: "https://example.com/a")
            }
        }
        if Bool.random(using: &rng) {
            message.reactions = [ReactionSummary(emoji: "👍", count: 2, me: Bool.random(using: &rng))]
        }
        if Bool.random(using: &rng) {
            message.replyTo = ReplyPreview(seq: 1, sender: "bob", excerpt: JSONWriterTests.text(&rng), deleted: false)
        }
        // What a page read from the store never carries: the encoding drops it.
        message.blockedSender = Bool.random(using: &rng)
        return message
    }

    /// Between 1990 and 2100, in microseconds (what PostgreSQL stores).
    static func date(_ rng: inout Generator) -> Date {
        Date(timeIntervalSince1970: Double(Int64.random(in: 631_152_000_000_000...4_102_444_800_000_000, using: &rng)) / 1e6)
    }

    /// `page` as a reader who blocked `blocked` gets it from values: flagged, then encoded.
    static func expected(_ page: MessagePage, blocking blocked: Set<String>) throws -> String {
        var page = page
        for index in page.messages.indices { page.messages[index].blockedSender = blocked.contains(page.messages[index].sender) }
        return String(decoding: try ScrollbackJSON.encoder().encode(page), as: UTF8.self)
    }

    @Test func theBytesAreTheEncodersForEveryReaderAndEveryCut() throws {
        var rng = Generator(seed: (20_261_127, 7, 11, 13))
        for _ in 0..<300 {
            let messages = (0..<Int.random(in: 0...8, using: &rng)).map { _ in Self.message(&rng) }
            let page = MessagePage(
                messages: messages, hasOlder: Bool.random(using: &rng), hasNewer: Bool.random(using: &rng),
                lastSeq: Int64.random(in: 0...Int64.max, using: &rng), version: Int64.random(in: 0...Int64.max, using: &rng),
                firstSeq: Int64.random(in: 1...9, using: &rng))
            let encoded = EncodedPage(page)
            #expect(encoded.isFaithful)
            #expect(encoded.messages.map(\.seq) == messages.map(\.seq))
            #expect(encoded.messages.map(\.sender) == messages.map(\.sender))
            let blocked = Set(Self.senders.filter { _ in Bool.random(using: &rng) })
            for list in [[], blocked, Set(Self.senders)] {
                let written = String(decoding: encoded.jsonBytes(blocking: list), as: UTF8.self)
                #expect(written == (try Self.expected(page, blocking: list)), "blocking \(list)")
                // Read back, the values a client reads: the same JSON again.
                let again = String(
                    decoding: try ScrollbackJSON.encoder().encode(try encoded.decoded(blocking: list)), as: UTF8.self)
                #expect(again == written, "\(again)\n\(written)")
            }
            // A cut shares the bytes and answers as a page of those messages would.
            let kept = messages.indices.filter { _ in Bool.random(using: &rng) }
            let flags = (Bool.random(using: &rng), Bool.random(using: &rng))
            let cut = encoded.cut(kept.map { encoded.messages[$0] }, hasOlder: flags.0, hasNewer: flags.1)
            var smaller = page
            smaller.messages = kept.map { messages[$0] }
            smaller.hasOlder = flags.0
            smaller.hasNewer = flags.1
            #expect(
                String(decoding: cut.jsonBytes(blocking: blocked), as: UTF8.self)
                    == (try Self.expected(smaller, blocking: blocked)))
            #expect(cut.memoryBytes <= encoded.memoryBytes)
        }
    }

    /// What an entry costs is about its JSON: no decoded values behind it.
    @Test func aPageHoldsAboutItsJSON() {
        var rng = Generator(seed: (5, 6, 7, 8))
        let messages = (1...50).map { seq in
            var message = JSONWriterTests.message(&rng)
            message.seq = Int64(seq)
            message.sender = "alice"
            message.body = String(repeating: "x", count: 120)
            return message
        }
        let encoded = EncodedPage(MessagePage(messages: messages, hasOlder: true, hasNewer: false, lastSeq: 50, version: 50))
            .compacted
        let json = encoded.jsonBytes().count
        #expect(encoded.memoryBytes >= json)
        #expect(encoded.memoryBytes < json + json / 8 + 50 * 64, "\(encoded.memoryBytes) bytes held for \(json) of JSON")
    }
}
