import ArgumentParser
import Foundation
import ScrollbackLayout
import ScrollbackServer

/// `scrollback layout`: the layout calculator offline, with the same JSON as
/// `POST /v1/layout`, and optionally a picture of the result.
struct LayoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "layout",
        abstract: "Compute a chat layout (as POST /v1/layout does) and print it as JSON.",
        discussion: """
            Heights are newest first (index 0 = the newest message, at the bottom). Without --heights the \
            request is read as JSON from standard input, in the endpoint's shape: \
            {"viewport_height": 640, "item_heights": [44, 60], "spacing": 8}, or with messages whose heights \
            are estimated from their text and attachments: {"viewport_height": 640, "items": [{"text": "hi", \
            "attachments": [{"kind": "image", "width": 1200, "height": 900}]}]}; flags given as well override \
            its fields. With --svg the layout is also drawn to a file.
            """)

    @Option(help: "Viewport height in points (required with --heights).")
    var viewport: Double?

    @Option(help: "Item heights in points, newest first, comma-separated (e.g. 44,60,80).")
    var heights: String?

    @Option(help: "Gap between adjacent items (default 0).")
    var spacing: Double?

    @Option(name: .customLong("top-inset"), help: "Space above the oldest item (default 0).")
    var topInset: Double?

    @Option(name: .customLong("bottom-inset"), help: "Space below the newest item (default 0).")
    var bottomInset: Double?

    @Option(name: .customLong("scroll-offset"), help: "Distance scrolled up from the newest message.")
    var scrollOffset: Double?

    @Option(
        name: .customLong("prefetch-threshold"),
        help: "Ask for older messages when the top of the content is closer than this.")
    var prefetchThreshold: Double?

    @Option(help: "Also write the layout as an SVG picture to this file.")
    var svg: String?

    @Option(help: "Title line of the SVG picture.")
    var title: String?

    func run() throws {
        let options = LayoutCommandLine.Options(
            viewport: viewport, heights: heights, spacing: spacing, topInset: topInset, bottomInset: bottomInset,
            scrollOffset: scrollOffset, prefetchThreshold: prefetchThreshold)
        do {
            let request = try LayoutCommandLine.request(options: options) {
                // An interactive terminal would wait forever: there is nothing to read.
                isatty(STDIN_FILENO) == 1 ? Data() : FileHandle.standardInput.readDataToEndOfFile()
            }
            let layout = try LayoutCommandLine.layout(request)
            if let svg {
                let picture = LayoutSVG(title: title).render(layout)
                do {
                    try picture.write(toFile: svg, atomically: true, encoding: .utf8)
                } catch {
                    throw LayoutCommandLine.Failure("--svg: could not write \(svg): \(error.localizedDescription)")
                }
            }
            print(try LayoutCommandLine.json(layout))
        } catch let failure as LayoutCommandLine.Failure {
            // A bad request, not a bad command line: no usage dump, exit status 1.
            FileHandle.standardError.write(Data("Error: \(failure.description)\n".utf8))
            throw ExitCode.failure
        }
    }
}
