import Foundation
import ScrollbackMedia
import ScrollbackModels
import ScrollbackStore

/// Checks on what a client sends, made before anything reaches SQL. Each
/// failure is a 422 whose message says what to fix. The numbers are
/// ``APILimits``; lengths count Unicode code points.
enum Validation {
    static let maxBodyCharacters = APILimits.maxMessageBodyLength
    static let maxTitleCharacters = APILimits.maxTitleLength
    static let maxClientIDCharacters = APILimits.maxClientIDLength
    static let maxMembers = APILimits.maxMembers

    static func messageBody(_ body: String) throws -> String {
        try visibleText(
            body, field: "body", code: .invalidMessageBody, maxLength: maxBodyCharacters, allowingLineBreaks: true,
            ifInvisible: " A message without text needs `attachments`.")
    }

    /// A reply's parent: a seq, so a whole number from 1.
    static func replyTo(_ seq: Int64?) throws -> Int64? {
        guard let seq else { return nil }
        guard seq >= 1 else {
            throw APIError.unprocessable(.invalidReplyTo, "Field `reply_to` must be the seq of a message (1 or more).")
        }
        return seq
    }

    /// A send's attachments: at most ``APILimits/maxAttachmentsPerMessage``
    /// upload ids, none twice.
    static func attachments(_ ids: [UUID]) throws -> [UUID] {
        guard ids.count <= APILimits.maxAttachmentsPerMessage else {
            throw APIError.unprocessable(
                .invalidAttachments,
                "Field `attachments` can list at most \(APILimits.maxAttachmentsPerMessage) uploads (it lists \(ids.count)).")
        }
        guard Set(ids).count == ids.count else {
            throw APIError.unprocessable(.invalidAttachments, "Field `attachments` lists an upload more than once.")
        }
        return ids
    }

    /// An upload's file name: 1 to ``APILimits/maxFilenameLength`` code
    /// points, no control characters, no path separators, and no
    /// bidirectional controls (U+061C, U+200E, U+200F, U+202A to U+202E,
    /// U+2066 to U+2069): `invoice\u{202E}gnp.exe` shows as
    /// `invoiceexe.png`, an executable dressed as a picture.
    static func filename(_ name: String) throws -> String {
        if let bidi = name.unicodeScalars.first(where: \.properties.isBidiControl) {
            let code = "U+" + String(bidi.value, radix: 16, uppercase: true)
            throw APIError.unprocessable(
                .invalidUpload,
                "Field `filename` must not contain bidirectional controls, which make a name show other than it is: "
                    + "it has \(code) \(bidi.properties.name ?? "").")
        }
        let length = name.unicodeScalars.count
        guard (1...APILimits.maxFilenameLength).contains(length),
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "/" || $0 == "\\" }),
            name != ".", name != ".."
        else {
            throw APIError.unprocessable(
                .invalidUpload,
                "Field `filename` must be a file name of 1 to \(APILimits.maxFilenameLength) characters, without control characters, `/` or `\\`.")
        }
        return name
    }

    /// `name` without bidirectional controls: how a file name stored before
    /// they were refused is given in a download's `Content-Disposition`.
    static func withoutBidiControls(_ name: String) -> String {
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: name.unicodeScalars.filter { !$0.properties.isBidiControl })
        return String(scalars)
    }

    /// An upload's declared content type: `type/subtype` (parameters allowed).
    static func contentType(_ text: String) throws -> String {
        let bare = (text.split(separator: ";", maxSplits: 1).first.map(String.init) ?? text)
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard text.utf8.count <= APILimits.maxContentTypeLength,
            bare.wholeMatch(of: #/[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*/#) != nil
        else {
            throw APIError.unprocessable(
                .invalidUpload,
                "Field `content_type` must be a media type such as image/jpeg, at most \(APILimits.maxContentTypeLength) characters.")
        }
        return bare
    }

    /// A device id chosen by the app: 1 to ``APILimits/maxDeviceIDLength``
    /// of A-Z a-z 0-9 . _ : -.
    static func deviceID(_ text: String) throws -> String {
        guard (1...APILimits.maxDeviceIDLength).contains(text.utf8.count),
            text.utf8.allSatisfy({ $0 < 0x80 && (Character(Unicode.Scalar($0)).isLetter || Character(Unicode.Scalar($0)).isNumber || ".:_-".utf8.contains($0)) })
        else {
            throw APIError.unprocessable(
                .invalidDevice,
                "The device id must be 1 to \(APILimits.maxDeviceIDLength) characters of A-Z a-z 0-9 . _ : - (got \(text.utf8.count) characters).")
        }
        return text
    }

    /// A device registration: a known platform, a token of printable ASCII,
    /// an `app_id` of a bundle id's or a package's characters, and an
    /// environment for APNs only (production when not given).
    static func device(_ request: RegisterDeviceRequest) throws -> RegisteredDevice {
        guard let platform = DevicePlatform(rawValue: request.platform) else {
            throw APIError.unprocessable(
                .invalidDevice,
                "Field `platform` must be one of \(DevicePlatform.allCases.map(\.rawValue).joined(separator: ", ")) (got \(request.platform.prefix(40))).")
        }
        let token = request.token
        guard (1...APILimits.maxDeviceTokenLength).contains(token.utf8.count),
            token.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw APIError.unprocessable(
                .invalidDevice,
                "Field `token` must be 1 to \(APILimits.maxDeviceTokenLength) printable ASCII characters without spaces (got \(token.utf8.count) bytes).")
        }
        if let appID = request.appId {
            guard (1...APILimits.maxDeviceAppIDLength).contains(appID.utf8.count),
                appID.utf8.allSatisfy({ byte in
                    (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                        || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                })
            else {
                throw APIError.unprocessable(
                    .invalidDevice,
                    "Field `app_id` must be 1 to \(APILimits.maxDeviceAppIDLength) characters of A-Z a-z 0-9 . _ - (a bundle id or an Android package; got \(appID.utf8.count) bytes).")
            }
        }
        var environment: DeviceEnvironment?
        if let given = request.environment {
            guard platform == .apns else {
                throw APIError.unprocessable(
                    .invalidDevice, "Field `environment` is for `apns` devices only (this one is `\(platform.rawValue)`).")
            }
            guard let known = DeviceEnvironment(rawValue: given) else {
                throw APIError.unprocessable(
                    .invalidDevice,
                    "Field `environment` must be one of \(DeviceEnvironment.allCases.map(\.rawValue).joined(separator: ", ")) (got \(given.prefix(40))).")
            }
            environment = known
        } else if platform == .apns {
            environment = .production
        }
        return RegisteredDevice(platform: platform, token: token, appID: request.appId, environment: environment)
    }

    /// A client-computed blurhash (https://blurha.sh).
    static func blurhash(_ text: String) throws -> String {
        do {
            return try Blurhash(validating: text).string
        } catch {
            throw APIError.unprocessable(.invalidUpload, "Field `blurhash` is not a blurhash: \(error.reason).")
        }
    }

    /// A reaction's emoji (`Emoji.rule`).
    static func emoji(_ text: String) throws -> String {
        guard Emoji.isValid(text) else {
            throw APIError.unprocessable(.invalidEmoji, "The reaction must be \(Emoji.rule).")
        }
        return text
    }

    static func clientID(_ clientID: String?) throws -> String? {
        guard let clientID else { return nil }
        let length = clientID.unicodeScalars.count
        guard (1...maxClientIDCharacters).contains(length),
            !clientID.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw APIError.unprocessable(
                .invalidClientID,
                "Field `client_id` must be 1 to \(maxClientIDCharacters) characters with no control characters.")
        }
        return clientID
    }

    static func readSeq(_ seq: Int64) throws -> Int64 {
        guard seq >= 0 else { throw APIError.unprocessable(.invalidReadSeq, "Field `seq` must be 0 or more.") }
        return seq
    }

    static func title(_ title: String?) throws -> String? {
        guard let title else { return nil }
        return try visibleText(
            title, field: "title", code: .invalidTitle, maxLength: maxTitleCharacters, allowingLineBreaks: false,
            ifInvisible: " Omit it or send null for no title.")
    }

    /// A display name: visible text of 1 to ``APILimits/maxDisplayNameLength``
    /// code points, no control characters, no line breaks.
    static func displayName(_ name: String) throws -> String {
        guard !name.isEmpty else {
            throw APIError.unprocessable(
                .invalidProfile, "Field `display_name` must not be empty; send null to clear it.")
        }
        return try visibleText(
            name, field: "display_name", code: .invalidProfile, maxLength: APILimits.maxDisplayNameLength,
            allowingLineBreaks: false, ifInvisible: " Send null to clear it.")
    }

    /// The URL of an image the operator keeps on their own servers
    /// (``ProfileImage/isValidURL(_:)``).
    static func imageURL(_ text: String, field: String) throws -> String {
        guard ProfileImage.isValidURL(text) else {
            throw APIError.unprocessable(
                .invalidProfile,
                "Field `\(field)` must be an https URL of at most \(APILimits.maxImageURLBytes) bytes, with a host, and a path and query percent-encoded.")
        }
        return text
    }

    /// An image given by URL, with its size and blurhash when known.
    static func profileImage(_ image: ProfileImage, field: String) throws -> ProfileImage {
        var image = image
        image.url = try imageURL(image.url, field: "\(field).url")
        for (name, value) in [("width", image.width), ("height", image.height)] {
            if let value, !(1...65_535).contains(value) {
                throw APIError.unprocessable(
                    .invalidProfile, "Field `\(field).\(name)` must be a number of pixels from 1 to 65535.")
            }
        }
        if let blurhash = image.blurhash {
            do {
                image.blurhash = try Blurhash(validating: blurhash).string
            } catch {
                throw APIError.unprocessable(.invalidProfile, "Field `\(field).blurhash` is not a blurhash: \(error.reason).")
            }
        }
        return image
    }

    /// A conversation's description: text people read, like a title, with
    /// line breaks, at most ``APILimits/maxDescriptionLength`` code points.
    static func description(_ description: String?) throws -> String? {
        guard let description else { return nil }
        return try visibleText(
            description, field: "description", code: .invalidDescription, maxLength: APILimits.maxDescriptionLength,
            allowingLineBreaks: true, ifInvisible: " Omit it or send null for no description.")
    }

    /// A message's app-defined `type` (``MessageType``).
    static func messageType(_ type: String?) throws -> String? {
        guard let type else { return nil }
        guard MessageType.isValid(type) else {
            throw APIError.unprocessable(
                .invalidMessageType,
                "Field `type` must be 1 to \(APILimits.maxMessageTypeLength) characters of a-z 0-9 _ . - starting with a letter, such as order_status.")
        }
        return type
    }

    /// Text people read, by the rule of ``VisibleText``: something visible,
    /// no control characters but a body's line breaks and tabs, and at most
    /// `maxLength` code points.
    static func visibleText(
        _ text: String, field: String, code: APIErrorCode, maxLength: Int, allowingLineBreaks: Bool,
        ifInvisible hint: String = ""
    ) throws -> String {
        if let control = VisibleText.forbiddenControl(in: text, allowingLineBreaks: allowingLineBreaks) {
            let allowed = allowingLineBreaks ? " other than tab, line feed and carriage return" : ""
            throw APIError.unprocessable(
                code,
                "Field `\(field)` must not contain control characters\(allowed) (it has U+\(hex(control))).")
        }
        if !VisibleText.showsSomething(text) {
            throw APIError.unprocessable(
                code,
                "Field `\(field)` must contain some visible text, not only whitespace or invisible characters.\(hint)")
        }
        let length = text.unicodeScalars.count
        if length > maxLength {
            throw APIError.unprocessable(
                code,
                "Field `\(field)` must be at most \(maxLength) characters, counted as Unicode code points (it has \(length)).")
        }
        return text
    }

    private static func hex(_ scalar: Unicode.Scalar) -> String {
        let digits = String(scalar.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// A role, as `PATCH .../members/{user_id}` takes it.
    static func role(_ text: String) throws -> MemberRole {
        guard let role = MemberRole(rawValue: text) else {
            let roles = MemberRole.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", ")
            throw APIError.unprocessable(.invalidRole, "Field `role` must be one of \(roles).")
        }
        return role
    }

    /// Slow mode's period, 0 (off) to ``APILimits/maxSlowModeSeconds``.
    static func slowMode(_ seconds: Int) throws -> Int {
        guard (0...APILimits.maxSlowModeSeconds).contains(seconds) else {
            throw APIError.unprocessable(
                .invalidSlowMode,
                "Field `slow_mode_seconds` must be a whole number of seconds from 0 (off) to \(APILimits.maxSlowModeSeconds) (6 hours).")
        }
        return seconds
    }

    /// A report's reason, one of ``ReportReason``.
    static func reportReason(_ text: String) throws -> ReportReason {
        guard let reason = ReportReason(rawValue: text) else {
            let reasons = ReportReason.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", ")
            throw APIError.unprocessable(.invalidReport, "Field `reason` must be one of \(reasons).")
        }
        return reason
    }

    /// A report's note: optional, at most ``APILimits/maxReportNoteLength`` characters.
    static func reportNote(_ note: String?) throws -> String? {
        guard let note, !note.isEmpty else { return nil }
        guard note.unicodeScalars.count <= APILimits.maxReportNoteLength else {
            throw APIError.unprocessable(
                .invalidReport, "Field `note` must be at most \(APILimits.maxReportNoteLength) characters.")
        }
        return note
    }

    /// The end of a ban: an RFC 3339 time in the future.
    static func banEnd(_ text: String) throws -> Date {
        guard let date = ScrollbackJSON.parseTimestamp(text), date > Date() else {
            throw APIError.unprocessable(
                .invalidBan,
                "`until` must be a time in the future (RFC 3339, such as 2026-12-24T18:00:00Z); leave it out to ban until the ban is lifted.")
        }
        return date
    }

    static func userID(_ id: String, field: String) throws -> UserID {
        guard let user = UserID(validating: id) else {
            throw APIError.unprocessable(.invalidUserID, "`\(field)` must be a user id of \(UserID.rule).")
        }
        return user
    }

    static func members(_ given: [String]?, creator: UserID) throws -> [UserID] {
        let given = given ?? []
        if given.count > maxMembers {
            throw APIError.unprocessable(
                .tooManyMembers, "Field `members` can list at most \(maxMembers) user ids (it lists \(given.count)).")
        }
        let members = try given.enumerated().map { index, member in try userID(member, field: "members[\(index)]") }
        let distinct = Set(members + [creator])
        if distinct.count > maxMembers {
            throw APIError.unprocessable(
                .tooManyMembers,
                "A conversation can have at most \(maxMembers) members, creator included (this one would have \(distinct.count)).")
        }
        return Array(distinct).sorted()
    }
}
