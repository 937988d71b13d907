import Foundation
import ScrollbackModels
import Testing

/// The one rule of custom data (`CustomData`) and of a message's `type`.
@Suite struct CustomDataTests {
    struct Order: Codable, Equatable {
        var id: String
        var total: Double
        var lines: [Int]
    }

    @Test func anAppsOwnTypeRoundTripsAsData() throws {
        let order = Order(id: "o-1", total: 9.75, lines: [3, 1])
        let data = try CustomData(encoding: order)
        #expect(try data.decode(Order.self) == order)
        #expect(data.json == #"{"id":"o-1","lines":[3,1],"total":9.75}"#)
        let message = Message(
            conversationId: UUID(), seq: 1, sender: "a", body: "", clientId: nil, createdAt: Date(), version: 1,
            data: data, type: "order")
        #expect(try message.data(as: Order.self) == order)
        // Read back from the wire (and from what the database normalises: spaces, key order).
        let again = try CustomData(json: Array(#"{"total": 9.75, "lines": [3, 1], "id": "o-1"}"#.utf8))
        #expect(again == data)
    }

    @Test func theLimitsAreEnforcedAndNamed() throws {
        #expect(throws: CustomDataError.notAnObject) { try CustomData(json: Array("[1]".utf8)) }
        #expect(throws: CustomDataError.notAnObject) { try CustomData(json: Array("null".utf8)) }
        let deep = #"{"a":{"b":{"c":{"d":{"e":1}}}}}"#
        #expect(throws: CustomDataError.tooDeep(depth: 5)) { try CustomData(json: Array(deep.utf8)) }
        #expect(try CustomData(json: Array(#"{"a":{"b":{"c":{"d":1}}}}"#.utf8)).fields.count == 1)
        let key = String(repeating: "é", count: APILimits.maxCustomDataKeyLength + 1)
        #expect(throws: CustomDataError.keyTooLong(length: 65)) { try CustomData([key: .null]) }
        #expect(try CustomData([String(key.dropLast()): .null]).fields.count == 1)
        let nested = String(repeating: "k", count: 65)
        #expect(throws: CustomDataError.keyTooLong(length: 65)) { try CustomData(["a": .array([.object([nested: .null])])]) }
        #expect(throws: CustomDataError.invalidText) { try CustomData(["a": .string("x\u{0}")]) }
        let filler = String(repeating: "x", count: APILimits.maxCustomDataBytes - 8)
        #expect(try CustomData(["a": .string(filler)]).json.utf8.count == APILimits.maxCustomDataBytes)
        #expect(throws: CustomDataError.tooLarge(bytes: APILimits.maxCustomDataBytes + 1)) {
            try CustomData(["a": .string(filler + "x")])
        }
        for error in [CustomDataError.tooLarge(bytes: 5000), .tooDeep(depth: 5), .keyTooLong(length: 70)] {
            #expect(error.description.contains("\(APILimits.maxCustomDataBytes)") || error.description.contains("\(APILimits.maxCustomDataDepth)")
                || error.description.contains("\(APILimits.maxCustomDataKeyLength)"))
        }
    }

    @Test func wholeNumbersWrittenAsDoublesReadBackEqual() throws {
        let data = try CustomData(json: Array(#"{"a":2.0,"b":1e3,"c":0.5,"d":12345678901234567890}"#.utf8))
        #expect(data.fields["a"] == .integer(2) && data.fields["b"] == .integer(1000) && data.fields["c"] == .number(0.5))
        #expect(try CustomData(json: Array(data.json.utf8)) == data)
    }

    @Test func keysAreWrittenInTheEncodersOrder() throws {
        let data = try CustomData(["b": .null, "B": .null, "é": .null, "a10": .null, "a9": .null, "_": .null, "Z": .null])
        let encoded = String(decoding: try ScrollbackJSON.encoder().encode(data), as: UTF8.self)
        #expect(data.json == encoded)
    }

    @Test func messageTypes() {
        for good in ["order_status", "poll.v2", "a", "x-1", String(repeating: "t", count: APILimits.maxMessageTypeLength)] {
            #expect(MessageType.isValid(good), "\(good)")
        }
        for bad in ["", "Order", "1st", "_x", "with space", "é", String(repeating: "t", count: APILimits.maxMessageTypeLength + 1)] {
            #expect(!MessageType.isValid(bad), "\(bad)")
        }
    }
}
