package site.ycsb.db.rampart;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The operations of one YCSB thread waiting to become a transaction: reads and writes are
 * buffered apart, each keyed by record key in arrival order. An operation on a key already
 * pending merges into it, so a buffer of n entries is a transaction of n distinct keys:
 *
 * <ul>
 *   <li>a read of a pending key is answered by the same read (the field sets join; "all fields"
 *       absorbs any set);
 *   <li>a write of a pending key overwrites the pending fields it names; the entry is complete
 *       (it replaces the whole record) when any write merged into it was.
 * </ul>
 *
 * The add methods say when the buffer holds txnlen keys; the caller then takes the batch and
 * runs it as one transaction. Not thread-safe (one per DB instance, i.e. per YCSB thread).
 */
final class TxnBuffer {
  /** A pending read: the fields asked for, null for all of them. */
  static final class Read {
    Set<String> fields;

    Read(Set<String> fields) {
      this.fields = fields == null ? null : new HashSet<>(fields);
    }
  }

  /** A pending write: fields by name, and whether they are the whole record. */
  static final class Write {
    final TreeMap<String, byte[]> fields = new TreeMap<>();
    boolean complete;
  }

  private final int txnlen;
  private LinkedHashMap<String, Read> reads = new LinkedHashMap<>();
  private LinkedHashMap<String, Write> writes = new LinkedHashMap<>();

  TxnBuffer(int txnlen) {
    if (txnlen < 1) {
      throw new IllegalArgumentException("txnlen " + txnlen + " < 1");
    }
    this.txnlen = txnlen;
  }

  int txnlen() {
    return txnlen;
  }

  /** Buffers a read of `fields` (null: all); true when the read buffer now holds txnlen keys. */
  boolean addRead(String key, Set<String> fields) {
    Read r = reads.get(key);
    if (r == null) {
      reads.put(key, new Read(fields));
    } else if (r.fields != null) {
      if (fields == null) {
        r.fields = null;
      } else {
        r.fields.addAll(fields);
      }
    }
    return reads.size() >= txnlen;
  }

  /** Buffers a write; true when the write buffer now holds txnlen keys. */
  boolean addWrite(String key, Map<String, byte[]> fields, boolean complete) {
    Write w = writes.computeIfAbsent(key, k -> new Write());
    w.fields.putAll(fields);
    w.complete |= complete;
    return writes.size() >= txnlen;
  }

  /** Forgets a pending write of `key` (a delete supersedes it); true if there was one. */
  boolean dropWrite(String key) {
    return writes.remove(key) != null;
  }

  int pendingReads() {
    return reads.size();
  }

  int pendingWrites() {
    return writes.size();
  }

  /** The pending reads, in arrival order; the read buffer is empty afterwards. */
  LinkedHashMap<String, Read> takeReads() {
    LinkedHashMap<String, Read> taken = reads;
    reads = new LinkedHashMap<>();
    return taken;
  }

  /** The pending writes, in arrival order; the write buffer is empty afterwards. */
  LinkedHashMap<String, Write> takeWrites() {
    LinkedHashMap<String, Write> taken = writes;
    writes = new LinkedHashMap<>();
    return taken;
  }
}
