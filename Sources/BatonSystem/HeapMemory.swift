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

  /// Caps glibc's malloc arenas (`mallopt(M_ARENA_MAX)`). By default each
  /// thread that allocates under contention may get an arena of its own (up
  /// to 8 per core), and every arena keeps its own free memory: the agent's
  /// indexes, built by the watcher's thread and the engine's, left about
  /// 7 MB more resident with 100,000 notes than with one arena. The agent
  /// allocates little on hot paths, so one arena's lock costs nothing
  /// measurable. Call before starting threads.
  public static func limitArenas(to count: Int) {
    _ = baton_malloc_arena_max(Int32(clamping: count))
  }
}
