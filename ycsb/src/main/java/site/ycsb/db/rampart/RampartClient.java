package site.ycsb.db.rampart;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicInteger;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * The YCSB binding of rampart ({@code -db site.ycsb.db.rampart.RampartClient}): groups a
 * thread's operations into multi-key transactions of {@code rampart.txnlen} distinct keys, as
 * seed 000 §5.5 did with its modified YCSB core (the RAMP authors' txnlen change), without
 * forking YCSB. YCSB makes one instance per client thread; each has its own connection.
 *
 * <h2>Properties</h2>
 *
 * <table>
 *   <caption>rampart.* properties</caption>
 *   <tr><th>property</th><th>values (default)</th><th>meaning</th></tr>
 *   <tr><td>rampart.mode</td><td>resp | native (resp)</td><td>resp: the Redis-protocol proxy
 *       through Jedis; native: the C++ client library through JNI (NativeClient), so the
 *       one-sided GET&#42;/PUT+ path is what YCSB measures</td></tr>
 *   <tr><td>rampart.txnlen</td><td>N &ge; 1 (1)</td><td>keys per transaction (below)</td></tr>
 *   <tr><td>rampart.isolation</td><td>ramp | s2pl | none (ramp)</td><td>native only; in resp
 *       mode only ramp is accepted: the proxy's isolation is set in the [proxy] section of its
 *       cluster file</td></tr>
 *   <tr><td>rampart.config</td><td>path</td><td>native, required: the cluster file</td></tr>
 *   <tr><td>rampart.get</td><td>rpc | ring | read | auto (the cluster file's [client] get)</td>
 *       <td>native: GET, GET+ or GET&#42; (docs/transactions.md)</td></tr>
 *   <tr><td>rampart.put</td><td>rpc | ring (the cluster file's [client] put)</td>
 *       <td>native: PUT or PUT+</td></tr>
 *   <tr><td>rampart.transport</td><td>tcp | ucx (the cluster file's [transport] backend)</td>
 *       <td>native; ring and read need ucx</td></tr>
 *   <tr><td>rampart.clientidbase</td><td>0..8191 (2000)</td><td>native: instance i of the JVM
 *       takes timestamp client id base + i (unique per live client of the cluster)</td></tr>
 *   <tr><td>rampart.stats</td><td>true | false (false)</td><td>native: print each client's
 *       counters (transactions, repairs, slot reads, ...) to stderr at cleanup</td></tr>
 *   <tr><td>rampart.host, rampart.port</td><td>127.0.0.1, 6380</td><td>resp: the proxy</td></tr>
 *   <tr><td>rampart.timeoutms</td><td>ms (10000)</td><td>resp: socket timeout</td></tr>
 * </table>
 *
 * A bad value fails init() with a {@link DBException} naming the property and what it allows.
 * get/put/transport/clientidbase/stats are refused in resp mode (there is no such data path to
 * choose there); host/port are ignored in native mode and config in resp mode.
 *
 * <h2>Transactions</h2>
 *
 * Reads and writes (insert, update) are buffered apart ({@link TxnBuffer}). An operation on a key
 * already pending merges into it (a read is answered by the same read; a write's fields
 * overwrite the pending ones), so every transaction has exactly txnlen distinct keys. The
 * operation that brings a buffer to txnlen keys runs it: the reads as ONE read transaction (one
 * multi-get), the writes as ONE write transaction (one multi-put). The operations before it
 * return {@link Status#BATCHED_OK}, which YCSB counts as a success; cleanup() runs what is still
 * pending (a shorter last transaction). With txnlen=1 every operation runs at once. Consequences:
 *
 * <ul>
 *   <li>Per-operation latencies land on the operation that completes a transaction (it carries
 *       the whole transaction's latency; the buffered ones take microseconds), and YCSB's
 *       throughput counts operations: transactions per second = throughput / txnlen.
 *       bench/ycsb.sh reports both (ops/s and txn/s).
 *   <li>A failed transaction is one failed operation (the completing one); the others had
 *       already returned BATCHED_OK. Each distinct error message is logged once to stderr
 *       ("rampart-ycsb: ..."). A transaction that failed in cleanup() fails it with a
 *       DBException.
 *   <li>A read that completes a transaction gets its record in YCSB's result map; buffered
 *       reads do not, so dataintegrity=true needs txnlen=1 (refused otherwise). A transaction
 *       with an absent key returns NOT_FOUND. Workload D with txnlen &gt; 1 can read a key whose
 *       insert is still buffered in another thread, and count a NOT_FOUND.
 *   <li>delete runs at once (it drops a pending write of its key); scan is NOT_IMPLEMENTED
 *       (workload E: use {@link RedisLayoutClient}, {@code ycsb/run.sh -d redis}).
 * </ul>
 *
 * <h2>Records</h2>
 *
 * resp: a record is a Redis hash: insert/update HMSET key f v ..., read HGETALL (HMGET when the
 * read names fields), delete DEL; a transaction of several keys is MULTI, one command per key,
 * EXEC (all reads or all writes: ONE RAMP transaction at the proxy, docs/proxy.md). The YCSB
 * table name is not part of the key.
 *
 * <p>native: a record is one kv value (little-endian): {@code u32 count}, then per field, sorted
 * by name, {@code u32 len, name (UTF-8), u32 len, value} ({@link RecordCodec}). An update that
 * does not write every field (fewer than YCSB's fieldcount, i.e. writeallfields=false) reads the
 * current records of its transaction's partial keys first (one read transaction), merges, then
 * writes (one write transaction): the pair is NOT atomic as a whole. With writeallfields=true
 * (the r* workloads) every write is a blind multi-put. Records written in one mode are not
 * readable in the other (the proxy's values carry a type/expiry header).
 */
public class RampartClient extends DB {
  /** Instances of this JVM, for distinct native client ids. */
  private static final AtomicInteger INSTANCES = new AtomicInteger();

  private Settings settings;
  private TxnBuffer buffer;
  private Store store;
  private int clientId = -1;

  @Override
  public void init() throws DBException {
    try {
      settings = Settings.parse(getProperties());
    } catch (DBException e) {
      ErrorLog.once("bad property: " + e.getMessage());
      throw e;
    }
    buffer = new TxnBuffer(settings.txnlen);
    if (settings.mode == Settings.Mode.NATIVE) {
      clientId = settings.clientIdBase + INSTANCES.getAndIncrement();
      if (clientId > Settings.MAX_CLIENT_ID) {
        throw new DBException(
            "client id " + clientId + " is beyond " + Settings.MAX_CLIENT_ID + ": lower "
                + Settings.CLIENT_ID_BASE + " or the thread count");
      }
      store = new NativeStore(settings, clientId);
    } else {
      store = new RespStore(settings.host, settings.port, settings.timeoutMs);
    }
  }

  @Override
  public void cleanup() throws DBException {
    if (store == null) {
      return; // init() failed
    }
    List<String> failures = new ArrayList<>();
    int reads = buffer.pendingReads();
    if (reads > 0) {
      Status s = runReads(null, null, null);
      if (!s.isOk()) {
        failures.add("the last read transaction (" + reads + " keys): " + s.getName());
      }
    }
    int writes = buffer.pendingWrites();
    if (writes > 0) {
      Status s = runWrites();
      if (!s.isOk()) {
        failures.add("the last write transaction (" + writes + " keys): " + s.getName());
      }
    }
    if (settings.stats) {
      try {
        ErrorLog.note("native client " + clientId + " stats: " + store.stats());
      } catch (RuntimeException e) {
        ErrorLog.once("stats: " + e);
      }
    }
    try {
      store.close();
    } catch (RuntimeException e) {
      ErrorLog.once("close: " + e);
    }
    store = null;
    if (!failures.isEmpty()) {
      throw new DBException("cleanup failed: " + String.join("; ", failures));
    }
  }

  @Override
  public Status read(
      String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    if (!buffer.addRead(key, fields)) {
      return Status.BATCHED_OK;
    }
    return runReads(key, fields, result);
  }

  @Override
  public Status scan(
      String table,
      String startkey,
      int recordcount,
      Set<String> fields,
      Vector<java.util.HashMap<String, ByteIterator>> result) {
    ErrorLog.once(
        "scan is not implemented (workload E: RedisLayoutClient, ycsb/run.sh -d redis)");
    return Status.NOT_IMPLEMENTED;
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    return write(key, values, values.size() >= settings.fieldCount);
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    return write(key, values, true);
  }

  @Override
  public Status delete(String table, String key) {
    buffer.dropWrite(key);
    try {
      store.delete(key);
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("delete", e);
    }
  }

  private Status write(String key, Map<String, ByteIterator> values, boolean complete) {
    TreeMap<String, byte[]> fields = new TreeMap<>();
    for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
      fields.put(e.getKey(), e.getValue().toArray());
    }
    if (!buffer.addWrite(key, fields, complete)) {
      return Status.BATCHED_OK;
    }
    return runWrites();
  }

  /**
   * Runs the pending reads as one transaction; the record of ownKey (the operation completing
   * it; null in cleanup) goes into result, restricted to ownFields when given.
   */
  private Status runReads(String ownKey, Set<String> ownFields, Map<String, ByteIterator> result) {
    LinkedHashMap<String, TxnBuffer.Read> batch = buffer.takeReads();
    Map<String, Map<String, byte[]>> records;
    try {
      records = store.read(batch);
    } catch (RuntimeException e) {
      return failed("read", e);
    }
    if (ownKey != null && result != null && records.get(ownKey) != null) {
      for (Map.Entry<String, byte[]> f : records.get(ownKey).entrySet()) {
        if (ownFields == null || ownFields.contains(f.getKey())) {
          result.put(f.getKey(), new ByteArrayByteIterator(f.getValue()));
        }
      }
    }
    int absent = 0;
    String example = null;
    for (String key : batch.keySet()) {
      if (records.get(key) == null) {
        absent++;
        example = example == null ? key : example;
      }
    }
    if (absent > 0) {
      ErrorLog.once("absent", "a read transaction found no record for " + absent + " of its "
          + batch.size() + " keys (e.g. " + example + "): NOT_FOUND");
      return Status.NOT_FOUND;
    }
    return Status.OK;
  }

  /** Runs the pending writes as one transaction. */
  private Status runWrites() {
    LinkedHashMap<String, TxnBuffer.Write> batch = buffer.takeWrites();
    try {
      store.write(batch);
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("write", e);
    }
  }

  private Status failed(String what, RuntimeException e) {
    String message = e.getMessage() == null ? e.getClass().getName()
        : e.getClass().getSimpleName() + ": " + e.getMessage();
    ErrorLog.once(settings.mode.name().toLowerCase() + " " + what + " failed: " + message);
    return Status.ERROR;
  }
}
