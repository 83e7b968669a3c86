// swift-tools-version: 6.0
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "StoreRescue",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "StoreRescue", targets: ["StoreRescue"]),
        .executable(name: "storerescue", targets: ["storerescue"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
    ],
    targets: [
        // System SQLite, plus the small C wrappers Swift cannot call directly.
        .systemLibrary(
            name: "SRSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // System zlib (raw DEFLATE for model caches, gzip for backups).
        .systemLibrary(
            name: "SRZlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        .target(
            name: "StoreRescue",
            dependencies: [
                "SRSQLite",
                "SRZlib",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "storerescue",
            dependencies: [
                "StoreRescue",
                "SRSQLite",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // A child process for backup tests that need limits of their own (`ulimit -f`).
        .executableTarget(
            name: "storerescue-backup-probe",
            dependencies: ["StoreRescue"],
            path: "Tests/BackupProbe",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StoreRescueTests",
            dependencies: ["StoreRescue", "storerescue-backup-probe"],
            swiftSettings: swiftSettings
        ),
    ]
)
