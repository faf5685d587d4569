// swift-tools-version: 6.1
import PackageDescription

let strictSwift: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "swarmgate",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "swarmgate", targets: ["swarmgate"]),
        .library(name: "Manifest", targets: ["Manifest"]),
        .library(name: "Origin", targets: ["Origin"]),
        .library(name: "PieceStore", targets: ["PieceStore"]),
        .library(name: "Swarm", targets: ["Swarm"]),
        .library(name: "Gateway", targets: ["Gateway"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // C libraries, each behind one header of what swarmgate does with it.
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // libcurl and libcrypto are loaded when first used (CLoader): only their headers are
        // needed to build. (libxml2's headers come through pkg-config, which links it too.)
        .target(name: "CLoader"),
        .target(name: "CCurl", dependencies: ["CLoader"]),
        .systemLibrary(name: "CLinux"),
        .target(name: "CCrypto", dependencies: ["CLoader"]),

        // Manifest: HLS and DASH parse + rewrite and the proxy URL scheme. Pure values, no I/O.
        .target(
            name: "Manifest",
            dependencies: ["CLibXML2"],
            swiftSettings: strictSwift
        ),
        // Origin: fetching from CDNs through libcurl.
        .target(
            name: "Origin",
            dependencies: ["CCurl"],
            swiftSettings: strictSwift
        ),
        // PieceStore: pieces on disk, their SQLite index, SHA-256 checksums, eviction.
        .target(
            name: "PieceStore",
            dependencies: ["CCrypto", "CLinux", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        // Swarm: the checksum registry, prepare jobs and the scheduler that fills pieces.
        .target(
            name: "Swarm",
            dependencies: [
                "PieceStore", "Origin", "Manifest", "CLinux",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSwift
        ),
        // Gateway: the HTTP server, its routes, status codes, stats and health.
        .target(
            name: "Gateway",
            dependencies: [
                "Manifest",
                "Origin",
                "PieceStore",
                "Swarm",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSwift
        ),
        // The command line: argument parsing and wiring.
        .executableTarget(
            name: "swarmgate",
            dependencies: [
                "Gateway",
                "Manifest",
                "Origin",
                "PieceStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSwift
        ),

        // Where every test keeps its files, removed when the test process exits.
        .target(name: "TestScratch", path: "Tests/TestScratch", swiftSettings: strictSwift),
        .testTarget(name: "ManifestTests", dependencies: ["Manifest", "TestScratch"], swiftSettings: strictSwift),
        .testTarget(name: "OriginTests", dependencies: ["Origin", "TestScratch"], swiftSettings: strictSwift),
        .testTarget(
            name: "PieceStoreTests", dependencies: ["PieceStore", "TestScratch", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictSwift),
        .testTarget(
            name: "SwarmTests", dependencies: ["Swarm", "PieceStore", "TestScratch", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictSwift),
        .testTarget(name: "CLITests", dependencies: ["swarmgate", "Manifest", "TestScratch"], swiftSettings: strictSwift),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "swarmgate", "Swarm", "PieceStore", "TestScratch",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSwift),
        // DASH rewriting; depends on the executable too so that `swarmgate rewrite` is built for its CLI test.
        .testTarget(name: "DASHTests", dependencies: ["Manifest", "swarmgate", "TestScratch"], swiftSettings: strictSwift),
    ]
)

// libFuzzer targets, built only by scripts/fuzz (SWARMGATE_FUZZ=1) with
// `--sanitize=fuzzer --sanitize=address -Xswiftc -parse-as-library`: a plain build has no
// fuzzer runtime to link them against.
if Context.environment["SWARMGATE_FUZZ"] == "1" {
    package.targets += [
        .executableTarget(name: "HLSFuzz", dependencies: ["Manifest"], path: "Fuzz/Sources/HLSFuzz", swiftSettings: strictSwift),
        .executableTarget(name: "MPDFuzz", dependencies: ["Manifest"], path: "Fuzz/Sources/MPDFuzz", swiftSettings: strictSwift),
    ]
}

// The in-process throughput tool that scripts/bench runs (SWARMGATE_BENCH=1, release build).
if Context.environment["SWARMGATE_BENCH"] == "1" {
    package.targets += [
        .executableTarget(name: "ManifestBench", dependencies: ["Manifest"], path: "Benchmarks/ManifestBench", swiftSettings: strictSwift),
    ]
}
