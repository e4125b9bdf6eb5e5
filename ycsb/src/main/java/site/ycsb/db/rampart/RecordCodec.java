package site.ycsb.db.rampart;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

/**
 * A YCSB record (field name to value) as the one kv value native mode stores under the record's
 * key. Little-endian, fields sorted by name:
 *
 * <pre>
 *   u32 count
 *   count times:  u32 name_len, name (UTF-8), u32 value_len, value
 * </pre>
 *
 * <p>This is the payload of the proxy's hash values without their 9-byte type/expiry header
 * (docs/proxy.md, "Stored format"), so the two modes keep separate data: records written by one
 * mode are not readable by the other.
 */
final class RecordCodec {
  private RecordCodec() {}

  static byte[] encode(Map<String, byte[]> record) {
    TreeMap<String, byte[]> sorted = record instanceof TreeMap ? (TreeMap<String, byte[]>) record
        : new TreeMap<>(record);
    byte[][] names = new byte[sorted.size()][];
    long size = 4;
    int i = 0;
    for (Map.Entry<String, byte[]> e : sorted.entrySet()) {
      names[i] = e.getKey().getBytes(StandardCharsets.UTF_8);
      size += 8L + names[i].length + e.getValue().length;
      i++;
    }
    if (size > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("record of " + size + " bytes is too large");
    }
    ByteBuffer out = ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
    out.putInt(sorted.size());
    i = 0;
    for (byte[] value : sorted.values()) {
      out.putInt(names[i].length).put(names[i]);
      out.putInt(value.length).put(value);
      i++;
    }
    return out.array();
  }

  /** The record in `value`; IllegalArgumentException when it is not one (names the problem). */
  static TreeMap<String, byte[]> decode(byte[] value) {
    ByteBuffer in = ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN);
    long count = readLength(in, "field count");
    // Every field takes at least 8 bytes: a count beyond that is garbage, not a huge record.
    if (count > in.remaining() / 8) {
      throw new IllegalArgumentException(
          "not a record: " + count + " fields in " + value.length + " bytes");
    }
    TreeMap<String, byte[]> record = new TreeMap<>();
    for (long i = 0; i < count; i++) {
      byte[] name = readBytes(in, "field name");
      byte[] field = readBytes(in, "field value");
      record.put(new String(name, StandardCharsets.UTF_8), field);
    }
    if (in.hasRemaining()) {
      throw new IllegalArgumentException(
          "not a record: " + in.remaining() + " bytes after the last field");
    }
    return record;
  }

  private static long readLength(ByteBuffer in, String what) {
    if (in.remaining() < 4) {
      throw new IllegalArgumentException("not a record: truncated before the " + what);
    }
    return Integer.toUnsignedLong(in.getInt());
  }

  private static byte[] readBytes(ByteBuffer in, String what) {
    long len = readLength(in, what + " length");
    if (len > in.remaining()) {
      throw new IllegalArgumentException(
          "not a record: " + what + " of " + len + " bytes, " + in.remaining() + " left");
    }
    byte[] b = new byte[(int) len];
    in.get(b);
    return b;
  }
}
