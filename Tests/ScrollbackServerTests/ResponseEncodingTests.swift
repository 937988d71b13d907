import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import ScrollbackModels
import Testing

@testable import ScrollbackServer

/// A response body JSON cannot hold is our bug: the client gets a 500 in
/// the error shape and the log says what failed, never a 200 with `{}`.
@Suite struct ResponseEncodingTests {
    @Test func aValueJSONCannotRepresentIsALogged500NotAnEmpty200() async throws {
        let log = CapturedLog()
        let router = Router(context: ScrollbackRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        router.get("infinite") { _, _ in
            try JSONResponse.make(
                LayoutResponse(
                    contentHeight: .infinity, bottomPadding: 0, isScrollable: true, items: [], visible: nil,
                    loadOlder: false))
        }
        let app = Application(router: router, logger: Logger(label: "encoding-test") { _ in log.handler() })
        try await app.test(.router) { client in
            try await client.execute(uri: "/infinite", method: .get) { response in
                #expect(response.status == .internalServerError)
                let body = try ScrollbackJSON.decoder().decode(APIErrorBody.self, from: Data(buffer: response.body))
                #expect(body.error.code == .internalError)
            }
        }
        let errors = log.messages(at: .error)
        #expect(errors.contains { $0.contains("LayoutResponse") }, "\(errors)")
    }
}

/// Log lines kept in memory for a test to read.
// Unchecked: `lines`, the only mutable state, is read and written only
// under `lock`.
final class CapturedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [(Logger.Level, String)] = []

    func handler() -> some LogHandler { Handler(sink: self) }

    func messages(at level: Logger.Level) -> [String] {
        lock.withLock { lines.filter { $0.0 == level }.map(\.1) }
    }

    fileprivate func append(_ level: Logger.Level, _ line: String) {
        lock.withLock { lines.append((level, line)) }
    }

    private struct Handler: LogHandler {
        let sink: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            sink.append(event.level, "\(event.message) \(all.map { "\($0)=\($1)" }.sorted().joined(separator: " "))")
        }
    }
}
