import Hummingbird
import ScrollbackStore

/// Public probes and the API description.
struct HealthController {
    let store: ScrollbackStore

    struct Status: Encodable {
        var status: String
    }

    func addRoutes(to router: Router<ScrollbackRequestContext>) {
        // The process is up.
        router.get("healthz") { _, _ in try JSONResponse.make(Status(status: "ok")) }
        // The database answers.
        router.get("readyz") { _, _ in
            guard await store.ping() else { throw APIError.unavailable }
            return try JSONResponse.make(Status(status: "ready"))
        }
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/yaml; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: APIDescription.yaml)))
        }
    }
}
