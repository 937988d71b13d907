// Benchmarks print figures; they are not tests (no timed assertions).
//
//   scrollback-bench                 the layout benchmark (the default)
//   scrollback-bench statements      the hot statements' SQL, as JSON, for pgbench
//   scrollback-bench http ...        HTTP load on a running server (scripts/bench drives it)
//   scrollback-bench pgbench-log ... pgbench's transaction log as a measurement
//   scrollback-bench report ...      the table of figures, baselines and ratios
//
// Each figure is reported next to a baseline measured in the same run, so the
// ratio means something on any machine.

import ArgumentParser

@main
struct ScrollbackBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scrollback-bench",
        abstract: "Benchmarks: figures beside baselines measured in the same run.",
        subcommands: [
            LayoutBenchmark.self, StatementsCommand.self, HTTPLoadCommand.self, PgbenchLogCommand.self,
            ReportCommand.self,
        ],
        defaultSubcommand: LayoutBenchmark.self)
}
