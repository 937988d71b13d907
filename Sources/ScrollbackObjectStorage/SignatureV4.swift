import Crypto
import Foundation

/// The keys an object store request is signed with. Its descriptions and
/// mirror show the access key id only, so printing a configuration or
/// dumping it in a test failure never reveals the secret or the token.
public struct S3Credentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public var accessKeyID: String
    public var secretAccessKey: String
    /// The token of temporary credentials (STS); sent as `X-Amz-Security-Token`.
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    public var description: String {
        "S3Credentials(accessKeyID: \(accessKeyID), secretAccessKey: <redacted>, sessionToken: \(sessionToken == nil ? "none" : "<redacted>"))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["accessKeyID": accessKeyID, "secretAccessKey": "<redacted>"])
    }
}

/// AWS Signature Version 4 as S3 checks it, for both of its forms: a
/// presigned URL (the signature in the query string, the payload unsigned),
/// which the server hands to a client, and an `Authorization` header, for
/// the requests the server makes itself.
///
/// S3's rules, which differ from the other AWS services': the path is encoded
/// once (each segment percent-encoded, `/` kept) and never normalized, and
/// header-signed requests carry the payload's SHA-256 in `x-amz-content-sha256`.
/// See docs/object-storage.md for what this is tested against.
public struct SignatureV4: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"
    /// The payload hash of a presigned URL: the body is not known when it is signed.
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// SHA-256 of the empty body, the payload hash of GET, HEAD and DELETE.
    public static let emptyPayloadSHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// The longest validity S3 accepts for a presigned URL: seven days.
    public static let maximumExpiry = 604_800

    /// A request as it will be sent: what the signature covers.
    public struct Request: Sendable {
        /// `GET`, `PUT`, `HEAD`, `DELETE`.
        public var method: String
        /// `http` or `https`: only for building the URL, it is not signed.
        public var scheme: String
        /// The `Host` header exactly as sent: the host, and `:port` unless it
        /// is the scheme's default.
        public var host: String
        /// The path, not yet encoded (`/bucket/photos/a b.png`); it is encoded
        /// segment by segment and sent as encoded.
        public var path: String
        /// Query parameters, not yet encoded (`response-content-type`, `lifecycle` with "").
        public var query: [(name: String, value: String)]
        /// Headers to sign and send besides `host` (and the `x-amz-*` ones the
        /// header form adds): for a presigned upload, the `content-type` and
        /// `content-length` the store must insist on.
        public var headers: [(name: String, value: String)]

        public init(
            method: String, scheme: String, host: String, path: String,
            query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = []
        ) {
            self.method = method
            self.scheme = scheme
            self.host = host
            self.path = path
            self.query = query
            self.headers = headers
        }

        /// The path as sent and as signed.
        public var encodedPath: String { SignatureV4.uriEncode(path, keepingSlashes: true) }
    }

    public let credentials: S3Credentials
    public let region: String
    public let service: String

    public init(credentials: S3Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    // MARK: The two forms

    /// A presigned URL valid from `date` for `expires` seconds (1 to
    /// ``maximumExpiry``). Whoever holds it may send the request with the
    /// headers in `request.headers`, and only with those values.
    public func presignedURL(for request: Request, date: Date, expires: Int) -> String {
        precondition((1...Self.maximumExpiry).contains(expires), "a presigned URL lives 1 s to 7 days")
        let timestamp = Self.timestamp(date)
        let headers = canonicalHeaders(request)
        var query = request.query
        query.append(("X-Amz-Algorithm", Self.algorithm))
        query.append(("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(timestamp))"))
        query.append(("X-Amz-Date", timestamp))
        query.append(("X-Amz-Expires", String(expires)))
        query.append(("X-Amz-SignedHeaders", headers.signedNames))
        if let token = credentials.sessionToken {
            query.append(("X-Amz-Security-Token", token))
        }
        let canonicalQuery = Self.canonicalQueryString(query)
        let canonical = canonicalRequest(
            method: request.method, encodedPath: request.encodedPath, canonicalQuery: canonicalQuery,
            headers: headers, payloadHash: Self.unsignedPayload
        )
        let signature = self.signature(of: canonical, timestamp: timestamp)
        return "\(request.scheme)://\(request.host)\(request.encodedPath)?\(canonicalQuery)&X-Amz-Signature=\(signature)"
    }

    /// The headers to send with `request` for the store to accept it: the
    /// request's own, `host`, `x-amz-date`, `x-amz-content-sha256`,
    /// `x-amz-security-token` with temporary credentials, and `authorization`.
    public func signedHeaders(for request: Request, payloadHash: String, date: Date) -> [(name: String, value: String)] {
        let timestamp = Self.timestamp(date)
        var signing = request
        signing.headers.append(("x-amz-date", timestamp))
        signing.headers.append(("x-amz-content-sha256", payloadHash))
        if let token = credentials.sessionToken {
            signing.headers.append(("x-amz-security-token", token))
        }
        let headers = canonicalHeaders(signing)
        let canonical = canonicalRequest(
            method: request.method, encodedPath: request.encodedPath,
            canonicalQuery: Self.canonicalQueryString(request.query), headers: headers, payloadHash: payloadHash
        )
        let signature = self.signature(of: canonical, timestamp: timestamp)
        let authorization =
            "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope(timestamp)), "
            + "SignedHeaders=\(headers.signedNames), Signature=\(signature)"
        return [("host", request.host)] + signing.headers + [("authorization", authorization)]
    }

    // MARK: The steps, as the specification names them

    struct CanonicalHeaders {
        /// `name:value\n` for each header, sorted by name.
        var block: String
        /// `content-type;host;...`
        var signedNames: String
    }

    /// Names lowercased and sorted; values trimmed with inner runs of spaces
    /// folded to one; repeated headers joined by commas in the order given.
    func canonicalHeaders(_ request: Request) -> CanonicalHeaders {
        var values: [String: [String]] = ["host": [request.host]]
        for (name, value) in request.headers {
            let folded = value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
            values[name.lowercased(), default: []].append(folded)
        }
        let names = values.keys.sorted()
        let block = names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }.joined()
        return CanonicalHeaders(block: block, signedNames: names.joined(separator: ";"))
    }

    func canonicalRequest(
        method: String, encodedPath: String, canonicalQuery: String, headers: CanonicalHeaders, payloadHash: String
    ) -> String {
        [method, encodedPath, canonicalQuery, headers.block, headers.signedNames, payloadHash]
            .joined(separator: "\n")
    }

    func stringToSign(canonicalRequest: String, timestamp: String) -> String {
        [Self.algorithm, timestamp, scope(timestamp), Self.hex(SHA256.hash(data: Data(canonicalRequest.utf8)))]
            .joined(separator: "\n")
    }

    func signature(of canonicalRequest: String, timestamp: String) -> String {
        let toSign = stringToSign(canonicalRequest: canonicalRequest, timestamp: timestamp)
        return Self.hex(HMAC<SHA256>.authenticationCode(for: Data(toSign.utf8), using: signingKey(day: String(timestamp.prefix(8)))))
    }

    /// HMAC chain: "AWS4" + secret, then the day, the region, the service, "aws4_request".
    func signingKey(day: String) -> SymmetricKey {
        var key = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return key
    }

    func scope(_ timestamp: String) -> String {
        "\(timestamp.prefix(8))/\(region)/\(service)/aws4_request"
    }

    // MARK: Encoding

    /// Names and values encoded, pairs sorted by name then value, joined by `&`.
    static func canonicalQueryString(_ query: [(name: String, value: String)]) -> String {
        query
            .map { (uriEncode($0.name, keepingSlashes: false), uriEncode($0.value, keepingSlashes: false)) }
            .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// Every byte of the UTF-8 but the unreserved `A-Z a-z 0-9 - . _ ~` as
    /// `%XX` (upper-case hex); `/` kept in paths, encoded in query parameters.
    static func uriEncode(_ text: String, keepingSlashes: Bool) -> String {
        var encoded = [UInt8]()
        encoded.reserveCapacity(text.utf8.count)
        let hexDigits = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                encoded.append(byte)
            case UInt8(ascii: "/") where keepingSlashes:
                encoded.append(byte)
            default:
                encoded.append(UInt8(ascii: "%"))
                encoded.append(hexDigits[Int(byte >> 4)])
                encoded.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let hexDigits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in bytes {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// SHA-256 of a payload in hex, for `x-amz-content-sha256`.
    public static func payloadHash<Bytes: DataProtocol>(_ payload: Bytes) -> String {
        hex(SHA256.hash(data: payload))
    }

    /// `20130524T000000Z`: the UTC time in ISO 8601's basic form, whole seconds.
    static func timestamp(_ date: Date) -> String {
        basicISO8601.format(Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
    }

    static let basicISO8601 = Date.ISO8601FormatStyle(
        dateSeparator: .omitted, dateTimeSeparator: .standard, timeSeparator: .omitted, timeZoneSeparator: .omitted,
        includingFractionalSeconds: false, timeZone: TimeZone(identifier: "UTC")!)
}
