import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import site.ycsb.db.rampart.NativeClient;
import site.ycsb.db.rampart.RampartException;

/**
 * Smoke test of librampart_jni through site.ycsb.db.rampart.NativeClient, run by hand against a
 * running ucx cluster (src/jni/smoke.sh starts one, compiles this and runs it):
 *
 * <pre>
 *   java -Drampart.jni=$PWD/build/release/librampart_jni.so -cp CLASSES NativeClientSmoke \
 *       cluster.toml dead.toml
 * </pre>
 *
 * cluster.toml: the running cluster (backend ucx); dead.toml: a cluster nobody serves (short
 * connect timeout). Prints one line per check and "smoke: OK"; exits 1 on the first failure.
 */
public final class NativeClientSmoke {
  private static int nextClientId = 100;
  private static int checks = 0;

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: NativeClientSmoke CLUSTER_TOML DEAD_CLUSTER_TOML");
      System.exit(2);
    }
    String config = args[0];
    String dead = args[1];

    implicitNullChecks(config);
    String[][] modes = {{"rpc", "rpc"}, {"ring", "ring"}, {"read", "ring"}, {"read", "rpc"}};
    for (String isolation : new String[] {"ramp", "s2pl", "none"}) {
      for (String[] mode : modes) {
        roundTrip(config, isolation, mode[0], mode[1]);
      }
    }
    configModes(config);
    oneSidedReads(config);
    errors(config, dead);
    misuse(config);
    throughput(config);
    System.out.println("smoke: OK (" + checks + " checks)");
  }

  private static NativeClient client(String config, String isolation, String get, String put) {
    return new NativeClient(config, isolation, get, put, "", nextClientId++);
  }

  // The JVM turns SIGSEGV in compiled code into NullPointerException; with UCX's error handler
  // still installed this would print "Caught signal 11" and freeze (librampart_jni gives the
  // signals back when it loads).
  private static void implicitNullChecks(String config) {
    try (NativeClient c = client(config, "ramp", "rpc", "rpc")) {  // loads the library
      check(c.stats().contains("\"transactions\":0"), "new client: " + c.stats());
      byte[] bytes = new byte[1];
      long npes = 0;
      for (int i = 0; i < 2_000_000; ++i) {
        try {
          npes += length(i % 1000 == 999 ? null : bytes);
        } catch (NullPointerException e) {
          ++npes;
        }
      }
      check(npes == 2_000_000, "implicit null checks: " + npes);
    }
    System.out.println("ok   NullPointerException from compiled code (SIGSEGV stays the JVM's)");
  }

  private static int length(byte[] a) {
    return a.length;
  }

  // multiPut/multiGet round trip, absent keys, binary and empty values, delete.
  private static void roundTrip(String config, String isolation, String get, String put) {
    String tag = isolation + "/" + get + "/" + put;
    try (NativeClient c = client(config, isolation, get, put)) {
      byte[][] keys = {b(tag + ":a"), b(tag + ":b"), b(tag + ":c"), b(tag + ":d")};
      byte[] binary = new byte[256];
      for (int i = 0; i < 256; ++i) binary[i] = (byte) i;
      byte[] big = new byte[100_000];
      Arrays.fill(big, (byte) 'x');
      byte[][] values = {b("1"), binary, new byte[0], big};
      c.multiPut(keys, values);
      byte[][] missing = {b(tag + ":missing")};
      byte[][] got = c.multiGet(concat(keys, missing));
      check(got.length == 5, tag + ": 5 results");
      for (int i = 0; i < 4; ++i) check(Arrays.equals(got[i], values[i]), tag + ": value " + i);
      check(got[4] == null, tag + ": absent key reads null");
      check(got[2] != null && got[2].length == 0, tag + ": empty value is not absent");

      c.multiPut(new byte[][] {keys[0]}, new byte[][] {b("2")});
      c.delete(keys[1]);
      got = c.multiGet(new byte[][] {keys[0], keys[1], keys[0]});
      check(Arrays.equals(got[0], b("2")) && Arrays.equals(got[2], b("2")), tag + ": overwrite");
      check(got[1] == null, tag + ": deleted key reads null");
      check(c.multiGet(new byte[0][]).length == 0, tag + ": empty multiGet");
      c.multiPut(new byte[0][], new byte[0][]);
      String stats = c.stats();
      check(stats.startsWith("{\"transactions\":") && stats.endsWith("}"), tag + ": " + stats);
    }
    System.out.println("ok   round trip " + tag);
  }

  // "" takes the modes from the config's [client]; the transport override "ucx" is accepted.
  private static void configModes(String config) {
    try (NativeClient c = new NativeClient(config, "ramp", "", "", "ucx", nextClientId++)) {
      c.multiPut(new byte[][] {b("cfg")}, new byte[][] {b("v")});
      check(Arrays.equals(c.multiGet(new byte[][] {b("cfg")})[0], b("v")), "config modes");
    }
    try (NativeClient c = new NativeClient("", "ramp", "", "", "", nextClientId++)) {
      check(c.stats().contains("\"transactions\":0"), "embedded default config: " + c.stats());
    }
    System.out.println("ok   modes from the config, the embedded default");
  }

  // GET*: after a first read fills the address cache, reads are one-sided.
  private static void oneSidedReads(String config) {
    try (NativeClient c = client(config, "ramp", "read", "ring")) {
      byte[][] keys = {b("gs:1"), b("gs:2"), b("gs:3")};
      c.multiPut(keys, new byte[][] {b("x"), b("y"), b("z")});
      for (int i = 0; i < 10; ++i) c.multiGet(keys);
      String stats = c.stats();
      long slotReads = counter(stats, "slot_reads");
      check(slotReads >= 27, "GET* slot reads after warm-up: " + stats);
      check(counter(stats, "transactions") == 11, "transactions counted: " + stats);
      System.out.println("ok   GET* one-sided reads: " + stats);
    }
  }

  // Options the constructor refuses with a RampartException.
  private record BadOptions(
      String what, String config, String isolation, String get, String put, String transport,
      int clientId) {}

  private static void errors(String config, String dead) {
    BadOptions[] refused = {
      new BadOptions("bad isolation", config, "serializable", "rpc", "rpc", "", 1),
      new BadOptions("empty isolation", config, "", "rpc", "rpc", "", 1),
      new BadOptions("bad get mode", config, "ramp", "star", "rpc", "", 1),
      new BadOptions("bad transport", config, "ramp", "rpc", "rpc", "rdma", 1),
      new BadOptions("get read over tcp", config, "ramp", "read", "rpc", "tcp", 1),
      new BadOptions("put ring over tcp", config, "ramp", "rpc", "ring", "tcp", 1),
      new BadOptions("missing config file", "/nonexistent/cluster.toml", "ramp", "", "", "", 1),
      new BadOptions("client id 8192", config, "ramp", "rpc", "rpc", "", 8192),
      new BadOptions("client id -1", config, "ramp", "rpc", "rpc", "", -1),
    };
    for (BadOptions o : refused) {
      expect(RampartException.class, o.what(),
          () -> new NativeClient(o.config(), o.isolation(), o.get(), o.put(), o.transport(),
              o.clientId()));
    }
    expect(IllegalArgumentException.class, "null isolation",
        () -> new NativeClient(config, null, "rpc", "rpc", "", 1));
    try (NativeClient c = client(config, "ramp", "rpc", "rpc")) {
      expect(RampartException.class, "repeated keys in multiPut",
          () -> c.multiPut(new byte[][] {b("k"), b("k")}, new byte[][] {b("1"), b("2")}));
      expect(RampartException.class, "key over max_key_bytes",
          () -> c.multiGet(new byte[][] {new byte[2000]}));
      // The client works on after errors.
      c.multiPut(new byte[][] {b("after")}, new byte[][] {b("errors")});
      check(Arrays.equals(c.multiGet(new byte[][] {b("after")})[0], b("errors")), "usable");
    }
    try (NativeClient c = new NativeClient(dead, "ramp", "rpc", "rpc", "", nextClientId++)) {
      expect(RampartException.class, "unreachable cluster", () -> c.multiGet(new byte[][] {b("k")}));
    }
  }

  private static void misuse(String config) throws InterruptedException {
    NativeClient c = client(config, "ramp", "rpc", "rpc");
    expect(IllegalArgumentException.class, "null keys", () -> c.multiGet(null));
    expect(IllegalArgumentException.class, "null key element",
        () -> c.multiGet(new byte[][] {b("a"), null}));
    expect(IllegalArgumentException.class, "null values", () -> c.multiPut(new byte[][] {}, null));
    expect(IllegalArgumentException.class, "null value element",
        () -> c.multiPut(new byte[][] {b("a")}, new byte[][] {null}));
    expect(IllegalArgumentException.class, "length mismatch",
        () -> c.multiPut(new byte[][] {b("a"), b("b")}, new byte[][] {b("1")}));
    expect(IllegalArgumentException.class, "null delete key", () -> c.delete(null));
    Throwable[] fromOther = new Throwable[1];
    Thread other = new Thread(() -> {
      try {
        c.stats();
      } catch (Throwable t) {
        fromOther[0] = t;
      }
    });
    other.start();
    other.join();
    check(fromOther[0] instanceof IllegalStateException, "use from another thread: " + fromOther[0]);
    System.out.println("ok   IllegalStateException from another thread: " + fromOther[0].getMessage());
    c.close();
    c.close();  // idempotent
    expect(IllegalStateException.class, "use after close", () -> c.multiGet(new byte[][] {b("a")}));
  }

  // Not a benchmark: a sanity figure for the JNI overhead on top of one transaction.
  private static void throughput(String config) {
    for (String[] mode : new String[][] {{"rpc", "rpc"}, {"ring", "ring"}, {"read", "ring"}}) {
      try (NativeClient c = client(config, "ramp", mode[0], mode[1])) {
        byte[][] keys = new byte[4][];
        byte[][] values = new byte[4][];
        for (int i = 0; i < 4; ++i) {
          keys[i] = b("tp:" + i);
          values[i] = new byte[1000];
        }
        c.multiPut(keys, values);
        for (int i = 0; i < 2000; ++i) c.multiGet(keys);  // warm-up (JIT, address cache)
        int n = 20_000;
        long start = System.nanoTime();
        for (int i = 0; i < n; ++i) c.multiGet(keys);
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("info multiGet of 4 keys x 1000 B, get %s: %.0f txn/s, %.1f us/txn%n",
            mode[0], n / seconds, seconds * 1e6 / n);
      }
    }
  }

  // ---- helpers ----

  private interface Body {
    void run() throws Exception;
  }

  private static void expect(Class<? extends Throwable> type, String what, Body body) {
    try {
      body.run();
    } catch (Throwable t) {
      check(type.isInstance(t), what + ": expected " + type.getSimpleName() + ", got " + t);
      System.out.println("ok   " + what + ": " + t.getClass().getSimpleName() + ": "
          + t.getMessage());
      return;
    }
    fail(what + ": expected " + type.getSimpleName() + ", nothing thrown");
  }

  private static void check(boolean condition, String what) {
    ++checks;
    if (!condition) fail(what);
  }

  private static void fail(String what) {
    System.out.println("FAIL " + what);
    System.exit(1);
  }

  private static long counter(String json, String name) {
    String key = "\"" + name + "\":";
    int at = json.indexOf(key);
    if (at < 0) fail("no " + name + " in " + json);
    int end = at + key.length();
    while (end < json.length() && Character.isDigit(json.charAt(end))) ++end;
    return Long.parseLong(json.substring(at + key.length(), end));
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[][] concat(byte[][] a, byte[][] b) {
    byte[][] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
