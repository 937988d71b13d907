import Hummingbird
import ScrollbackModels

/// `POST /v1/layout`: the layout calculator over HTTP. Public (no token): it
/// touches no stored data and is pure arithmetic on what the caller sends.
struct LayoutController {
    func addRoutes(to router: Router<ScrollbackRequestContext>) {
        // Registered on the router itself, not on the authenticated `v1`
        // group, so AuthMiddleware never runs for it.
        router.post("v1/layout", use: layout)
    }

    /// 200 with the layout; 400 for a body that is not the request shape
    /// (wrong types, missing `viewport_height`, neither `item_heights` nor
    /// `items`, numbers JSON cannot represent as a Double such as `1e400`);
    /// 413 above 64 KiB; 422 for more than 10,000 items, a size the
    /// calculator rejects, or attachments of `items` a message cannot have
    /// (``LayoutRequestError``).
    @Sendable func layout(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<LayoutResponse> {
        let input = try await RequestBody.decode(LayoutRequest.self, from: request, context: context)
        let layout: LayoutResponse
        do {
            layout = try LayoutRequests.response(for: input)
        } catch {
            throw APIError.unprocessable(error.code, error.message)
        }
        return JSONBody(layout)
    }
}
