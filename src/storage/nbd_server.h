// NbdServer: exports one BlockDevice over NBD (fixed newstyle handshake,
// simple replies) so that nbdcopy, nbdinfo, qemu-img, qemu-nbd clients, fio
// --ioengine=nbd and the kernel's nbd-client can use it. docs/nbd.md lists
// what it speaks and how it answers bad input.
//
//   auto dev = RamBlockDevice::Create(64 * kMiB);
//   auto server = NbdServer::Start({.port = 0, .export_name = "scratch"}, **dev);
//   ... nbd://127.0.0.1:(*server)->port()/scratch ...
//   (*server)->Stop();
//
// One thread runs an epoll loop over the listening socket and every
// connection, and makes every call of the device: the device needs no
// thread-safety, and because all connections are served by that one thread
// a FLUSH covers the writes of every connection (the export advertises
// CAN_MULTI_CONN). Requests of one connection are executed and answered in
// the order they arrive, except that READs already received back to back go
// to the device in one ReadMany (up to 64, answered in order), which a volume
// overlaps; sockets are non-blocking, with a buffer per
// connection in each direction. A connection whose replies pile up unread
// (max_request_bytes of them or more) is not read from until they drain.
//
// Bad input never takes the server down: a request that is well framed but
// wrong gets an error reply (EINVAL, ENOSPC, EPERM; device errors EIO) and
// the connection goes on; bytes that cannot be trusted (a wrong magic,
// unknown client flags, an option longer than 64 KiB, an unknown export via
// NBD_OPT_EXPORT_NAME) close that connection alone, with a warning.
//
// Thread-safety: Start, Stop and the accessors from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "storage/block_device.h"

namespace rampart::storage {

struct NbdServerOptions {
  // Address to listen on: an IPv4 or IPv6 literal or a host name.
  // Default: "127.0.0.1" (NBD has no authentication; expose it deliberately).
  std::string host = "127.0.0.1";
  // TCP port; 0 picks a free one (see NbdServer::port()).
  // Default: 10809, the port IANA reserved for NBD.
  uint16_t port = 10809;
  // The export's name in nbd://host:port/NAME. A client asking for the empty
  // name (NBD's "default export") gets this export too.
  // Default: "rampart".
  std::string export_name = "rampart";
  // Largest READ, WRITE or WRITE_ZEROES, advertised as the maximum block
  // size; larger requests get EINVAL. At least the device's preferred block
  // size, at most 1 GiB. Default: 32 MiB (what the spec tells clients to
  // expect when nothing is advertised).
  size_t max_request_bytes = 32u << 20;
  // Advertise READ_ONLY and refuse WRITE, TRIM and WRITE_ZEROES with EPERM.
  // Default: false.
  bool read_only = false;
  // Connections served at once; further ones are closed as they arrive.
  // Default: 64.
  uint32_t max_connections = 64;
};

class NbdServer {
 public:
  // Validates the options, binds and listens, and starts the loop thread;
  // clients can connect when it returns. InvalidArgument for bad options,
  // Unavailable when the address cannot be bound.
  // REQUIRES: `device` outlives the server; nobody else calls it meanwhile.
  static Result<std::unique_ptr<NbdServer>> Start(const NbdServerOptions& options,
                                                  BlockDevice& device);

  NbdServer(const NbdServer&) = delete;
  NbdServer& operator=(const NbdServer&) = delete;
  ~NbdServer();  // Stop()s

  // Closes the listener and every connection (requests not yet answered are
  // dropped) and joins the loop thread. Idempotent.
  void Stop();

  // The bound port (the ephemeral one when options.port was 0).
  uint16_t port() const { return port_; }
  // "nbd://127.0.0.1:10809/rampart": what a client is given.
  const std::string& uri() const { return uri_; }

 private:
  struct Loop;
  NbdServer() = default;

  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  std::mutex stop_mu_;
  uint16_t port_ = 0;
  std::string uri_;
};

}  // namespace rampart::storage
