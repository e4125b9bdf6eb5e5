package site.ycsb.db.rampart;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TxnBufferTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void txnlenOneRunsEveryOperation() {
    TxnBuffer buf = new TxnBuffer(1);
    assertTrue(buf.addRead("a", null));
    assertEquals(List.of("a"), List.copyOf(buf.takeReads().keySet()));
    assertTrue(buf.addWrite("a", Map.of("f", b("1")), true));
    assertEquals(1, buf.takeWrites().size());
    assertEquals(0, buf.pendingReads());
    assertEquals(0, buf.pendingWrites());
  }

  @Test
  void fullAtTxnlenDistinctKeysInArrivalOrder() {
    TxnBuffer buf = new TxnBuffer(3);
    assertFalse(buf.addRead("c", null));
    assertFalse(buf.addRead("a", null));
    assertFalse(buf.addRead("c", null)); // merges: still two keys
    assertEquals(2, buf.pendingReads());
    assertTrue(buf.addRead("b", null));
    assertEquals(List.of("c", "a", "b"), List.copyOf(buf.takeReads().keySet()));
    assertEquals(0, buf.pendingReads());
    assertFalse(buf.addRead("a", null)); // a new transaction starts empty
  }

  @Test
  void readsAndWritesAreBufferedApart() {
    TxnBuffer buf = new TxnBuffer(2);
    assertFalse(buf.addRead("a", null));
    assertFalse(buf.addWrite("a", Map.of("f", b("1")), true));
    assertFalse(buf.addWrite("a", Map.of("f", b("2")), true));
    assertEquals(1, buf.pendingReads());
    assertEquals(1, buf.pendingWrites());
    assertTrue(buf.addWrite("b", Map.of("f", b("3")), true));
    assertEquals(1, buf.pendingReads());
  }

  @Test
  void readFieldsJoinAndAllAbsorbs() {
    TxnBuffer buf = new TxnBuffer(5);
    buf.addRead("a", Set.of("f1"));
    buf.addRead("a", Set.of("f2"));
    buf.addRead("b", Set.of("f1"));
    buf.addRead("b", null);
    buf.addRead("b", Set.of("f3"));
    Map<String, TxnBuffer.Read> reads = buf.takeReads();
    assertEquals(Set.of("f1", "f2"), reads.get("a").fields);
    assertNull(reads.get("b").fields);
  }

  @Test
  void readDoesNotKeepTheCallersSet() {
    TxnBuffer buf = new TxnBuffer(5);
    java.util.HashSet<String> fields = new java.util.HashSet<>(Set.of("f1"));
    buf.addRead("a", fields);
    fields.add("f9");
    buf.addRead("a", Set.of("f2"));
    assertEquals(Set.of("f1", "f2"), buf.takeReads().get("a").fields);
    assertEquals(Set.of("f1", "f9"), fields);
  }

  @Test
  void writesOverwritePendingFieldsAndCompleteSticks() {
    TxnBuffer buf = new TxnBuffer(5);
    buf.addWrite("a", Map.of("f1", b("1"), "f2", b("2")), false);
    buf.addWrite("a", Map.of("f2", b("two"), "f3", b("3")), false);
    buf.addWrite("b", Map.of("f1", b("x")), true);
    buf.addWrite("b", Map.of("f1", b("y")), false);
    Map<String, TxnBuffer.Write> writes = buf.takeWrites();
    TxnBuffer.Write a = writes.get("a");
    assertEquals(Set.of("f1", "f2", "f3"), a.fields.keySet());
    assertArrayEquals(b("two"), a.fields.get("f2"));
    assertFalse(a.complete);
    assertTrue(writes.get("b").complete);
    assertArrayEquals(b("y"), writes.get("b").fields.get("f1"));
  }

  @Test
  void dropWriteForgetsThePendingKey() {
    TxnBuffer buf = new TxnBuffer(2);
    buf.addWrite("a", Map.of("f", b("1")), true);
    assertTrue(buf.dropWrite("a"));
    assertFalse(buf.dropWrite("a"));
    assertEquals(0, buf.pendingWrites());
    assertFalse(buf.addWrite("b", Map.of("f", b("1")), true));
  }

  @Test
  void txnlenBelowOneIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> new TxnBuffer(0));
  }
}
