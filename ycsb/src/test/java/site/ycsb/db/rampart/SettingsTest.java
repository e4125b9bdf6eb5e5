package site.ycsb.db.rampart;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import site.ycsb.DBException;

class SettingsTest {
  @TempDir Path tmp;

  private static Properties props(String... kv) {
    Properties p = new Properties();
    for (int i = 0; i < kv.length; i += 2) {
      p.setProperty(kv[i], kv[i + 1]);
    }
    return p;
  }

  private static String refused(String... kv) {
    return assertThrows(DBException.class, () -> Settings.parse(props(kv))).getMessage();
  }

  private String config() throws IOException {
    Path f = tmp.resolve("cluster.toml");
    Files.writeString(f, "[cluster]\n");
    return f.toString();
  }

  @Test
  void defaults() throws DBException {
    Settings s = Settings.parse(new Properties());
    assertEquals(Settings.Mode.RESP, s.mode);
    assertEquals(1, s.txnlen);
    assertEquals("ramp", s.isolation);
    assertEquals("127.0.0.1", s.host);
    assertEquals(6380, s.port);
    assertEquals(10, s.fieldCount);
  }

  @Test
  void nativeMode() throws Exception {
    Settings s = Settings.parse(props("rampart.mode", "native", "rampart.config", config(),
        "rampart.isolation", "s2pl", "rampart.get", "read", "rampart.put", "ring",
        "rampart.transport", "ucx", "rampart.txnlen", "8", "fieldcount", "1"));
    assertEquals(Settings.Mode.NATIVE, s.mode);
    assertEquals("s2pl", s.isolation);
    assertEquals("read", s.get);
    assertEquals("ring", s.put);
    assertEquals("ucx", s.transport);
    assertEquals(8, s.txnlen);
    assertEquals(2000, s.clientIdBase);
    assertEquals(1, s.fieldCount);
    Settings d = Settings.parse(props("rampart.mode", "native", "rampart.config", config()));
    assertEquals("", d.get); // the cluster file decides
    assertEquals("", d.put);
    assertEquals("", d.transport);
  }

  @Test
  void badValuesNameThePropertyAndTheAllowedValues() throws Exception {
    String m = refused("rampart.mode", "grpc");
    assertTrue(m.contains("rampart.mode=grpc") && m.contains("resp | native"), m);
    m = refused("rampart.txnlen", "0");
    assertTrue(m.contains("rampart.txnlen=0") && m.contains(">= 1"), m);
    m = refused("rampart.txnlen", "four");
    assertTrue(m.contains("rampart.txnlen=four") && m.contains("integer"), m);
    m = refused("rampart.isolation", "serializable");
    assertTrue(m.contains("ramp | s2pl | none"), m);
    m = refused("rampart.mode", "native", "rampart.config", config(), "rampart.get", "star");
    assertTrue(m.contains("rampart.get=star") && m.contains("rpc | ring | read | auto"), m);
    m = refused("rampart.mode", "native", "rampart.config", config(), "rampart.put", "read");
    assertTrue(m.contains("rpc | ring"), m);
    m = refused("rampart.mode", "native", "rampart.config", config(), "rampart.transport", "ib");
    assertTrue(m.contains("tcp | ucx"), m);
    m = refused("rampart.port", "70000");
    assertTrue(m.contains("rampart.port=70000"), m);
    m = refused("rampart.mode", "native", "rampart.config", config(), "rampart.clientidbase",
        "9000");
    assertTrue(m.contains("0..8191"), m);
  }

  @Test
  void respModeTakesOnlyRampAndNoDataPathSelectors() {
    String m = refused("rampart.isolation", "s2pl");
    assertTrue(m.contains("[proxy] section"), m);
    m = refused("rampart.isolation", "none");
    assertTrue(m.contains("[proxy] section"), m);
    m = refused("rampart.get", "read");
    assertTrue(m.contains("rampart.get applies to rampart.mode=native only"), m);
  }

  @Test
  void nativeNeedsAReadableConfig() {
    String m = refused("rampart.mode", "native");
    assertTrue(m.contains("rampart.config is required"), m);
    m = refused("rampart.mode", "native", "rampart.config", tmp.resolve("nope.toml").toString());
    assertTrue(m.contains("no readable file"), m);
  }

  @Test
  void dataIntegrityNeedsTxnlenOne() throws DBException {
    String m = refused("rampart.txnlen", "4", "dataintegrity", "true");
    assertTrue(m.contains("dataintegrity=true needs rampart.txnlen=1"), m);
    Settings.parse(props("rampart.txnlen", "1", "dataintegrity", "true"));
  }
}
