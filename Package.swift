// swift-tools-version:6.0
// baton: a headless note-sync agent for Linux (see README.md).
import PackageDescription

/// A C library from a Debian -dev package, imported as a `[system]` module.
func systemLibrary(_ name: String, pkgConfig: String?, apt: [String]) -> Target {
  .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
  name: "baton",
  products: [
    .executable(name: "baton", targets: ["baton"]),
    .library(name: "BatonKit", targets: ["BatonKit"]),
  ],
  targets: [
    systemLibrary("CSodium", pkgConfig: "libsodium", apt: ["libsodium-dev"]),
    systemLibrary("CBluetooth", pkgConfig: "bluez", apt: ["libbluetooth-dev"]),
    systemLibrary("CInih", pkgConfig: "inih", apt: ["libinih-dev"]),
    systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: ["libsqlite3-dev"]),
    systemLibrary("CSystemd", pkgConfig: "libsystemd", apt: ["libsystemd-dev"]),
    // Small C shims for what Swift cannot reach directly (C globals, macros).
    .target(
      name: "CBatonShims",
      cSettings: [.define("_GNU_SOURCE")]
    ),
    // All of baton's logic, one folder per layer.
    .target(
      name: "BatonKit",
      dependencies: ["CSodium", "CBluetooth", "CInih", "CSQLite", "CSystemd", "CBatonShims"],
      exclude: ["Handoff/PROTOCOL.md"],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    // The thin command-line front end.
    .executableTarget(
      name: "baton",
      dependencies: ["BatonKit"],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    // Benchmarks that print figures (Tests/Scripts/bench-*.sh run them).
    .executableTarget(
      name: "baton-bench",
      dependencies: ["BatonKit"],
      path: "Sources/BatonBench",
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    .testTarget(
      name: "BatonKitTests",
      dependencies: ["BatonKit"],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
  ]
)
