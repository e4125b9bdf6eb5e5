package site.ycsb.db.rampart;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Logs each distinct problem once per JVM, to stderr with the prefix "rampart-ycsb: ", so a
 * failing run names its errors without printing one line per operation.
 */
final class ErrorLog {
  static final String PREFIX = "rampart-ycsb: ";
  /** Past this many distinct problems nothing more is logged (a bound on the set). */
  private static final int MAX_DISTINCT = 1000;

  private static final Set<String> SEEN = ConcurrentHashMap.newKeySet();

  private ErrorLog() {}

  /** Logs `message` the first time `kind` is seen; returns whether it logged. */
  static boolean once(String kind, String message) {
    if (SEEN.size() >= MAX_DISTINCT || !SEEN.add(kind)) {
      return false;
    }
    System.err.println(PREFIX + message + " (logged once)");
    return true;
  }

  /** Logs `message` the first time it is seen. */
  static boolean once(String message) {
    return once(message, message);
  }

  /** Logs unconditionally (notes that are not errors, e.g. statistics). */
  static void note(String message) {
    System.err.println(PREFIX + message);
  }
}
