// The message ring behind Channel (GET+/PUT+ of seed 000). Private to the
// transport; the record format is in docs/transport.md.
//
// Each side of a channel owns one registered region:
//
//   [0, 4096)                  control block, written by the peer:
//      +0   u64 consumed       bytes of our send ring the peer has consumed (credits)
//      +64  u64 sleeping       non-zero: the peer blocks; ring its doorbell after writing
//      +128..                  ours: staging for the words we put into the peer's block
//   [4096, 4096 + ring_bytes)  receive ring, written by the peer
//
// The sender writes records at monotonically increasing byte positions
// (position mod ring_bytes into the ring):
//
//   header  u64  bits 0..31 seq (low half), 32..61 length, 62 MORE, 63 WRAP
//   body    length bytes, padded to 8
//   trailer u64  the full 64-bit seq
//
// The header is stored as one aligned 8-byte word, then the body; a fence; then
// the trailer. The receiver accepts a record when the header's seq is the one
// it expects and the trailer (found through the header's length) equals it. A
// WRAP header (no body, no trailer) sends the reader back to position 0. MORE
// marks a fragment of a message continued by the next record. The receiver
// zeroes each record it consumed before returning its credit, so no stale
// payload of an earlier lap can pass for a header or a trailer.
//
// Thread-safety: owner thread of the Fabric only.
#pragma once

#include <deque>
#include <optional>
#include <memory>
#include <vector>

#include "transport/fabric_internal.h"

namespace rampart::transport {

namespace ring {
inline constexpr size_t kControlBytes = 4096;
inline constexpr size_t kConsumedOffset = 0;
inline constexpr size_t kSleepingOffset = 64;
// Our own staging area for words we put into the peer's control block (the
// peer never writes at or after this offset of our control block).
inline constexpr size_t kStagingOffset = 128;
inline constexpr uint64_t kMoreBit = 1ull << 62;
inline constexpr uint64_t kWrapBit = 1ull << 63;
inline constexpr uint64_t kLengthMask = (1ull << 30) - 1;
inline constexpr size_t kMinRingBytes = 4096;
inline constexpr size_t kMaxRingBytes = 1ull << 30;
// A ring size both sides accept: a power of two in [kMinRingBytes, kMaxRingBytes].
inline bool ValidRingBytes(size_t n) {
  return n >= kMinRingBytes && n <= kMaxRingBytes && (n & (n - 1)) == 0;
}
// Largest fragment body: a quarter of the ring, so a record always fits after
// the reader has caught up.
inline size_t MaxFragment(size_t ring_bytes) { return ring_bytes / 4; }
inline size_t Pad8(size_t n) { return (n + 7) & ~size_t{7}; }
inline size_t RecordBytes(size_t body) { return 8 + Pad8(body) + 8; }
}  // namespace ring

class ChannelImpl final : public Channel, public std::enable_shared_from_this<ChannelImpl> {
 public:
  // REQUIRES: `local` is this side's region laid out as above.
  ChannelImpl(Fabric::Internal& internal, std::shared_ptr<EndpointBase> endpoint,
              uint64_t local_id, size_t ring_bytes, MemoryRegion local);
  ~ChannelImpl() override;

  // Completes the handshake: imports the peer's region.
  Status Connect(uint64_t peer_id, std::span<const std::byte> peer_descriptor);

  // Channel
  void SetMessageHandler(MessageHandler handler) override { handler_ = std::move(handler); }
  Status Send(std::span<const IoSlice> message) override;
  size_t backlog_bytes() const override { return backlog_bytes_; }
  const std::shared_ptr<Endpoint>& endpoint() const override { return endpoint_as_public_; }
  bool connected() const override { return state_ == State::kOpen; }

  // Fabric plumbing.
  int Poll();
  bool PrepareToSleep();
  void Awake();
  // The peer rang our doorbell, which it does after clearing our sleep
  // announcement: the next PrepareToSleep must announce again.
  void OnDoorbell();
  void Fail(const Status& why);
  bool opening() const { return state_ == State::kOpening; }
  bool writes_are_messages() const { return writes_are_messages_; }
  bool failed() const { return state_ == State::kFailed; }
  const Status& failure() const { return failure_; }

 private:
  enum class State { kOpening, kOpen, kFailed };
  enum class SleepState { kAwake, kAnnouncing, kAnnounced };

  // Sending.
  size_t FreeBytes() const;
  // Whether a record of `body` bytes (and the wrap it may need) fits now.
  bool CanWrite(size_t body) const;
  // Writes the next fragment of `message` (`total` bytes, the first `from`
  // already written) if the ring has room for it, MORE set unless it is the
  // last; returns its length, or nullopt when out of credit. An empty message
  // is one empty record.
  std::optional<size_t> WriteNextFragment(std::span<const IoSlice> message, size_t from,
                                          size_t total);
  // A record to read, or backlog that credit now allows to write.
  bool HasWork() const;
  // Writes one record of `body` bytes gathered from `message` starting at
  // byte `from`. REQUIRES: enough credit (checked by caller).
  void WriteRecord(std::span<const IoSlice> message, size_t from, size_t body, uint64_t flags);
  void WriteWrap(size_t pos);
  // Writes 8 bytes into the peer's region at `offset`, directly or by a put.
  void WritePeerWord(size_t offset, uint64_t value);
  void DrainBacklog();
  void AfterPeerWrite();
  void CheckPeerSleeping();
  void OnPeerWritesFlushed(const Status& s);

  // Receiving.
  int ReadRecords();
  bool RecordReady() const;
  // RecordReady and its trailer is in too (ReadRecords would take it).
  bool RecordComplete() const;
  // Zeroes `bytes` of our ring at `pos` (a consumed record), before credit for
  // them goes back, so no stale byte can pass for a header or a trailer.
  void ClearConsumed(size_t pos, size_t bytes);
  void ReturnCredits(bool force);

  std::byte* ring() const { return local_.data() + ring::kControlBytes; }
  uint64_t LocalWord(size_t offset) const;
  void StoreLocalWord(size_t offset, uint64_t value);

  Fabric::Internal& internal_;
  std::shared_ptr<EndpointBase> endpoint_;
  std::shared_ptr<Endpoint> endpoint_as_public_;
  const uint64_t local_id_;
  uint64_t peer_id_ = 0;
  const size_t ring_bytes_;
  MemoryRegion local_;       // control block + receive ring
  RemoteRegion remote_;      // the peer's control block + receive ring
  std::byte* remote_direct_ = nullptr;  // peer region mapped here (shared memory), or null
  // Our writes into the peer's ring are messages its own thread carries out
  // (software one-sided requests), so each one wakes the peer as a message
  // does, and no doorbell is needed. Then the peer's writes into ours are
  // messages too: the peer could only write into our memory without waking
  // us through shared memory (which would map its region here too) or RDMA
  // (which our side would use as well). So neither side announces its sleep.
  bool writes_are_messages_ = false;
  MemoryRegion staging_;     // put path: records are built here, then put
  State state_ = State::kOpening;
  Status failure_;
  MessageHandler handler_;

  uint64_t sent_ = 0;      // bytes written into the peer's ring (monotonic)
  uint64_t send_seq_ = 1;
  uint64_t recv_ = 0;      // bytes consumed from our ring (monotonic)
  uint64_t recv_seq_ = 1;
  uint64_t credits_reported_ = 0;
  std::vector<std::byte> reassembly_;
  bool reassembling_ = false;

  std::deque<std::vector<std::byte>> backlog_;  // whole messages not yet written
  size_t backlog_head_sent_ = 0;  // bytes of backlog_.front() already written
  size_t backlog_bytes_ = 0;

  // Wake-ups: see docs/transport.md "Sleeping and doorbells".
  SleepState sleep_ = SleepState::kAwake;
  bool peer_write_unchecked_ = false;  // put path: wrote to peer since last flush+check
  bool flush_in_flight_ = false;
};

}  // namespace rampart::transport
