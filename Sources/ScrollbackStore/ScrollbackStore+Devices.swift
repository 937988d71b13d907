import Foundation
import PostgresNIO
import ScrollbackModels

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
                INSERT INTO devices (user_id, device_id, platform, token)
                SELECT \(user.rawValue), \(deviceID), \(platform.rawValue), \(token)
                WHERE EXISTS (SELECT 1 FROM devices WHERE user_id = \(user.rawValue) AND device_id = \(deviceID))
                   OR (SELECT count(*) FROM devices WHERE user_id = \(user.rawValue)) < \(limit)
                ON CONFLICT (user_id, device_id) DO UPDATE
                    SET platform = EXCLUDED.platform, token = EXCLUDED.token, updated_at = now()
                RETURNING device_id, platform, token, created_at, updated_at, xmax = 0
                """, logger: logger
            ).collect()
            guard let row = rows.first else { return nil as (Device, Bool)? }
            let (deviceID, platform, token, createdAt, updatedAt, created) = try row.decode(
                (String, String, String, Date, Date, Bool).self)
            return (try Self.device(deviceID, platform, token, createdAt, updatedAt), created)
        }
        guard let registered else { throw StoreError.tooManyDevices(limit: limit) }
        return registered
    }

    /// The devices of `user`, most recently registered first.
    public func devices(of user: UserID) async throws -> [Device] {
        try await rows(
            """
            SELECT device_id, platform, token, created_at, updated_at FROM devices
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

    static func device(from row: PostgresRow) throws -> Device {
        let (deviceID, platform, token, createdAt, updatedAt) = try row.decode((String, String, String, Date, Date).self)
        return try device(deviceID, platform, token, createdAt, updatedAt)
    }

    static func device(_ deviceID: String, _ platform: String, _ token: String, _ createdAt: Date, _ updatedAt: Date)
        throws -> Device
    {
        guard let platform = DevicePlatform(rawValue: platform) else { throw MalformedRow() }
        return Device(deviceId: deviceID, platform: platform, token: token, createdAt: createdAt, updatedAt: updatedAt)
    }
}
