import Foundation
import ScrollbackModels
import Testing

@Suite struct APIErrorCodeTests {
    @Test func anUnknownCodeFromANewerServerDecodesAndKeepsItsSpelling() throws {
        let json = #"{"error":{"code":"quota_exceeded","message":"Slow down."}}"#
        let body = try ScrollbackJSON.decoder().decode(APIErrorBody.self, from: Data(json.utf8))
        #expect(body.error.code == APIErrorCode(rawValue: "quota_exceeded"))
        #expect(body.error.code.rawValue == "quota_exceeded")
        #expect(!APIErrorCode.allCases.contains(body.error.code))
        #expect(String(decoding: try ScrollbackJSON.encoder().encode(body), as: UTF8.self) == json)
    }

    @Test func aKnownCodeDecodesToItsStaticMember() throws {
        let json = #"{"error":{"code":"outcome_unknown","message":"Retry with the same client_id."}}"#
        let body = try ScrollbackJSON.decoder().decode(APIErrorBody.self, from: Data(json.utf8))
        #expect(body.error.code == .outcomeUnknown)
    }

    @Test func knownCodesAreDistinctAndSnakeCase() {
        let raw = APIErrorCode.allCases.map(\.rawValue)
        #expect(Set(raw).count == raw.count)
        for code in raw {
            #expect(code.wholeMatch(of: #/[a-z]+(_[a-z]+)*/#) != nil, "\(code)")
        }
        #expect(APIErrorCode.allCases.contains(.serviceUnavailable))
        #expect(APIErrorCode.allCases.contains(.outcomeUnknown))
    }

    @Test func aCodeThatIsNotAStringIsRefused() {
        let json = #"{"error":{"code":7,"message":"x"}}"#
        #expect(throws: DecodingError.self) {
            try ScrollbackJSON.decoder().decode(APIErrorBody.self, from: Data(json.utf8))
        }
    }
}
