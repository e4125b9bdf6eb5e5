// SegmentStore: where one partition's redo log keeps its segments — the
// numbered, bounded byte containers that hold log records and checkpoints
// (docs/log_format.md). Two stores:
//
//   DirectoryStore  one file per segment (seg-<seq in 16 hex digits>) in a
//                   directory of the local file system; Sync is fdatasync.
//   BlockStore      fixed-size slots of a ByteDevice (an area of an erasure-
//                   coded volume of the storage tier, reached by remote IO)
//                   after a 4 KiB label that records the slot size (a store
//                   opened with another size is refused); a slot is in use
//                   while it starts with a valid segment header; Remove
//                   clears that header.
//
//   auto store = DirectoryStore::Open("/var/lib/rampart/node-0/partition-0", 64 << 20);
//   RAMPART_RETURN_IF_ERROR((*store)->Create(7));
//   RAMPART_RETURN_IF_ERROR((*store)->Write(7, 0, header_block));
//   RAMPART_RETURN_IF_ERROR((*store)->Sync(7));
//
// A segment holds at most segment_bytes() bytes. Create reserves one for a new
// seq (a file, a free slot); what exists after a crash is what List finds:
// every file, or every slot whose first block decodes as a segment header.
//
// Thread-safety: one thread (the partition's) makes every call, except that
// Sync may be called from one other thread (the periodic sync) at the same
// time as Write on the same segment, and before or after Remove of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace rampart::wal {

class SegmentStore {
 public:
  virtual ~SegmentStore() = default;

  // "directory /data/node-0/partition-1", "volume kvlog-0 area 1".
  virtual const std::string& name() const = 0;
  // Where a segment lives, for messages: ".../seg-0000000000000007", "... slot 3".
  virtual std::string SegmentName(uint64_t seq) const = 0;
  // Capacity of every segment, its header included.
  virtual uint64_t segment_bytes() const = 0;

  // The seqs of the segments there (any order). For a BlockStore, slots are
  // found by their headers, so a segment created but whose header was never
  // written is not listed.
  virtual Result<std::vector<uint64_t>> List() = 0;
  // A new, empty segment for `seq`. AlreadyExists if it has one;
  // ResourceExhausted when the store is full (no free slot, no disk space).
  virtual Status Create(uint64_t seq) = 0;
  // REQUIRES: offset + data.size() <= segment_bytes().
  virtual Status Write(uint64_t seq, uint64_t offset, std::span<const std::byte> data) = 0;
  // Reads up to out.size() bytes at `offset`; returns how many there were (a
  // file may be shorter than its capacity).
  virtual Result<size_t> Read(uint64_t seq, uint64_t offset, std::span<std::byte> out) = 0;
  // Bytes that can be read from the segment (a file's length; a slot's capacity).
  virtual Result<uint64_t> Size(uint64_t seq) = 0;
  // Makes the segment's completed Writes (and its creation) durable.
  virtual Status Sync(uint64_t seq) = 0;
  // Removes the segment (durably: it is not listed after a crash).
  virtual Status Remove(uint64_t seq) = 0;
  // Whether fewer than half of a bounded store's segments are free (a
  // checkpoint should make room). Never for a directory.
  virtual bool short_of_space() const { return false; }
};

// A byte-addressed device for a BlockStore: an area of a volume. Calls are
// synchronous; Flush makes completed writes durable.
// Thread-safety: as the store's (a BlockStore serialises its calls).
class ByteDevice {
 public:
  virtual ~ByteDevice() = default;
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;
  virtual Status Read(uint64_t offset, std::span<std::byte> out) = 0;
  virtual Status Write(uint64_t offset, std::span<const std::byte> data) = 0;
  virtual Status Flush() = 0;
};

class DirectoryStore : public SegmentStore {
 public:
  // Creates `dir` (and its parents) if missing. InvalidArgument for a path
  // that is not a directory; IoError for what the file system refuses.
  static Result<std::unique_ptr<DirectoryStore>> Open(const std::string& dir,
                                                      uint64_t segment_bytes);
  ~DirectoryStore() override;

  const std::string& name() const override { return name_; }
  std::string SegmentName(uint64_t seq) const override;
  uint64_t segment_bytes() const override { return segment_bytes_; }
  Result<std::vector<uint64_t>> List() override;
  Status Create(uint64_t seq) override;
  Status Write(uint64_t seq, uint64_t offset, std::span<const std::byte> data) override;
  Result<size_t> Read(uint64_t seq, uint64_t offset, std::span<std::byte> out) override;
  Result<uint64_t> Size(uint64_t seq) override;
  Status Sync(uint64_t seq) override;
  Status Remove(uint64_t seq) override;

 private:
  struct File;
  DirectoryStore(std::string dir, int dir_fd, uint64_t segment_bytes);
  // The open file of `seq` (opened on first use).
  Result<std::shared_ptr<File>> Get(uint64_t seq);

  const std::string dir_;
  const std::string name_;
  const int dir_fd_;
  const uint64_t segment_bytes_;
  std::mutex mu_;  // guards files_ (Sync runs on another thread)
  std::unordered_map<uint64_t, std::shared_ptr<File>> files_;
};

class BlockStore : public SegmentStore {
 public:
  // A 4 KiB label, then slots of segment_bytes each over the rest of the
  // device (rounded down to whole slots). InvalidArgument when not even two
  // slots fit, or when the label records another slot size. Writes the label
  // of a new store; reads every slot's header once to learn which seq lives
  // where (Corruption for a damaged header that records follow).
  static Result<std::unique_ptr<BlockStore>> Open(std::unique_ptr<ByteDevice> device,
                                                  uint64_t segment_bytes);

  const std::string& name() const override { return device_->name(); }
  std::string SegmentName(uint64_t seq) const override;
  uint64_t segment_bytes() const override { return segment_bytes_; }
  Result<std::vector<uint64_t>> List() override;
  Status Create(uint64_t seq) override;
  Status Write(uint64_t seq, uint64_t offset, std::span<const std::byte> data) override;
  Result<size_t> Read(uint64_t seq, uint64_t offset, std::span<std::byte> out) override;
  Result<uint64_t> Size(uint64_t seq) override;
  Status Sync(uint64_t seq) override;
  Status Remove(uint64_t seq) override;

  bool short_of_space() const override { return 2 * free_slots() < slots(); }
  size_t slots() const { return slot_seq_.size(); }
  size_t free_slots() const;

 private:
  BlockStore(std::unique_ptr<ByteDevice> device, uint64_t segment_bytes);
  Result<uint64_t> SlotOf(uint64_t seq) const;
  uint64_t SlotAt(uint64_t slot) const;  // the slot's first byte on the device
  // Writes the label of a new store, or checks an old one's slot size.
  Status CheckLabel();
  bool SlotHasFirstRecord(uint64_t slot, uint64_t seq);

  std::unique_ptr<ByteDevice> device_;
  const uint64_t segment_bytes_;
  mutable std::mutex mu_;         // serialises device calls (Sync's thread)
  std::vector<uint64_t> slot_seq_;  // per slot: the seq using it, 0 = free
};

}  // namespace rampart::wal
