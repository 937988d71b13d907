/// Where attachment bytes live in an S3-compatible store, and how to reach it.
///
/// Built from the settings an operator gives: a storage URL
/// `s3://bucket/prefix`, an endpoint (AWS's regional one when none is given),
/// a region and credentials. `description` never shows the secret.
public struct ObjectStorageConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// How a bucket appears in URLs. Path style (`endpoint/bucket/key`) works
    /// with every S3-compatible server and with AWS; virtual-host style
    /// (`bucket.endpoint/key`) is what AWS prefers for new buckets.
    public enum AddressingStyle: String, Sendable, Equatable {
        case path
        case virtualHost = "virtual"
    }

    public var bucket: String
    /// Prepended to every key: empty, or ending with `/` (`attachments/`).
    public var prefix: String
    /// `http` or `https`.
    public var endpointScheme: String
    /// The endpoint's host, with `:port` when it is not the scheme's default.
    public var endpointHost: String
    public var region: String
    public var credentials: S3Credentials
    public var addressingStyle: AddressingStyle
    /// The deadline of each call the server makes (head, read, delete, put),
    /// and of a whole streamed read.
    public var requestTimeout: Duration

    /// - Parameters:
    ///   - storageURL: `s3://bucket` or `s3://bucket/prefix`.
    ///   - endpoint: `https://host[:port]` or `http://...`, no path; nil for
    ///     AWS's `https://s3.REGION.amazonaws.com`.
    ///   - region: the signing region (`us-east-1` for most S3-compatible servers).
    public init(
        storageURL: String,
        endpoint: String? = nil,
        region: String,
        credentials: S3Credentials,
        addressingStyle: AddressingStyle = .path,
        requestTimeout: Duration = .seconds(30)
    ) throws(ObjectStorageError) {
        guard storageURL.hasPrefix("s3://") else {
            throw .invalidConfiguration(reason: "the storage URL must look like s3://bucket/prefix")
        }
        let location = storageURL.dropFirst("s3://".count)
        let bucket = String(location.prefix(while: { $0 != "/" }))
        guard Self.isValidBucketName(bucket) else {
            throw .invalidConfiguration(
                reason: "bucket names are 3 to 63 lower-case letters, digits, dots and hyphens")
        }
        let prefixPath = location.dropFirst(bucket.count).split(separator: "/", omittingEmptySubsequences: true)
        self.bucket = bucket
        self.prefix = prefixPath.isEmpty ? "" : prefixPath.joined(separator: "/") + "/"
        if !self.prefix.isEmpty {
            do { try Self.validate(key: self.prefix + "x", prefix: "") } catch {
                throw .invalidConfiguration(reason: "the storage URL's prefix is not a usable key prefix")
            }
        }

        guard !region.isEmpty, region.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw .invalidConfiguration(reason: "the region must be a name such as us-east-1")
        }
        self.region = region
        let endpoint = endpoint ?? "https://s3.\(region).amazonaws.com"
        let scheme: String
        if endpoint.hasPrefix("https://") {
            scheme = "https"
        } else if endpoint.hasPrefix("http://") {
            scheme = "http"
        } else {
            throw .invalidConfiguration(reason: "the endpoint must start with http:// or https://")
        }
        var authority = Substring(endpoint.dropFirst(scheme.count + 3))
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        guard !authority.isEmpty, !authority.contains(where: { "/?#@ ".contains($0) }) else {
            throw .invalidConfiguration(reason: "the endpoint is a scheme, a host and a port, without a path")
        }
        // The Host header leaves out the scheme's default port; the signature covers it.
        let defaultPort = scheme == "https" ? ":443" : ":80"
        if authority.hasSuffix(defaultPort) { authority = authority.dropLast(defaultPort.count) }
        self.endpointScheme = scheme
        self.endpointHost = authority.lowercased()
        if addressingStyle == .virtualHost && bucket.contains(".") {
            throw .invalidConfiguration(reason: "a bucket with dots needs path-style addressing")
        }
        self.credentials = credentials
        self.addressingStyle = addressingStyle
        self.requestTimeout = requestTimeout
    }

    public var description: String {
        "s3://\(bucket)/\(prefix) at \(endpointScheme)://\(endpointHost) (\(region), \(addressingStyle.rawValue) style, \(credentials))"
    }

    /// The host and the unencoded path of an object, in this configuration's style.
    func location(ofKey key: String) throws(ObjectStorageError) -> (host: String, path: String) {
        try Self.validate(key: key, prefix: prefix)
        switch addressingStyle {
        case .path: return (endpointHost, "/\(bucket)/\(prefix)\(key)")
        case .virtualHost: return ("\(bucket).\(endpointHost)", "/\(prefix)\(key)")
        }
    }

    static func isValidBucketName(_ name: String) -> Bool {
        guard (3...63).contains(name.utf8.count), let first = name.first, let last = name.last,
            first.isASCII && (first.isLetter || first.isNumber), last.isASCII && (last.isLetter || last.isNumber)
        else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "." || $0 == "-") }
    }

    /// S3 takes any UTF-8 up to 1,024 bytes, but proxies and some
    /// S3-compatible servers rewrite `.`, `..` and `//` in paths, after which
    /// the signature no longer matches: such keys are refused here.
    static func validate(key: String, prefix: String) throws(ObjectStorageError) {
        guard !key.isEmpty else { throw .invalidKey(reason: "it is empty") }
        guard prefix.utf8.count + key.utf8.count <= 1024 else {
            throw .invalidKey(reason: "with the prefix it is longer than 1,024 bytes")
        }
        guard !key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .invalidKey(reason: "it contains control characters")
        }
        for segment in key.split(separator: "/", omittingEmptySubsequences: false) {
            guard !segment.isEmpty, segment != ".", segment != ".." else {
                throw .invalidKey(reason: "its segments between slashes must be non-empty and not . or ..")
            }
        }
    }
}
