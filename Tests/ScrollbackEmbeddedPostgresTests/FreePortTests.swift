import Foundation
import Testing

@testable import ScrollbackEmbeddedPostgres

/// The port a cluster is started on is chosen where nothing else is handed
/// ports: below the kernel's ephemeral range, so that a connection opened,
/// or a server bound to port 0, between the choice and the server's bind
/// cannot take it.
@Suite struct FreePortTests {
    @Test func aFreePortIsBelowTheEphemeralRangeAndFree() throws {
        let low = try #require(EmbeddedPostgres.ephemeralPortsStart(), "Linux has ip_local_port_range")
        // What the kernel hands out for port 0 is in that range.
        let picked = (0..<100).compactMap { _ in EmbeddedPostgres.bindLoopback(port: 0) }
        #expect(!picked.isEmpty && picked.allSatisfy { $0 >= low })
        for _ in 0..<50 {
            let port = try EmbeddedPostgres.freeLoopbackPort()
            #expect(port >= low / 2 && port < low, "port \(port), ephemeral from \(low)")
            #expect(EmbeddedPostgres.bindLoopback(port: port) == port, "port \(port) can be bound")
        }
    }
}
