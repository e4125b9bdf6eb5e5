package site.ycsb.db.rampart;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import site.ycsb.DBException;

/**
 * native mode: records encoded by {@link RecordCodec} into one kv value per key, read and written
 * through {@link NativeClient} (the C++ txn::Client over JNI) with the configured isolation and
 * GET/PUT paths. A read batch is one multiGet; a write batch one multiPut. A write batch holding
 * partial records (updates that do not write every field) first reads the current records of
 * those keys in one read transaction, merges, then writes: two transactions, not atomic as a
 * whole (a concurrent write of the same record between them is overwritten).
 */
final class NativeStore implements Store {
  private final NativeClient client;

  NativeStore(Settings s, int clientId) throws DBException {
    try {
      client = new NativeClient(s.config, s.isolation, s.get, s.put, s.transport, clientId);
    } catch (LinkageError e) {
      throw new DBException(
          "cannot load librampart_jni.so (the CMake target rampart_jni, build/release/): pass"
              + " -Drampart.jni=/absolute/path/librampart_jni.so or put its folder on"
              + " java.library.path; ycsb/run.sh does: " + e, e);
    } catch (RuntimeException e) {
      throw new DBException(
          "cannot create the native client (" + Settings.CONFIG + "=" + s.config + ", "
              + Settings.ISOLATION + "=" + s.isolation + ", " + Settings.GET + "=" + s.get + ", "
              + Settings.PUT + "=" + s.put + ", " + Settings.TRANSPORT + "=" + s.transport
              + ", client id " + clientId + "): " + e.getMessage(), e);
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[][] keyBytes(List<String> keys) {
    byte[][] out = new byte[keys.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = bytes(keys.get(i));
    }
    return out;
  }

  private static TreeMap<String, byte[]> decode(String key, byte[] value) {
    try {
      return RecordCodec.decode(value);
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException(
          "key " + key + " holds no native-mode record (written through the proxy?): "
              + e.getMessage(), e);
    }
  }

  @Override
  public Map<String, Map<String, byte[]>> read(Map<String, TxnBuffer.Read> batch) {
    List<String> keys = new ArrayList<>(batch.keySet());
    byte[][] values = client.multiGet(keyBytes(keys));
    Map<String, Map<String, byte[]>> out = new HashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      String key = keys.get(i);
      if (values[i] == null) {
        out.put(key, null);
        continue;
      }
      TreeMap<String, byte[]> record = decode(key, values[i]);
      TxnBuffer.Read read = batch.get(key);
      if (read.fields != null) {
        record.keySet().retainAll(read.fields);
      }
      out.put(key, record);
    }
    return out;
  }

  @Override
  public void write(Map<String, TxnBuffer.Write> batch) {
    List<String> partial = new ArrayList<>();
    for (Map.Entry<String, TxnBuffer.Write> e : batch.entrySet()) {
      if (!e.getValue().complete) {
        partial.add(e.getKey());
      }
    }
    Map<String, TreeMap<String, byte[]>> current = new HashMap<>();
    if (!partial.isEmpty()) {
      byte[][] values = client.multiGet(keyBytes(partial));
      for (int i = 0; i < partial.size(); i++) {
        if (values[i] != null) {
          current.put(partial.get(i), decode(partial.get(i), values[i]));
        }
      }
    }
    byte[][] keys = new byte[batch.size()][];
    byte[][] records = new byte[batch.size()][];
    int i = 0;
    for (Map.Entry<String, TxnBuffer.Write> e : batch.entrySet()) {
      TreeMap<String, byte[]> record = e.getValue().complete ? null : current.get(e.getKey());
      if (record == null) {
        record = e.getValue().fields;
      } else {
        record.putAll(e.getValue().fields);
      }
      keys[i] = bytes(e.getKey());
      records[i] = RecordCodec.encode(record);
      i++;
    }
    client.multiPut(keys, records);
  }

  @Override
  public void delete(String key) {
    client.delete(bytes(key));
  }

  @Override
  public String stats() {
    return client.stats();
  }

  @Override
  public void close() {
    client.close();
  }
}
