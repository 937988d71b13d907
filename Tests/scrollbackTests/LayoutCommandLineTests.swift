import Foundation
import ScrollbackLayout
import ScrollbackModels
import ScrollbackServer
import Testing

@testable import scrollback

/// `scrollback layout` prints what `POST /v1/layout` answers, from the same code.
@Suite struct LayoutCommandOutputTests {
    @Test func commandLineOutputIsTheEndpointsResponse() throws {
        let request = LayoutRequest(
            viewportHeight: 300, itemHeights: [44, 60, 80, 120, 44, 90], spacing: 8, topInset: 4, bottomInset: 6,
            scrollOffset: 40, prefetchThreshold: 100)
        let printed = try LayoutCommandLine.json(try LayoutCommandLine.layout(request))
        let fromCommand = try ScrollbackJSON.decoder().decode(LayoutResponse.self, from: Data(printed.utf8))
        #expect(printed.contains(#""offset_from_bottom""#) && printed.contains(#""load_older""#))
        let fromEndpoint = try LayoutRequests.response(for: request)
        #expect(fromCommand == fromEndpoint)
        #expect(fromEndpoint.visible != nil && fromEndpoint.contentHeight == 438 + 40 + 10)
    }
}

/// The command's input handling, at the function level.
@Suite struct LayoutCommandLineTests {
    @Test func heightsFlagIsACommaSeparatedList() throws {
        #expect(try LayoutCommandLine.parseHeights("44,60,80") == [44, 60, 80])
        #expect(try LayoutCommandLine.parseHeights(" 44 , 60.5 ") == [44, 60.5])
        #expect(try LayoutCommandLine.parseHeights("") == [])
        #expect(throws: LayoutCommandLine.Failure.self) { try LayoutCommandLine.parseHeights("44,,60") }
        #expect(throws: LayoutCommandLine.Failure.self) { try LayoutCommandLine.parseHeights("44,abc") }
        #expect(throws: LayoutCommandLine.Failure.self) { try LayoutCommandLine.parseHeights("inf") }
    }

    @Test func flagsBuildTheRequestAndNeedAViewport() throws {
        let options = LayoutCommandLine.Options(
            viewport: 640, heights: "44,60", spacing: 8, topInset: 1, bottomInset: 2, scrollOffset: 3,
            prefetchThreshold: 4)
        let request = try LayoutCommandLine.request(options: options) {
            Issue.record("standard input must not be read when --heights is given")
            return Data()
        }
        #expect(
            request
                == LayoutRequest(
                    viewportHeight: 640, itemHeights: [44, 60], spacing: 8, topInset: 1, bottomInset: 2,
                    scrollOffset: 3, prefetchThreshold: 4))
        #expect(LayoutInput(request, itemHeights: try LayoutRequests.itemHeights(for: request)) == LayoutInput(
            viewportHeight: 640, itemHeights: [44, 60], spacing: 8, topInset: 1, bottomInset: 2, scrollOffset: 3,
            prefetchThreshold: 4))
        let missing = LayoutCommandLine.Options(heights: "44")
        #expect(throws: LayoutCommandLine.Failure("--viewport is required with --heights.")) {
            try LayoutCommandLine.request(options: missing) { Data() }
        }
    }

    @Test func withoutHeightsTheRequestIsJSONOnStandardInputAndFlagsOverrideIt() throws {
        let json = #"{"viewport_height": 500, "item_heights": [10, 20], "spacing": 4, "scroll_offset": 7}"#
        let request = try LayoutCommandLine.request(options: .init(spacing: 2)) { Data(json.utf8) }
        #expect(request == LayoutRequest(viewportHeight: 500, itemHeights: [10, 20], spacing: 2, scrollOffset: 7))
        let resized = try LayoutCommandLine.request(options: .init(viewport: 900)) { Data(json.utf8) }
        #expect(resized.viewportHeight == 900 && resized.spacing == 4)

        #expect(throws: LayoutCommandLine.Failure.self) {
            try LayoutCommandLine.request(options: .init()) { Data(" \n".utf8) }
        }
        do {
            _ = try LayoutCommandLine.request(options: .init()) { Data(#"{"item_heights": []}"#.utf8) }
            Issue.record("a request without viewport_height was accepted")
        } catch {
            #expect(error.description.contains("`viewport_height` is required"), "\(error)")
        }
    }

    /// Messages with attachments on standard input, as `POST /v1/layout` takes them.
    @Test func itemsWithAttachmentsOnStandardInputAreEstimatedAsTheEndpointDoes() throws {
        let json = #"""
            {"viewport_height": 640, "spacing": 8, "items": [
              {"text": "look", "attachments": [{"kind": "image", "width": 1200, "height": 900}]},
              {"attachments": [{"kind": "file"}]}]}
            """#
        let request = try LayoutCommandLine.request(options: .init(spacing: 4)) { Data(json.utf8) }
        #expect(request.items?.count == 2 && request.spacing == 4)
        let layout = try LayoutCommandLine.layout(request)
        #expect(layout.items.map(\.height) == [38 + 219.375, 56])
        #expect(LayoutResponse(layout) == (try LayoutRequests.response(for: request)))
        let bad = #"{"viewport_height": 640, "items": [{"attachments": [{"kind": "image", "width": -1, "height": 1}]}]}"#
        #expect(throws: LayoutCommandLine.Failure.self) {
            try LayoutCommandLine.layout(try LayoutCommandLine.request(options: .init()) { Data(bad.utf8) })
        }
    }

    @Test func absentSizesDefaultToZeroAndBadSizesKeepTheCalculatorsMessage() throws {
        let layout = try LayoutCommandLine.layout(LayoutRequest(viewportHeight: 100, itemHeights: [30, 30]))
        #expect(layout.contentHeight == 60 && layout.bottomPadding == 40 && layout.visible == nil)
        #expect(throws: LayoutCommandLine.Failure("item_heights[0] must be a finite number >= 0 (got -1.0)")) {
            try LayoutCommandLine.layout(LayoutRequest(viewportHeight: 100, itemHeights: [-1]))
        }
        #expect(throws: LayoutCommandLine.Failure.self) {
            try LayoutCommandLine.layout(
                LayoutRequest(viewportHeight: 100, itemHeights: Array(repeating: 1, count: APILimits.maxLayoutItems + 1)))
        }
    }
}
