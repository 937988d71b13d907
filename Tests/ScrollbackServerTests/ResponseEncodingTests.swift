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
