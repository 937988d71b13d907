import ScrollbackModels

/// Where a page of history sits in the conversation.
public enum PageAnchor: Sendable, Equatable {
    /// The newest messages.
    case newest
    /// The messages just older than this seq.
    case before(Int64)
    /// The messages just newer than this seq (seq + 1 ...).
    case after(Int64)
    /// This seq and the messages nearest to it on both sides.
    case around(Int64)
}

/// How a page query reads the two sides of its anchor: up to `olderLimit`
/// rows with `seq <= olderFrom`, newest first, and up to `newerLimit` rows with
/// `seq >= newerFrom`, oldest first. Both are keyset scans on the primary key.
struct PageScan: Equatable {
    var olderFrom: Int64
    var olderLimit: Int
    var newerFrom: Int64
    var newerLimit: Int

    init(anchor: PageAnchor, limit: Int) {
        switch anchor {
        case .newest:
            self.init(olderFrom: .max, olderLimit: limit, newerFrom: .max, newerLimit: 0)
        case .before(let seq):
            self.init(olderFrom: seq > .min ? seq - 1 : .min, olderLimit: limit, newerFrom: .max, newerLimit: 0)
        case .after(let seq):
            self.init(olderFrom: 0, olderLimit: 0, newerFrom: seq < .max ? seq + 1 : .max, newerLimit: limit)
        case .around(let seq):
            self.init(olderFrom: seq, olderLimit: limit, newerFrom: seq < .max ? seq + 1 : .max, newerLimit: limit)
        }
    }

    init(olderFrom: Int64, olderLimit: Int, newerFrom: Int64, newerLimit: Int) {
        self.olderFrom = olderFrom
        self.olderLimit = olderLimit
        self.newerFrom = newerFrom
        self.newerLimit = newerLimit
    }

    /// `messages`, in any order, as the two sides this scan reads: the
    /// anchor's side newest first, the newer side oldest first.
    func sides(of messages: [Message]) -> (older: [Message], newer: [Message]) {
        var older: [Message] = []
        var newer: [Message] = []
        for message in messages {
            if olderLimit > 0 && message.seq <= olderFrom { older.append(message) } else { newer.append(message) }
        }
        return (older.sorted { $0.seq > $1.seq }, newer.sorted { $0.seq < $1.seq })
    }
}

extension MessagePage {
    /// The page `limit` would have returned for `anchor`, cut from this page,
    /// read with the same anchor and a limit at least as large. The sides and
    /// flags are those of the read itself (`PageAssembly`): pages for growing
    /// limits are nested, so the cut equals a fresh read in the same snapshot.
    public func narrowed(to limit: Int, anchor: PageAnchor) -> MessagePage {
        let (older, newer) = PageScan(anchor: anchor, limit: limit).sides(of: messages)
        let assembled = PageAssembly.assemble(
            anchor: anchor, limit: limit, firstSeq: firstSeq, lastSeq: lastSeq, older: older, newer: newer, seq: \.seq)
        var page = self
        page.messages = assembled.rows
        page.hasOlder = assembled.hasOlder
        page.hasNewer = assembled.hasNewer
        return page
    }
}

/// Picks the page from what a `PageScan` read and works out its flags.
///
/// `older` is newest first (seq <= anchor side), `newer` oldest first. Around
/// an anchor, half the page (rounded down) goes to newer messages and the rest
/// to the anchor and older ones; a side that runs out gives its share to the
/// other. The flags follow from the page's bounds and the first and last seq
/// of the list read in the same snapshot: for history, 1 and the
/// conversation's last seq (seqs are dense); for a thread, its first and last
/// reply (`firstSeq` greater than `lastSeq` for an empty list).
enum PageAssembly {
    static func assemble<Row>(
        anchor: PageAnchor, limit: Int, firstSeq: Int64 = 1, lastSeq: Int64,
        older: [Row], newer: [Row], seq: (Row) -> Int64
    ) -> (rows: [Row], hasOlder: Bool, hasNewer: Bool) {
        let newerTake = min(newer.count, max(limit / 2, limit - older.count))
        let olderTake = min(older.count, limit - newerTake)
        let rows = Array(newer.prefix(newerTake).reversed()) + Array(older.prefix(olderTake))
        if let newest = rows.first, let oldest = rows.last {
            return (rows, seq(oldest) > firstSeq, seq(newest) < lastSeq)
        }
        // An empty page: say what lies on either side of where it would be.
        switch anchor {
        case .newest, .around:
            return (rows, false, false)
        case .before(let s):
            return (rows, false, lastSeq >= max(s, firstSeq))
        case .after(let s):
            return (rows, min(s, lastSeq) >= firstSeq, false)
        }
    }
}
