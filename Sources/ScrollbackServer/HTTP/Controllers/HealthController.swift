import Hummingbird
import ScrollbackStore

/// Public probes and the API description.
struct HealthController {
    let store: ScrollbackStore
    let live: LiveDelivery

    struct Status: Encodable, Sendable {
        var status: String
    }

    /// What `/readyz` reports: ready only when the database answers and the
    /// change feed's listener is connected (without it, messages written
    /// through other instances do not reach this instance's sockets), so a
    /// load balancer takes the instance out while either is down.
    /// The replicas (named by their place in `SCROLLBACK_REPLICA_URLS`,
    /// from 1: this route is public) are reported, never waited for: reads
    /// go to the primary while none is in the rotation.
    struct Readiness: Encodable, Sendable {
        var status: String
        var database: String
        var liveDelivery: String
        var replicas: [ReplicaStatus]?

        enum CodingKeys: String, CodingKey {
            case status, database, replicas
            case liveDelivery = "live_delivery"
        }

        var isReady: Bool { status == "ready" }

        init(databaseAnswers: Bool, listening: Bool, replicas: [ReplicaStatus]) {
            database = databaseAnswers ? "up" : "unreachable"
            liveDelivery = listening ? "listening" : "reconnecting"
            status = databaseAnswers && listening ? "ready" : "not_ready"
            self.replicas = replicas.isEmpty ? nil : replicas
        }
    }

    func addRoutes(to router: Router<ScrollbackRequestContext>) {
        // The process is up.
        router.get("healthz") { _, _ in JSONBody(Status(status: "ok")) }
        router.get("readyz") { _, _ -> EditedResponse<JSONBody<Readiness>> in
            async let databaseAnswers = store.ping()
            let readiness = Readiness(
                databaseAnswers: await databaseAnswers, listening: await live.isListening,
                replicas: store.replicaStatuses)
            guard readiness.isReady else {
                return EditedResponse(
                    headers: [.retryAfter: "1"], response: JSONBody(readiness, status: .serviceUnavailable))
            }
            return EditedResponse(response: JSONBody(readiness))
        }
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/yaml; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: APIDescription.yaml)))
        }
    }
}
