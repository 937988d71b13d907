import Foundation
import Logging

/// Log records kept in memory for a test to read.
// Unchecked: `records`, the only mutable state, is read and written only
// under `lock`.
final class CapturedLog: @unchecked Sendable {
    struct Entry {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    private let lock = NSLock()
    private var records: [Entry] = []

    func handler(level: Logger.Level = .trace) -> some LogHandler { Handler(sink: self, logLevel: level) }

    var entries: [Entry] { lock.withLock { records } }

    /// Each record at `level` as one line: the message, then `key=value` pairs.
    func messages(at level: Logger.Level) -> [String] {
        entries.filter { $0.level == level }.map { entry in
            "\(entry.message) \(entry.metadata.map { "\($0)=\($1)" }.sorted().joined(separator: " "))"
        }
    }

    fileprivate func append(_ entry: Entry) {
        lock.withLock { records.append(entry) }
    }

    private struct Handler: LogHandler {
        let sink: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level

        init(sink: CapturedLog, logLevel: Logger.Level) {
            self.sink = sink
            self.logLevel = logLevel
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            sink.append(Entry(level: event.level, message: "\(event.message)", metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
        }
    }
}
