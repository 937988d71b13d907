import Hummingbird
import ScrollbackStore

/// Public probes and the API description.
struct HealthController {
    let store: ScrollbackStore
    let live: LiveDelivery

    struct Status: Encodable {
        var status: String
    }

    /// What `/readyz` reports: ready only when the database answers and the
    /// change feed's listener is connected (without it, messages written
    /// through other instances do not reach this instance's sockets), so a
    /// load balancer takes the instance out while either is down.
    struct Readiness: Encodable {
        var status: String
        var database: String
        var liveDelivery: String

        enum CodingKeys: String, CodingKey {
            case status, database
            case liveDelivery = "live_delivery"
        }

        var isReady: Bool { status == "ready" }

        init(databaseAnswers: Bool, listening: Bool) {
            database = databaseAnswers ? "up" : "unreachable"
            liveDelivery = listening ? "listening" : "reconnecting"
            status = databaseAnswers && listening ? "ready" : "not_ready"
        }
    }

    func addRoutes(to router: Router<ScrollbackRequestContext>) {
        // The process is up.
        router.get("healthz") { _, _ in try JSONResponse.make(Status(status: "ok")) }
        router.get("readyz") { _, _ in
            async let databaseAnswers = store.ping()
            let readiness = Readiness(databaseAnswers: await databaseAnswers, listening: await live.isListening)
            var response = try JSONResponse.make(readiness, status: readiness.isReady ? .ok : .serviceUnavailable)
            if !readiness.isReady { response.headers[.retryAfter] = "1" }
            return response
        }
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/yaml; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: APIDescription.yaml)))
        }
    }
}
