package site.ycsb.db.rampart;

import java.util.Map;

/**
 * Where {@link RampartClient} sends its transactions: the proxy ({@link RespStore}) or the C++
 * client library ({@link NativeStore}). One per DB instance, used from its thread. Failures are
 * RuntimeExceptions whose message says what failed.
 */
interface Store extends AutoCloseable {
  /**
   * One read transaction of the batch's distinct keys.
   *
   * @return for every key of the batch, its record (restricted to the fields the read asked for,
   *     when it named some), or null when the key has no record
   */
  Map<String, Map<String, byte[]>> read(Map<String, TxnBuffer.Read> batch);

  /** One write transaction of the batch's distinct keys. */
  void write(Map<String, TxnBuffer.Write> batch);

  /** Deletes one record. */
  void delete(String key);

  /** The client's counters as JSON, or null when the store keeps none. */
  String stats();

  @Override
  void close();
}
