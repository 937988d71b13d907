import Foundation
import ScrollbackModels

/// Where the reads of the current task go: a replica, or the primary (nil).
/// Writes and transactions go to the primary whatever it says.
enum ReadRoute {
    @TaskLocal static var replica: ReplicaSet.Replica?
}

extension ScrollbackStore {
    /// Runs `read` (reads only) on a replica that may serve `user` (see
    /// ``ReplicaSet``), or on the primary when none may. What a replica
    /// answers below `minVersion` (as `version` reads it from the result),
    /// and any failure of a replica (a conversation or a membership made a
    /// moment ago that it has not replayed yet, a replica that went away, a
    /// query cancelled by a conflict with recovery), is read again from the
    /// primary: a replica never makes a read fail or go back in time.
    func replicated<T: Sendable>(
        for user: UserID, atLeast minVersion: Int64 = 0, version: (T) -> Int64? = { _ in nil },
        _ read: () async throws -> T
    ) async throws -> T {
        guard let replica = replicas?.choose(for: user) else { return try await read() }
        do {
            let result = try await ReadRoute.$replica.withValue(replica) { try await read() }
            if let read = version(result), read < minVersion {
                replica.fellBack()
            } else {
                replica.served()
                return result
            }
        } catch let error as MalformedRow {
            throw error
        } catch is CancellationError where Task.isCancelled {
            throw CancellationError()
        } catch StoreError.unavailable {
            replica.markDown()
            replica.fellBack()
        } catch is StoreError {
            // What it answered (not found, not a member): it may not hold it yet.
            replica.fellBack()
        } catch {
            // The replica failed (its next poll that answers brings it back).
            replica.markDown()
            replica.fellBack()
        }
        return try await read()
    }

    /// Records that `user` wrote through this instance just now: until the
    /// replicas are known to hold it, their reads go to the primary.
    public func noteWrite(by user: UserID) {
        replicas?.writers.note(user)
    }

    /// Each replica as the last poll saw it (`/readyz`); empty without replicas.
    public var replicaStatuses: [ReplicaStatus] { replicas?.statuses ?? [] }

    /// The server that takes writes now (it changes after a failover).
    public var primaryEndpoint: DatabaseURL.Endpoint { primary.current.endpoint }
}

/// One replica in `/readyz`.
public struct ReplicaStatus: Sendable, Equatable, Codable {
    /// Its place in `SCROLLBACK_REPLICA_URLS`, from 1.
    public var replica: String
    public var up: Bool
    public var inRotation: Bool
    /// How long ago the newest commit it is known to hold was answered.
    public var lagSeconds: Double?
    /// Reads it answered, and reads it took that the primary answered.
    public var served: Int
    public var fellBack: Int

    enum CodingKeys: String, CodingKey {
        case replica, up, served
        case inRotation = "in_rotation"
        case lagSeconds = "lag_seconds"
        case fellBack = "fell_back"
    }
}
