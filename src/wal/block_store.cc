// BlockStore: segments in fixed-size slots of a ByteDevice, after a label
// that records the slot size (docs/log_format.md, "Segments").
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/crc32c.h"
#include "wal/format.h"
#include "wal/segment_store.h"

namespace rampart::wal {
namespace {

constexpr char kLabelMagic[8] = {'R', 'P', 'W', 'A', 'L', 'S', 'T', 'O'};
constexpr uint64_t kLabelBytes = kSegmentHeaderBytes;  // the slots start after it

// The label: magic, u32 version 1, u64 segment bytes, u32 crc32c of bytes [0, 20).
std::vector<std::byte> EncodeLabel(uint64_t segment_bytes) {
  std::vector<std::byte> block(kLabelBytes);
  std::memcpy(block.data(), kLabelMagic, 8);
  const uint32_t version = 1;
  std::memcpy(block.data() + 8, &version, 4);
  std::memcpy(block.data() + 12, &segment_bytes, 8);
  const uint32_t crc = Crc32c(std::span<const std::byte>(block.data(), 20));
  std::memcpy(block.data() + 20, &crc, 4);
  return block;
}

// The segment size a label records; NotFound without a label.
Result<uint64_t> DecodeLabel(std::span<const std::byte> block, const std::string& name) {
  if (std::memcmp(block.data(), kLabelMagic, 8) != 0) return NotFound("no label");
  uint32_t version = 0, crc = 0;
  uint64_t segment_bytes = 0;
  std::memcpy(&version, block.data() + 8, 4);
  std::memcpy(&segment_bytes, block.data() + 12, 8);
  std::memcpy(&crc, block.data() + 20, 4);
  if (crc != Crc32c(block.first(20))) return Corruption(name, ": its label is damaged");
  if (version != 1) return InvalidArgument(name, ": label version ", version);
  return segment_bytes;
}

}  // namespace

Result<std::unique_ptr<BlockStore>> BlockStore::Open(std::unique_ptr<ByteDevice> device,
                                                     uint64_t segment_bytes) {
  const uint64_t slots = device->size() < kLabelBytes ? 0 : (device->size() - kLabelBytes) / segment_bytes;
  if (slots < 2) {
    return InvalidArgument(device->name(), ": ", device->size(), " bytes hold fewer than two ",
                           segment_bytes, "-byte log segments");
  }
  std::unique_ptr<BlockStore> store(new BlockStore(std::move(device), segment_bytes));
  RAMPART_RETURN_IF_ERROR(store->CheckLabel());
  store->slot_seq_.assign(slots, 0);
  std::vector<std::byte> block(kSegmentHeaderBytes);
  for (uint64_t s = 0; s < slots; ++s) {
    RAMPART_RETURN_IF_ERROR(store->device_->Read(store->SlotAt(s), block)
                                .WithContext(StrCat("reading the header of slot ", s)));
    Result<SegmentHeader> h = DecodeSegmentHeader(block);
    if (h.status().code() == StatusCode::kInvalidArgument) {
      return h.status().WithContext(StrCat(store->name(), " slot ", s));
    }
    if (!h.ok()) {
      // Free — or a header torn while it was written, which no record
      // follows — unless a record of the seq it names opens the slot.
      if (h.status().code() == StatusCode::kCorruption &&
          store->SlotHasFirstRecord(s, RawHeaderSeq(block))) {
        return Corruption(store->name(), " slot ", s, ": ", h.status().message(),
                          ", but records of segment ", RawHeaderSeq(block),
                          " follow it: the header is damaged");
      }
      continue;
    }
    if (std::find(store->slot_seq_.begin(), store->slot_seq_.end(), h->seq) !=
        store->slot_seq_.end()) {
      return Corruption(store->name(), ": segment ", h->seq, " is in two slots");
    }
    store->slot_seq_[s] = h->seq;
  }
  return store;
}

BlockStore::BlockStore(std::unique_ptr<ByteDevice> device, uint64_t segment_bytes)
    : device_(std::move(device)), segment_bytes_(segment_bytes) {}

uint64_t BlockStore::SlotAt(uint64_t slot) const { return kLabelBytes + slot * segment_bytes_; }

Status BlockStore::CheckLabel() {
  std::vector<std::byte> block(kLabelBytes);
  RAMPART_RETURN_IF_ERROR(device_->Read(0, block).WithContext("reading the log store's label"));
  Result<uint64_t> recorded = DecodeLabel(block, name());
  if (recorded.status().code() == StatusCode::kNotFound) {
    // A new store: everything after the label is free whatever it holds.
    RAMPART_RETURN_IF_ERROR(device_->Write(0, EncodeLabel(segment_bytes_)));
    return device_->Flush();
  }
  RAMPART_RETURN_IF_ERROR(recorded.status());
  if (*recorded != segment_bytes_) {
    return InvalidArgument(name(), " holds log segments of ", *recorded,
                           " bytes, but the configuration now gives ", segment_bytes_,
                           " (max(kv.log_segment_bytes, transport.max_message_size + 1MiB)): "
                           "set them back, or give the node a new log volume");
  }
  return Status::Ok();
}

bool BlockStore::SlotHasFirstRecord(uint64_t slot, uint64_t seq) {
  std::vector<std::byte> first(kRecordHeaderBytes);
  if (!device_->Read(SlotAt(slot) + kSegmentHeaderBytes, first).ok()) return false;
  uint32_t body = 0;
  std::memcpy(&body, first.data() + 4, sizeof body);
  first.resize(FramedBytes(std::min<uint64_t>(body, segment_bytes_ - kSegmentHeaderBytes -
                                                        kRecordHeaderBytes)));
  if (!device_->Read(SlotAt(slot) + kSegmentHeaderBytes, first).ok()) return false;
  return ParseRecord(first, seq).ok();
}

std::string BlockStore::SegmentName(uint64_t seq) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t s = 0; s < slot_seq_.size(); ++s) {
    if (slot_seq_[s] == seq) return StrCat(name(), " slot ", s, " (segment ", seq, ")");
  }
  return StrCat(name(), " segment ", seq);
}

size_t BlockStore::free_slots() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count(slot_seq_.begin(), slot_seq_.end(), 0));
}

Result<uint64_t> BlockStore::SlotOf(uint64_t seq) const {
  for (size_t s = 0; s < slot_seq_.size(); ++s) {
    if (slot_seq_[s] == seq) return s;
  }
  return NotFound(name(), " has no segment ", seq);
}

Result<std::vector<uint64_t>> BlockStore::List() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> seqs;
  for (uint64_t seq : slot_seq_) {
    if (seq != 0) seqs.push_back(seq);
  }
  return seqs;
}

Status BlockStore::Create(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  if (SlotOf(seq).ok()) return AlreadyExists(name(), " has a segment ", seq, " already");
  auto free = std::find(slot_seq_.begin(), slot_seq_.end(), 0);
  if (free == slot_seq_.end()) {
    return ResourceExhausted(name(), ": all ", slot_seq_.size(), " log segment slots are in use");
  }
  *free = seq;  // the header the caller writes next makes it a segment after a restart
  return Status::Ok();
}

Status BlockStore::Write(uint64_t seq, uint64_t offset, std::span<const std::byte> data) {
  std::lock_guard<std::mutex> lock(mu_);
  RAMPART_ASSIGN_OR_RETURN(uint64_t slot, SlotOf(seq));
  return device_->Write(SlotAt(slot) + offset, data);
}

Result<size_t> BlockStore::Read(uint64_t seq, uint64_t offset, std::span<std::byte> out) {
  std::lock_guard<std::mutex> lock(mu_);
  RAMPART_ASSIGN_OR_RETURN(uint64_t slot, SlotOf(seq));
  if (offset >= segment_bytes_) return size_t{0};
  out = out.first(std::min<uint64_t>(out.size(), segment_bytes_ - offset));
  RAMPART_RETURN_IF_ERROR(device_->Read(SlotAt(slot) + offset, out));
  return out.size();
}

Result<uint64_t> BlockStore::Size(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  RAMPART_RETURN_IF_ERROR(SlotOf(seq).status());
  return segment_bytes_;
}

Status BlockStore::Sync(uint64_t) {
  std::lock_guard<std::mutex> lock(mu_);
  return device_->Flush();
}

Status BlockStore::Remove(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  RAMPART_ASSIGN_OR_RETURN(uint64_t slot, SlotOf(seq));
  const std::vector<std::byte> zeros(kSegmentHeaderBytes);
  RAMPART_RETURN_IF_ERROR(device_->Write(SlotAt(slot), zeros));
  RAMPART_RETURN_IF_ERROR(device_->Flush());
  slot_seq_[slot] = 0;
  return Status::Ok();
}

}  // namespace rampart::wal
