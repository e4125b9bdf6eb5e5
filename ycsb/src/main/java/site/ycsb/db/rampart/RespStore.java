package site.ycsb.db.rampart;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Response;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import site.ycsb.DBException;

/**
 * resp mode: records as Redis hashes behind the proxy of {@code rampart up}, through one Jedis
 * connection. A batch of one key is one plain command (HGETALL, HMGET when the read names
 * fields, HMSET); a larger batch is MULTI, one such command per key, EXEC — all reads or all
 * writes, which the proxy runs as ONE RAMP transaction (docs/proxy.md, "What is atomic"). MULTI,
 * the commands and EXEC go out together: one round trip.
 *
 * <p>After any failure the connection is dropped and the next call opens a new one, so a
 * transaction that broke halfway never leaves replies behind on the socket.
 */
final class RespStore implements Store {
  private final String host;
  private final int port;
  private final int timeoutMs;
  private Jedis jedis;

  /** Connects and PINGs, so an unreachable proxy fails init() with a clear message. */
  RespStore(String host, int port, int timeoutMs) throws DBException {
    this.host = host;
    this.port = port;
    this.timeoutMs = timeoutMs;
    try {
      connection().ping();
    } catch (JedisException e) {
      close();
      throw new DBException(
          "cannot reach the proxy at " + host + ":" + port + " (" + Settings.HOST + ", "
              + Settings.PORT + "): " + e.getMessage(), e);
    }
  }

  private Jedis connection() {
    if (jedis == null) {
      jedis = new Jedis(host, port, timeoutMs);
    }
    return jedis;
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public Map<String, Map<String, byte[]>> read(Map<String, TxnBuffer.Read> batch) {
    Map<String, Map<String, byte[]>> out = new HashMap<>();
    try {
      Jedis j = connection();
      if (batch.size() == 1) {
        Map.Entry<String, TxnBuffer.Read> e = batch.entrySet().iterator().next();
        byte[] key = bytes(e.getKey());
        List<String> fields = fieldList(e.getValue());
        out.put(e.getKey(), fields == null
            ? fromHash(j.hgetAll(key))
            : fromFields(fields, j.hmget(key, fieldBytes(fields))));
        return out;
      }
      List<Response<Map<byte[], byte[]>>> all = new ArrayList<>();
      List<Response<List<byte[]>>> some = new ArrayList<>();
      List<List<String>> fieldLists = new ArrayList<>();
      Transaction t = j.multi();
      for (Map.Entry<String, TxnBuffer.Read> e : batch.entrySet()) {
        List<String> fields = fieldList(e.getValue());
        fieldLists.add(fields);
        if (fields == null) {
          all.add(t.hgetAll(bytes(e.getKey())));
          some.add(null);
        } else {
          all.add(null);
          some.add(t.hmget(bytes(e.getKey()), fieldBytes(fields)));
        }
      }
      exec(t);
      int i = 0;
      for (String key : batch.keySet()) {
        out.put(key, all.get(i) != null
            ? fromHash(all.get(i).get())
            : fromFields(fieldLists.get(i), some.get(i).get()));
        i++;
      }
      return out;
    } catch (RuntimeException e) {
      drop();
      throw e;
    }
  }

  @Override
  public void write(Map<String, TxnBuffer.Write> batch) {
    try {
      Jedis j = connection();
      if (batch.size() == 1) {
        Map.Entry<String, TxnBuffer.Write> e = batch.entrySet().iterator().next();
        j.hmset(bytes(e.getKey()), toHash(e.getValue()));
        return;
      }
      List<Response<String>> replies = new ArrayList<>();
      Transaction t = j.multi();
      for (Map.Entry<String, TxnBuffer.Write> e : batch.entrySet()) {
        replies.add(t.hmset(bytes(e.getKey()), toHash(e.getValue())));
      }
      exec(t);
      for (Response<String> r : replies) {
        r.get(); // throws the command's error reply, if any
      }
    } catch (RuntimeException e) {
      drop();
      throw e;
    }
  }

  @Override
  public void delete(String key) {
    try {
      connection().del(bytes(key));
    } catch (RuntimeException e) {
      drop();
      throw e;
    }
  }

  @Override
  public String stats() {
    return null;
  }

  @Override
  public void close() {
    drop();
  }

  private void drop() {
    if (jedis != null) {
      try {
        jedis.close();
      } catch (RuntimeException ignored) {
        // the connection is gone either way
      }
      jedis = null;
    }
  }

  private static void exec(Transaction t) {
    List<Object> replies = t.exec();
    if (replies == null) {
      throw new JedisDataException("EXEC returned nil: the transaction did not run");
    }
  }

  /** The read's fields in a fixed order, or null for all of them. */
  private static List<String> fieldList(TxnBuffer.Read read) {
    return read.fields == null ? null : new ArrayList<>(read.fields);
  }

  private static byte[][] fieldBytes(List<String> fields) {
    byte[][] out = new byte[fields.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = bytes(fields.get(i));
    }
    return out;
  }

  private static Map<byte[], byte[]> toHash(TxnBuffer.Write write) {
    Map<byte[], byte[]> hash = new HashMap<>();
    for (Map.Entry<String, byte[]> f : write.fields.entrySet()) {
      hash.put(bytes(f.getKey()), f.getValue());
    }
    return hash;
  }

  /** HGETALL's reply as a record; an empty hash is no record (null). */
  private static Map<String, byte[]> fromHash(Map<byte[], byte[]> hash) {
    if (hash == null || hash.isEmpty()) {
      return null;
    }
    Map<String, byte[]> record = new HashMap<>();
    for (Map.Entry<byte[], byte[]> f : hash.entrySet()) {
      record.put(new String(f.getKey(), StandardCharsets.UTF_8), f.getValue());
    }
    return record;
  }

  /** HMGET's reply as a record; all fields nil is no record (null). */
  private static Map<String, byte[]> fromFields(List<String> fields, List<byte[]> values) {
    Map<String, byte[]> record = new HashMap<>();
    for (int i = 0; i < fields.size() && i < values.size(); i++) {
      if (values.get(i) != null) {
        record.put(fields.get(i), values.get(i));
      }
    }
    return record.isEmpty() ? null : record;
  }
}
