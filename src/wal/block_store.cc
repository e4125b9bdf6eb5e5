// BlockStore: segments in fixed-size slots of a ByteDevice.
#include <algorithm>
#include <vector>

#include "wal/format.h"
#include "wal/segment_store.h"

namespace rampart::wal {

Result<std::unique_ptr<BlockStore>> BlockStore::Open(std::unique_ptr<ByteDevice> device,
                                                     uint64_t segment_bytes) {
  const uint64_t slots = device->size() / segment_bytes;
  if (slots < 2) {
    return InvalidArgument(device->name(), ": ", device->size(), " bytes hold fewer than two ",
                           segment_bytes, "-byte log segments");
  }
  std::unique_ptr<BlockStore> store(new BlockStore(std::move(device), segment_bytes));
  store->slot_seq_.assign(slots, 0);
  std::vector<std::byte> block(kSegmentHeaderBytes);
  for (uint64_t s = 0; s < slots; ++s) {
    RAMPART_RETURN_IF_ERROR(store->device_->Read(s * segment_bytes, block)
                                .WithContext(StrCat("reading the header of slot ", s)));
    Result<SegmentHeader> h = DecodeSegmentHeader(block);
    if (!h.ok()) continue;  // free, or a header torn while it was written: free too
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
  return device_->Write(slot * segment_bytes_ + offset, data);
}

Result<size_t> BlockStore::Read(uint64_t seq, uint64_t offset, std::span<std::byte> out) {
  std::lock_guard<std::mutex> lock(mu_);
  RAMPART_ASSIGN_OR_RETURN(uint64_t slot, SlotOf(seq));
  if (offset >= segment_bytes_) return size_t{0};
  out = out.first(std::min<uint64_t>(out.size(), segment_bytes_ - offset));
  RAMPART_RETURN_IF_ERROR(device_->Read(slot * segment_bytes_ + offset, out));
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
  RAMPART_RETURN_IF_ERROR(device_->Write(slot * segment_bytes_, zeros));
  RAMPART_RETURN_IF_ERROR(device_->Flush());
  slot_seq_[slot] = 0;
  return Status::Ok();
}

}  // namespace rampart::wal
