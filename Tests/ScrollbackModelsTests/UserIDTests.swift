import ScrollbackModels
import Testing

/// The user-id rule: ids as identity providers write them, bounded, with
/// nothing that breaks a line, a path or the reading order.
@Suite struct UserIDTests {
    static let providers = [
        "auth0|5f7c8ec7c33c6c004bbafe82", "google-oauth2|1234", "dave+x@example.com", "user_2abc",
        "bob@example.com", "Xq3pTfU1aFhZ2vNwR8yKcLmE0sJ7",  // a Firebase uid
        "0f8fad5b-d9cb-469f-a165-70867728950e",  // Keycloak, Cognito
        "名前🙂", "用户", "a user: with spaces", "100%", "a?b#c", "(not erased)", "x(erased)", "👨‍👩‍👧",
        "ab\u{200D}c", "e\u{301}",
    ]

    @Test func identityProvidersIdsAreValid() {
        for id in Self.providers {
            #expect(UserID(validating: id)?.rawValue == id, "\(id)")
        }
    }

    @Test func anIdTakesUpTo255CodePointsWhateverTheirBytes() {
        let longest = String(repeating: "🙂", count: APILimits.maxUserIDLength)
        #expect(APILimits.maxUserIDLength == 255)
        #expect(UserID.isValid(longest))
        #expect(longest.utf8.count == APILimits.maxUserIDBytes)
        #expect(UserID.isValid(String(repeating: "a", count: 255)))
        #expect(!UserID.isValid(String(repeating: "a", count: 256)))
        #expect(!UserID.isValid(longest + "a"))
        // Code points, not grapheme clusters: 255 of them in one cluster.
        #expect(UserID.isValid("e" + String(repeating: "\u{301}", count: 254)))
        #expect(!UserID.isValid("e" + String(repeating: "\u{301}", count: 255)))
    }

    @Test func controlsSlashesReservedIdsAndOuterWhiteSpaceAreRefused() {
        var refused = ["", "/", "a/b", "(erased)", " bob", "bob ", "\u{3000}bob", "bob\u{A0}", "a\u{2028}b", "a\u{2029}b"]
        for control in [0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x7F, 0x85, 0x9F] {
            refused.append("a\(Character(Unicode.Scalar(UInt32(control))!))b")
        }
        for bidi in [0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069] {
            refused.append("a\(Character(Unicode.Scalar(UInt32(bidi))!))b")
        }
        for id in refused {
            #expect(!UserID.isValid(id), "\(Array(id.unicodeScalars))")
        }
        #expect(!UserID.isValid(UserID.erased.rawValue) && !UserID.isValid(UserID.system.rawValue))
        #expect(!UserID.isValid(String(UserID.separator)))
    }

    /// Stored, compared and returned exactly: canonically equivalent ids are
    /// two users, as PostgreSQL sees them.
    @Test func idsCompareByteForByte() {
        let composed = UserID(rawValue: "\u{E9}")
        let decomposed = UserID(rawValue: "e\u{301}")
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        #expect(UserID(rawValue: "b") < UserID(rawValue: "名"))
        #expect([UserID("b"), "B", "a", "é", "z"].sorted().map(\.rawValue) == ["B", "a", "b", "z", "é"])
    }
}
