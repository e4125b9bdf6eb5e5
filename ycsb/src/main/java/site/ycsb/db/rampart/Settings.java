package site.ycsb.db.rampart;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import site.ycsb.DBException;

/**
 * The binding's properties ({@code -p rampart.*=...} or a workload file), checked once per DB
 * instance. A bad value is a {@link DBException} naming the property and what it allows. {@link
 * RampartClient}'s Javadoc describes each property.
 */
final class Settings {
  static final String MODE = "rampart.mode";
  static final String TXNLEN = "rampart.txnlen";
  static final String ISOLATION = "rampart.isolation";
  static final String CONFIG = "rampart.config";
  static final String GET = "rampart.get";
  static final String PUT = "rampart.put";
  static final String TRANSPORT = "rampart.transport";
  static final String CLIENT_ID_BASE = "rampart.clientidbase";
  static final String HOST = "rampart.host";
  static final String PORT = "rampart.port";
  static final String TIMEOUT_MS = "rampart.timeoutms";
  static final String STATS = "rampart.stats";

  /** Timestamp client ids are 0..8191 (src/common/timestamp.h). */
  static final int MAX_CLIENT_ID = 8191;

  enum Mode {
    RESP,
    NATIVE
  }

  final Mode mode;
  final int txnlen;
  final String isolation;
  // native
  final String config;
  final String get; // "" = the cluster file's [client] get
  final String put; // "" = the cluster file's [client] put
  final String transport; // "" = the cluster file's [transport] backend
  final int clientIdBase;
  final boolean stats;
  // resp
  final String host;
  final int port;
  final int timeoutMs;
  /** YCSB's fieldcount: an update carrying this many fields replaces the whole record. */
  final int fieldCount;

  private Settings(Properties p) throws DBException {
    mode = Mode.valueOf(oneOf(p, MODE, "resp", List.of("resp", "native")).toUpperCase());
    txnlen = intAtLeast(p, TXNLEN, 1, 1);
    isolation = oneOf(p, ISOLATION, "ramp", List.of("ramp", "s2pl", "none"));
    boolean isNative = mode == Mode.NATIVE;
    if (!isNative && !isolation.equals("ramp")) {
      throw new DBException(
          ISOLATION
              + "="
              + isolation
              + " is not available with rampart.mode=resp: the proxy runs every command as a"
              + " transaction of the isolation set in the [proxy] section of its cluster file"
              + " (isolation = \"ramp\" | \"none\"); leave "
              + ISOLATION
              + " unset (ramp) in resp mode, or use rampart.mode=native for ramp|s2pl|none");
    }
    if (!isNative) {
      // The data-path selectors exist only in native mode: refusing them keeps a resp run
      // from being taken for a GET*/PUT+ measurement.
      for (String nativeOnly : List.of(GET, PUT, TRANSPORT, CLIENT_ID_BASE, STATS)) {
        if (p.getProperty(nativeOnly) != null) {
          throw new DBException(
              nativeOnly
                  + " applies to rampart.mode=native only (resp mode goes through the proxy,"
                  + " whose data path is set in its cluster file)");
        }
      }
    }
    config = p.getProperty(CONFIG, "").trim();
    if (isNative) {
      if (config.isEmpty()) {
        throw new DBException(
            CONFIG + " is required with rampart.mode=native: the path of the cluster file");
      }
      if (!Files.isReadable(Path.of(config))) {
        throw new DBException(CONFIG + "=" + config + ": no readable file there");
      }
    }
    get = oneOf(p, GET, "", List.of("rpc", "ring", "read", "auto"));
    put = oneOf(p, PUT, "", List.of("rpc", "ring"));
    transport = oneOf(p, TRANSPORT, "", List.of("tcp", "ucx"));
    clientIdBase = intAtLeast(p, CLIENT_ID_BASE, 2000, 0);
    if (clientIdBase > MAX_CLIENT_ID) {
      throw new DBException(
          CLIENT_ID_BASE + "=" + clientIdBase + ": client ids are 0.." + MAX_CLIENT_ID);
    }
    stats = oneOf(p, STATS, "false", List.of("true", "false")).equals("true");
    host = p.getProperty(HOST, "127.0.0.1").trim();
    if (host.isEmpty()) {
      throw new DBException(HOST + " is empty: the proxy's address, e.g. 127.0.0.1");
    }
    port = intAtLeast(p, PORT, 6380, 1);
    if (port > 65535) {
      throw new DBException(PORT + "=" + port + ": a TCP port is 1..65535");
    }
    timeoutMs = intAtLeast(p, TIMEOUT_MS, 10000, 1);
    int fields;
    try {
      fields = Integer.parseInt(p.getProperty("fieldcount", "10").trim());
    } catch (NumberFormatException e) {
      fields = 10; // CoreWorkload refuses it before any DB starts
    }
    fieldCount = fields;
    if (txnlen > 1 && Boolean.parseBoolean(p.getProperty("dataintegrity", "false").trim())) {
      throw new DBException(
          "dataintegrity=true needs "
              + TXNLEN
              + "=1: a buffered read returns BATCHED_OK before its values exist, so YCSB"
              + " would find nothing to verify");
    }
  }

  static Settings parse(Properties p) throws DBException {
    return new Settings(p);
  }

  /** The property's value among `allowed` (case-sensitive, trimmed), or `dflt` when unset. */
  private static String oneOf(Properties p, String name, String dflt, List<String> allowed)
      throws DBException {
    String v = p.getProperty(name);
    if (v == null) {
      return dflt;
    }
    v = v.trim();
    if (!allowed.contains(v)) {
      throw new DBException(
          name + "=" + v + " is not allowed: " + name + " is one of " + String.join(" | ", allowed));
    }
    return v;
  }

  private static int intAtLeast(Properties p, String name, int dflt, int min)
      throws DBException {
    String v = p.getProperty(name);
    if (v == null) {
      return dflt;
    }
    int n;
    try {
      n = Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new DBException(name + "=" + v + " is not an integer (an integer >= " + min + ")");
    }
    if (n < min) {
      throw new DBException(name + "=" + v + " is too small: an integer >= " + min);
    }
    return n;
  }
}
