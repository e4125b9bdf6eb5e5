package site.ycsb.db.rampart;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class RecordCodecTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void layoutIsLittleEndianSortedByName() {
    Map<String, byte[]> record = new HashMap<>();
    record.put("b", b("xy"));
    record.put("a", b("z"));
    byte[] expected = {
      2, 0, 0, 0, // count
      1, 0, 0, 0, 'a', 1, 0, 0, 0, 'z',
      1, 0, 0, 0, 'b', 2, 0, 0, 0, 'x', 'y'
    };
    assertArrayEquals(expected, RecordCodec.encode(record));
  }

  @Test
  void emptyRecord() {
    assertArrayEquals(new byte[] {0, 0, 0, 0}, RecordCodec.encode(Map.of()));
    assertEquals(0, RecordCodec.decode(new byte[] {0, 0, 0, 0}).size());
  }

  @Test
  void roundTripOfYcsbSizedRecords() {
    Random random = new Random(7);
    TreeMap<String, byte[]> record = new TreeMap<>();
    for (int i = 0; i < 10; i++) {
      byte[] v = new byte[100 + i];
      random.nextBytes(v);
      record.put("field" + i, v);
    }
    record.put("ünïcode", new byte[0]);
    TreeMap<String, byte[]> back = RecordCodec.decode(RecordCodec.encode(record));
    assertEquals(record.keySet(), back.keySet());
    for (String k : record.keySet()) {
      assertArrayEquals(record.get(k), back.get(k), k);
    }
  }

  @Test
  void garbageIsRefusedNotMisread() {
    byte[] good = RecordCodec.encode(Map.of("field0", b("value")));
    for (int n = 0; n < good.length; n++) {
      byte[] cut = Arrays.copyOf(good, n);
      assertThrows(IllegalArgumentException.class, () -> RecordCodec.decode(cut), "len " + n);
    }
    byte[] longer = Arrays.copyOf(good, good.length + 1);
    assertThrows(IllegalArgumentException.class, () -> RecordCodec.decode(longer));
    for (byte[] bad : List.of(new byte[] {-1, -1, -1, -1}, new byte[] {1, 0, 0, 0, -1, -1, -1, 127,
        0, 0, 0, 0})) {
      assertThrows(IllegalArgumentException.class, () -> RecordCodec.decode(bad));
    }
    // A proxy string value ("s", 8-byte expiry, payload) is no record.
    byte[] proxyValue = {'s', 0, 0, 0, 0, 0, 0, 0, 0, 'h', 'i'};
    assertThrows(IllegalArgumentException.class, () -> RecordCodec.decode(proxyValue));
  }
}
