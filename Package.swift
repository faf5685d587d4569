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
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // C libraries, each behind one module map and a header of typed shims.
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),

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
        // The command line: argument parsing and wiring.
        .executableTarget(
            name: "swarmgate",
            dependencies: [
                "Manifest",
                "Origin",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSwift
        ),

        .testTarget(name: "ManifestTests", dependencies: ["Manifest"], swiftSettings: strictSwift),
        .testTarget(name: "OriginTests", dependencies: ["Origin"], swiftSettings: strictSwift),
        .testTarget(name: "CLITests", dependencies: ["swarmgate"], swiftSettings: strictSwift),
        // DASH rewriting; depends on the executable too so that `swarmgate rewrite` is built for its CLI test.
        .testTarget(name: "DASHTests", dependencies: ["Manifest", "swarmgate"], swiftSettings: strictSwift),
    ]
)
