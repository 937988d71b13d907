import AsyncHTTPClient
import Foundation
import NIOCore

/// A conversation the load generator may address, and a member to do it as.
struct LoadTarget: Sendable {
    var conversationID: String
    var lastSeq: Int
    /// `Bearer <token>` of a member.
    var authorization: String
}

/// What the load generator sends, one request at a time.
enum WorkloadKind: String, CaseIterable, Sendable {
    /// `GET .../messages?limit=50` of a random conversation among the many.
    case newestPage = "newest-page"
    /// `GET .../messages?limit=50&before=S` of the big conversation, S at a random depth.
    case deepPage = "deep-page"
    /// `POST .../messages` to a random conversation among the many.
    case sendRandom = "send-random"
    /// `POST .../messages` to the one hot conversation.
    case sendHot = "send-hot"
    /// `GET /v1/search?q=lunch` as a member of a random conversation among
    /// the many: a word in every tenth message.
    case searchCommon = "search-common"
    /// `GET /v1/search?q=zeppelin`, likewise: a word in about 40 messages of
    /// the whole data set.
    case searchRare = "search-rare"
    /// `GET /v1/search?q=lunch&conversation_id=C` in the big conversation, as its member.
    case searchCommonBig = "search-common-big"
    /// `GET /v1/search?q=zeppelin&conversation_id=C` in the big conversation,
    /// where about 1 message in 50,000 has the word.
    case searchRareBig = "search-rare-big"
    /// `GET .../messages/1/thread?limit=20` of a random conversation among
    /// the many: the newest replies of a thread of 25 (scripts/bench-data.sql).
    case thread = "thread"
    /// `GET /healthz`: the least a request to this server costs through the
    /// same client, the floor every other figure is a share of.
    case healthz = "healthz"

    /// The words the search workloads look for (scripts/bench-data.sql puts them in).
    static let commonWord = "lunch"
    static let rareWord = "zeppelin"
    /// Hits per search page.
    static let searchLimit = 20
    /// The root of every conversation's thread, and replies per thread page.
    static let threadRoot = 1
    static let threadLimit = 20
}

/// The targets of a run, read from the files `scripts/bench` writes:
/// `targets.tsv` (kind, conversation id, user id, last seq; kind is `page`,
/// `big` or `hot`) and `tokens.tsv` (user id, token).
struct LoadTargets: Sendable {
    var many: [LoadTarget] = []
    var big: LoadTarget?
    var hot: LoadTarget?

    init(targetsFile: String, tokensFile: String) throws {
        var tokens: [String: String] = [:]
        for fields in try Self.rows(of: tokensFile) where fields.count == 2 {
            tokens[fields[0]] = fields[1]
        }
        for fields in try Self.rows(of: targetsFile) {
            guard fields.count == 4, let lastSeq = Int(fields[3]) else {
                throw LoadError("\(targetsFile): expected kind, conversation id, user id, last seq: \(fields)")
            }
            guard let token = tokens[fields[2]] else { throw LoadError("\(tokensFile): no token for user \(fields[2])") }
            let target = LoadTarget(conversationID: fields[1], lastSeq: lastSeq, authorization: "Bearer \(token)")
            switch fields[0] {
            case "page": many.append(target)
            case "big": big = target
            case "hot": hot = target
            default: throw LoadError("\(targetsFile): unknown kind \(fields[0])")
            }
        }
    }

    private static func rows(of path: String) throws -> [[String]] {
        try String(contentsOfFile: path, encoding: .utf8)
            .split(separator: "\n")
            .map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }
}

/// Builds the requests of one workload.
struct Workload: Sendable {
    let kind: WorkloadKind
    let baseURL: String
    let pageSize: Int
    private let targets: [LoadTarget]
    /// Distinguishes this run's client ids from every other run's.
    private let runID = UUID().uuidString.lowercased()

    init(kind: WorkloadKind, baseURL: String, targets: LoadTargets, pageSize: Int = 50) throws {
        self.kind = kind
        self.baseURL = baseURL
        self.pageSize = pageSize
        switch kind {
        case .newestPage, .sendRandom, .searchCommon, .searchRare, .thread, .healthz: self.targets = targets.many
        case .deepPage, .searchCommonBig, .searchRareBig: self.targets = targets.big.map { [$0] } ?? []
        case .sendHot: self.targets = targets.hot.map { [$0] } ?? []
        }
        guard !self.targets.isEmpty else { throw LoadError("no target conversation for \(kind.rawValue)") }
    }

    func request(using random: inout some RandomNumberGenerator) -> HTTPClientRequest {
        let target = targets[Int.random(in: 0..<targets.count, using: &random)]
        let path = "\(baseURL)/v1/conversations/\(target.conversationID)/messages"
        var request: HTTPClientRequest
        switch kind {
        case .newestPage:
            request = HTTPClientRequest(url: "\(path)?limit=\(pageSize)")
        case .deepPage:
            // `depth` messages are newer than the page: before = last_seq - depth + 1.
            let depth = Int.random(in: 0...max(target.lastSeq - pageSize, 0), using: &random)
            request = HTTPClientRequest(url: "\(path)?limit=\(pageSize)&before=\(target.lastSeq - depth + 1)")
        case .thread:
            request = HTTPClientRequest(
                url: "\(path)/\(WorkloadKind.threadRoot)/thread?limit=\(WorkloadKind.threadLimit)")
        case .searchCommon, .searchRare:
            let word = kind == .searchCommon ? WorkloadKind.commonWord : WorkloadKind.rareWord
            request = HTTPClientRequest(url: "\(baseURL)/v1/search?q=\(word)&limit=\(WorkloadKind.searchLimit)")
        case .searchCommonBig, .searchRareBig:
            let word = kind == .searchCommonBig ? WorkloadKind.commonWord : WorkloadKind.rareWord
            request = HTTPClientRequest(
                url: "\(baseURL)/v1/search?q=\(word)&conversation_id=\(target.conversationID)&limit=\(WorkloadKind.searchLimit)")
        case .healthz:
            return HTTPClientRequest(url: "\(baseURL)/healthz")
        case .sendRandom, .sendHot:
            request = HTTPClientRequest(url: path)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            let clientID = "\(runID)-\(random.next())"
            let body = #"{"body":"\#(Self.messageBody(using: &random))","client_id":"\#(clientID)"}"#
            request.body = .bytes(ByteBuffer(string: body))
        }
        request.headers.add(name: "Authorization", value: target.authorization)
        return request
    }

    /// 80 to 200 characters of lowercase words, like the loaded messages
    /// (nothing that needs escaping in JSON).
    static func messageBody(using random: inout some RandomNumberGenerator) -> String {
        let length = Int.random(in: 80...200, using: &random)
        var text = ""
        text.reserveCapacity(length)
        while text.count < length {
            if !text.isEmpty && Int.random(in: 0..<6, using: &random) == 0 {
                text.append(" ")
            } else {
                text.append(Character(Unicode.Scalar(UInt8.random(in: 97...122, using: &random))))
            }
        }
        // Ends on a letter, like a message typed by someone.
        return String(text.prefix(length - 1)) + "x"
    }
}

struct LoadError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
