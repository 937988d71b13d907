import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ScrollbackLayout
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import Testing

/// openapi.yaml describes exactly the routes the router serves, with the
/// limits and error codes of the code.
@Suite struct APIDescriptionTests {
    /// `(method, path)` pairs under `paths:` in openapi.yaml, paths spelled `/v1/x/{id}`.
    static func documentedRoutes(_ yaml: String) -> Set<String> {
        var routes = Set<String>()
        var inPaths = false
        var path: String?
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" { inPaths = true; continue }
            guard inPaths else { continue }
            if !line.isEmpty && !line.hasPrefix(" ") { break }  // the next top-level key
            if let match = line.wholeMatch(of: #/  (\/[^:]*):/#) {
                path = String(match.1)
            } else if let match = line.wholeMatch(of: #/    (get|post|put|patch|delete):/#), let path {
                routes.insert("\(match.1.uppercased()) \(path)")
            }
        }
        return routes
    }

    @Test func theDescriptionListsEveryRouteAndNoOther() async throws {
        let yaml = try String(contentsOfFile: "openapi.yaml", encoding: .utf8)
        let documented = Self.documentedRoutes(yaml)
        #expect(documented.count > 5)

        // A store that is never run: building the router touches no database.
        let store = ScrollbackStore(
            url: DatabaseURL(host: "127.0.0.1", port: 5432, username: "unused", password: nil, database: nil),
            logger: Logger(label: "unused"))
        let router = buildRouter(
            store: store, tokens: try await TokenAuthority(secret: TestServer.secret),
            live: LiveDelivery(store: store, logger: Logger(label: "unused")))
        // Hummingbird describes captures as OpenAPI does: `/v1/conversations/{id}`.
        // HEAD routes are generated from the GET ones.
        let served = Set(router.routes.filter { $0.method != .head }.map { "\($0.method.rawValue) \($0.path.description)" })
        #expect(served == documented, "served but undocumented: \(served.subtracting(documented)); documented but not served: \(documented.subtracting(served))")
    }

    /// The lines of the block under `path` (keys from the top level down):
    /// the last key's own line and every more indented line after it.
    static func block(_ path: [String], in yaml: String) -> String? {
        var lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)[...]
        var indent = -1
        for key in path {
            let within = lines.dropFirst(indent < 0 ? 0 : 1).prefix { line in
                line.isEmpty || line.prefix(while: { $0 == " " }).count > indent
            }
            guard
                let start = within.firstIndex(where: { line in
                    line.drop(while: { $0 == " " }).hasPrefix("\(key):")
                        && line.prefix(while: { $0 == " " }).count > indent
                })
            else { return nil }
            indent = lines[start].prefix(while: { $0 == " " }).count
            lines = lines[start...]
            let end = lines.dropFirst().firstIndex { line in
                !line.isEmpty && line.prefix(while: { $0 == " " }).count <= indent
            }
            lines = lines[start..<(end ?? lines.endIndex)]
        }
        return lines.joined(separator: "\n")
    }

    /// The number after `name:` in `text` (the first one).
    static func number(_ name: String, in text: String?) -> Double? {
        guard let text, let match = text.firstMatch(of: try! Regex("\\b\(name): ([0-9.]+)")) else { return nil }
        return Double(match.output[1].substring ?? "")
    }

    @Test func theLimitsItStatesAreTheAPILimits() throws {
        let yaml = try String(contentsOfFile: "openapi.yaml", encoding: .utf8)
        func value(_ name: String, _ path: String...) -> Double? {
            Self.number(name, in: Self.block(path, in: yaml))
        }
        let schemas = ["components", "schemas"]
        func schema(_ name: String, _ path: String...) -> String? { Self.block(schemas + [name] + path, in: yaml) }

        let page = (Double(APILimits.pageLimit.lowerBound), Double(APILimits.pageLimit.upperBound))
        for path in [["components", "parameters", "Limit"], schemas + ["MessagePageQuery", "properties", "limit"]] {
            let block = Self.block(path, in: yaml)
            #expect(Self.number("minimum", in: block) == page.0, "\(path)")
            #expect(Self.number("maximum", in: block) == page.1, "\(path)")
            #expect(Self.number("default", in: block) == Double(APILimits.defaultPageLimit), "\(path)")
            #expect(block?.contains("\(APILimits.pageLimit.lowerBound) to \(APILimits.pageLimit.upperBound)") == true)
        }
        let changes = try #require(Self.block(["paths", "/v1/conversations/{id}/changes", "get"], in: yaml))
        let changesLimit = try #require(
            changes.firstMatch(of: #/schema: \{ type: integer, minimum: (\d+), maximum: (\d+), default: (\d+) \}/#))
        #expect(Int(changesLimit.1) == APILimits.changesLimit.lowerBound)
        #expect(Int(changesLimit.2) == APILimits.changesLimit.upperBound)
        #expect(Int(changesLimit.3) == APILimits.defaultChangesLimit)

        #expect(Self.number("maxLength", in: schema("UserID")) == Double(APILimits.maxUserIDLength))
        let imageURL = try #require(schema("ProfileImage", "properties", "url"))
        #expect(imageURL.contains("pattern: '\(ProfileImage.urlPattern.replacingOccurrences(of: "'", with: "''"))'"))
        #expect(Self.number("maxLength", in: imageURL) == Double(APILimits.maxImageURLBytes))
        for name in ["Conversation", "CreateConversationRequest"] {
            #expect(Self.number("maxLength", in: schema(name, "properties", "title")) == Double(APILimits.maxTitleLength))
        }
        #expect(
            Self.number("maxItems", in: schema("CreateConversationRequest", "properties", "members"))
                == Double(APILimits.maxMembers))
        #expect(schema("EditMessageRequest", "properties", "body")?.contains("#/components/schemas/MessageBody") == true)
        // A send's body is a MessageBody, or empty beside attachments.
        let send = schema("SendMessageRequest", "anyOf")
        #expect(send?.contains("body: { $ref: \"#/components/schemas/MessageBody\" }") == true)
        #expect(send?.contains("attachments: { minItems: 1 }") == true)
        #expect(Self.number("maxLength", in: schema("SendMessageRequest", "properties", "body")) == Double(APILimits.maxMessageBodyLength))
        #expect(
            Self.number("maxItems", in: schema("SendMessageRequest", "properties", "attachments"))
                == Double(APILimits.maxAttachmentsPerMessage))
        #expect(
            Self.number("maximum", in: schema("CreateUploadRequest", "properties", "size"))
                == Double(APILimits.maxUploadBytes))
        #expect(
            Self.number("maxLength", in: schema("CreateUploadRequest", "properties", "filename"))
                == Double(APILimits.maxFilenameLength))
        #expect(
            Self.number("maxLength", in: schema("CreateUploadRequest", "properties", "blurhash"))
                == Double(APILimits.maxBlurhashLength))
        #expect(Self.number("minLength", in: schema("MessageBody")) == 1)
        #expect(Self.number("maxLength", in: schema("MessageBody")) == Double(APILimits.maxMessageBodyLength))
        let clientID = schema("SendMessageRequest", "properties", "client_id")
        #expect(Self.number("maxLength", in: clientID) == Double(APILimits.maxClientIDLength))
        #expect(
            Self.number("maxItems", in: schema("LayoutRequest", "properties", "item_heights"))
                == Double(APILimits.maxLayoutItems))
        #expect(
            Self.number("maxItems", in: schema("LayoutRequest", "properties", "items"))
                == Double(APILimits.maxLayoutItems))
        #expect(
            Self.number("maxItems", in: schema("LayoutItem", "properties", "attachments"))
                == Double(APILimits.maxAttachmentsPerMessage))
        for side in ["width", "height"] {
            let block = schema("LayoutAttachment", "properties", side)
            #expect(Self.number("minimum", in: block) == 1)
            #expect(Self.number("maximum", in: block) == Double(LayoutRequests.maxAttachmentSide))
        }
        #expect(
            Self.number("default", in: schema("LayoutRequest", "properties", "viewport_width"))
                == LayoutRequests.defaultViewportWidth)
        // The height model's defaults and ranges are the library's, for every metric.
        let standard = TextMetrics.standard
        let defaults: [TextMetrics.Field: Double] = [
            .fontSize: standard.fontSize, .lineHeight: standard.lineHeight,
            .averageCharacterWidth: standard.averageCharacterWidth, .horizontalPadding: standard.horizontalPadding,
            .verticalPadding: standard.verticalPadding, .maxWidthFraction: standard.maxWidthFraction,
            .maxAttachmentHeight: standard.maxAttachmentHeight, .attachmentRowHeight: standard.attachmentRowHeight,
            .attachmentSpacing: standard.attachmentSpacing,
        ]
        for field in TextMetrics.Field.allCases {
            let block = schema("MessagePageQuery", "properties", field.rawValue)
            #expect(Self.number("default", in: block) == defaults[field], "\(field)")
            let maximum = field == .maxWidthFraction ? 1 : TextMetrics.maximumLength
            #expect(Self.number("maximum", in: block) == maximum, "\(field)")
            #expect(block?.contains(field.requirement.contains(">= 0") ? "minimum: 0" : "exclusiveMinimum: 0") == true, "\(field)")
            #expect(
                schema("LayoutMetrics", "properties", field.rawValue)?.contains(
                    "{ $ref: \"#/components/schemas/MessagePageQuery/properties/\(field.rawValue)\" }") == true,
                "\(field)")
            #expect(schema("PageLayoutHints", "properties", "metrics")?.contains("- \(field.rawValue)") == true, "\(field)")
            let dependent = Self.block(["components", "schemas", "MessagePageQuery", "dependentRequired"], in: yaml)
            #expect(dependent?.contains("\(field.rawValue): [viewport_height]") == true, "\(field)")
        }
        for parameter in ["viewport_height", "viewport_width"] {
            #expect(value("maximum", "components", "schemas", "MessagePageQuery", "properties", parameter) == APILimits.maxHintViewportLength)
        }
        let tooLarge = Self.block(["components", "responses", "PayloadTooLarge"], in: yaml)
        #expect(tooLarge?.contains("over \(APILimits.maxRequestBodyBytes / 1024) KiB") == true)
        for path in [["paths", "/v1/conversations", "get"], ["paths", "/v1/conversations/{id}/changes", "get"]] {
            #expect(Self.block(path, in: yaml)?.contains("about \(APILimits.maxResponseBytes / 1024 / 1024) MiB") == true, "\(path)")
        }

        // The prose states them too, written with thousands separators.
        func written(_ number: Int) -> String {
            number < 1_000 ? "\(number)" : written(number / 1_000) + String(format: ",%03d", number % 1_000)
        }
        for phrase in [
            "At most \(written(APILimits.maxMembers)) members", "At most \(written(APILimits.maxLayoutItems)) items",
            "1 to \(written(APILimits.maxMessageBodyLength)) characters",
        ] {
            #expect(yaml.contains(phrase), "openapi.yaml does not say \"\(phrase)\"")
        }
    }

    /// The code points a `[^...]` class of `\uXXXX` escapes and ranges leaves out.
    static func excluded(byNegatedClass text: Substring) -> Set<UInt32> {
        var set = Set<UInt32>()
        for match in text.matches(of: #/\\u([0-9A-F]{4})(?:-\\u([0-9A-F]{4}))?/#) {
            let low = UInt32(match.1, radix: 16)!
            set.formUnion(low...(match.2.map { UInt32($0, radix: 16)! } ?? low))
        }
        return set
    }

    /// The patterns of bodies and titles state the server's one rule of
    /// visible text (``VisibleText``) for every code point of the Basic
    /// Multilingual Plane, so a client that validates by the description
    /// gets the server's answer.
    @Test func theTextPatternsStateTheVisibleTextRule() throws {
        let yaml = try String(contentsOfFile: "openapi.yaml", encoding: .utf8)
        let plane = (UInt32(0)...0xFFFF).compactMap(Unicode.Scalar.init)
        let invisible = Set(plane.filter(VisibleText.isInvisible).map(\.value))
        func controls(allowingLineBreaks: Bool) -> Set<UInt32> {
            Set(plane.filter { VisibleText.forbiddenControl(in: String($0), allowingLineBreaks: allowingLineBreaks) != nil }.map(\.value))
        }
        for (path, lineBreaks) in [
            (["components", "schemas", "MessageBody"], true),
            (["components", "schemas", "CreateConversationRequest", "properties", "title"], false),
        ] {
            let block = try #require(Self.block(path, in: yaml), "\(path)")
            let pattern = try #require(block.firstMatch(of: #/pattern: '\^(\[\^[^\]]*\])\*(\[\^[^\]]*\])(\[\^[^\]]*\])\*\$'/#), "\(path)")
            #expect(pattern.1 == pattern.3, "\(path)")
            #expect(Self.excluded(byNegatedClass: pattern.1) == controls(allowingLineBreaks: lineBreaks), "\(path): controls")
            let visible = Self.excluded(byNegatedClass: pattern.2)
            #expect(visible == invisible, "\(path): listed but visible \(visible.subtracting(invisible).map { String($0, radix: 16) }), invisible but not listed \(invisible.subtracting(visible).map { String($0, radix: 16) })")
        }
    }

    /// The default limits it states are the server's.
    @Test func theDefaultLimitsItStatesAreTheServers() throws {
        let yaml = try String(contentsOfFile: "openapi.yaml", encoding: .utf8).replacingOccurrences(of: "\n      ", with: " ")
        let rates = RateLimits()
        let connections = ConnectionLimits()
        for phrase in [
            "sends \(rates.send.burst) per \(rates.send.period.seconds) s",
            "conversations created \(rates.conversation.burst) per \(rates.conversation.period.seconds) s",
            "members added \(rates.member.burst) per \(rates.member.period.seconds) s",
            "typing notices \(rates.typing.burst) per \(rates.typing.period.seconds) s",
            "`subscribe` frames \(rates.subscribe.burst) per \(rates.subscribe.period.seconds) s",
            "uploads announced \(rates.upload.burst) per \(rates.upload.period.seconds) s",
            "within \(connections.headerTimeout.seconds) s of its first byte",
            "after its first \(connections.bodyTimeout.seconds) s",
            "closed after \(connections.idleTimeout.seconds) s",
        ] {
            #expect(yaml.contains(phrase), "openapi.yaml does not say \"\(phrase)\"")
        }
        #expect(yaml.contains("1,024 bytes a second") && connections.minReceiveRate == 1_024)
    }

    /// The Error schema lists every code the API knows, and no other.
    @Test func theErrorCodesItListsAreTheKnownCodes() throws {
        let yaml = try String(contentsOfFile: "openapi.yaml", encoding: .utf8)
        let code = try #require(Self.block(["components", "schemas", "Error", "properties", "error", "properties", "code"], in: yaml))
        let listed = Set(code.matches(of: #/`([a-z_]+)`/#).map { String($0.1) })
        #expect(listed == Set(APIErrorCode.allCases.map(\.rawValue)))
    }

    @Test func theServedDescriptionIsTheRepositoryFile() throws {
        let yaml = try String(contentsOfFile: "openapi.yaml", encoding: .utf8)
        #expect(APIDescription.yaml.trimmingCharacters(in: .whitespacesAndNewlines) == yaml.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
