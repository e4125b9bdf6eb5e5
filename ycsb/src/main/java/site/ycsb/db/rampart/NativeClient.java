package site.ycsb.db.rampart;

/**
 * One connection set to a rampart cluster through the C++ transaction client ({@code
 * txn::Client}, src/txn/client.h), over JNI: the {@code native} mode of the YCSB binding, so the
 * one-sided GET&#42;/PUT+ path of seed 000 is what YCSB measures.
 *
 * <p>NOT thread-safe: use one per thread, from the thread that created it (the C++ Fabric
 * belongs to its thread). Calls from another thread throw {@link IllegalStateException}; only
 * {@link #close()} may come from another thread, once the owner no longer uses the client.
 *
 * <pre>{@code
 * try (NativeClient c = new NativeClient("cluster.toml", "ramp", "read", "ring", "", 7)) {
 *   c.multiPut(new byte[][] {k1, k2}, new byte[][] {v1, v2});
 *   byte[][] values = c.multiGet(new byte[][] {k1, k2});   // never k1 new, k2 old
 * }
 * }</pre>
 *
 * <p>The library: {@code librampart_jni.so}, the CMake target {@code rampart_jni} ({@code ninja -C
 * build/release rampart_jni}, built when a JDK is installed), loaded from the system property
 * {@code rampart.jni} (an absolute path: {@code -Drampart.jni=$PWD/build/release/librampart_jni.so})
 * or else from {@code java.library.path}. It logs to stderr at warn; the environment variable
 * {@code RAMPART_LOG} (trace, debug, info, ...) sets the level.
 *
 * <p>Errors: a failed transaction or a bad configuration throws {@link RampartException} with the
 * C++ {@code Status::ToString()} ({@code "Unavailable: ..."}, {@code "Invalid argument: ..."}); a
 * null array or element, or keys and values of different lengths, {@link
 * IllegalArgumentException}; a call after {@link #close()} {@link IllegalStateException}. A failed
 * {@link #multiPut} has an unknown outcome: under {@code ramp} it may still become visible, but
 * only as a whole. The client stays usable after any of these.
 */
public final class NativeClient implements AutoCloseable {
  /**
   * Loads librampart_jni: from the system property rampart.jni (absolute path to the .so) if set,
   * else System.loadLibrary("rampart_jni") (java.library.path).
   */
  static {
    String path = System.getProperty("rampart.jni");
    if (path != null && !path.isEmpty()) {
      System.load(path);
    } else {
      System.loadLibrary("rampart_jni");
    }
  }

  private long handle; // a C++ txn::Client; 0 once closed
  private final Thread owner;

  /**
   * Creates the client (connections open lazily, on first use, so this succeeds while nodes are
   * still starting).
   *
   * @param configPath cluster TOML file ("" = the embedded default, config/default.toml)
   * @param isolation "ramp" | "s2pl" | "none"
   * @param get the first GET round: "rpc" | "ring" (GET+) | "read" (GET&#42;); "" = the config's
   *     [client] get
   * @param put PREPARE/COMMIT: "rpc" | "ring" (PUT+); "" = the config's [client] put
   * @param transport "" (the config's [transport] backend) | "tcp" | "ucx"; ring and read need ucx
   * @param clientId timestamp client id 0..8191, unique per live client of the cluster
   * @throws RampartException with the C++ Status text on a bad config or option
   */
  public NativeClient(
      String configPath, String isolation, String get, String put, String transport, int clientId) {
    this.handle = open(configPath, isolation, get, put, transport, clientId);
    this.owner = Thread.currentThread();
  }

  /**
   * One read transaction (read atomic under ramp). Keys may repeat.
   *
   * @return values[i] for keys[i]; null when absent or deleted
   * @throws RampartException on failure (message = Status::ToString())
   */
  public byte[][] multiGet(byte[][] keys) {
    return multiGet0(checkedHandle(), keys);
  }

  /**
   * One write transaction of distinct keys, at one new timestamp. An empty list is a no-op.
   *
   * @throws RampartException on failure, also for repeated keys (InvalidArgument)
   */
  public void multiPut(byte[][] keys, byte[][] values) {
    multiPut0(checkedHandle(), keys, values);
  }

  /** Deletes one key (a tombstone write): it reads as absent afterwards. */
  public void delete(byte[] key) {
    delete0(checkedHandle(), key);
  }

  /**
   * The client's counters since it was created, as a JSON object string: {@code
   * {"transactions":N,"repair_rounds":N,"slot_reads":N,"slot_rejects":N,"cache_misses":N,
   * "reconnects":N}} (slot_* and cache_misses count GET&#42; keys; docs/transactions.md).
   */
  public String stats() {
    return stats0(checkedHandle());
  }

  /** Frees the C++ client; idempotent. */
  @Override
  public void close() {
    long h = handle;
    handle = 0;
    close0(h);
  }

  private long checkedHandle() {
    if (Thread.currentThread() != owner) {
      throw new IllegalStateException(
          "NativeClient used from thread "
              + Thread.currentThread().getName()
              + " but created by "
              + owner.getName()
              + " (not thread-safe: one client per thread)");
    }
    if (handle == 0) {
      throw new IllegalStateException("NativeClient is closed");
    }
    return handle;
  }

  private static native long open(
      String configPath, String isolation, String get, String put, String transport, int clientId);

  private static native byte[][] multiGet0(long handle, byte[][] keys);

  private static native void multiPut0(long handle, byte[][] keys, byte[][] values);

  private static native void delete0(long handle, byte[] key);

  private static native String stats0(long handle);

  private static native void close0(long handle); // 0: a no-op
}
