import Foundation
import ScrollbackLayout
import ScrollbackModels
import ScrollbackServer

/// What `scrollback layout` does between parsing its flags and printing:
/// build a ``LayoutRequest`` from flags or from JSON on standard input, lay it
/// out with the endpoint's own code (``LayoutRequests``) and render JSON or
/// SVG. Its tests check it without spawning the binary.
enum LayoutCommandLine {
    /// The command's options, as given (`nil` = not given).
    struct Options: Sendable, Equatable {
        var viewport: Double?
        var heights: String?
        var spacing: Double?
        var topInset: Double?
        var bottomInset: Double?
        var scrollOffset: Double?
        var prefetchThreshold: Double?

        init(
            viewport: Double? = nil, heights: String? = nil, spacing: Double? = nil, topInset: Double? = nil,
            bottomInset: Double? = nil, scrollOffset: Double? = nil, prefetchThreshold: Double? = nil
        ) {
            self.viewport = viewport
            self.heights = heights
            self.spacing = spacing
            self.topInset = topInset
            self.bottomInset = bottomInset
            self.scrollOffset = scrollOffset
            self.prefetchThreshold = prefetchThreshold
        }
    }

    /// A problem to report to the user, worded for the command line.
    struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        var description: String

        init(_ description: String) {
            self.description = description
        }
    }

    /// `44,60,80` (spaces around the commas allowed) -> `[44, 60, 80]`. An
    /// empty string is an empty list; signs are accepted here so that a
    /// negative height reaches the calculator and gets its precise message.
    static func parseHeights(_ text: String) throws(Failure) -> [Double] {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return [] }
        var heights: [Double] = []
        for (index, part) in trimmed.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let number = part.trimmingCharacters(in: .whitespaces)
            guard let value = Double(number), value.isFinite else {
                throw Failure("--heights: item \(index) is not a number (got \"\(number.prefix(40))\").")
            }
            heights.append(value)
        }
        return heights
    }

    /// The request: from the flags when `--heights` is given (then `--viewport`
    /// is required), otherwise decoded from `standardInput` (the endpoint's
    /// JSON request shape). Flags given next to JSON override its fields.
    static func request(options: Options, standardInput: () -> Data) throws(Failure) -> LayoutRequest {
        var request: LayoutRequest
        if let heights = options.heights {
            guard let viewport = options.viewport else {
                throw Failure("--viewport is required with --heights.")
            }
            request = LayoutRequest(viewportHeight: viewport, itemHeights: try parseHeights(heights))
        } else {
            let data = standardInput()
            guard !data.allSatisfy({ [0x20, 0x0A, 0x0D, 0x09].contains($0) }) else {
                throw Failure(
                    "Give --viewport and --heights, or pipe a JSON request on standard input, e.g."
                        + #" {"viewport_height": 640, "item_heights": [44, 60]}."#)
            }
            do {
                request = try ScrollbackJSON.decoder().decode(LayoutRequest.self, from: data)
            } catch let error as DecodingError {
                throw Failure("Standard input: " + ScrollbackJSON.explain(error))
            } catch {
                throw Failure("Standard input is not valid JSON.")
            }
            if let viewport = options.viewport { request.viewportHeight = viewport }
        }
        if let spacing = options.spacing { request.spacing = spacing }
        if let topInset = options.topInset { request.topInset = topInset }
        if let bottomInset = options.bottomInset { request.bottomInset = bottomInset }
        if let scrollOffset = options.scrollOffset { request.scrollOffset = scrollOffset }
        if let prefetchThreshold = options.prefetchThreshold { request.prefetchThreshold = prefetchThreshold }
        return request
    }

    /// Lays out `request` exactly as `POST /v1/layout` does.
    static func layout(_ request: LayoutRequest) throws(Failure) -> ChatLayout {
        do {
            return try LayoutRequests.layout(for: request)
        } catch {
            throw Failure(error.message)
        }
    }

    /// The endpoint's response body for `layout`, pretty-printed with sorted
    /// keys; a failure rather than `{}` should the layout hold a number JSON
    /// cannot carry.
    static func json(_ layout: ChatLayout) throws(Failure) -> String {
        let encoder = ScrollbackJSON.encoder()
        encoder.outputFormatting.insert(.prettyPrinted)
        do {
            return String(decoding: try encoder.encode(LayoutResponse(layout)), as: UTF8.self)
        } catch {
            throw Failure("The layout cannot be written as JSON: \(error)")
        }
    }
}
