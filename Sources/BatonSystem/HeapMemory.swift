import CBatonShims

/// The C heap (glibc's malloc), which Swift's allocations come from.
public enum HeapMemory {
  /// Gives the pages of freed heap memory back to the kernel:
  /// `malloc_trim(0)`, which since glibc 2.8 releases the free pages of every
  /// arena, not only the top of the main heap. glibc keeps what a burst of
  /// work freed for reuse, so a daemon would otherwise stay at its peak
  /// resident size for its whole life. Call it after a large, rare piece of
  /// work (indexing a folder at start), not on a hot path: it walks the heap.
  /// Returns whether any memory was released.
  @discardableResult
  public static func releaseFreePages() -> Bool { baton_malloc_trim() == 1 }
}
