package site.ycsb.db.rampart;

/**
 * A rampart operation or client option failed (thrown by {@link NativeClient}). The message is
 * the C++ {@code Status::ToString()} of the failure, starting with the status code's name: {@code
 * "Unavailable: ..."}, {@code "Timed out: ..."}, {@code "Invalid argument: ..."}, {@code "IO
 * error: ..."} (src/common/status.h).
 */
public class RampartException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RampartException(String message) {
    super(message);
  }
}
