import ScrollbackModels

/// How many items of a list fit in one response of at most
/// ``StoreOptions/maxResponseBytes`` (``APILimits/maxResponseBytes`` by
/// default, `SCROLLBACK_MAX_RESPONSE_BYTES`), by an upper estimate of each item's JSON.
/// The first item always fits, so a client always makes progress.
enum ResponseBudget {
    /// The JSON of one item's fixed fields (ids, numbers, dates, keys) with room to spare.
    static let fixedBytes = 320

    /// The length of the longest prefix of `items` whose estimated JSON
    /// stays within `limit` bytes, and at least 1 when `items` is not empty.
    static func fittingCount<Item>(
        of items: some Collection<Item>, limit: Int, bytes: (Item) -> Int
    ) -> Int {
        var total = 0
        var count = 0
        for item in items {
            total += bytes(item)
            if total > limit && count > 0 { break }
            count += 1
        }
        return count
    }

    /// At most the bytes of `text` in JSON: every byte escaped to two
    /// (`\n`, `\"`) at worst, as the rule of visible text leaves no control
    /// that would take six, plus the quotes.
    static func text(_ text: String?) -> Int { 2 * (text?.utf8.count ?? 0) + 2 }

    static func message(_ message: Message?) -> Int {
        guard let message else { return 0 }
        return fixedBytes + text(message.body) + text(message.clientId) + text(message.sender)
    }

    static func conversation(_ conversation: Conversation) -> Int {
        fixedBytes + text(conversation.title) + text(conversation.createdBy)
            + conversation.members.reduce(0) { $0 + text($1) + 1 } + message(conversation.lastMessage)
    }
}
