import Foundation
import ScrollbackModels

/// How the rows changed, for a list to apply at once (as
/// `UICollectionView.performBatchUpdates` takes it): `removed` are indices
/// before the change, `inserted` indices after it, `moved` from an index
/// before to one after (a conversation that became active moves to the
/// top), and `updated` indices after the change of rows kept or moved whose
/// content changed (to reconfigure once the batch is applied).
public struct InboxChange: Sendable, Equatable {
    public struct Move: Sendable, Equatable {
        public var from: Int
        public var to: Int

        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    public var removed: [Int]
    public var inserted: [Int]
    public var moved: [Move]
    public var updated: [Int]

    public init(removed: [Int] = [], inserted: [Int] = [], moved: [Move] = [], updated: [Int] = []) {
        self.removed = removed
        self.inserted = inserted
        self.moved = moved
        self.updated = updated
    }

    public var isEmpty: Bool { removed.isEmpty && inserted.isEmpty && moved.isEmpty && updated.isEmpty }

    /// The change from one list to another, with as few moves as there can
    /// be: the rows that keep their order among themselves stay put.
    init(from old: [Conversation], to new: [Conversation]) {
        let oldIndex = Dictionary(old.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        let newIds = Set(new.map(\.id))
        removed = old.indices.filter { !newIds.contains(old[$0].id) }
        inserted = []
        updated = []
        var kept: [(old: Int, new: Int)] = []
        for (index, conversation) in new.enumerated() {
            if let previous = oldIndex[conversation.id] {
                kept.append((previous, index))
                if old[previous] != conversation { updated.append(index) }
            } else {
                inserted.append(index)
            }
        }
        let staying = Self.longestIncreasingRun(kept.map(\.old))
        moved = kept.enumerated().filter { !staying.contains($0.offset) }.map { Move(from: $0.element.old, to: $0.element.new) }
    }

    /// The positions of a longest increasing subsequence of `values`.
    private static func longestIncreasingRun(_ values: [Int]) -> Set<Int> {
        // tails[k]: the position of the smallest last value of a run of length k + 1.
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: values.count)
        for (position, value) in values.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var run: Set<Int> = []
        var position = tails.last ?? -1
        while position >= 0 {
            run.insert(position)
            position = previous[position]
        }
        return run
    }
}
