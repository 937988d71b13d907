import Foundation
import PostgresNIO
import ScrollbackModels

/// What a device registers: its platform and token, and the app and
/// (APNs) environment they belong to.
public struct RegisteredDevice: Sendable, Equatable {
    public var platform: DevicePlatform
    public var token: String
    public var appID: String?
    public var environment: DeviceEnvironment?

    public init(platform: DevicePlatform, token: String, appID: String? = nil, environment: DeviceEnvironment? = nil) {
        self.platform = platform
        self.token = token
        self.appID = appID
        self.environment = environment
    }
}

extension ScrollbackStore {
    /// Registers device `deviceID` of `user` with its push token, or
    /// replaces the token of one registered before. The same token held by
    /// another device (another user signed in on that phone before) is
    /// removed in the same transaction. `StoreError.tooManyDevices` when the
    /// device is new and the user has `limit` already. Answers the device,
    /// and whether it is new.
    public func registerDevice(
        _ deviceID: String, of user: UserID, platform: DevicePlatform, token: String, limit: Int
    ) async throws -> (device: Device, created: Bool) {
        try await registerDevice(deviceID, of: user, RegisteredDevice(platform: platform, token: token), limit: limit)
    }

    /// Registers device `deviceID` of `user` as `registered` describes it
    /// (see the other form).
    public func registerDevice(
        _ deviceID: String, of user: UserID, _ registered: RegisteredDevice, limit: Int
    ) async throws -> (device: Device, created: Bool) {
        let (platform, token) = (registered.platform, registered.token)
        let (appID, environment) = (registered.appID, registered.environment?.rawValue)
        let registered = try await withTransaction(as: .devices) { [logger] connection in
            // One registration of a user at a time: the limit holds. Then one
            // of a token at a time, whoever registers it: the second of two
            // users registering the same token at once waits, and its DELETE
            // (a statement of its own, after the wait) sees the first's row
            // and takes the token from it, rather than both inserting and the
            // second breaking `devices_token`. The token's lock is always
            // taken second, so no two registrations wait for each other.
            _ = try await connection.query(
                """
                SELECT pg_advisory_xact_lock(hashtextextended(\(user.rawValue), 20261126)),
                       pg_advisory_xact_lock(hashtextextended(\(platform.rawValue) || ':' || \(token), 20261202))
                """, logger: logger
            ).collect()
            _ = try await connection.query(
                """
                DELETE FROM devices
                WHERE platform = \(platform.rawValue) AND token = \(token)
                  AND NOT (user_id = \(user.rawValue) AND device_id = \(deviceID))
                """, logger: logger
            ).collect()
            let rows = try await connection.query(
                """
                INSERT INTO devices (user_id, device_id, platform, token, app_id, environment)
                SELECT \(user.rawValue), \(deviceID), \(platform.rawValue), \(token), \(appID), \(environment)
                WHERE EXISTS (SELECT 1 FROM devices WHERE user_id = \(user.rawValue) AND device_id = \(deviceID))
                   OR (SELECT count(*) FROM devices WHERE user_id = \(user.rawValue)) < \(limit)
                ON CONFLICT (user_id, device_id) DO UPDATE
                    SET platform = EXCLUDED.platform, token = EXCLUDED.token, app_id = EXCLUDED.app_id,
                        environment = EXCLUDED.environment, updated_at = now()
                RETURNING \(unescaped: Self.deviceColumns), xmax = 0
                """, logger: logger
            ).collect()
            guard let row = rows.first else { return nil as (Device, Bool)? }
            return (try Self.device(from: row), try row.makeRandomAccess()[7].decode(Bool.self))
        }
        guard let registered else { throw StoreError.tooManyDevices(limit: limit) }
        return registered
    }

    /// The devices of `user`, most recently registered first.
    public func devices(of user: UserID) async throws -> [Device] {
        try await rows(
            """
            SELECT \(unescaped: Self.deviceColumns) FROM devices
            WHERE user_id = \(user.rawValue) ORDER BY updated_at DESC, device_id
            """,
            writes: false, as: .devices
        ).map(Self.device(from:))
    }

    /// Forgets device `deviceID` of `user`; false when there was none.
    public func removeDevice(_ deviceID: String, of user: UserID) async throws -> Bool {
        try await !rows(
            "DELETE FROM devices WHERE user_id = \(user.rawValue) AND device_id = \(deviceID) RETURNING 1",
            writes: true, as: .devices
        ).isEmpty
    }

    /// A device's columns, in the order `device(from:)` reads them.
    static let deviceColumns = "device_id, platform, token, app_id, environment, created_at, updated_at"

    static func device(from row: PostgresRow) throws -> Device {
        var cells = RowReader(row)
        let deviceID = try cells.required(String.self)
        guard let platform = DevicePlatform(rawValue: try cells.required(String.self)) else { throw MalformedRow() }
        let token = try cells.required(String.self)
        let appID = try cells.next(String.self)
        let environment = try cells.next(String.self).map { text in
            guard let known = DeviceEnvironment(rawValue: text) else { throw MalformedRow() }
            return known
        }
        return Device(
            deviceId: deviceID, platform: platform, token: token, appId: appID, environment: environment,
            createdAt: try cells.required(Date.self), updatedAt: try cells.required(Date.self))
    }
}
