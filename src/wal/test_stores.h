// Test helpers for the wal layer: a RAM ByteDevice, a scratch directory, and
// a writer/recovery harness that records what was replayed. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "wal/log_writer.h"
#include "wal/recovery.h"
#include "wal/segment_store.h"

namespace rampart::wal::testing {

class RamDevice : public ByteDevice {
 public:
  explicit RamDevice(std::vector<std::byte>& bytes, std::string name = "ram device")
      : bytes_(bytes), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return bytes_.size(); }
  Status Read(uint64_t offset, std::span<std::byte> out) override {
    std::copy_n(bytes_.begin() + static_cast<long>(offset), out.size(), out.begin());
    return Status::Ok();
  }
  Status Write(uint64_t offset, std::span<const std::byte> data) override {
    std::copy(data.begin(), data.end(), bytes_.begin() + static_cast<long>(offset));
    return Status::Ok();
  }
  Status Flush() override {
    ++flushes;
    return Status::Ok();
  }
  int flushes = 0;

 private:
  std::vector<std::byte>& bytes_;  // outlives the device: the "disk" across reopens
  std::string name_;
};

// A fresh directory under the test temp dir, removed at the end.
struct ScratchDir {
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "wal_test.XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string path;
};

inline Identity TestIdentity() { return Identity{"test", 1, 2, 8}; }

// One replayed record: (checkpoint?, lsn, type, body).
struct Replayed {
  bool checkpoint;
  uint64_t lsn;
  uint8_t type;
  std::string body;
  friend bool operator==(const Replayed&, const Replayed&) = default;
};

inline Result<RecoveredLog> RecoverInto(SegmentStore& store, std::vector<Replayed>& out,
                                        const Identity& identity = TestIdentity()) {
  RecoveryCallbacks cb;
  auto keep = [&out](bool checkpoint) {
    return [&out, checkpoint](const RecordView& r) {
      out.push_back(Replayed{checkpoint, r.lsn, r.type,
                             std::string(reinterpret_cast<const char*>(r.body.data()),
                                         r.body.size())});
      return Status::Ok();
    };
  };
  cb.on_checkpoint_record = keep(true);
  cb.on_log_record = keep(false);
  return Recover(store, identity, cb);
}

inline uint64_t AppendString(LogWriter& w, uint8_t type, const std::string& body) {
  const std::span<const std::byte> piece = std::as_bytes(std::span(body));
  return w.Append(type, std::span<const std::span<const std::byte>>(&piece, 1));
}

inline Status CheckpointString(LogWriter& w, uint8_t type, const std::string& body) {
  const std::span<const std::byte> piece = std::as_bytes(std::span(body));
  return w.AppendCheckpoint(type, std::span<const std::span<const std::byte>>(&piece, 1));
}

}  // namespace rampart::wal::testing
