import Hummingbird
import Logging
import ScrollbackModels

/// One info line per request: method, route (the pattern, not the path, so
/// ids and user names stay out), status, duration and user. Never a token,
/// a query string or a body. With `metrics`, the same request is counted
/// and timed there (one clock for both). It runs outside `ErrorMiddleware`,
/// so the status logged and counted is the one sent, errors included.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ScrollbackRequestContext
    let metrics: HTTPMetrics?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let logs = context.logger.logLevel <= .info
        // Below info (the benchmark's `warning`) and without metrics, a
        // request costs nothing here: not even the clock is read.
        guard logs || metrics != nil else { return try await next(request, context) }
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        metrics?.record(method: request.method, route: context.endpointPath, status: response.status.code, duration: elapsed)
        guard logs else { return response }
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
