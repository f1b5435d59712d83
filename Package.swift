// swift-tools-version:6.0
// baton: a headless note-sync agent for Linux (see README.md).
import PackageDescription

/// A C library from a Debian -dev package, imported as a `[system]` module.
func systemLibrary(_ name: String, pkgConfig: String?, apt: [String]) -> Target {
  .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt(apt)])
}

/// Swift 6 mode; a release build puts each function in a section of its own,
/// so that the linker can place the code an agent runs together (see
/// `releaseLinking`).
let swiftSettings: [SwiftSetting] = [
  .swiftLanguageMode(.v6),
  .unsafeFlags(["-Xfrontend", "-function-sections"], .when(configuration: .release)),
]

/// How a release `baton` is linked: with lld, relative relocations packed
/// (DT_RELR, glibc 2.36), bound at start (`-z now`, lintian's
/// hardening-no-bindnow), and the functions an agent runs to start and to sit
/// idle placed first, in the order `Sources/baton/link-order.txt` lists them
/// (`Tests/Scripts/link-order.sh` writes it). An idle agent then maps 4.0 MB
/// of the program's 11.4 MB of code, in a few runs (3 MB of 10 MB, instead of
/// 5.8 MB scattered over all of it, when the list was first made;
/// ARCHITECTURE.md, "Memory"). A name the file lists that no longer exists
/// is skipped. SwiftPM does not relink when only the list changes.
/// libstdc++, which the toolchain's static Swift runtime needs, is linked
/// statically too: its shared library, opened and initialized at start,
/// was 0.7 MB of an idle agent's memory. `-L` puts
/// `Sources/baton/static-libstdc++` first where `-lstdc++` is looked for;
/// the linker script there names `libstdc++.a`. A build with the shared
/// Swift runtime asks for no `-lstdc++`, and the folder is not used.
let releaseLinking: [LinkerSetting] = [
  .unsafeFlags(
    [
      "-use-ld=lld",
      "-L", "\(Context.packageDirectory)/Sources/baton/static-libstdc++",
      "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
      // Every symbol bound at start, so that the GOT can be read-only (RELRO).
      "-Xlinker", "-z", "-Xlinker", "now",
      "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/baton/link-order.txt",
      "-Xlinker", "--no-warn-symbol-ordering",
    ], .when(configuration: .release))
]

/// One layer of baton: a library target in `Sources/<name>`.
func layer(_ name: String, _ dependencies: [Target.Dependency], exclude: [String] = []) -> Target {
  .target(name: name, dependencies: dependencies, exclude: exclude, swiftSettings: swiftSettings)
}

let package = Package(
  name: "baton",
  products: [
    .executable(name: "baton", targets: ["baton"])
  ],
  targets: [
    systemLibrary("CSodium", pkgConfig: "libsodium", apt: ["libsodium-dev"]),
    systemLibrary("CBluetooth", pkgConfig: "bluez", apt: ["libbluetooth-dev"]),
    systemLibrary("CInih", pkgConfig: "inih", apt: ["libinih-dev"]),
    systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: ["libsqlite3-dev"]),
    // libsystemd's headers only: baton opens the library when it first talks
    // to D-Bus (Sources/CBatonShims/systemd.c), so it is not linked.
    systemLibrary("CSystemd", pkgConfig: nil, apt: ["libsystemd-dev"]),
    // Small C shims for what Swift cannot reach directly (C globals, macros),
    // and libsystemd's sd-bus, opened when first called (systemd.c).
    .target(
      name: "CBatonShims",
      cSettings: [.define("_GNU_SOURCE")]
    ),
    // One target per layer; a layer imports only the layers below it
    // (ARCHITECTURE.md draws the graph).
    layer("BatonSystem", ["CBatonShims", "CSodium"]),
    // D-Bus over sd-bus: bluetoothd for the BlueZ backend, logind and the
    // session bus's notifications for the agent.
    layer("BatonDBus", ["BatonSystem", "CBatonShims", "CSystemd"]),
    layer("BatonNotes", ["BatonSystem"]),
    // The radio's seam: addresses, advertising reports, the `RadioHost`
    // protocol the agent talks to, its failures, and the controller spec.
    // Our own host (Host over L2CAP over HCI) and BlueZ implement it.
    layer("BatonRadio", ["BatonSystem"]),
    layer("BatonHCI", ["BatonRadio", "BatonSystem", "CBluetooth"]),
    layer("BatonL2CAP", ["BatonHCI", "BatonRadio", "BatonSystem"]),
    layer("BatonHost", ["BatonL2CAP", "BatonHCI", "BatonRadio", "BatonSystem"]),
    // The other backend: the system's bluetoothd (over D-Bus) and the
    // kernel's L2CAP sockets. It knows the beacon's header (Handoff's
    // `Beacon`), since bluetoothd takes the manufacturer data without it.
    layer(
      "BatonBlueZ",
      ["BatonRadio", "BatonDBus", "BatonHandoff", "BatonSystem", "CBatonShims", "CBluetooth"]),
    layer(
      "BatonHandoff", ["BatonNotes", "BatonSystem", "CSodium"], exclude: ["PROTOCOL.md"]),
    layer("BatonStore", ["BatonHandoff", "BatonNotes", "BatonSystem", "CSQLite"]),
    layer(
      "BatonAgent",
      [
        "BatonHost", "BatonHCI", "BatonBlueZ", "BatonRadio", "BatonDBus", "BatonStore",
        "BatonHandoff", "BatonNotes", "BatonSystem", "CInih", "CBatonShims",
      ]),
    layer(
      "BatonCLI",
      ["BatonAgent", "BatonBlueZ", "BatonHandoff", "BatonSystem", "CBatonShims"]),
    // The fuzz targets (`make fuzz`, through baton-fuzz): beside the CLI, they
    // reach every layer's decoders of outside bytes.
    layer(
      "BatonFuzz",
      [
        "BatonAgent", "BatonHost", "BatonL2CAP", "BatonHCI", "BatonBlueZ", "BatonRadio",
        "BatonDBus", "BatonHandoff", "BatonNotes", "BatonSystem",
      ]),
    // What the tests and the benchmarks share and the product never links:
    // the in-memory `MessageChannel` pair and where the repository and
    // temporary folders are (ARCHITECTURE.md).
    layer("BatonTestSupport", ["BatonSystem"]),
    // The thin command-line front end.
    .executableTarget(
      name: "baton",
      dependencies: ["BatonCLI", "BatonSystem"],
      exclude: ["link-order.txt", "static-libstdc++"],
      swiftSettings: swiftSettings,
      linkerSettings: releaseLinking
    ),
    // libFuzzer's driver for the decoders (`make fuzz`, Tests/Scripts/fuzz.sh
    // builds it with -sanitize=fuzzer,address); a plain build replays inputs.
    .executableTarget(
      name: "baton-fuzz",
      dependencies: ["BatonFuzz"],
      path: "Sources/baton-fuzz",
      swiftSettings: swiftSettings,
      linkerSettings: [.unsafeFlags(["-use-ld=lld"])]
    ),
    // Benchmarks that print figures (Tests/Scripts/bench-*.sh run them).
    .executableTarget(
      name: "baton-bench",
      dependencies: [
        "BatonAgent", "BatonHost", "BatonHCI", "BatonRadio", "BatonHandoff", "BatonNotes",
        "BatonSystem", "BatonTestSupport",
      ],
      path: "Sources/BatonBench",
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    .testTarget(
      name: "BatonTests",
      dependencies: [
        "BatonCLI", "BatonAgent", "BatonHost", "BatonL2CAP", "BatonHCI", "BatonBlueZ",
        "BatonRadio", "BatonDBus", "BatonStore", "BatonHandoff", "BatonNotes", "BatonSystem",
        "BatonFuzz", "BatonTestSupport", "CBluetooth",
      ],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
  ]
)
