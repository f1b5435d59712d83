import BatonSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Writes every HCI packet to a btsnoop file (the format of `btmon -w`,
/// Wireshark, Android's HCI log): a 16-byte header ("btsnoop\0", version 1,
/// datalink 1002 = H4, so every record keeps its H4 type byte), then one
/// record per packet: original length, included length, flags (bit 0:
/// received, bit 1: command or event), cumulative drops (all big-endian
/// 32-bit) and a 64-bit timestamp in microseconds since year 0.
public final class BTSnoopWriter: Sendable {
  /// Which way a packet went.
  public enum Direction: Sendable { case sent, received }

  private let file: Mutex<FileDescriptor?>
  public let path: String

  /// Creates (truncates) `path` and writes the header. A symbolic link at
  /// `path` is refused rather than followed (the log would truncate
  /// whatever it points at), and so is anything but a regular file.
  public init(path: String) throws {
    self.path = path
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(
        path, [.writeOnly, .create, .noFollow, .nonBlocking], permissions: 0o600)
    } catch let error as Errno where error == .tooManyLinks {
      throw HCIError.logFailed(
        path: path,
        reason: "it is a symbolic link, which the log does not follow; give the file itself")
    } catch let error as Errno where error.rawValue == ENXIO {
      // A FIFO nobody reads (opened without blocking).
      throw HCIError.logFailed(path: path, reason: "it is not a regular file; give a file's path")
    } catch {
      throw HCIError.logFailed(path: path, reason: "\(error)")
    }
    var info = stat()
    guard fstat(fd.rawValue, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
      fd.closeIgnoringErrors()
      throw HCIError.logFailed(path: path, reason: "it is not a regular file; give a file's path")
    }
    guard ftruncate(fd.rawValue, 0) == 0 else {
      let error = Errno.current
      fd.closeIgnoringErrors()
      throw HCIError.logFailed(path: path, reason: "\(error)")
    }
    var header = Array("btsnoop".utf8) + [0]
    header += BTSnoopWriter.bigEndian32(1) + BTSnoopWriter.bigEndian32(1002)
    do {
      try fd.writeAll(header)
    } catch {
      fd.closeIgnoringErrors()
      throw HCIError.logFailed(path: path, reason: "\(error)")
    }
    file = Mutex(fd)
  }

  /// Appends one H4 packet (type byte first). Write errors stop the log
  /// (reported once by the caller's logger), never the stack.
  public func write(_ packet: [UInt8], direction: Direction) {
    guard let type = packet.first else { return }
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let unixMicros = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec / 1000)
    let stamp = UInt64(bitPattern: unixMicros + 0x00DC_DDB3_0F2F_8000)
    var flags: UInt32 = direction == .received ? 1 : 0
    if type == 0x01 || type == 0x04 { flags |= 2 }
    var record = BTSnoopWriter.bigEndian32(UInt32(packet.count))
    record += BTSnoopWriter.bigEndian32(UInt32(packet.count))
    record += BTSnoopWriter.bigEndian32(flags) + BTSnoopWriter.bigEndian32(0)
    record +=
      BTSnoopWriter.bigEndian32(UInt32(stamp >> 32))
      + BTSnoopWriter.bigEndian32(UInt32(stamp & 0xFFFF_FFFF))
    record += packet
    file.withLock { fd in
      guard let current = fd else { return }
      do {
        try current.writeAll(record)
      } catch {
        Logger(label: "hci").warning("btsnoop log \(path): \(error); logging stopped")
        current.closeIgnoringErrors()
        fd = nil
      }
    }
  }

  /// Closes the file. Idempotent.
  public func close() {
    file.withLock { fd in
      fd?.closeIgnoringErrors()
      fd = nil
    }
  }

  static func bigEndian32(_ value: UInt32) -> [UInt8] {
    [
      UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF),
      UInt8(value & 0xFF),
    ]
  }

  deinit { close() }
}
