import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackOffline
import ScrollbackTestSupport
import Testing

/// The kit's custom data: sent, edited and read as the app's own types,
/// refused before sending when outside the limits, and kept by the offline
/// store with the messages.
@Suite struct CustomDataClientTests {
    struct Order: Codable, Equatable {
        var id: String
        var status: String
        var total: Double
    }

    struct Theme: Codable, Equatable {
        var color: String
    }

    @Test func theKitSendsEditsAndReadsTheAppsOwnTypes() async throws {
        try await LiveCluster.run { cluster in
            let alice = ClientTests.client(cluster, "alice")
            let bob = ClientTests.client(cluster, "bob")
            let conversation = try await alice.createConversation(
                title: "Shop", members: ["bob"], description: "Orders", data: Theme(color: "green"))
            #expect(try conversation.data(as: Theme.self) == Theme(color: "green") && conversation.description == "Orders")
            let order = Order(id: "o-1", status: "paid", total: 30)
            let sent = try await alice.send("Order paid", to: conversation.id, data: order, type: "order_status")
            #expect(try sent.message.data(as: Order.self) == order && sent.message.type == "order_status")
            let page = try await bob.page(of: conversation.id)
            #expect(try page.messages.first?.data(as: Order.self) == order)

            var shipped = order
            shipped.status = "shipped"
            let edited = try await alice.edit(1, in: conversation.id, data: shipped)
            #expect(try edited.data(as: Order.self) == shipped && edited.body == "Order paid")
            let cleared = try await alice.edit(1, in: conversation.id, data: .some(nil))
            #expect(cleared.data == nil)

            let updated = try await alice.updateConversation(conversation.id, data: Theme(color: "blue"))
            #expect(try updated.data(as: Theme.self) == Theme(color: "blue"))
            let listed = try await bob.conversations()
            #expect(try listed.conversations.first?.data(as: Theme.self) == Theme(color: "blue"))

            // Outside the limits: refused by the kit, nothing sent.
            let deep = ["a": ["b": ["c": ["d": ["e": 1]]]]]
            await #expect(throws: ScrollbackError.self) {
                _ = try await alice.send("deep", to: conversation.id, data: deep)
            }
            await #expect(throws: ScrollbackError.self) {
                _ = try await alice.send("a list", to: conversation.id, data: [1, 2])
            }
            #expect(try await bob.page(of: conversation.id).messages.count == 1)
        }
    }

    @Test func theOfflineStoreKeepsDataAndTypeWithTheMessages() throws {
        let path = OfflineStoreTests.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let id = UUID()
        var message = OfflineStoreTests.message(1, in: id)
        message.data = try CustomData(encoding: Order(id: "o-2", status: "new", total: 4.5))
        message.type = "order_status"
        do {
            let store = try OfflineStore(path: path)
            try store.save(
                WindowChanges(
                    conversationId: id, messages: [message, OfflineStoreTests.message(2, in: id)], segments: [1...2],
                    version: 2, lastSeq: 2, hasOlder: false, readSeqs: [:]))
        }
        let window = try #require(try OfflineStore(path: path).openWindow(of: id))
        let kept = try #require(window.messages.first { $0.seq == 1 })
        #expect(kept.data == message.data && kept.type == "order_status")
        #expect(try kept.data(as: Order.self) == Order(id: "o-2", status: "new", total: 4.5))
        #expect(window.messages.first { $0.seq == 2 }?.data == nil)
    }
}
