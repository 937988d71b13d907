import Foundation
import HTTPTypes
import ScrollbackLayout
import ScrollbackModels
import ScrollbackServer
import Testing

/// `POST /v1/layout` over a real server, and the `scrollback layout` command's
/// input handling, which shares the endpoint's mapping.
@Suite struct LayoutEndpointTests {
    static let path = "/v1/layout"

    @Test func twoItemsInATallViewportArePackedAtTheTopWithExactOffsets() async throws {
        try await TestServer.run { server in
            let reply = try await server.request(
                .post, Self.path, rawBody: #"{"viewport_height": 640, "item_heights": [100, 50], "spacing": 10}"#)
            #expect(reply.status == .ok, "\(reply.text)")
            let layout = try reply.decode(LayoutResponse.self)
            #expect(layout.contentHeight == 160)
            #expect(layout.bottomPadding == 480)
            #expect(layout.isScrollable == false)
            #expect(
                layout.items == [
                    .init(index: 0, offsetFromBottom: 480, offsetFromTop: 60, height: 100),
                    .init(index: 1, offsetFromBottom: 590, offsetFromTop: 0, height: 50),
                ])
            #expect(layout.visible == nil && layout.loadOlder == false)
            // `visible` is always there, null without a scroll offset.
            let object = try #require(try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])
            #expect(
                Set(object.keys) == ["content_height", "bottom_padding", "is_scrollable", "items", "visible", "load_older"])
            #expect(object["visible"] is NSNull)
            #expect(reply.headers[.contentType]?.hasPrefix("application/json") == true)
        }
    }

    @Test func scrollOffsetGivesTheVisibleRangeAndThePrefetchSignal() async throws {
        try await TestServer.run { server in
            // Ten 50 pt items, viewport 100: content 500, item i spans [50i, 50i + 50].
            func layout(offset: Double) async throws -> LayoutResponse {
                let request = LayoutRequest(
                    viewportHeight: 100, itemHeights: Array(repeating: 50, count: 10), scrollOffset: offset,
                    prefetchThreshold: 100)
                let reply = try await server.request(.post, Self.path, json: request)
                #expect(reply.status == .ok, "\(reply.text)")
                return try reply.decode(LayoutResponse.self)
            }
            let middle = try await layout(offset: 120)  // window [120, 220]; 280 below the top
            #expect(middle.visible == .init(first: 2, last: 4))
            #expect(middle.loadOlder == false)
            #expect(middle.isScrollable && middle.bottomPadding == 0 && middle.contentHeight == 500)
            let nearTop = try await layout(offset: 350)  // window [350, 450]; 50 below the top
            #expect(nearTop.visible == .init(first: 7, last: 8))
            #expect(nearTop.loadOlder == true)
        }
    }

    /// `items`: the server estimates each message from its text and its
    /// attachments' boxes, with the page hints' model and defaults.
    @Test func itemsWithAttachmentsAreEstimatedWithTheirBoxes() async throws {
        try await TestServer.run { server in
            let body = #"""
                {"viewport_height": 640, "spacing": 8, "items": [
                  {"text": "look", "attachments": [{"kind": "image", "width": 1200, "height": 900}]},
                  {"attachments": [{"kind": "image", "width": 100, "height": 80}, {"kind": "file"}]},
                  {"text": "hi"},
                  {"attachments": [{"kind": "video"}]}
                ]}
                """#
            let reply = try await server.request(.post, Self.path, rawBody: body)
            #expect(reply.status == .ok, "\(reply.text)")
            let layout = try reply.decode(LayoutResponse.self)
            // Column 390 * 0.75 = 292.5; a line 22 + 2 * 8.
            let heights: [Double] = [38 + 219.375, 80 + 4 + 56, 38, 56]
            #expect(layout.items.map(\.height) == heights)
            let content: Double = 257.375 + 140 + 38 + 56 + 3 * 8
            #expect(layout.contentHeight == content)
            #expect(layout.bottomPadding == 640 - layout.contentHeight)

            // The same as the library's estimates, for another width and metrics.
            let request = LayoutRequest(
                viewportHeight: 640,
                items: [
                    .init(text: "a caption", attachments: [.init(kind: .image, width: 4000, height: 3000)]),
                    .init(attachments: [.init(kind: .video, width: 1080, height: 1920), .init(kind: .file)]),
                ],
                viewportWidth: 1024, metrics: ["line_height": 20, "max_attachment_height": 400, "attachment_spacing": 2])
            let custom = try await server.request(.post, Self.path, json: request).decode(LayoutResponse.self)
            let metrics = TextMetrics(lineHeight: 20, maxAttachmentHeight: 400, attachmentSpacing: 2)
            let expected = try metrics.estimatedHeights(
                of: [
                    LayoutMessage(text: "a caption", attachments: [.init(kind: .image, pixelWidth: 4000, pixelHeight: 3000)]),
                    LayoutMessage(text: "", attachments: [.init(kind: .video, pixelWidth: 1080, pixelHeight: 1920), .init(kind: .file)]),
                ], viewportWidth: 1024)
            #expect(custom.items.map(\.height) == expected)
            let byHand: [Double] = [36 + 400, 400 + 2 + 56]
            #expect(expected == byHand)
        }
    }

    @Test func badItemsAre422NamingTheField() async throws {
        try await TestServer.run { server in
            let image = #"{"kind": "image", "width": 10, "height": 10}"#
            let eleven = #"{"viewport_height": 640, "items": [{"attachments": ["#
                + Array(repeating: image, count: 11).joined(separator: ",") + "]}]}"
            let cases: [(String, APIErrorCode, String)] = [
                (#"{"viewport_height": 640, "item_heights": [], "items": []}"#, .invalidLayoutInput, "Give either item_heights"),
                (#"{"viewport_height": 640, "item_heights": [1], "viewport_width": 390}"#, .invalidLayoutInput, "viewport_width only applies to items"),
                (#"{"viewport_height": 640, "item_heights": [1], "metrics": {}}"#, .invalidLayoutInput, "metrics only applies to items"),
                (#"{"viewport_height": 640, "items": [{}, {"attachments": [{"kind": "image", "width": -5, "height": 10}]}]}"#,
                 .invalidLayoutInput, "items[1].attachments[0].width must be a whole number of pixels from 1 to 65535 (got -5)"),
                (#"{"viewport_height": 640, "items": [{"attachments": [{"kind": "file"}, {"kind": "image", "width": 10, "height": 70000}]}]}"#,
                 .invalidLayoutInput, "items[0].attachments[1].height must be a whole number of pixels from 1 to 65535 (got 70000)"),
                (#"{"viewport_height": 640, "items": [{"attachments": [{"kind": "image", "width": 0, "height": 10}]}]}"#,
                 .invalidLayoutInput, "items[0].attachments[0].width"),
                (#"{"viewport_height": 640, "items": [{"attachments": [{"kind": "image", "width": 10}]}]}"#,
                 .invalidLayoutInput, "items[0].attachments[0] needs both width and height, or neither (height is missing)"),
                (eleven, .invalidLayoutInput, "items[0].attachments may hold at most \(APILimits.maxAttachmentsPerMessage) attachments"),
                (#"{"viewport_height": 640, "items": [], "metrics": {"line_height": 0}}"#, .invalidLayoutInput, "metrics.line_height must be"),
                (#"{"viewport_height": 640, "items": [], "metrics": {"max_attachment_height": -1}}"#, .invalidLayoutInput, "metrics.max_attachment_height must be"),
                (#"{"viewport_height": 640, "items": [], "metrics": {"line_hieght": 20, "zzz": 1}}"#, .invalidLayoutInput,
                 "metrics.line_hieght is not a parameter of the height model; the parameters are font_size, line_height,"),
                (#"{"viewport_height": 640, "items": [{}], "viewport_width": -1}"#, .invalidLayoutInput, "viewport_width must be"),
                (#"{"viewport_height": -1, "items": [{}]}"#, .invalidLayoutInput, "viewport_height must be"),
            ]
            for (body, code, message) in cases {
                let reply = try await server.request(.post, Self.path, rawBody: body)
                #expect(reply.status == .unprocessableContent, "\(body): \(reply.text)")
                let error = try reply.error().error
                #expect(error.code == code, "\(body)")
                #expect(error.message.hasPrefix(message), "\(body): \(error.message)")
            }
            // At most the item limit, as for item_heights; ten attachments are fine.
            func items(_ count: Int) -> String {
                #"{"viewport_height": 640, "items": ["# + Array(repeating: "{}", count: count).joined(separator: ",") + "]}"
            }
            #expect(try await server.request(.post, Self.path, rawBody: items(APILimits.maxLayoutItems)).status == .ok)
            let tooMany = try await server.request(.post, Self.path, rawBody: items(APILimits.maxLayoutItems + 1))
            #expect(try tooMany.status == .unprocessableContent && tooMany.error().error.code == .tooManyItems)
            #expect(try tooMany.error().error.message.hasPrefix("items may hold at most"))
            let ten = #"{"viewport_height": 640, "items": [{"attachments": ["# + Array(repeating: image, count: 10).joined(separator: ",") + "]}]}"
            #expect(try await server.request(.post, Self.path, rawBody: ten).status == .ok)

            // Shapes that are not the request's are 400.
            for (body, field) in [
                (#"{"viewport_height": 640, "items": [{"attachments": [{"kind": "sticker"}]}]}"#, "items[0].attachments[0].kind"),
                // The JSON parser itself refuses a fraction where a whole number goes, without naming the field.
                (#"{"viewport_height": 640, "items": [{"attachments": [{"kind": "image", "width": 1.5, "height": 2}]}]}"#, "whole numbers"),
                (#"{"viewport_height": 640, "items": [{"text": 5}]}"#, "items[0].text"),
                (#"{"viewport_height": 640, "items": {}}"#, "items"),
                (#"{"viewport_height": 640, "items": [], "metrics": {"line_height": null}}"#, "metrics.line_height"),
            ] {
                let reply = try await server.request(.post, Self.path, rawBody: body)
                #expect(reply.status == .badRequest, "\(body): \(reply.text)")
                let message = try reply.error().error.message
                #expect(message.contains("`\(field)`") || message.contains(field), "\(body): \(reply.text)")
            }
        }
    }

    @Test func layoutNeedsNoTokenWhileTheOtherRoutesStillDo() async throws {
        try await TestServer.run { server in
            let body = #"{"viewport_height": 100, "item_heights": [10]}"#
            let anonymous = try await server.request(.post, Self.path, rawBody: body)
            #expect(anonymous.status == .ok, "\(anonymous.text)")
            // A bad token does not matter either: no auth runs on this route.
            let garbage = try await server.request(
                .post, Self.path, rawBody: body, headers: [.authorization: "Bearer not-a-token"])
            #expect(garbage.status == .ok, "\(garbage.text)")
            let signedIn = try await server.request(.post, Self.path, as: "alice", rawBody: body)
            #expect(signedIn.status == .ok)

            let list = try await server.request(.get, "/v1/conversations")
            #expect(list.status == .unauthorized)
            #expect(try list.error().error.code == .unauthorized)
            let create = try await server.request(.post, "/v1/conversations", rawBody: #"{"members": []}"#)
            #expect(create.status == .unauthorized)
            let conversation = try await server.createConversation(as: "alice")
            let page = try await server.request(.get, "/v1/conversations/\(conversation.id)/messages")
            #expect(page.status == .unauthorized)
        }
    }

    @Test func atMostTheItemLimit() async throws {
        try await TestServer.run { server in
            func body(_ count: Int) -> String {
                #"{"viewport_height": 640, "item_heights": ["# + Array(repeating: "1", count: count).joined(separator: ",")
                    + "]}"
            }
            let limit = APILimits.maxLayoutItems
            let most = try await server.request(.post, Self.path, rawBody: body(limit))
            #expect(most.status == .ok)
            #expect(try most.decode(LayoutResponse.self).items.count == limit)
            let tooMany = try await server.request(.post, Self.path, rawBody: body(limit + 1))
            #expect(tooMany.status == .unprocessableContent, "\(tooMany.text)")
            let error = try tooMany.error().error
            #expect(error.code == .tooManyItems)
            #expect(error.message.contains("\(limit)") && error.message.contains("\(limit + 1)"))
        }
    }

    @Test func invalidSizesAre422NamingTheField() async throws {
        try await TestServer.run { server in
            let cases: [(String, String)] = [
                (#"{"viewport_height": 640, "item_heights": [10, -5]}"#, "item_heights[1]"),
                (#"{"viewport_height": -1, "item_heights": [10]}"#, "viewport_height"),
                (#"{"viewport_height": 640, "item_heights": [], "spacing": -2}"#, "spacing"),
                (#"{"viewport_height": 640, "item_heights": [], "top_inset": -2}"#, "top_inset"),
                (#"{"viewport_height": 640, "item_heights": [], "bottom_inset": -2}"#, "bottom_inset"),
                (#"{"viewport_height": 640, "item_heights": [], "scroll_offset": -0.5}"#, "scroll_offset"),
                (#"{"viewport_height": 640, "item_heights": [], "prefetch_threshold": -1}"#, "prefetch_threshold"),
                (#"{"viewport_height": 640, "item_heights": [1e308, 1e308]}"#, "item_heights"),
            ]
            for (body, field) in cases {
                let reply = try await server.request(.post, Self.path, rawBody: body)
                #expect(reply.status == .unprocessableContent, "\(body): \(reply.text)")
                let error = try reply.error().error
                #expect(error.code == .invalidLayoutInput, "\(body)")
                #expect(error.message.hasPrefix(field), "\(body): \(error.message)")
            }
        }
    }

    /// Sizes that are each fine but whose positions or sums pass the largest
    /// Double are refused like any impossible input; JSON has no infinity, so
    /// answering them would mean a body that is not the layout.
    @Test func overflowingPositionsAre422NeverAnEmpty200() async throws {
        try await TestServer.run { server in
            let bodies = [
                #"{"viewport_height": 1.7976931348623157e308, "item_heights": [2.9937604643020797e292]}"#,
                #"{"viewport_height": 1.7976931348623157e308, "item_heights": [10, 6.985441083371519e292]}"#,
                #"{"viewport_height": 640, "item_heights": [1, 1, 1], "spacing": 1e308}"#,
                #"{"viewport_height": 640, "item_heights": [1], "top_inset": 1e308, "bottom_inset": 1e308}"#,
            ]
            for body in bodies {
                let reply = try await server.request(.post, Self.path, rawBody: body)
                #expect(reply.status == .unprocessableContent, "\(body): \(reply.status) \(reply.text)")
                #expect(reply.text != "{}", "\(body)")
                let error = try reply.error().error
                #expect(error.code == .invalidLayoutInput, "\(body)")
                #expect(!error.message.isEmpty)
            }
        }
    }

    @Test func malformedRequestsAre400AndOversizedBodies413() async throws {
        try await TestServer.run { server in
            let cases: [(String, APIErrorCode, String?)] = [
                (#"{"item_heights": [10]}"#, .invalidField, "viewport_height"),
                (#"{"viewport_height": 640}"#, .invalidField, "item_heights"),
                (#"{"viewport_height": "640", "item_heights": [10]}"#, .invalidField, "viewport_height"),
                (#"{"viewport_height": 640, "item_heights": [10, "x"]}"#, .invalidField, "item_heights[1]"),
                (#"{"viewport_height": 640, "item_heights": 10}"#, .invalidField, "item_heights"),
                (#"{"viewport_height": 640, "item_heights": [], "spacing": true}"#, .invalidField, "spacing"),
                (#"{"viewport_height": null, "item_heights": []}"#, .invalidField, "viewport_height"),
                // Beyond Double's range: the JSON parser refuses it, so it can never arrive as infinity.
                (#"{"viewport_height": 1e400, "item_heights": []}"#, .invalidJSON, nil),
                (#"[640]"#, .invalidJSON, nil),
                (#"{"viewport_height": 640,"#, .invalidJSON, nil),
                ("", .invalidJSON, nil),
            ]
            for (body, code, field) in cases {
                let reply = try await server.request(.post, Self.path, rawBody: body)
                #expect(reply.status == .badRequest, "\(body): \(reply.text)")
                let error = try reply.error().error
                #expect(error.code == code, "\(body): \(error.message)")
                if let field { #expect(error.message.contains("`\(field)`"), "\(body): \(error.message)") }
            }
            let huge = #"{"viewport_height": 640, "item_heights": ["# + String(repeating: "1.000000000,", count: 7_000)
                + "1]}"
            let tooLarge = try await server.request(.post, Self.path, rawBody: huge)
            #expect(tooLarge.status == .contentTooLarge)
            #expect(try tooLarge.error().error.code == .payloadTooLarge)
        }
    }
}
