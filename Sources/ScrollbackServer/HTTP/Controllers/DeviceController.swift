import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// The caller's devices for push notifications: register (or re-register
/// with a new token), list, remove.
struct DeviceController {
    let store: ScrollbackStore

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.get("devices", use: list)
        group.put("devices/:device_id", use: register)
        group.delete("devices/:device_id", use: remove)
    }

    /// 201 for a new device, 200 for one registered again.
    @Sendable func register(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<Device> {
        let user = try context.requireUser()
        let deviceID = try Validation.deviceID(context.pathParameter("device_id") ?? "")
        let input = try await RequestBody.decode(RegisterDeviceRequest.self, from: request, context: context)
        let (device, created) = try await store.registerDevice(
            deviceID, of: user, try Validation.device(input), limit: APILimits.maxDevicesPerUser)
        return JSONBody(device, status: created ? .created : .ok)
    }

    @Sendable func list(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<DeviceList> {
        let user = try context.requireUser()
        return JSONBody(DeviceList(devices: try await store.devices(of: user)))
    }

    @Sendable func remove(_ request: Request, context: ScrollbackRequestContext) async throws -> HTTPResponse.Status {
        let user = try context.requireUser()
        let deviceID = context.pathParameter("device_id") ?? ""
        guard try await store.removeDevice(deviceID, of: user) else {
            throw APIError(.notFound, .deviceNotFound, "You have no device registered with this id.")
        }
        return .noContent
    }
}
