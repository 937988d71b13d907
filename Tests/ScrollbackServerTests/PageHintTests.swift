import Foundation
import HTTPTypes
import ScrollbackLayout
import ScrollbackModels
import Testing

/// Page hints (`viewport_height`, `viewport_width`, text metrics) and
/// `limit=fill` on `GET /v1/conversations/{id}/messages`.
@Suite struct PageHintTests {
    /// Bodies of very different heights: one line, several wrapped lines,
    /// explicit line breaks, and lengths whose wrapping depends on the width.
    static func body(_ index: Int) -> String {
        switch index % 5 {
        case 0: "ok"
        case 1: String(repeating: "word ", count: 12 + index % 7)  // 60-90 characters
        case 2: "line one\nline two\nline three"
        case 3: String(repeating: "x", count: 150 + index)
        default: "message \(index)"
        }
    }

    /// A conversation of `count` messages with `body(1...count)`, written
    /// through the store (the HTTP send path has its own tests).
    static func conversation(_ server: TestServer, messages count: Int) async throws -> UUID {
        let conversation = try await server.createConversation(as: "alice")
        for index in 1...max(count, 1) where count > 0 {
            _ = try await server.store.send(to: conversation.id, from: "alice", body: body(index), clientID: nil)
        }
        return conversation.id
    }

    static func page(_ server: TestServer, _ id: UUID, _ query: String) async throws -> TestServer.Reply {
        try await server.request(.get, "/v1/conversations/\(id)/messages?\(query)", as: "alice")
    }

    static func content(_ heights: some Collection<Double>, spacing: Double) -> Double {
        heights.reduce(0, +) + spacing * Double(max(heights.count - 1, 0))
    }

    @Test func hintsAppearOnlyWhenAViewportIsGiven() async throws {
        try await TestServer.run { server in
            let id = try await Self.conversation(server, messages: 4)
            let plain = try await Self.page(server, id, "limit=3")
            #expect(plain.status == .ok)
            let plainObject = try #require(try JSONSerialization.jsonObject(with: plain.body) as? [String: Any])
            #expect(plainObject["layout"] == nil)
            #expect(Set(plainObject.keys).isSuperset(of: ["messages", "has_older", "has_newer", "last_seq"]))
            #expect(try plain.decode(MessagePage.self).layout == nil)

            let hinted = try await Self.page(server, id, "limit=3&viewport_height=640")
            #expect(hinted.status == .ok, "\(hinted.text)")
            let object = try #require(try JSONSerialization.jsonObject(with: hinted.body) as? [String: Any])
            // The hints add one key and change no other.
            #expect(Set(object.keys) == Set(plainObject.keys).union(["layout"]))
            let layout = try #require(object["layout"] as? [String: Any])
            #expect(layout["estimated"] as? Bool == true)
            #expect(
                Set(try #require(layout["metrics"] as? [String: Any]).keys)
                    == [
                        "font_size", "line_height", "average_character_width", "horizontal_padding", "vertical_padding",
                        "max_width_fraction", "max_attachment_height", "attachment_row_height", "attachment_spacing",
                        "spacing",
                    ])
            // The page itself is the same page.
            let page = try hinted.decode(MessagePage.self)
            let plainPage = try plain.decode(MessagePage.self)
            #expect(page.messages == plainPage.messages)
            #expect(page.hasOlder == plainPage.hasOlder && page.hasNewer == plainPage.hasNewer)
        }
    }

    @Test func heightsAreTheTextMetricsEstimatesOfTheStoredBodies() async throws {
        try await TestServer.run { server in
            let id = try await Self.conversation(server, messages: 10)
            // Defaults: width 390, the standard metrics, spacing 8.
            let defaulted = try await Self.page(server, id, "viewport_height=640").decode(MessagePage.self)
            let hints = try #require(defaulted.layout)
            let bodies = defaulted.messages.map(\.body)
            #expect(bodies.count == 10 && defaulted.messages.first?.seq == 10)
            let expected = try TextMetrics.standard.estimatedHeights(of: bodies, viewportWidth: 390)
            #expect(hints.itemHeights == expected)
            #expect(hints.viewportWidth == 390 && hints.viewportHeight == 640)
            #expect(
                hints.metrics
                    == .init(
                        fontSize: 17, lineHeight: 22, averageCharacterWidth: 8.5, horizontalPadding: 12,
                        verticalPadding: 8, maxWidthFraction: 0.75, maxAttachmentHeight: 320, attachmentRowHeight: 56,
                        attachmentSpacing: 4, spacing: 8))
            #expect(hints.contentHeight == Self.content(expected, spacing: 8))
            #expect(hints.bottomPadding == max(640 - hints.contentHeight, 0))
            #expect(hints.estimated)

            // Every metric can be set; the estimates follow them.
            let custom = try await Self.page(
                server, id,
                "viewport_height=2000&viewport_width=800&font_size=15&line_height=20&average_character_width=7.5"
                    + "&horizontal_padding=10&vertical_padding=6&max_width_fraction=0.8&spacing=4&limit=6"
            ).decode(MessagePage.self)
            let customHints = try #require(custom.layout)
            let metrics = TextMetrics(
                fontSize: 15, lineHeight: 20, averageCharacterWidth: 7.5, horizontalPadding: 10, verticalPadding: 6,
                maxWidthFraction: 0.8)
            let customExpected = try metrics.estimatedHeights(of: custom.messages.map(\.body), viewportWidth: 800)
            #expect(custom.messages.count == 6)
            #expect(customHints.itemHeights == customExpected)
            #expect(customHints.itemHeights != (try TextMetrics.standard.estimatedHeights(
                of: custom.messages.map(\.body), viewportWidth: 390)))
            #expect(
                customHints.metrics
                    == .init(
                        fontSize: 15, lineHeight: 20, averageCharacterWidth: 7.5, horizontalPadding: 10,
                        verticalPadding: 6, maxWidthFraction: 0.8, maxAttachmentHeight: 320, attachmentRowHeight: 56,
                        attachmentSpacing: 4, spacing: 4))
            #expect(customHints.contentHeight == Self.content(customExpected, spacing: 4))
            // Short content in a tall viewport: the padding fills the rest.
            #expect(customHints.bottomPadding == 2000 - customHints.contentHeight)
            #expect(customHints.bottomPadding > 0)
        }
    }

    /// Pictures and files sent through the upload API count in the hints
    /// from the sizes the server recorded: a picture wider than the column is
    /// scaled down to it, a small one keeps its pixel size, a file is a row.
    @Test func heightsIncludeTheBoxesOfStoredAttachments() async throws {
        try await UploadAPITests.withFlow { flow in
            func uploaded(_ filename: String, _ type: String, _ bytes: [UInt8]) async throws -> UUID {
                let ticket = try await flow.upload(filename, type, bytes)
                let put = try await flow.put(ticket, bytes)
                try #require(put.status == .ok, "\(put.text)")
                return ticket.uploadId
            }
            func send(_ body: String, _ attachments: [UUID]) async throws {
                let sent = try await flow.send(body, attachments: attachments)
                try #require(sent.status == .created, "\(sent.text)")
            }
            let big = try await uploaded("big.png", "image/png", UploadAPITests.png(width: 1200, height: 900))
            let small = try await uploaded("small.png", "image/png", UploadAPITests.png(width: 100, height: 80))
            let notes = try await uploaded("notes.txt", "text/plain", Array("the minutes of the meeting".utf8))
            let tall = try await uploaded("tall.png", "image/png", UploadAPITests.png(width: 600, height: 1600))
            let file = try await uploaded("more.txt", "text/plain", Array("more notes".utf8))
            try await send("look at this", [big])  // seq 1
            try await send("tiny", [small])  // seq 2
            try await send("", [notes])  // seq 3
            try await send("", [tall, file])  // seq 4
            try await send("just text", [])  // seq 5

            // Defaults: a 390 pt screen, so a 292.5 pt column; pictures at most 320 pt tall.
            let oneLine = 22.0 + 2 * 8
            let page = try await Self.page(flow.server, flow.conversation, "viewport_height=640")
                .decode(MessagePage.self)
            #expect(page.messages.map(\.seq) == [5, 4, 3, 2, 1])
            #expect(page.messages[4].attachments.first?.width == 1200)
            let heights = try #require(page.layout).itemHeights
            let expected: [Double] = [
                oneLine,  // text only, as before
                320 + 4 + 56,  // 600 x 1600 scaled to 120 x 320, 4 pt gap, a file row; no text line
                56,  // a file row alone
                oneLine + 80,  // 100 x 80 is narrower than the column: never scaled up
                oneLine + 219.375,  // 1200 x 900 scaled down to the column: 900 * 292.5 / 1200
            ]
            #expect(heights == expected)
            #expect(page.layout?.contentHeight == heights.reduce(0, +) + 4 * 8)

            // A tablet-wide screen (column 768): the wide picture is now held by the
            // 320 pt maximum height; box metrics can be changed like the text's.
            let wide = try await Self.page(
                flow.server, flow.conversation,
                "viewport_height=640&viewport_width=1024&attachment_row_height=44&attachment_spacing=10")
                .decode(MessagePage.self)
            let wideExpected: [Double] = [oneLine, 320 + 10 + 44, 44, oneLine + 80, oneLine + 320]
            #expect(try #require(wide.layout).itemHeights == wideExpected)
            let smaller = try await Self.page(flow.server, flow.conversation, "viewport_height=640&max_attachment_height=100")
                .decode(MessagePage.self)
            let smallerExpected: [Double] = [oneLine, 100 + 4 + 56, 56, oneLine + 80, oneLine + 100]
            #expect(try #require(smaller.layout).itemHeights == smallerExpected)
        }
    }

    @Test func badHintParametersAre400() async throws {
        try await TestServer.run { server in
            let id = try await Self.conversation(server, messages: 2)
            let cases: [(String, String)] = [
                ("viewport_height=0", "viewport_height"),
                ("viewport_height=-5", "viewport_height"),
                ("viewport_height=%2B5", "viewport_height"),
                ("viewport_height=abc", "viewport_height"),
                ("viewport_height=1e400", "viewport_height"),
                ("viewport_height=1e", "viewport_height"),
                ("viewport_height=1e%2B", "viewport_height"),
                ("viewport_height=1e-", "viewport_height"),
                ("viewport_height=0x10", "viewport_height"),
                ("viewport_height=1e6", "viewport_height"),
                ("viewport_height=nan", "viewport_height"),
                ("viewport_height=inf", "viewport_height"),
                ("viewport_height=", "viewport_height"),
                ("viewport_height=.5", "viewport_height"),
                ("viewport_height=5.", "viewport_height"),
                ("viewport_height=1.2.3", "viewport_height"),
                ("viewport_height=100001", "viewport_height"),
                ("viewport_height=640&viewport_height=640", "viewport_height"),
                ("viewport_height=640&viewport_width=0", "viewport_width"),
                ("viewport_height=640&line_height=0", "line_height"),
                ("viewport_height=640&font_size=0", "font_size"),
                ("viewport_height=640&average_character_width=0", "average_character_width"),
                ("viewport_height=640&max_width_fraction=1.5", "max_width_fraction"),
                ("viewport_height=640&horizontal_padding=10001", "horizontal_padding"),
                ("viewport_height=640&vertical_padding=-1", "vertical_padding"),
                ("viewport_height=640&spacing=-1", "spacing"),
                ("viewport_height=640&spacing=10001", "spacing"),
                ("viewport_height=640&max_attachment_height=0", "max_attachment_height"),
                ("viewport_height=640&attachment_row_height=10001", "attachment_row_height"),
                ("viewport_height=640&attachment_spacing=-1", "attachment_spacing"),
                ("attachment_spacing=4", "attachment_spacing"),
                ("viewport_width=390", "viewport_width"),
                ("spacing=8", "spacing"),
                ("line_height=20", "line_height"),
                ("limit=fill", "viewport_height"),
                ("limit=fill&viewport_width=390", "viewport_height"),
                ("limit=filler&viewport_height=640", "limit"),
            ]
            for (query, field) in cases {
                let reply = try await Self.page(server, id, query)
                #expect(reply.status == .badRequest, "\(query): \(reply.text)")
                let error = try reply.error().error
                #expect(error.code == .invalidParameter, "\(query)")
                #expect(error.message.contains(field), "\(query): \(error.message)")
            }
            // Zero paddings are fine; decimals are fine.
            let zero = try await Self.page(server, id, "viewport_height=640.5&horizontal_padding=0&vertical_padding=0")
            #expect(zero.status == .ok, "\(zero.text)")
            #expect(try zero.decode(MessagePage.self).layout?.viewportHeight == 640.5)
            // A number's usual text form may have an exponent (JavaScript and
            // Python write 1e-7 and 5e-324 so); openapi.yaml types these as numbers.
            for (text, value) in [("6.4e2", 640.0), ("64000E-2", 640.0), ("6.4e%2B2", 640.0), ("5e-324", 5e-324)] {
                let reply = try await Self.page(server, id, "viewport_height=\(text)")
                #expect(reply.status == .ok, "\(text): \(reply.text)")
                #expect(try reply.decode(MessagePage.self).layout?.viewportHeight == value, "\(text)")
            }
        }
    }

    /// For every anchor: the `limit=fill` page is exactly the `limit=N` page
    /// for the smallest N whose estimates cover two viewports.
    @Test func fillReturnsTheSmallestPageCoveringTwoScreens() async throws {
        try await TestServer.run { server in
            let id = try await Self.conversation(server, messages: 80)
            // Several screen sizes, so that both odd and even counts occur
            // (around an anchor, an odd page splits unevenly).
            let anchors = [
                "", "&before=60", "&after=10", "&around=40", "&around=78", "&around=3", "&after=70", "&around=1000",
                "&before=1000",
            ]
            for (viewport, anchor) in [300.0, 420, 555].flatMap({ size in anchors.map { (size, $0) } }) {
                let hints = "viewport_height=\(Int(viewport))&viewport_width=390"
                let reply = try await Self.page(server, id, "limit=fill&\(hints)\(anchor)")
                #expect(reply.status == .ok, "\(anchor): \(reply.text)")
                let fill = try reply.decode(MessagePage.self)
                let layout = try #require(fill.layout)
                let count = fill.messages.count
                #expect(count >= 1 && count <= 200)
                #expect(layout.itemHeights.count == count)
                #expect(
                    layout.itemHeights
                        == (try TextMetrics.standard.estimatedHeights(of: fill.messages.map(\.body), viewportWidth: 390)))
                #expect(layout.contentHeight == Self.content(layout.itemHeights, spacing: 8))

                // Same messages and flags as limit=N with the same anchor.
                let same = try await Self.page(server, id, "limit=\(count)&\(hints)\(anchor)").decode(MessagePage.self)
                #expect(fill.messages.map(\.seq) == same.messages.map(\.seq), "\(viewport) \(anchor)")
                #expect(fill.hasOlder == same.hasOlder && fill.hasNewer == same.hasNewer, "\(viewport) \(anchor)")
                #expect(fill.lastSeq == 80)

                // Enough: two screens, unless the anchor's side of the conversation runs out.
                let exhausted = count == (try await Self.page(server, id, "limit=200\(anchor)")
                    .decode(MessagePage.self).messages.count)
                #expect(layout.contentHeight >= 2 * viewport || exhausted, "\(viewport) \(anchor)")
                // Minimal: one message fewer falls short.
                if count > 1 {
                    let smaller = try await Self.page(server, id, "limit=\(count - 1)&\(hints)\(anchor)")
                        .decode(MessagePage.self)
                    #expect(try #require(smaller.layout).contentHeight < 2 * viewport, "\(viewport) \(anchor)")
                }
            }
            // The newest fill page has history behind it.
            let newest = try await Self.page(server, id, "limit=fill&viewport_height=300").decode(MessagePage.self)
            #expect(newest.messages.first?.seq == 80 && newest.hasOlder && !newest.hasNewer)
            #expect(newest.messages.count < 80)
        }
    }

    @Test func fillOnAShortConversationReturnsEverythingWithPadding() async throws {
        try await TestServer.run { server in
            let id = try await Self.conversation(server, messages: 3)
            let page = try await Self.page(server, id, "limit=fill&viewport_height=640").decode(MessagePage.self)
            #expect(page.messages.map(\.seq) == [3, 2, 1])
            #expect(!page.hasOlder && !page.hasNewer)
            let layout = try #require(page.layout)
            #expect(layout.bottomPadding == 640 - layout.contentHeight && layout.bottomPadding > 0)

            let empty = try await Self.conversation(server, messages: 0)
            let none = try await Self.page(server, empty, "limit=fill&viewport_height=640").decode(MessagePage.self)
            #expect(none.messages.isEmpty && none.layout?.itemHeights == [] && none.layout?.bottomPadding == 640)
        }
    }

    @Test func fillNeverReturnsMoreThan200() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            for index in 1...205 {
                _ = try await server.store.send(to: conversation.id, from: "alice", body: "m\(index)", clientID: nil)
            }
            // 205 one-line messages (38 pt + 8 spacing) cannot cover 2 x 100000 points.
            let page = try await Self.page(server, conversation.id, "limit=fill&viewport_height=100000")
                .decode(MessagePage.self)
            #expect(page.messages.count == 200)
            #expect(page.messages.first?.seq == 205 && page.messages.last?.seq == 6)
            #expect(page.hasOlder && !page.hasNewer)
            #expect(page.layout?.itemHeights.count == 200)
        }
    }
}
