import ArgumentParser
import Foundation
import ScrollbackMeasure

/// `scrollback-bench report`: reads the measurements `scripts/bench` wrote
/// (one `NAME.json` per run) and prints every figure beside its baseline and
/// the ratio, as a table and as JSON.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Print the figures, their baselines and ratios; write them as JSON.")

    @Option(help: "Directory of the measurements (NAME.json).")
    var measurements: String

    @Option(name: .customLong("idle-rss-kib"), help: "The server's resident memory (VmRSS) when idle, in KiB.")
    var idleRSSKiB: Int?

    @Option(help: "A JSON object describing the run (machine, settings, commit), copied into the output.")
    var context: String?

    @Option(help: "The page cache's figures over the closed-loop page run (hits, misses, bytes, entries, capacity).")
    var pageCache: String?

    @Option(help: "Commits and sends counted by the server during the grouped send runs (random_groups, random_sends, hot_groups, hot_sends).")
    var sendGroups: String?

    @Option(help: "The outbox's figures over the sends with a webhook receiver (events delivered, seconds until drained, sends).")
    var outbox: String?

    @Option(help: "What the read replica did (reads served and routed during the replica runs; its lag under sends).")
    var replicas: String?

    @Option(help: "Execution times EXPLAIN ANALYZE reported for statements run alone ({\"statements\": [{name, milliseconds, target_ms}]}).")
    var explain: String?

    @Option(help: "Where to write the JSON.")
    var output: String

    func run() throws {
        let directory = URL(fileURLWithPath: measurements)
        var runs: [String: Measurement] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: measurements) where file.hasSuffix(".json") {
            runs[String(file.dropLast(5))] = try Measurement.read(from: directory.appendingPathComponent(file))
        }
        var figures = Figure.all(from: runs, idleRSSKiB: idleRSSKiB)
        if let pageCache {
            let cache = try JSONDecoder().decode(
                PageCacheFigures.self, from: Data(contentsOf: URL(fileURLWithPath: pageCache)))
            figures += cache.figures
        }
        if let sendGroups {
            let groups = try JSONDecoder().decode(
                SendGroupFigures.self, from: Data(contentsOf: URL(fileURLWithPath: sendGroups)))
            figures += groups.figures
        }
        if let outbox {
            let delivery = try JSONDecoder().decode(
                OutboxFigures.self, from: Data(contentsOf: URL(fileURLWithPath: outbox)))
            figures += delivery.figures(runs)
        }
        if let replicas {
            let replica = try JSONDecoder().decode(
                ReplicaFigures.self, from: Data(contentsOf: URL(fileURLWithPath: replicas)))
            figures += replica.figures(runs)
        }
        if let explain {
            let explained = try JSONDecoder().decode(
                ExplainFigures.self, from: Data(contentsOf: URL(fileURLWithPath: explain)))
            figures += explained.figures
        }
        print(Figure.table(figures))

        var document: [String: Any] = [
            "figures": try figures.map { try JSONSerialization.jsonObject(with: JSONEncoder().encode($0)) },
            "measurements": try runs.mapValues { try JSONSerialization.jsonObject(with: JSONEncoder().encode($0)) },
        ]
        if let context {
            document["context"] = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: context)))
        }
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: output))
        print("\nwritten to \(output)")
    }
}

/// What the page cache did during the closed-loop newest-page run.
struct PageCacheFigures: Decodable {
    var hits: Int
    var misses: Int
    var bytes: Int
    var entries: Int
    var capacity: Int

    var figures: [Figure] {
        [
            Figure(
                8, "page cache hits, closed-loop newest pages", unit: "%",
                value: 100 * Double(hits) / Double(max(hits + misses, 1)), runs: []),
            Figure(
                8, "page cache bytes held, \(entries) pages", unit: "MB", value: Double(bytes) / 1_048_576,
                baselineName: "its capacity", baseline: Double(capacity) / 1_048_576, runs: []),
        ]
    }
}

/// How many sends each commit stored during the grouped send runs.
struct SendGroupFigures: Decodable {
    var randomGroups: Int
    var randomSends: Int
    var hotGroups: Int
    var hotSends: Int

    enum CodingKeys: String, CodingKey {
        case randomGroups = "random_groups", randomSends = "random_sends", hotGroups = "hot_groups"
        case hotSends = "hot_sends"
    }

    var figures: [Figure] {
        [("random conversations", randomSends, randomGroups), ("one hot conversation", hotSends, hotGroups)].map {
            label, sends, groups in
            Figure(
                4, "sends per commit, \(label), grouped", unit: "", value: Double(sends) / Double(max(groups, 1)),
                runs: [])
        }
    }
}

/// What the transactional outbox costs a send, and how fast its events reach
/// a webhook receiver: the grouped random sends again with a receiver
/// configured, beside the same without; the send statement with a sink
/// registered (the triggers write the events), beside pgbench's without;
/// events delivered per second over the run and its drain, beside the sends
/// per second of the run.
struct OutboxFigures: Decodable {
    var delivered: Int
    var seconds: Double

    func figures(_ runs: [String: Measurement]) -> [Figure] {
        var figures: [Figure] = []
        if let with = runs["send-random-webhook"], let without = runs["send-random"] {
            figures.append(
                Figure(
                    9, "sends, random conversations, grouped, with a webhook", unit: "req/s", value: with.throughput,
                    baselineName: "the same without", baseline: without.throughput, runs: [with, without]))
            figures.append(
                Figure(
                    9, "webhook events delivered", unit: "/s", value: Double(delivered) / max(seconds, 1e-9),
                    baselineName: "sends of that run", baseline: with.throughput, runs: [with]))
        }
        if let with = runs["pgbench-send-random-with-sink"], let without = runs["pgbench-send-random"] {
            figures.append(
                Figure(
                    9, "pgbench send statement, random, events written", unit: "req/s", value: with.throughput,
                    baselineName: "the same without a sink", baseline: without.throughput, runs: [with, without]))
        }
        return figures
    }
}

/// Reads with a streaming replica (`SCROLLBACK_REPLICA_URLS`), on the same
/// machine: on two cores a replica cannot add capacity, so what is measured
/// is that routing costs nothing (pages beside the same run without a
/// replica), the share of reads the replica served, and how far it lagged
/// while the grouped random sends ran (the server's own
/// `scrollback_replica_lag_seconds`, sampled).
struct ReplicaFigures: Decodable {
    var served: Int
    var routed: Int
    var lagMaxSeconds: Double
    var lagMeanSeconds: Double

    enum CodingKeys: String, CodingKey {
        case served, routed, lagMaxSeconds = "lag_max_seconds", lagMeanSeconds = "lag_mean_seconds"
    }

    func figures(_ runs: [String: Measurement]) -> [Figure] {
        var figures: [Figure] = []
        for (name, label, without) in [
            ("page-closed-replica", "newest pages, cache off, with a replica", "page-closed-uncached"),
            ("deep-closed-replica", "deep pages, with a replica", "deep-closed"),
        ] {
            guard let with = runs[name], let alone = runs[without] else { continue }
            figures.append(
                Figure(
                    10, label, unit: "req/s", value: with.throughput, baselineName: "the same on the primary alone",
                    baseline: alone.throughput, runs: [with, alone]))
        }
        figures.append(
            Figure(10, "reads the replica served, of those routed", unit: "%",
                value: 100 * Double(served) / Double(max(routed, 1)), runs: []))
        figures.append(
            Figure(10, "replica lag during grouped random sends, mean", unit: "ms", value: lagMeanSeconds * 1000,
                baselineName: "its maximum", baseline: lagMaxSeconds * 1000, runs: []))
        return figures
    }
}

/// Statements run alone under `EXPLAIN ANALYZE`: the execution time the
/// database reports (the median of several runs), with no client, network
/// or queue in it.
struct ExplainFigures: Decodable {
    struct Statement: Decodable {
        var name: String
        var milliseconds: Double
        var targetMilliseconds: Double?

        enum CodingKeys: String, CodingKey {
            case name, milliseconds, targetMilliseconds = "target_ms"
        }
    }

    var statements: [Statement]

    var figures: [Figure] {
        statements.map { statement in
            Figure(
                6, "\(statement.name), EXPLAIN ANALYZE, median", unit: "ms", value: statement.milliseconds,
                target: statement.targetMilliseconds.map { .valueBelow($0) }, runs: [])
        }
    }
}

/// One line of the report: a figure, its baseline, the ratio, the target.
struct Figure: Encodable {
    enum Target {
        case ratioAtLeast(Double)
        case ratioAtMost(Double)
        case valueBelow(Double)

        var text: String {
            switch self {
            case .ratioAtLeast(let x): "ratio >= \(format(x))"
            case .ratioAtMost(let x): "ratio <= \(format(x))"
            case .valueBelow(let x): "< \(format(x))"
            }
        }
    }

    var number: Int
    var name: String
    var unit: String
    var value: Double
    var baselineName: String?
    var baseline: Double?
    var ratio: Double?
    var target: String?
    var meetsTarget: Bool?
    /// Non-2xx answers or failed transactions in the runs behind this line:
    /// anything but 0 makes the line invalid.
    var errors: Int

    enum CodingKeys: String, CodingKey {
        case number, name, unit, value, baselineName = "baseline_name", baseline, ratio, target, meetsTarget = "meets_target"
        case errors
    }

    init(
        _ number: Int, _ name: String, unit: String, value: Double, baselineName: String? = nil,
        baseline: Double? = nil, target: Target? = nil, runs: [Measurement?]
    ) {
        self.number = number
        self.name = name
        self.unit = unit
        self.value = value
        self.baselineName = baselineName
        self.baseline = baseline
        let ratio = baseline.flatMap { $0 > 0 ? value / $0 : nil }
        self.ratio = ratio
        self.target = target?.text
        self.meetsTarget =
            switch target {
            case .ratioAtLeast(let x): ratio.map { $0 >= x }
            case .ratioAtMost(let x): ratio.map { $0 <= x }
            case .valueBelow(let x): value < x
            case nil: nil
            }
        self.errors = runs.compactMap { $0?.errorCount }.reduce(0, +)
    }

    /// The figures of the issue, from whichever runs are present.
    static func all(from runs: [String: Measurement], idleRSSKiB: Int?) -> [Figure] {
        var figures: [Figure] = []
        let page = runs["page-closed"]
        if let page {
            let label = "newest page, closed loop, \(page.connections) connections"
            if let pgbench = runs["pgbench-page"] {
                let variants: [(Measurement?, String, Double)] = [
                    (page, ", page cache", 1.0), (runs["page-closed-uncached"], ", cache off", 0.35),
                ]
                for case let (run?, variant, target) in variants {
                    figures.append(
                        Figure(
                            1, label + variant, unit: "req/s", value: run.throughput,
                            baselineName: "pgbench -M prepared, page statement", baseline: pgbench.throughput,
                            target: .ratioAtLeast(target), runs: [run, pgbench]))
                }
            }
            if let keyset = runs["pgbench-keyset"] {
                figures.append(
                    Figure(
                        1, label, unit: "req/s", value: page.throughput,
                        baselineName: "pgbench -M prepared, plain keyset SELECT", baseline: keyset.throughput,
                        runs: [page, keyset]))
            }
        }
        // Each closed-loop page run as a share of the HTTP floor: `/healthz`
        // through the same client and connections, the most this server
        // answers on this machine.
        if let floor = runs["healthz"] {
            let pages = [
                ("page-closed", "newest page, page cache"), ("page-closed-uncached", "newest page, cache off"),
                ("deep-closed", "deep page"),
            ]
            for (name, label) in pages {
                guard let run = runs[name] else { continue }
                figures.append(
                    Figure(
                        1, "\(label), closed loop, \(run.connections) connections", unit: "req/s", value: run.throughput,
                        baselineName: "GET /healthz, the HTTP floor", baseline: floor.throughput,
                        target: name == "page-closed" ? .ratioAtLeast(0.5) : nil, runs: [run, floor]))
            }
        }
        if let open = runs["page-open"] {
            figures += openLoop(
                2, "newest page", open, beside: runs["pgbench-page-open"], named: "pgbench page statement",
                percentiles: [
                    ("p50", \.p50, nil), ("p90", \.p90, nil), ("p99", \.p99, .valueBelow(5.000_001)),
                    ("p99.9", \.p999, nil),
                ])
            if let uncached = runs["page-open-uncached"] {
                figures.append(
                    Figure(
                        2, "newest page p99, open loop at \(format(uncached.rate ?? 0)) req/s, cache off", unit: "ms",
                        value: uncached.latency.p99, target: .valueBelow(5.000_001), runs: [uncached]))
            }
        }
        // Deep pages never come from the cache: beside newest ones read from
        // the database at the same rate.
        if let deep = runs["deep-open"], let newest = runs["page-open-uncached"] {
            for (label, path) in [("p50", \LatencySummary.p50), ("p99", \LatencySummary.p99)] {
                figures.append(
                    Figure(
                        3, "deep page (random depth) \(label), open loop at \(format(deep.rate ?? 0)) req/s",
                        unit: "ms", value: deep.latency[keyPath: path],
                        baselineName: "newest page \(label), same rate, cache off",
                        baseline: newest.latency[keyPath: path], target: .ratioAtMost(1.2), runs: [deep, newest]))
            }
        }
        if let offset = runs["pgbench-offset"], let keyset = runs["pgbench-deep"] {
            figures.append(
                Figure(
                    3, "control: OFFSET at random depth, mean, 1 connection (pgbench)", unit: "ms",
                    value: offset.latency.mean, baselineName: "page statement at the same depths (pgbench)",
                    baseline: keyset.latency.mean, target: .ratioAtLeast(100), runs: [offset, keyset]))
        }
        // Sends committed in groups and one by one, beside the bare append
        // (the least a send can be) and beside the server's own statement.
        for (name, label) in [("send-random", "random conversations"), ("send-hot", "one hot conversation")] {
            let bare = runs["pgbench-\(name)-bare-append"]
            for (run, mode) in [(runs[name], "grouped"), (runs["\(name)-ungrouped"], "grouping off")] {
                guard let run else { continue }
                figures.append(
                    closedLoop(
                        4, "send, \(label), \(mode)", run, beside: bare, named: "pgbench -M prepared, bare append",
                        target: name == "send-random" && mode == "grouped" ? .ratioAtLeast(1.0) : nil))
                figures.append(
                    closedLoop(
                        4, "send, \(label), \(mode)", run, beside: runs["pgbench-\(name)"],
                        named: "pgbench -M prepared, send statement"))
            }
        }
        // What each trigger of the messages table costs the bare append: the
        // append with it beside the append without it (a ratio below 1 is
        // the share of the appends it leaves).
        if let all = runs["pgbench-send-random-bare-append"] {
            for (name, label) in [
                ("search", "the search vector trigger (and so the search index's entries)"),
                ("outbox", "the outbox's statement trigger (no sink registered)"),
                ("all", "any trigger"),
            ] {
                guard let without = runs["pgbench-bare-append-without-\(name)"] else { continue }
                figures.append(
                    Figure(
                        4, "pgbench bare append, random conversations", unit: "req/s", value: all.throughput,
                        baselineName: "the same without \(label)", baseline: without.throughput, runs: [all, without]))
            }
        }
        if let mention = runs["pgbench-bare-append-at"], let without = runs["pgbench-bare-append-at-without-mentions"] {
            figures.append(
                Figure(
                    4, "pgbench bare append, random conversations, a body with @", unit: "req/s",
                    value: mention.throughput, baselineName: "the same without the mentions trigger",
                    baseline: without.throughput, runs: [mention, without]))
        }
        // The open-loop sends' tail, grouped and not, beside the send
        // statement's own in pgbench at the same rate.
        for (name, mode) in [("send-open", "grouped"), ("send-open-ungrouped", "grouping off")] {
            guard let open = runs[name] else { continue }
            figures += openLoop(
                4, "send", open, beside: runs["pgbench-send-open"], named: "pgbench send statement",
                qualified: "random conversations, \(mode)",
                percentiles: [("p50", \.p50, nil), ("p99", \.p99, mode == "grouped" ? .valueBelow(5) : nil)])
        }
        // What the change feed's NOTIFY costs PostgreSQL itself.
        for (name, label) in [("send-random", "random conversations"), ("send-hot", "one hot conversation")] {
            guard let notifying = runs["pgbench-\(name)"], let silent = runs["pgbench-\(name)-without-notify"] else {
                continue
            }
            figures.append(
                Figure(
                    4, "pgbench send statement, \(label)", unit: "req/s", value: notifying.throughput,
                    baselineName: "the same without pg_notify", baseline: silent.throughput,
                    runs: [notifying, silent]))
        }
        // Throughput, p50 and p99 beside pgbench running the same statement.
        let withPercentiles = [
            (6, "search-common", "search, a word in 1 message of 10", "prepared", "search statement"),
            (6, "search-rare", "search, a rare word", "prepared", "search statement"),
            (6, "search-common-big", "search in the big conversation, a word in 1 message of 10", "prepared", "search statement"),
            (6, "search-rare-big", "search in the big conversation, a rare word", "prepared", "search statement"),
            (7, "thread", "thread page, 20 newest replies", "prepared", "thread statement"),
        ]
        for (number, name, label, mode, statement) in withPercentiles {
            guard let run = runs[name] else { continue }
            let pgbench = runs["pgbench-\(name)"]
            figures.append(closedLoop(number, label, run, beside: pgbench, named: "pgbench -M \(mode), \(statement)"))
            for (percentile, path) in [("p50", \LatencySummary.p50), ("p99", \LatencySummary.p99)] {
                figures.append(
                    Figure(
                        number, "\(label), \(percentile)", unit: "ms", value: run.latency[keyPath: path],
                        baselineName: pgbench.map { _ in "pgbench \(statement) \(percentile)" },
                        baseline: pgbench?.latency[keyPath: path],
                        target: name == "search-rare-big" && percentile == "p50" ? .valueBelow(20) : nil,
                        runs: [run, pgbench]))
            }
        }
        if let idleRSSKiB {
            figures.append(
                Figure(
                    5, "server resident memory, idle (after start)", unit: "MB", value: Double(idleRSSKiB) / 1_024,
                    target: .valueBelow(60), runs: []))
        }
        let underLoad = runs.values.filter { $0.tool == "scrollback" }
        if let peak = underLoad.compactMap(\.peakRSSKiB).max() {
            figures.append(
                Figure(5, "server resident memory, peak under load", unit: "MB", value: Double(peak) / 1_024, runs: []))
        }
        return figures
    }

    /// The throughput of a closed-loop run beside its pgbench baseline (when it ran).
    static func closedLoop(
        _ number: Int, _ name: String, _ run: Measurement, beside pgbench: Measurement?, named baselineName: String,
        target: Target? = nil
    ) -> Figure {
        Figure(
            number, "\(name), closed loop, \(run.connections) connections", unit: "req/s", value: run.throughput,
            baselineName: pgbench.map { _ in baselineName }, baseline: pgbench?.throughput, target: target,
            runs: [run, pgbench])
    }

    /// Latency percentiles of an open-loop run, each beside pgbench's at the
    /// same rate when that run is present: "NAME pXX[, QUALIFIED], open loop
    /// at R req/s".
    static func openLoop(
        _ number: Int, _ name: String, _ run: Measurement, beside pgbench: Measurement?, named baselineName: String,
        qualified: String? = nil, percentiles: [(String, KeyPath<LatencySummary, Double>, Target?)]
    ) -> [Figure] {
        let rate = format(run.rate ?? 0)
        return percentiles.map { label, path, target in
            Figure(
                number, "\(name) \(label)\(qualified.map { ", \($0)" } ?? ""), open loop at \(rate) req/s", unit: "ms",
                value: run.latency[keyPath: path],
                baselineName: pgbench.map { _ in "\(baselineName) \(label), --rate \(rate)" },
                baseline: pgbench?.latency[keyPath: path], target: target, runs: [run, pgbench])
        }
    }

    /// A plain-text table, one line per figure.
    static func table(_ figures: [Figure]) -> String {
        let header = ["#", "figure", "value", "baseline", "", "ratio", "target", ""]
        var rows = [header]
        for figure in figures {
            let verdict: String =
                if figure.errors > 0 { "INVALID: \(figure.errors) errors" } else {
                    switch figure.meetsTarget {
                    case true?: "met"
                    case false?: "missed"
                    case nil: ""
                    }
                }
            rows.append([
                String(figure.number), figure.name, "\(format(figure.value)) \(figure.unit)",
                figure.baseline.map { "\(format($0)) \(figure.unit)" } ?? "-", figure.baselineName ?? "",
                figure.ratio.map { format($0) + "x" } ?? "-", figure.target ?? "", verdict,
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).map { cell, width in cell + String(repeating: " ", count: width - cell.count) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}
