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
