package site.ycsb.db.rampart;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Vector;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisException;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * YCSB's own redis binding's data layout and commands, one plain Redis command sequence per
 * operation, against the proxy ({@code -db site.ycsb.db.rampart.RedisLayoutClient}, or
 * {@code ycsb/run.sh -d redis}). It shows that an unmodified Redis client workload runs through
 * rampart's proxy — workloads A–F, scans included — where {@link RampartClient} groups operations
 * into transactions and has no scan.
 *
 * <p>Why a class of our own: YCSB publishes only {@code site.ycsb:core} on Maven Central; its
 * {@code redis-binding} ships in the release tarball alone, which this build cannot fetch. This
 * class issues the same commands that binding documents, so the proxy sees the same traffic:
 *
 * <ul>
 *   <li>insert: {@code HMSET key f v ...}, then {@code ZADD _indices hashCode(key) key} (the
 *       score is Java's {@code String.hashCode()} as a double);
 *   <li>read: {@code HGETALL key}, or {@code HMGET key f ...} when the read names fields;
 *   <li>update: {@code HMSET key f v ...};
 *   <li>scan: {@code ZRANGEBYSCORE _indices hashCode(start) +inf LIMIT 0 n}, then one read per
 *       key found;
 *   <li>delete: {@code DEL key} and {@code ZREM _indices key}.
 * </ul>
 *
 * Properties: {@code rampart.host}, {@code rampart.port}, {@code rampart.timeoutms} as for
 * RampartClient; the other rampart.* properties do not apply (a txnlen other than 1 is refused).
 * Each YCSB thread has its own connection; after a failure it is reopened on the next call.
 */
public class RedisLayoutClient extends DB {
  static final String INDEX_KEY = "_indices";

  private Settings settings;
  private Jedis jedis;

  @Override
  public void init() throws DBException {
    try {
      settings = Settings.parse(getProperties());
      if (settings.mode != Settings.Mode.RESP || settings.txnlen != 1) {
        throw new DBException(
            "RedisLayoutClient sends one command sequence per operation through the proxy:"
                + " it takes rampart.mode=resp and rampart.txnlen=1 (RampartClient groups"
                + " transactions)");
      }
    } catch (DBException e) {
      ErrorLog.once("bad property: " + e.getMessage());
      throw e;
    }
    try {
      connection().ping();
    } catch (JedisException e) {
      cleanup();
      throw new DBException(
          "cannot reach the proxy at " + settings.host + ":" + settings.port + ": "
              + e.getMessage(), e);
    }
  }

  @Override
  public void cleanup() {
    if (jedis != null) {
      try {
        jedis.close();
      } catch (JedisException e) {
        // The connection is going away either way.
      }
      jedis = null;
    }
  }

  private Jedis connection() {
    if (jedis == null) {
      jedis = new Jedis(settings.host, settings.port, settings.timeoutMs);
    }
    return jedis;
  }

  /** Logs the failure once per kind and drops the connection (no reply is left on it). */
  private Status failed(String op, JedisException e) {
    ErrorLog.once(op + ": " + e.getClass().getSimpleName(), op + " failed: " + e.getMessage());
    cleanup();
    return Status.ERROR;
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static double score(String key) {
    return key.hashCode();
  }

  private static Map<byte[], byte[]> hash(Map<String, ByteIterator> values) {
    Map<byte[], byte[]> out = new HashMap<>();
    for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
      out.put(bytes(e.getKey()), e.getValue().toArray());
    }
    return out;
  }

  /** Reads one record into `result`; false when it does not exist. */
  private boolean readRecord(String key, Set<String> fields, Map<String, ByteIterator> result) {
    Jedis j = connection();
    if (fields == null) {
      Map<byte[], byte[]> all = j.hgetAll(bytes(key));
      for (Map.Entry<byte[], byte[]> e : all.entrySet()) {
        result.put(new String(e.getKey(), StandardCharsets.UTF_8),
            new ByteArrayByteIterator(e.getValue()));
      }
      return !all.isEmpty();
    }
    List<String> names = new ArrayList<>(fields);
    byte[][] wanted = new byte[names.size()][];
    for (int i = 0; i < wanted.length; i++) {
      wanted[i] = bytes(names.get(i));
    }
    List<byte[]> values = j.hmget(bytes(key), wanted);
    boolean any = false;
    for (int i = 0; i < names.size(); i++) {
      if (values.get(i) != null) {
        result.put(names.get(i), new ByteArrayByteIterator(values.get(i)));
        any = true;
      }
    }
    return any;
  }

  @Override
  public Status read(String table, String key, Set<String> fields,
      Map<String, ByteIterator> result) {
    try {
      return readRecord(key, fields, result) ? Status.OK : Status.NOT_FOUND;
    } catch (JedisException e) {
      return failed("read", e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      Jedis j = connection();
      j.hmset(bytes(key), hash(values));
      j.zadd(INDEX_KEY, score(key), key);
      return Status.OK;
    } catch (JedisException e) {
      return failed("insert", e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      connection().hmset(bytes(key), hash(values));
      return Status.OK;
    } catch (JedisException e) {
      return failed("update", e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      Jedis j = connection();
      long removed = j.del(key);
      j.zrem(INDEX_KEY, key);
      return removed == 1 ? Status.OK : Status.NOT_FOUND;
    } catch (JedisException e) {
      return failed("delete", e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      List<String> keys =
          connection().zrangeByScore(INDEX_KEY, score(startkey), Double.POSITIVE_INFINITY, 0,
              recordcount);
      for (String key : keys) {
        HashMap<String, ByteIterator> record = new HashMap<>();
        // A key deleted between the range and its read is left out, as a scan allows.
        if (readRecord(key, fields, record)) {
          result.add(record);
        }
      }
      return Status.OK;
    } catch (JedisException e) {
      return failed("scan", e);
    }
  }
}
