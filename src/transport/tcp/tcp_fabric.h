// The tcp backend: plain non-blocking sockets and one level-triggered epoll
// set per Fabric; two-sided messages only (the conventional baseline the
// papers compare against). One-sided operations fail with kNotSupported.
//
// Files: tcp_fabric.cc is the set-up path (factory, Listen, Connect, accept,
// memory regions, one-sided stubs); tcp_datapath.cc is the datapath (Send,
// receive and frame parsing, output queue, failure handling, progress).
//
// Wire format. Each connection carries a stream of frames in both directions:
//
//   frame  = header body
//   header = 8 bytes
//     [0..1]  magic    the bytes 'R' 'P' (0x52 0x50: the u16 0x5250 as written
//                      in network order, so a packet dump reads "RP")
//     [2]     version  1
//     [3]     kind     0 = user message (Fabric's message handler)
//                      1 = transport control (Fabric::Internal::DeliverControl)
//     [4..7]  length   body bytes, u32 little-endian,
//                      at most FabricOptions::max_message_size
//   body   = `length` bytes, the concatenation of the sender's slices
//
// A frame with another magic, version or kind, or announcing a body above the
// receiver's max_message_size, is malformed: the receiver logs one warning,
// closes that connection and reports it through the disconnect handler; every
// other connection is unaffected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "transport/fabric_internal.h"

namespace rampart::transport {

namespace tcp {

// ---- wire format ----
inline constexpr std::byte kMagic0{0x52};  // 'R'
inline constexpr std::byte kMagic1{0x50};  // 'P'
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderBytes = 8;
enum class FrameKind : uint8_t { kMessage = 0, kControl = 1 };

struct FrameHeader {
  FrameKind kind;
  uint32_t length;  // body bytes
};

// Writes the 8-byte header of a frame with a `length`-byte body to `out`.
void EncodeHeader(FrameKind kind, uint32_t length, std::byte* out);
// Parses the 8 bytes at `p`. Returns kCorruption, with a message saying what is
// wrong ("bad magic 0x4745 ..."), for a malformed header.
Result<FrameHeader> DecodeHeader(const std::byte* p, size_t max_message_size);

// ---- hot-path constants (one place, like eRPC's tweakme.h) ----
// Reads ask the kernel for at least this much at a time.
inline constexpr size_t kReadChunk = 256u << 10;
// Idle (empty) buffers larger than this are freed, so one 16 MiB message does
// not pin 16 MiB per connection forever.
inline constexpr size_t kKeepBufferBytes = 1u << 20;
// Frames smaller than this that follow a direct write in the same progress
// turn are copied and coalesced into one send().
inline constexpr size_t kCoalesceBelowBytes = 16u << 10;
// epoll events taken per ProgressBackend() call.
inline constexpr int kMaxEventsPerProgress = 64;
// recv() calls per readable event before the next connection gets its turn
// (the socket stays readable, so level-triggered epoll reports it again).
inline constexpr int kMaxReadsPerEvent = 8;
// Connections accepted per readable event of the listener.
inline constexpr int kMaxAcceptsPerEvent = 32;
// Slices handed to one sendmsg(); a message with more has the rest copied to
// the output queue.
inline constexpr size_t kMaxIov = 128;

// A growable FIFO of bytes in one contiguous buffer: appended at the back,
// consumed from the front. Used for each connection's input and output.
//
// Pinning keeps delivered messages valid while their handlers run, even when a
// handler re-enters Progress() and more input is read into the same queue.
// Pin() before consuming a message whose bytes are handed out, Unpin() after
// the handler returned; pins nest. While a buffer holds a pinned message its
// bytes never move and are never reused: growth copies the live bytes into a
// new buffer and retires the old one until the pins that reached it are gone.
//
// Thread-safety: none (owner thread of the Fabric).
class ByteQueue {
 public:
  ByteQueue() = default;
  ByteQueue(const ByteQueue&) = delete;
  ByteQueue& operator=(const ByteQueue&) = delete;

  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  size_t capacity() const { return cap_; }
  std::byte* front() { return buf_.get() + begin_; }
  const std::byte* front() const { return buf_.get() + begin_; }

  // Back space: ensures writable() >= n. Returns false when memory runs out
  // (the queue is then unchanged).
  bool Reserve(size_t n);
  size_t writable() const { return cap_ - end_; }
  std::byte* tail() { return buf_.get() + end_; }
  // REQUIRES: n <= writable().
  void Commit(size_t n) { end_ += n; }

  // REQUIRES: n <= size().
  void Consume(size_t n);

  void Pin();
  // REQUIRES: a matching Pin().
  void Unpin();
  // Memory kept only for pinned messages (retired buffers), for tests.
  size_t retired_buffers() const { return retired_.size(); }

  // Drops the contents; frees the storage unless it holds a pinned message.
  void Clear();
  // Frees the storage if the queue is empty, unpinned and above `keep` bytes.
  void ShrinkIfIdle(size_t keep);

 private:
  static constexpr int kUnpinned = 1 << 30;
  bool pinned() const { return buf_pin_depth_ != kUnpinned; }

  std::unique_ptr<std::byte[]> buf_;
  size_t cap_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
  int pins_ = 0;                     // nesting depth of Pin()
  int buf_pin_depth_ = kUnpinned;    // lowest depth pinned while buf_ was current
  struct Retired {
    std::unique_ptr<std::byte[]> buf;
    int depth;  // freed once pins_ drops below this
  };
  std::vector<Retired> retired_;
};

}  // namespace tcp

class TcpFabric;

// One TCP connection (connected by Connect or accepted by the listener).
//
// Thread-safety: owner thread of its Fabric only.
// Lifetime: shared. The Fabric holds a reference while the connection is open;
// after the connection fails or is closed, or the Fabric is destroyed, the
// object stays usable (every operation then fails with kUnavailable) for as
// long as the user keeps it.
//
// Send completions: Send() copies whatever the kernel does not take at once
// into the connection's output queue, so `done` runs with OK from the next
// Progress() and the caller's buffers are free from then on (in fact from the
// moment Send() returns). OK means "handed to this process's output queue or
// the kernel", not "delivered": use Flush() to learn when the queue has been
// drained into the kernel. The output queue is unbounded; callers that produce
// faster than the peer consumes should watch queued_output_bytes().
class TcpEndpoint final : public EndpointBase {
 public:
  // Takes ownership of `fd` (connected, non-blocking). Called by TcpFabric.
  TcpEndpoint(TcpFabric* fabric, int fd, uint64_t id, std::string peer_name);
  ~TcpEndpoint() override;

  // ---- Endpoint ----
  const std::string& peer_name() const override { return peer_name_; }
  bool connected() const override { return state_ == State::kConnected; }
  // kInvalidArgument above max_message_size (done not called); kUnavailable on
  // a failed or closed endpoint.
  Status Send(std::span<const IoSlice> message, Completion done) override;
  // The one-sided family: kNotSupported on this backend.
  Result<RemoteRegion> Import(std::span<const std::byte> descriptor) override;
  Status Read(const RemoteRegion& remote, uint64_t remote_offset, std::span<const IoSlice> local,
              Completion done) override;
  Status Write(std::span<const IoSlice> local, const RemoteRegion& remote, uint64_t remote_offset,
               Completion done) override;
  Status ReadToRegion(const RemoteRegion& remote, uint64_t remote_offset, const MemoryRegion& local,
                      size_t local_offset, size_t length, Completion done) override;
  Status WriteFromRegion(const MemoryRegion& local, size_t local_offset, size_t length,
                         const RemoteRegion& remote, uint64_t remote_offset,
                         Completion done) override;
  Status CompareSwap(const RemoteRegion& remote, uint64_t remote_offset, uint64_t expected,
                     uint64_t desired, CasCompletion done) override;
  // OK: there are no one-sided operations to order.
  Status Fence() override;
  // `done` runs (deferred) once every byte queued before the call has been
  // handed to the kernel; with kUnavailable if the connection fails first and
  // kAborted if Close() comes first.
  Status Flush(Completion done) override;
  // Closes the socket at once; output still queued is discarded (Flush first
  // and Close from its completion to hand everything to the kernel). Pending
  // flushes complete with kAborted; Send completions already issued still
  // report OK (they only ever said "copied"). No disconnect report.
  // Idempotent.
  void Close() override;

  // ---- EndpointBase ----
  Status SendControl(std::span<const IoSlice> message, Completion done) override;

  // Bytes waiting in the output queue (not yet accepted by the kernel).
  size_t queued_output_bytes() const { return out_.size(); }

  // ---- TcpFabric plumbing ----
  uint64_t id() const { return id_; }
  // Handles one epoll event; returns events handled (frames delivered,
  // disconnects, output drains).
  int HandleEvents(uint32_t events);
  // The Fabric is going away: close the socket, drop pending completions
  // (nothing can run them any more), report nothing.
  void Detach();

 private:
  enum class State { kConnected, kFailed, kClosed };
  enum class Report { kNow, kDeferred };

  Status SendFrame(tcp::FrameKind kind, std::span<const IoSlice> message, Completion done);
  // Appends header+message (`frame` bytes in all) from byte `skip` of the
  // frame to the output queue.
  bool QueueFrameTail(const std::byte* header, std::span<const IoSlice> message, size_t frame,
                      size_t skip);
  int ReadInput();
  int ParseFrames();
  int DrainOutput();
  void SetWantWrite(bool want);
  void CompleteFlushes(const Status& status, bool only_drained);
  // Marks the connection failed, closes it, fails pending flushes and reports
  // `why` through Internal::DeliverDisconnect (now, or from the next Progress
  // when called from inside a user's call). Once only.
  void Fail(Status why, Report report);
  // Deregisters and closes the socket; detaches from the Fabric.
  void Shutdown();
  Status ErrnoFailure(int err) const;

  TcpFabric* fabric_;  // null once shut down or detached
  int fd_;
  const uint64_t id_;
  const std::string peer_name_;
  State state_ = State::kConnected;
  Status failure_;  // why operations fail once not connected (kUnavailable)

  tcp::ByteQueue in_;
  tcp::ByteQueue out_;
  bool want_write_ = false;  // EPOLLOUT is in the epoll interest set
  // The fabric's progress turn in which this connection last wrote straight
  // from a caller's slices. Later small frames of the same turn are queued and
  // leave together in one send() when EPOLLOUT fires (write coalescing).
  uint64_t direct_write_turn_ = UINT64_MAX;

  uint64_t bytes_queued_ = 0;   // frame bytes accepted by Send/SendControl, total
  uint64_t bytes_written_ = 0;  // of those, handed to the kernel
  struct PendingFlush {
    uint64_t target;  // done once bytes_written_ reaches this
    Completion done;
  };
  std::deque<PendingFlush> flushes_;
};

// The Fabric of the tcp backend.
//
// Thread-safety: owner thread only (Fabric::Notify excepted, in the base).
// Ownership: holds every open connection; destroying the Fabric closes them
// without reporting, and pending completions are dropped.
class TcpFabric final : public Fabric {
 public:
  explicit TcpFabric(const FabricOptions& options);
  ~TcpFabric() override;

  // Creates the epoll set. Called once by CreateTcpFabric.
  Status Init();

  Backend backend() const override { return Backend::kTcp; }

  Status Listen(const std::string& host, uint16_t port) override;
  uint16_t listen_port() const override { return listen_port_; }

  // Page-aligned, zero-filled anonymous memory. Its Descriptor() fails with
  // kNotSupported: tcp peers cannot access memory.
  Result<MemoryRegion> Allocate(size_t bytes) override;
  // A region over the user's buffers; nothing is registered.
  Result<MemoryRegion> RegisterVector(std::span<const IoSlice> buffers) override;

  size_t connection_count() const { return connections_.size(); }

 protected:
  Result<std::shared_ptr<Endpoint>> ConnectBackend(const std::string& host, uint16_t port,
                                                   std::chrono::milliseconds timeout) override;
  int ProgressBackend() override;
  bool ArmBackend() override;
  int backend_event_fd() const override { return epoll_fd_; }

 private:
  friend class TcpEndpoint;
  static constexpr uint64_t kListenerId = 0;

  int AcceptConnections();
  // Registers a connected socket (taking ownership of `fd`, closed on error).
  Result<std::shared_ptr<TcpEndpoint>> AddConnection(int fd, std::string peer_name);
  // Sets the epoll interest of a connection.
  Status Watch(int op, int fd, uint64_t id, bool want_write);
  void Unwatch(int fd);
  void RemoveConnection(uint64_t id) { connections_.erase(id); }

  // Incremented by every ProgressBackend call (see direct_write_turn_).
  uint64_t turn_ = 0;
  int epoll_fd_ = -1;
  int listen_fd_ = -1;
  uint16_t listen_port_ = 0;
  bool accept_warned_ = false;  // one warning per burst of accept() failures
  uint64_t next_id_ = kListenerId + 1;
  std::unordered_map<uint64_t, std::shared_ptr<TcpEndpoint>> connections_;
};

}  // namespace rampart::transport
