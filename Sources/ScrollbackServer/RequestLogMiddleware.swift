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
        // Below info (the benchmark's `warning`) the line costs nothing: not
        // even the clock is read.
        guard context.logger.logLevel <= .info else { return try await next(request, context) }
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        // Hundredths of a millisecond.
        let milliseconds = (elapsed / .microseconds(10)).rounded() / 100
        var metadata: Logger.Metadata = [
            "method": "\(request.method.rawValue)",
            "route": "\(context.endpointPath ?? "unmatched")",
            "status": "\(response.status.code)",
            "duration_ms": "\(milliseconds)",
        ]
        if let user = context.caller.withLockedValue({ $0 }) {
            metadata["user"] = "\(user)"
        }
        context.logger.info("request", metadata: metadata)
        return response
    }
}
