import HTTPTypes
import Hummingbird
import ScrollbackModels

/// Hummingbird answers a known path with an unknown method as "not found";
/// this says 405 with `Allow` instead. Added after every route, it wraps only
/// the not-found responder, where such requests end up.
struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The router's routes as (method, path segments), `{name}` matching any segment.
    let routes: [(method: HTTPRequest.Method, segments: [Substring])]

    init(routes: [(HTTPRequest.Method, String)]) {
        self.routes = routes.map { ($0.0, $0.1.split(separator: "/")) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let allowed = methods(for: request.uri.path)
            guard !allowed.isEmpty else { throw error }
            throw APIError(
                .methodNotAllowed, .methodNotAllowed,
                "This route accepts \(allowed.joined(separator: ", ")), not \(request.method.rawValue).",
                headers: [.allow: allowed.joined(separator: ", ")])
        }
    }

    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        var methods = Set<String>()
        for route in routes where route.segments.count == segments.count {
            let matches = zip(route.segments, segments).allSatisfy { pattern, segment in
                (pattern.hasPrefix("{") && pattern.hasSuffix("}")) || pattern == segment
            }
            if matches { methods.insert(route.method.rawValue) }
        }
        if methods.contains("GET") { methods.insert("HEAD") }
        return methods.sorted()
    }
}
