import Crypto
import Foundation
import Testing

@testable import ScrollbackObjectStorage

/// AWS's published Signature V4 examples for S3. Every expected value below
/// is copied from one of two pages of the Amazon S3 API Reference, whose
/// examples all use the access key AKIAIOSFODNN7EXAMPLE, the secret
/// wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, the bucket examplebucket,
/// us-east-1 and 20130524T000000Z:
/// - "Examples: Signature Calculations" in "Signature Calculations for the
///   Authorization Header: Transferring Payload in a Single Chunk"
///   (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html):
///   GET Object (with Range), PUT Object, GET Bucket Lifecycle, Get Bucket (List Objects);
/// - "An Example" in "Authenticating Requests: Using Query Parameters (AWS
///   Signature Version 4)"
///   (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html):
///   the presigned GET of test.txt for 86,400 s.
@Suite struct AWSPublishedExamplesTests {
    static let credentials = S3Credentials(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    static let signer = SignatureV4(credentials: credentials, region: "us-east-1")
    static let may24 = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z
    static let host = "examplebucket.s3.amazonaws.com"

    static func request(
        _ method: String, _ path: String, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = []
    ) -> SignatureV4.Request {
        SignatureV4.Request(method: method, scheme: "https", host: host, path: path, query: query, headers: headers)
    }

    static func authorization(_ request: SignatureV4.Request, payloadHash: String) -> String? {
        signer.signedHeaders(for: request, payloadHash: payloadHash, date: may24)
            .first { $0.name == "authorization" }?.value
    }

    static func sha256Hex(_ text: String) -> String { SignatureV4.hex(SHA256.hash(data: Data(text.utf8))) }

    @Test func getObjectWithRangeMatchesThePublishedCanonicalRequestAndSignature() {
        let request = Self.request("GET", "/test.txt", headers: [("range", "bytes=0-9")])
        var signing = request
        signing.headers += [("x-amz-date", "20130524T000000Z"), ("x-amz-content-sha256", SignatureV4.emptyPayloadSHA256)]
        let canonical = Self.signer.canonicalRequest(
            method: "GET", encodedPath: request.encodedPath, canonicalQuery: "",
            headers: Self.signer.canonicalHeaders(signing), payloadHash: SignatureV4.emptyPayloadSHA256)
        #expect(
            canonical == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        #expect(
            Self.signer.stringToSign(canonicalRequest: canonical, timestamp: "20130524T000000Z") == """
                AWS4-HMAC-SHA256
                20130524T000000Z
                20130524/us-east-1/s3/aws4_request
                7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
                """)
        #expect(
            Self.authorization(request, payloadHash: SignatureV4.emptyPayloadSHA256)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test func putObjectEncodesTheDollarAndSignsThePayloadHash() {
        let payloadHash = Self.sha256Hex("Welcome to Amazon S3.")
        #expect(payloadHash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let request = Self.request(
            "PUT", "/test$file.text",
            headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")])
        #expect(request.encodedPath == "/test%24file.text")
        #expect(
            Self.authorization(request, payloadHash: payloadHash)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
                + "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func getBucketLifecycleSignsAQueryParameterWithoutAValue() {
        let request = Self.request("GET", "/", query: [("lifecycle", "")])
        #expect(SignatureV4.canonicalQueryString(request.query) == "lifecycle=")
        #expect(
            Self.authorization(request, payloadHash: SignatureV4.emptyPayloadSHA256)?
                .hasSuffix("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") == true)
    }

    @Test func listObjectsSortsTheQueryParameters() {
        let request = Self.request("GET", "/", query: [("prefix", "J"), ("max-keys", "2")])
        #expect(SignatureV4.canonicalQueryString(request.query) == "max-keys=2&prefix=J")
        #expect(
            Self.authorization(request, payloadHash: SignatureV4.emptyPayloadSHA256)?
                .hasSuffix("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)
    }

    @Test func presignedGetIsThePublishedURL() {
        let url = Self.signer.presignedURL(for: Self.request("GET", "/test.txt"), date: Self.may24, expires: 86_400)
        #expect(
            url == "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
                + "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
                + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
    }
}

@Suite struct SignatureV4EncodingTests {
    @Test func pathsKeepSlashesAndEncodeEverythingButUnreservedCharacters() {
        #expect(SignatureV4.uriEncode("/a b/c+d$e=f&g", keepingSlashes: true) == "/a%20b/c%2Bd%24e%3Df%26g")
        #expect(SignatureV4.uriEncode("A-Za-z0-9-._~", keepingSlashes: true) == "A-Za-z0-9-._~")
        #expect(SignatureV4.uriEncode("ключ/ü", keepingSlashes: true) == "%D0%BA%D0%BB%D1%8E%D1%87/%C3%BC")
        // S3 encodes once: a percent sign in a key is a character like any other.
        #expect(SignatureV4.uriEncode("/100%", keepingSlashes: true) == "/100%25")
    }

    @Test func queryValuesEncodeSlashesToo() {
        #expect(SignatureV4.uriEncode("a/b c", keepingSlashes: false) == "a%2Fb%20c")
        #expect(
            SignatureV4.canonicalQueryString([("b", "2"), ("a", "z"), ("a", "y")]) == "a=y&a=z&b=2")
    }

    @Test func headerValuesAreTrimmedAndInnerSpacesFolded() {
        let signer = AWSPublishedExamplesTests.signer
        let request = SignatureV4.Request(
            method: "GET", scheme: "https", host: "h", path: "/",
            headers: [("X-Amz-Meta-A", "  one   two  "), ("x-amz-meta-a", "three")])
        #expect(signer.canonicalHeaders(request).block == "host:h\nx-amz-meta-a:one two,three\n")
        #expect(signer.canonicalHeaders(request).signedNames == "host;x-amz-meta-a")
    }

    @Test func timestampsAreUTCInTheBasicForm() {
        #expect(SignatureV4.timestamp(Date(timeIntervalSince1970: 0)) == "19700101T000000Z")
        #expect(SignatureV4.timestamp(Date(timeIntervalSince1970: 1_369_353_600.9)) == "20130524T000000Z")
        #expect(SignatureV4.timestamp(Date(timeIntervalSince1970: 951_825_599)) == "20000229T115959Z")
        #expect(SignatureV4.timestamp(Date(timeIntervalSince1970: 4_102_444_800)) == "21000101T000000Z")
        #expect(SignatureV4.timestamp(Date(timeIntervalSince1970: -1)) == "19691231T235959Z")
    }

    @Test func credentialsNeverShowTheSecretOrTheToken() {
        let credentials = S3Credentials(accessKeyID: "AKID", secretAccessKey: "s3cr3t-value", sessionToken: "t0k3n-value")
        for text in [
            "\(credentials)", String(reflecting: credentials), String(describing: [credentials]),
            { var dumped = ""; dump(credentials, to: &dumped); return dumped }(),
        ] {
            #expect(text.contains("AKID"))
            #expect(!text.contains("s3cr3t") && !text.contains("t0k3n"), "\(text)")
        }
    }
}
