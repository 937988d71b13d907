import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ScrollbackServer
import ScrollbackStore
import Testing

/// openapi.yaml describes exactly the routes the router serves.
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
        let router = buildRouter(store: store, tokens: try await TokenAuthority(secret: TestServer.secret))
        // Hummingbird describes captures as OpenAPI does: `/v1/conversations/{id}`.
        // HEAD routes are generated from the GET ones.
        let served = Set(router.routes.filter { $0.method != .head }.map { "\($0.method.rawValue) \($0.path.description)" })
        #expect(served == documented, "served but undocumented: \(served.subtracting(documented)); documented but not served: \(documented.subtracting(served))")
    }

    @Test func theServedDescriptionIsTheRepositoryFile() throws {
        let yaml = try String(contentsOfFile: "openapi.yaml", encoding: .utf8)
        #expect(APIDescription.yaml.trimmingCharacters(in: .whitespacesAndNewlines) == yaml.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
