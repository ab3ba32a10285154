// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Conveyor",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Conveyor", targets: ["Conveyor"]),
        .library(name: "ConveyorTesting", targets: ["ConveyorTesting"]),
        .executable(name: "conveyor-demo", targets: ["ConveyorDemo"]),
        .executable(name: "conveyor-bench", targets: ["ConveyorBench"]),
    ],
    targets: [
        // Synchronization.Mutex made visible to ThreadSanitizer; not a product.
        .target(name: "ConveyorLocking"),
        // Calls libcurl's variadic functions for the curl transport; needs no curl header.
        .target(name: "CConveyorCurl"),
        .target(name: "Conveyor", dependencies: ["ConveyorLocking", "CConveyorCurl"]),
        .target(name: "ConveyorTesting", dependencies: ["Conveyor", "ConveyorLocking"]),
        .executableTarget(
            name: "ConveyorDemo",
            dependencies: ["Conveyor", "ConveyorTesting"],
            path: "Examples/Demo"
        ),
        .executableTarget(
            name: "ConveyorBench",
            dependencies: ["Conveyor", "ConveyorTesting", "ConveyorTestSupport"],
            path: "Benchmarks/ConveyorBench"
        ),
        .executableTarget(name: "HTTPBinAPIExample", dependencies: ["Conveyor", "ConveyorTesting"], path: "Examples/HTTPBinAPI"),
        .executableTarget(name: "FileTransferExample", dependencies: ["Conveyor", "ConveyorTesting"], path: "Examples/FileTransfer"),
        .executableTarget(
            name: "AFNetworkingGuideExample", dependencies: ["Conveyor", "ConveyorTesting"], path: "Examples/AFNetworkingGuide"),
        .executableTarget(
            name: "ServerSentEventsExample", dependencies: ["Conveyor", "ConveyorTesting"], path: "Examples/ServerSentEvents"),
        .executableTarget(name: "OutboxExample", dependencies: ["Conveyor", "ConveyorTesting"], path: "Examples/Outbox"),
        // The README's quick start, verbatim (scripts/check-quickstart keeps them the same).
        .executableTarget(name: "QuickStartExample", dependencies: ["Conveyor"], path: "Examples/QuickStart"),
        // Runs the examples and helpers as child processes from both test targets.
        .target(name: "ConveyorTestSupport", path: "Tests/Support"),
        // A child process for tests that must run in another network namespace or be signalled.
        .executableTarget(name: "ConveyorTestHelper", dependencies: ["Conveyor", "ConveyorTesting"], path: "Tests/TestHelper"),
        .testTarget(
            name: "ConveyorTests",
            dependencies: [
                "Conveyor", "ConveyorLocking", "ConveyorTesting", "ConveyorTestHelper", "ConveyorTestSupport", "HTTPBinAPIExample",
                "FileTransferExample", "AFNetworkingGuideExample", "ServerSentEventsExample", "OutboxExample", "QuickStartExample",
            ]
        ),
        .testTarget(name: "ConformanceTests", dependencies: ["Conveyor", "ConveyorTesting", "ConveyorTestSupport", "HTTPBinAPIExample"]),
    ],
    swiftLanguageModes: [.v6]
)

// Strict settings for every target at once (the swift-log habit): Swift 6 mode is set above;
// `any` must be spelled out on every existential so its cost is visible in review.
for target in package.targets where target.name != "CConveyorCurl" {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
