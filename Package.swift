// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "Scrollback",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "ScrollbackLayout", targets: ["ScrollbackLayout"]),
        .library(name: "ScrollbackModels", targets: ["ScrollbackModels"]),
        .library(name: "ScrollbackTimeline", targets: ["ScrollbackTimeline"]),
        .library(name: "ScrollbackMedia", targets: ["ScrollbackMedia"]),
        .library(name: "ScrollbackClient", targets: ["ScrollbackClient"]),
        // A product of its own, so apps that do not use Combine do not link it.
        .library(name: "ScrollbackClientCombine", targets: ["ScrollbackClientCombine"]),
        // A product of its own, so apps that keep nothing on disk do not link SQLite.
        .library(name: "ScrollbackOffline", targets: ["ScrollbackOffline"]),
        .executable(name: "scrollback", targets: ["scrollback"]),
        .executable(name: "scrollback-load", targets: ["scrollback-load"]),
    ],
    // The service, its tools and benchmarks need the packages their
    // dependencies name under this trait; the kit's products do not. An app
    // that depends on the kit only turns the default off
    // (`.package(url: ..., from: ..., traits: [])`) and resolves none of
    // them: hummingbird, postgres-nio, jwt-kit, swift-prometheus and the rest.
    traits: [
        .default(enabledTraits: ["Service"]),
        .trait(name: "Service", description: "The server, the store, the command-line tools and the benchmarks."),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        // SHA-256 of uploads, HMAC-SHA256 of AWS Signature V4 (the version jwt-kit resolves to).
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // The kit's offline store (SQLite; Debian's libsqlite3-dev on Linux).
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
    ],
    targets: [
        // Pure Swift, no Foundation: an iOS app can depend on it alone.
        .target(name: "ScrollbackLayout"),
        .target(name: "ScrollbackModels"),
        // What uploaded bytes are (content type, kind, image size): pure functions over
        // bytes, no Foundation, so the server and an app can both call it.
        .target(name: "ScrollbackMedia"),
        // Pure state of one conversation's window for an inverted list: no I/O.
        .target(name: "ScrollbackTimeline", dependencies: ["ScrollbackModels", "ScrollbackLayout"]),
        // The Swift client kit: HTTP and the live stream. Never the store or the server.
        .target(
            name: "ScrollbackClient",
            dependencies: [
                "ScrollbackModels", "ScrollbackTimeline", "ScrollbackLayout",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The kit's calls as lazy publishers: Combine on Apple platforms, OpenCombine elsewhere.
        .target(
            name: "ScrollbackClientCombine",
            dependencies: ["ScrollbackClient", .product(name: "OpenCombineShim", package: "OpenCombine")]
        ),
        // The kit's offline store: windows, read markers and the outbox in SQLite.
        .target(
            name: "ScrollbackOffline",
            dependencies: ["ScrollbackClient", "ScrollbackModels", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .target(
            name: "ScrollbackStore",
            dependencies: [
                "ScrollbackModels",
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Service"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Service"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Service"])),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            plugins: ["EmbedResources"]
        ),
        .target(
            name: "ScrollbackEmbeddedPostgres",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "ScrollbackServer",
            dependencies: [
                "ScrollbackLayout",
                "ScrollbackMedia",
                "ScrollbackModels",
                "ScrollbackObjectStorage",
                "ScrollbackStore",
                // The object store's calls, when uploads live in one.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["Service"])),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Service"])),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["Service"])),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket", condition: .when(traits: ["Service"])),
                .product(name: "JWTKit", package: "jwt-kit", condition: .when(traits: ["Service"])),
                // The HTTP parts the slow-client guard's observer sees.
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Service"])),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Service"])),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Service"])),
            ],
            plugins: ["EmbedResources"]
        ),
        .executableTarget(
            name: "scrollback",
            dependencies: [
                "ScrollbackServer",
                "ScrollbackLayout",
                "ScrollbackClient",
                "ScrollbackTimeline",
                "ScrollbackEmbeddedPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Service"])),
            ]
        ),
        // Attachment bytes in an S3-compatible object store: AWS Signature V4
        // (presigned URLs for clients, signed requests for the server) and a
        // small client over async-http-client. Knows nothing of chats.
        .target(
            name: "ScrollbackObjectStorage",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["Service"])),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // Latency histograms, their summaries, open-loop pacing and process
        // memory: what the benchmark and the load test measure with.
        .target(
            name: "ScrollbackMeasure",
            dependencies: [.product(name: "Histogram", package: "hdrhistogram-swift", condition: .when(traits: ["Service"]))]
        ),
        // Benchmarks print figures; they are not tests.
        .executableTarget(
            name: "scrollback-bench",
            dependencies: [
                "ScrollbackLayout",
                "ScrollbackMeasure",
                // Only for the hot statements' SQL, which pgbench runs as the baseline.
                "ScrollbackStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Service"])),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Histogram", package: "hdrhistogram-swift", condition: .when(traits: ["Service"])),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The load test: real chat traffic through the client kit only (a
        // black box to the server), with correctness checked at the end.
        .executableTarget(
            name: "scrollback-load",
            dependencies: [
                "ScrollbackClient",
                "ScrollbackModels",
                "ScrollbackMeasure",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Service"])),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Histogram", package: "hdrhistogram-swift", condition: .when(traits: ["Service"])),
                // Signs the users' tokens, as the integrating app's backend would.
                .product(name: "JWTKit", package: "jwt-kit", condition: .when(traits: ["Service"])),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // A process that uses the offline store, for the tests that kill it
        // and start it again (Tests/ScrollbackClientTests/OfflineProcessTests).
        .executableTarget(
            name: "scrollback-offline-probe",
            dependencies: ["ScrollbackClient", "ScrollbackOffline"]
        ),
        // Turns sql/*.sql and openapi.yaml into Swift string constants, so the
        // binary carries its schema and API description without the source tree.
        .executableTarget(name: "EmbedResourcesTool"),
        .plugin(
            name: "EmbedResources",
            capability: .buildTool(),
            dependencies: ["EmbedResourcesTool"]
        ),
        .target(
            name: "ScrollbackTestSupport",
            dependencies: [
                "ScrollbackStore",
                "ScrollbackServer",
                "ScrollbackEmbeddedPostgres",
                "ScrollbackModels",
                "ScrollbackObjectStorage",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Service"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Service"])),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/ScrollbackTestSupport"
        ),
        .testTarget(
            name: "ScrollbackLayoutTests",
            dependencies: [
                "ScrollbackLayout",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "ScrollbackModelsTests",
            dependencies: ["ScrollbackModels", .product(name: "PropertyBased", package: "swift-property-based")],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "ScrollbackMediaTests",
            dependencies: ["ScrollbackMedia", .product(name: "PropertyBased", package: "swift-property-based")],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "ScrollbackTimelineTests",
            dependencies: ["ScrollbackTimeline", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(
            name: "ScrollbackClientTests",
            dependencies: [
                "ScrollbackClient", "ScrollbackTimeline", "ScrollbackLayout", "ScrollbackTestSupport", "ScrollbackServer",
                "ScrollbackOffline",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .testTarget(
            name: "ScrollbackClientCombineTests",
            dependencies: [
                "ScrollbackClientCombine", "ScrollbackClient", "ScrollbackTimeline", "ScrollbackTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ScrollbackLoadTests",
            dependencies: [
                "scrollback-load", "ScrollbackTestSupport", "ScrollbackModels",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .testTarget(
            name: "ScrollbackObjectStorageTests",
            dependencies: [
                "ScrollbackObjectStorage",
                "ScrollbackTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "ScrollbackEmbeddedPostgresTests",
            dependencies: ["ScrollbackEmbeddedPostgres"]
        ),
        .testTarget(
            name: "ScrollbackStoreTests",
            dependencies: [
                "ScrollbackStore", "ScrollbackTestSupport", "ScrollbackEmbeddedPostgres",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "scrollbackTests",
            dependencies: ["scrollback", "ScrollbackServer", "ScrollbackLayout", "ScrollbackModels"]
        ),
        .testTarget(
            name: "ScrollbackServerTests",
            dependencies: [
                "ScrollbackServer",
                "ScrollbackTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["Service"])),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit", condition: .when(traits: ["Service"])),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Service"])),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
    ]
)
