import Foundation

/// A page of history kept as the JSON the server answers for it: each
/// message's bytes, written once when the page was read, and where in them
/// the reader's `blocked_sender` goes. A page cut from another (fewer
/// messages, or those after a seq) shares its bytes; answering it copies
/// them into the response, splicing `"blocked_sender":true` into the
/// messages of senders the reader blocked, and encodes nothing again.
///
/// The bytes are those `MessagePage`'s own `JSONWritable` writes for the
/// same page (tests hold them to it), so a client cannot tell which way
/// its page was made.
public struct EncodedPage: Sendable {
    /// One message: where its JSON lies in the page's bytes.
    public struct Span: Sendable {
        public let seq: Int64
        /// Whom the reader's `blocked_sender` is about.
        public let sender: String
        /// The sender of the message this one replies to: the page names them too.
        public let repliedSender: String?
        let start: Int32
        /// Where `blocked_sender` goes: after `attachments` (the only key
        /// sorted before it), before `body`.
        let flagAt: Int32
        let end: Int32
    }

    /// The messages' JSON, one after another: shared by every page cut from one read.
    private let storage: [UInt8]
    /// Newest first, as `MessagePage.messages`.
    public let messages: [Span]
    public let hasOlder: Bool
    public let hasNewer: Bool
    public let lastSeq: Int64
    public let version: Int64
    public let firstSeq: Int64
    /// False when a message held a value JSON cannot carry (never for
    /// stored messages; the server answers 500 rather than other bytes).
    public let isFaithful: Bool

    /// `page`, encoded (its messages' `blocked_sender` is not kept: it is the reader's).
    public init(_ page: MessagePage) {
        var writer = JSONWriter(capacity: 64 + page.messages.count * 384)
        var spans: [Span] = []
        spans.reserveCapacity(page.messages.count)
        for var message in page.messages {
            message.blockedSender = false
            let start = writer.bytes.count
            var flagAt = 0
            message.write(to: &writer, flagAt: &flagAt)
            spans.append(
                Span(
                    seq: message.seq, sender: message.sender, repliedSender: message.replyTo?.sender,
                    start: Int32(start), flagAt: Int32(flagAt),
                    end: Int32(writer.bytes.count)))
        }
        self.init(
            storage: writer.bytes, messages: spans, hasOlder: page.hasOlder, hasNewer: page.hasNewer,
            lastSeq: page.lastSeq, version: page.version, firstSeq: page.firstSeq, isFaithful: writer.isFaithful)
    }

    private init(
        storage: [UInt8], messages: [Span], hasOlder: Bool, hasNewer: Bool, lastSeq: Int64, version: Int64,
        firstSeq: Int64, isFaithful: Bool
    ) {
        self.storage = storage
        self.messages = messages
        self.hasOlder = hasOlder
        self.hasNewer = hasNewer
        self.lastSeq = lastSeq
        self.version = version
        self.firstSeq = firstSeq
        self.isFaithful = isFaithful
    }

    /// Another page of the same read: `messages` are spans of this page.
    public func cut(_ messages: [Span], hasOlder: Bool, hasNewer: Bool) -> EncodedPage {
        EncodedPage(
            storage: storage, messages: messages, hasOlder: hasOlder, hasNewer: hasNewer, lastSeq: lastSeq,
            version: version, firstSeq: firstSeq, isFaithful: isFaithful)
    }

    /// The same page in bytes of no more capacity than they need (the
    /// writer's growth leaves up to half unused): for a page that is kept,
    /// not for one answered once.
    public var compacted: EncodedPage {
        guard storage.capacity - storage.count > storage.count / 8 else { return self }
        let bytes = [UInt8](unsafeUninitializedCapacity: storage.count) { buffer, count in
            count = buffer.initialize(fromContentsOf: storage)
        }
        return EncodedPage(
            storage: bytes, messages: messages, hasOlder: hasOlder, hasNewer: hasNewer, lastSeq: lastSeq,
            version: version, firstSeq: firstSeq, isFaithful: isFaithful)
    }

    /// About what the page holds in memory: its bytes and its spans.
    public var memoryBytes: Int {
        128 + storage.capacity + messages.count * MemoryLayout<Span>.stride
            + messages.reduce(0) { $0 + ($1.sender.utf8.count > 15 ? 32 + $1.sender.utf8.count : 0) }
    }

    /// How many bytes the page's JSON takes, about (without block flags).
    public var jsonByteCount: Int {
        messages.reduce(160) { $0 + Int($1.end - $1.start) + 1 }
    }

    // MARK: Writing

    private static let flagFirst = Array(#""blocked_sender":true,"#.utf8)
    private static let flagAfter = Array(#","blocked_sender":true"#.utf8)

    /// The users the page names (`MessagePage.namedUsers`).
    public var namedUsers: Set<UserID> {
        Message.namedUsers(messages.lazy.map { ($0.sender, $0.repliedSender) })
    }

    /// The page's JSON as `GET /v1/conversations/{id}/messages` answers it
    /// (without `layout`), to a reader who blocked the senders `blocked`,
    /// with the profiles of `users` (not kept with the page: a profile
    /// changes without the conversation's version moving).
    public func write(to writer: inout JSONWriter, blocking blocked: Set<String>, users: ProfileSet = ProfileSet()) {
        if !isFaithful { writer.markUnfaithful() }
        MessagePage.write(
            to: &writer, firstSeq: firstSeq, hasNewer: hasNewer, hasOlder: hasOlder, lastSeq: lastSeq, layout: nil,
            version: version, users: users
        ) { writer in
            storage.withUnsafeBufferPointer { bytes in
                writer.raw(UInt8(ascii: "["))
                for (index, message) in messages.enumerated() {
                    if index > 0 { writer.raw(UInt8(ascii: ",")) }
                    let start = Int(message.start)
                    let end = Int(message.end)
                    guard !blocked.isEmpty, blocked.contains(message.sender) else {
                        writer.raw(UnsafeBufferPointer(rebasing: bytes[start..<end]))
                        continue
                    }
                    let flagAt = Int(message.flagAt)
                    writer.raw(UnsafeBufferPointer(rebasing: bytes[start..<flagAt]))
                    // `{` alone before it: the flag is the first key; else it follows `attachments`.
                    let flag = bytes[flagAt - 1] == UInt8(ascii: "{") ? Self.flagFirst : Self.flagAfter
                    flag.withUnsafeBufferPointer { writer.raw($0) }
                    writer.raw(UnsafeBufferPointer(rebasing: bytes[flagAt..<end]))
                }
                writer.raw(UInt8(ascii: "]"))
            }
        }
    }

    /// The page's JSON, as `write(to:blocking:)`.
    public func jsonBytes(blocking blocked: Set<String> = [], users: ProfileSet = ProfileSet()) -> [UInt8] {
        var writer = JSONWriter(capacity: jsonByteCount + users.count * 160)
        write(to: &writer, blocking: blocked, users: users)
        return writer.bytes
    }

    /// The page as values, read back from its JSON (timestamps to the
    /// millisecond, as a client reads them).
    public func decoded(blocking blocked: Set<String> = [], users: ProfileSet = ProfileSet()) throws -> MessagePage {
        try ScrollbackJSON.decoder().decode(MessagePage.self, from: Data(jsonBytes(blocking: blocked, users: users)))
    }
}
