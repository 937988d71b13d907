import Hummingbird
import Logging
import ScrollbackModels

/// One info line per request: method, route (the pattern, not the path, so
/// ids and user names stay out), status, duration and user. Never a token,
/// a query string or a body.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ScrollbackRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        var metadata: Logger.Metadata = [
            "method": "\(request.method.rawValue)",
            "route": "\(context.endpointPath ?? "unmatched")",
            "status": "\(response.status.code)",
            "duration_ms": "\(String(format: "%.2f", milliseconds))",
        ]
        if let user = context.caller.withLockedValue({ $0 }) {
            metadata["user"] = "\(user)"
        }
        context.logger.info("request", metadata: metadata)
        return response
    }
}
