// The NBD server in-process on an ephemeral port over a RAM device: a client
// written here on raw sockets does the handshake by hand and sends good and
// bad requests; then the real clients from Debian (nbdinfo, nbdcopy,
// qemu-img, fio) run against it as child processes.
#include "storage/nbd_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <thread>

#include "common/size.h"
#include "storage/nbd_protocol.h"
#include "storage/ram_block_device.h"

extern char** environ;

namespace rampart::storage {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr uint64_t kDeviceBytes = 16 * kMiB;
constexpr size_t kMaxRequest = 1 * kMiB;
constexpr char kExport[] = "test";

std::vector<std::byte> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = std::byte(rng());
  return out;
}

// A blocking client on raw sockets; every read gives up after 10 s.
class RawClient {
 public:
  ~RawClient() {
    if (fd_ >= 0) close(fd_);
  }

  void Connect(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd_, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0)
        << std::strerror(errno);
    timeval tv{.tv_sec = 10, .tv_usec = 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  bool SendAll(std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes = bytes.subspan(static_cast<size_t>(n));
    }
    return true;
  }

  // Exactly n bytes, or an empty vector (and a test failure) on EOF/timeout.
  std::vector<std::byte> Read(size_t n) {
    std::vector<std::byte> out(n);
    size_t got = 0;
    while (got < n) {
      const ssize_t r = recv(fd_, out.data() + got, n - got, 0);
      if (r <= 0) {
        ADD_FAILURE() << "read " << got << " of " << n << " bytes: "
                      << (r == 0 ? "EOF" : std::strerror(errno));
        return {};
      }
      got += static_cast<size_t>(r);
    }
    return out;
  }

  // Reads (and drops) whatever comes until the server closes: true on EOF or
  // reset, false when the connection is still open after 10 s.
  bool WaitClosed() {
    std::byte buf[4096];
    for (;;) {
      const ssize_t r = recv(fd_, buf, sizeof buf, 0);
      if (r == 0) return true;
      if (r < 0) return errno == ECONNRESET || errno == EPIPE;
    }
  }

  // Greeting and client flags; returns the handshake flags.
  uint16_t Greet(uint32_t client_flags = nbd::kClientFlagFixedNewstyle |
                                         nbd::kClientFlagNoZeroes) {
    auto flags = nbd::DecodeGreeting(Read(nbd::kGreetingBytes));
    EXPECT_TRUE(flags.ok()) << flags.status().ToString();
    nbd::Buffer m;
    nbd::AppendClientFlags(m, client_flags);
    EXPECT_TRUE(SendAll(m));
    return flags.ok() ? *flags : 0;
  }

  void SendOption(uint32_t option, std::span<const std::byte> data = {}) {
    nbd::Buffer m;
    nbd::AppendOption(m, option, data);
    ASSERT_TRUE(SendAll(m));
  }

  struct OptionReply {
    nbd::OptionReplyHeader header;
    std::vector<std::byte> data;
  };
  OptionReply ReadOptionReply() {
    auto header = nbd::DecodeOptionReplyHeader(Read(nbd::kOptionReplyHeaderBytes));
    if (!header.ok()) {
      ADD_FAILURE() << header.status().ToString();
      return {};
    }
    return {*header, header->length > 0 ? Read(header->length) : std::vector<std::byte>{}};
  }

  struct InfoReplies {
    uint32_t final_type = 0;  // NBD_REP_ACK or an error
    nbd::ExportInfo export_info;
    nbd::BlockSizes block_sizes;
    std::string name;
  };
  // NBD_OPT_INFO or NBD_OPT_GO asking for block sizes and the name: the INFO
  // replies up to the final one.
  InfoReplies InfoOrGo(uint32_t option, const std::string& name) {
    SendOption(option, nbd::EncodeInfoRequest(
                           {.export_name = name,
                            .info_types = {nbd::info::kBlockSize, nbd::info::kName}}));
    InfoReplies out;
    for (;;) {
      OptionReply r = ReadOptionReply();
      EXPECT_EQ(r.header.option, option);
      if (r.header.type != nbd::rep::kInfo) {
        out.final_type = r.header.type;
        return out;
      }
      switch (nbd::DecodeInfoType(r.data).value()) {
        case nbd::info::kExport:
          out.export_info = nbd::DecodeInfoExport(r.data).value();
          break;
        case nbd::info::kBlockSize:
          out.block_sizes = nbd::DecodeInfoBlockSize(r.data).value();
          break;
        case nbd::info::kName:
          out.name.assign(reinterpret_cast<const char*>(r.data.data()) + 2, r.data.size() - 2);
          break;
      }
    }
  }

  // Connect, greet and GO: ready for requests.
  nbd::ExportInfo Open(uint16_t port, const std::string& name = kExport) {
    Connect(port);
    Greet();
    InfoReplies go = InfoOrGo(nbd::opt::kGo, name);
    EXPECT_EQ(go.final_type, nbd::rep::kAck);
    return go.export_info;
  }

  void SendRequest(uint16_t type, uint64_t offset, uint32_t length, uint16_t flags = 0,
                   std::span<const std::byte> payload = {}, uint64_t cookie = 7) {
    nbd::Buffer m;
    nbd::AppendRequest(m, {.flags = flags, .type = type, .cookie = cookie, .offset = offset,
                           .length = length});
    m.insert(m.end(), payload.begin(), payload.end());
    ASSERT_TRUE(SendAll(m));
  }

  // A reply's error; a successful READ's data goes to *data.
  uint32_t ReadReply(uint64_t cookie, uint32_t read_length = 0,
                     std::vector<std::byte>* data = nullptr) {
    auto reply = nbd::DecodeSimpleReply(Read(nbd::kSimpleReplyBytes));
    if (!reply.ok()) {
      ADD_FAILURE() << reply.status().ToString();
      return 0xffffffff;
    }
    EXPECT_EQ(reply->cookie, cookie);
    if (reply->error == nbd::err::kOk && read_length > 0) {
      std::vector<std::byte> bytes = Read(read_length);
      if (data) *data = std::move(bytes);
    }
    return reply->error;
  }

  // One request and its reply.
  uint32_t Call(uint16_t type, uint64_t offset, uint32_t length, uint16_t flags = 0,
                std::span<const std::byte> payload = {}, std::vector<std::byte>* data = nullptr) {
    SendRequest(type, offset, length, flags, payload, ++cookie_);
    return ReadReply(cookie_, type == nbd::cmd::kRead ? length : 0, data);
  }
  std::vector<std::byte> ReadOk(uint64_t offset, uint32_t length) {
    std::vector<std::byte> data;
    EXPECT_EQ(Call(nbd::cmd::kRead, offset, length, 0, {}, &data), nbd::err::kOk);
    return data;
  }

 private:
  int fd_ = -1;
  uint64_t cookie_ = 100;
};

class NbdServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }

  void StartServer(NbdServerOptions options, uint64_t device_bytes = kDeviceBytes) {
    server_.reset();
    auto dev = RamBlockDevice::Create(device_bytes);
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    device_ = std::move(*dev);
    options.port = 0;
    options.export_name = kExport;
    options.max_request_bytes = kMaxRequest;
    auto server = NbdServer::Start(options, *device_);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  // A fresh connection still gets a whole write/read round trip.
  void ExpectServerStillWorks() {
    RawClient other;
    other.Open(port());
    const std::vector<std::byte> data = RandomBytes(4096, 99);
    ASSERT_EQ(other.Call(nbd::cmd::kWrite, 8192, 4096, 0, data), nbd::err::kOk);
    EXPECT_EQ(other.ReadOk(8192, 4096), data);
  }

  uint16_t port() const { return server_->port(); }

  std::unique_ptr<RamBlockDevice> device_;
  std::unique_ptr<NbdServer> server_;
};

// ---- handshake ----

TEST_F(NbdServerTest, GoReportsSizeFlagsBlockSizesAndName) {
  EXPECT_EQ(server_->uri(), "nbd://127.0.0.1:" + std::to_string(port()) + "/test");
  RawClient c;
  c.Connect(port());
  EXPECT_EQ(c.Greet(), nbd::kFlagFixedNewstyle | nbd::kFlagNoZeroes);
  const RawClient::InfoReplies go = c.InfoOrGo(nbd::opt::kGo, kExport);
  ASSERT_EQ(go.final_type, nbd::rep::kAck);
  EXPECT_EQ(go.export_info.size, kDeviceBytes);
  const uint16_t want = nbd::tx::kHasFlags | nbd::tx::kSendFlush | nbd::tx::kSendFua |
                        nbd::tx::kSendTrim | nbd::tx::kSendWriteZeroes | nbd::tx::kCanMultiConn;
  EXPECT_EQ(go.export_info.transmission_flags, want);
  EXPECT_EQ(go.block_sizes,
            (nbd::BlockSizes{.minimum = 1, .preferred = 4096, .maximum = kMaxRequest}));
  EXPECT_EQ(go.name, kExport);
  EXPECT_EQ(c.ReadOk(0, 512), std::vector<std::byte>(512));
}

TEST_F(NbdServerTest, EmptyNameIsTheDefaultExport) {
  RawClient c;
  EXPECT_EQ(c.Open(port(), "").size, kDeviceBytes);
  EXPECT_EQ(c.ReadOk(0, 16).size(), 16u);
}

TEST_F(NbdServerTest, ExportNameWithAndWithoutZeroes) {
  for (bool no_zeroes : {true, false}) {
    RawClient c;
    c.Connect(port());
    c.Greet(nbd::kClientFlagFixedNewstyle | (no_zeroes ? nbd::kClientFlagNoZeroes : 0));
    c.SendOption(nbd::opt::kExportName, nbd::AsBytes(kExport));
    auto info = nbd::DecodeExportNameReply(c.Read(nbd::kExportNameReplyBytes));
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->size, kDeviceBytes);
    if (!no_zeroes) {
      EXPECT_EQ(c.Read(nbd::kExportNameZeroBytes), std::vector<std::byte>(124));
    }
    EXPECT_EQ(c.ReadOk(4096, 8).size(), 8u) << "no_zeroes " << no_zeroes;
  }
}

TEST_F(NbdServerTest, ListInfoAndRefusedOptions) {
  RawClient c;
  c.Connect(port());
  c.Greet();
  c.SendOption(nbd::opt::kList);
  RawClient::OptionReply server = c.ReadOptionReply();
  EXPECT_EQ(server.header.type, nbd::rep::kServer);
  EXPECT_EQ(*nbd::DecodeServer(server.data), kExport);
  EXPECT_EQ(c.ReadOptionReply().header.type, nbd::rep::kAck);

  const RawClient::InfoReplies info = c.InfoOrGo(nbd::opt::kInfo, kExport);
  EXPECT_EQ(info.final_type, nbd::rep::kAck);
  EXPECT_EQ(info.export_info.size, kDeviceBytes);
  EXPECT_EQ(c.InfoOrGo(nbd::opt::kInfo, "nope").final_type, nbd::rep::kErrUnknown);
  EXPECT_EQ(c.InfoOrGo(nbd::opt::kGo, "nope").final_type, nbd::rep::kErrUnknown);

  // Each refused option gets its error and the handshake goes on.
  const std::pair<uint32_t, std::vector<std::byte>> refused[] = {
      {nbd::opt::kStructuredReply, {}},
      {nbd::opt::kStartTls, {}},
      {4242, std::vector<std::byte>(10, std::byte{1})},
  };
  for (const auto& [option, data] : refused) {
    c.SendOption(option, data);
    RawClient::OptionReply r = c.ReadOptionReply();
    EXPECT_EQ(r.header.option, option);
    EXPECT_EQ(r.header.type, nbd::rep::kErrUnsup) << option;
    EXPECT_FALSE(r.data.empty());  // a message for people
  }
  c.SendOption(nbd::opt::kList, nbd::AsBytes("x"));
  EXPECT_EQ(c.ReadOptionReply().header.type, nbd::rep::kErrInvalid);
  c.SendOption(nbd::opt::kGo, std::vector<std::byte>(3));  // too short to be an INFO request
  EXPECT_EQ(c.ReadOptionReply().header.type, nbd::rep::kErrInvalid);

  EXPECT_EQ(c.InfoOrGo(nbd::opt::kGo, kExport).final_type, nbd::rep::kAck);
  EXPECT_EQ(c.ReadOk(0, 4).size(), 4u);
}

TEST_F(NbdServerTest, AbortIsAcknowledgedThenClosed) {
  RawClient c;
  c.Connect(port());
  c.Greet();
  c.SendOption(nbd::opt::kAbort);
  EXPECT_EQ(c.ReadOptionReply().header.type, nbd::rep::kAck);
  EXPECT_TRUE(c.WaitClosed());
}

TEST_F(NbdServerTest, BadHandshakesCloseOnlyThatConnection) {
  RawClient bystander;  // in transmission throughout
  bystander.Open(port());

  struct Case {
    std::string what;
    std::function<void(RawClient&)> send;
  };
  const std::vector<std::byte> http = std::vector<std::byte>(
      nbd::AsBytes("GET / HTTP/1.1\r\n\r\n").begin(), nbd::AsBytes("GET / HTTP/1.1\r\n\r\n").end());
  const Case cases[] = {
      {"unknown client flags", [](RawClient& c) { c.Greet(0x80); }},
      {"no fixed newstyle", [](RawClient& c) { c.Greet(nbd::kClientFlagNoZeroes); }},
      {"HTTP instead of NBD",
       [&](RawClient& c) {
         c.Read(nbd::kGreetingBytes);
         c.SendAll(http);
       }},
      {"garbage option magic",
       [](RawClient& c) {
         c.Greet();
         c.SendAll(std::vector<std::byte>(nbd::kOptionHeaderBytes, std::byte{0x5a}));
       }},
      {"option length huge",
       [](RawClient& c) {
         c.Greet();
         nbd::Buffer m;
         nbd::AppendOption(m, nbd::opt::kGo, {});
         std::memset(m.data() + 12, 0xff, 4);  // length 0xffffffff, no data follows
         c.SendAll(m);
       }},
      {"unknown export via EXPORT_NAME",
       [](RawClient& c) {
         c.Greet();
         c.SendOption(nbd::opt::kExportName, nbd::AsBytes("nope"));
       }},
  };
  for (const Case& k : cases) {
    RawClient c;
    c.Connect(port());
    k.send(c);
    EXPECT_TRUE(c.WaitClosed()) << k.what;
    EXPECT_EQ(bystander.ReadOk(0, 64).size(), 64u) << k.what;
    ExpectServerStillWorks();
  }
}

TEST_F(NbdServerTest, ClientVanishingMidHandshakeIsHarmless) {
  for (int cut = 0; cut < 3; ++cut) {
    RawClient c;
    c.Connect(port());
    if (cut >= 1) c.Read(nbd::kGreetingBytes);
    if (cut >= 2) c.SendAll(std::vector<std::byte>(2));  // half of the client flags
  }
  ExpectServerStillWorks();
}

// ---- transmission ----

TEST_F(NbdServerTest, WriteReadFlushTrimZeroesRoundTrip) {
  RawClient c;
  c.Open(port());
  const std::vector<std::byte> data = RandomBytes(300000, 1);
  ASSERT_EQ(c.Call(nbd::cmd::kWrite, 12345, data.size(), 0, data), nbd::err::kOk);
  EXPECT_EQ(c.ReadOk(12345, data.size()), data);
  // Unaligned pieces of it.
  EXPECT_EQ(c.ReadOk(12345 + 7, 1000),
            std::vector<std::byte>(data.begin() + 7, data.begin() + 1007));

  const uint64_t flushes = device_->flush_count();
  EXPECT_EQ(c.Call(nbd::cmd::kFlush, 0, 0), nbd::err::kOk);
  EXPECT_EQ(device_->flush_count(), flushes + 1);
  EXPECT_EQ(c.Call(nbd::cmd::kWrite, 0, 512, nbd::cmd_flag::kFua, RandomBytes(512, 2)),
            nbd::err::kOk);
  EXPECT_EQ(device_->flush_count(), flushes + 2);

  // Trim and write-zeroes: both read back as zeros on the RAM device.
  ASSERT_EQ(c.Call(nbd::cmd::kTrim, 12345, 100000), nbd::err::kOk);
  EXPECT_EQ(c.ReadOk(12345, 100000), std::vector<std::byte>(100000));
  EXPECT_EQ(c.ReadOk(112345, 10), std::vector<std::byte>(data.begin() + 100000,
                                                         data.begin() + 100010));
  ASSERT_EQ(c.Call(nbd::cmd::kWriteZeroes, 112345, 50000,
                   nbd::cmd_flag::kNoHole | nbd::cmd_flag::kFua),
            nbd::err::kOk);
  EXPECT_EQ(c.ReadOk(112345, 50000), std::vector<std::byte>(50000));
  EXPECT_EQ(device_->flush_count(), flushes + 3);
  // The last byte of the device, and zero-length requests.
  ASSERT_EQ(c.Call(nbd::cmd::kWrite, kDeviceBytes - 1, 1, 0, RandomBytes(1, 3)), nbd::err::kOk);
  EXPECT_EQ(c.ReadOk(kDeviceBytes - 1, 1), RandomBytes(1, 3));
  EXPECT_EQ(c.Call(nbd::cmd::kRead, kDeviceBytes, 0), nbd::err::kOk);
  EXPECT_EQ(c.Call(nbd::cmd::kTrim, 0, 0), nbd::err::kOk);
}

TEST_F(NbdServerTest, RangeSizeFlagAndCommandErrorsKeepTheConnection) {
  RawClient c;
  c.Open(port());
  const std::vector<std::byte> two_k = RandomBytes(2048, 4);
  struct Case {
    std::string what;
    uint16_t type;
    uint64_t offset;
    uint32_t length;
    uint16_t flags;
    bool payload;  // a WRITE's data follows
    uint32_t want;
  };
  const Case cases[] = {
      {"read past the end", nbd::cmd::kRead, kDeviceBytes - 1024, 2048, 0, false, nbd::err::kInval},
      {"read at a huge offset", nbd::cmd::kRead, ~uint64_t{0} - 10, 512, 0, false,
       nbd::err::kInval},
      {"write past the end", nbd::cmd::kWrite, kDeviceBytes - 1024, 2048, 0, true,
       nbd::err::kNoSpc},
      {"trim past the end", nbd::cmd::kTrim, kDeviceBytes, 1, 0, false, nbd::err::kInval},
      {"zeroes past the end", nbd::cmd::kWriteZeroes, kDeviceBytes - 1, 2, 0, false,
       nbd::err::kNoSpc},
      {"read over max", nbd::cmd::kRead, 0, kMaxRequest + 1, 0, false, nbd::err::kInval},
      {"zeroes over max", nbd::cmd::kWriteZeroes, 0, kMaxRequest + 1, 0, false, nbd::err::kInval},
      {"unknown command", 99, 0, 512, 0, false, nbd::err::kInval},
      {"block status unsupported", nbd::cmd::kBlockStatus, 0, 512, 0, false, nbd::err::kInval},
      {"read with DF (not advertised)", nbd::cmd::kRead, 0, 512, nbd::cmd_flag::kDf, false,
       nbd::err::kInval},
      {"write with an unknown flag", nbd::cmd::kWrite, 0, 2048, 0x100, true, nbd::err::kInval},
      {"zeroes with FAST_ZERO (not advertised)", nbd::cmd::kWriteZeroes, 0, 512,
       nbd::cmd_flag::kFastZero, false, nbd::err::kInval},
  };
  for (const Case& k : cases) {
    EXPECT_EQ(c.Call(k.type, k.offset, k.length, k.flags,
                     k.payload ? std::span<const std::byte>(two_k) : std::span<const std::byte>{}),
              k.want)
        << k.what;
    EXPECT_EQ(c.ReadOk(0, 16).size(), 16u) << "after " << k.what;
  }
  // Nothing above reached the device.
  EXPECT_EQ(c.ReadOk(kDeviceBytes - 1024, 1024), std::vector<std::byte>(1024));
}

TEST_F(NbdServerTest, OversizedWriteIsRefusedAndItsPayloadSkipped) {
  RawClient c;
  c.Open(port());
  const std::vector<std::byte> big = RandomBytes(kMaxRequest + 4096, 5);
  c.SendRequest(nbd::cmd::kWrite, 0, big.size(), 0, {}, 1);
  std::thread sender([&] { c.SendAll(big); });  // the server reads it while it answers
  EXPECT_EQ(c.ReadReply(1), nbd::err::kInval);
  sender.join();
  EXPECT_EQ(c.ReadOk(0, 4096), std::vector<std::byte>(4096));  // nothing was written
}

TEST_F(NbdServerTest, WriteLargerThanTheDosLimitIsRefusedAndClosed) {
  RawClient c;
  c.Open(port());
  c.SendRequest(nbd::cmd::kWrite, 0, nbd::kDosPayloadBytes + 1, 0, {}, 1);
  EXPECT_EQ(c.ReadReply(1), nbd::err::kInval);
  EXPECT_TRUE(c.WaitClosed());
  ExpectServerStillWorks();
}

TEST_F(NbdServerTest, BadRequestMagicClosesOnlyThatConnection) {
  RawClient bystander;
  bystander.Open(port());
  RawClient c;
  c.Open(port());
  nbd::Buffer m;
  nbd::AppendRequest(m, {.type = nbd::cmd::kRead, .length = 512});
  m[0] = std::byte{0x12};
  ASSERT_TRUE(c.SendAll(m));
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_EQ(bystander.ReadOk(0, 512).size(), 512u);
  ExpectServerStillWorks();
}

TEST_F(NbdServerTest, DiscClosesAfterAnsweringEarlierRequests) {
  RawClient c;
  c.Open(port());
  c.SendRequest(nbd::cmd::kWrite, 0, 4, 0, RandomBytes(4, 6), 1);
  c.SendRequest(nbd::cmd::kDisc, 0, 0, 0, {}, 2);
  EXPECT_EQ(c.ReadReply(1), nbd::err::kOk);
  EXPECT_TRUE(c.WaitClosed());
  RawClient d;
  d.Open(port());
  EXPECT_EQ(d.ReadOk(0, 4), RandomBytes(4, 6));
}

TEST_F(NbdServerTest, DeviceErrorsBecomeEio) {
  RawClient c;
  c.Open(port());
  device_->SetFailing(true);
  EXPECT_EQ(c.Call(nbd::cmd::kRead, 0, 512), nbd::err::kIo);  // and no data follows
  EXPECT_EQ(c.Call(nbd::cmd::kWrite, 0, 4, 0, RandomBytes(4, 7)), nbd::err::kIo);
  EXPECT_EQ(c.Call(nbd::cmd::kFlush, 0, 0), nbd::err::kIo);
  EXPECT_EQ(c.Call(nbd::cmd::kTrim, 0, 4096), nbd::err::kIo);
  EXPECT_EQ(c.Call(nbd::cmd::kWriteZeroes, 0, 4096), nbd::err::kIo);
  device_->SetFailing(false);
  EXPECT_EQ(c.ReadOk(0, 512), std::vector<std::byte>(512));
}

TEST_F(NbdServerTest, ReadOnlyExportRefusesChanges) {
  StartServer({.read_only = true});
  RawClient c;
  const nbd::ExportInfo info = c.Open(port());
  EXPECT_TRUE(info.transmission_flags & nbd::tx::kReadOnly);
  EXPECT_EQ(c.Call(nbd::cmd::kWrite, 0, 4, 0, RandomBytes(4, 8)), nbd::err::kPerm);
  EXPECT_EQ(c.Call(nbd::cmd::kTrim, 0, 4096), nbd::err::kPerm);
  EXPECT_EQ(c.Call(nbd::cmd::kWriteZeroes, 0, 4096), nbd::err::kPerm);
  EXPECT_EQ(c.Call(nbd::cmd::kFlush, 0, 0), nbd::err::kOk);
  EXPECT_EQ(c.ReadOk(0, 4), std::vector<std::byte>(4));
}

TEST_F(NbdServerTest, PipelinedRequestsAreAnsweredInOrder) {
  RawClient c;
  c.Open(port());
  // 400 requests sent at once by another thread: a write then a read back
  // of each 8 KiB block, with sizes that straddle the server's buffers.
  constexpr int kPairs = 200;
  nbd::Buffer stream;
  for (int i = 0; i < kPairs; ++i) {
    const uint32_t length = 1000 + 97 * static_cast<uint32_t>(i);
    const std::vector<std::byte> data = RandomBytes(length, 1000 + i);
    nbd::AppendRequest(stream, {.type = nbd::cmd::kWrite, .cookie = 2 * uint64_t(i),
                                .offset = uint64_t(i) * 32768, .length = length});
    stream.insert(stream.end(), data.begin(), data.end());
    nbd::AppendRequest(stream, {.type = nbd::cmd::kRead, .cookie = 2 * uint64_t(i) + 1,
                                .offset = uint64_t(i) * 32768, .length = length});
  }
  std::thread sender([&] { EXPECT_TRUE(c.SendAll(stream)); });
  for (int i = 0; i < kPairs; ++i) {
    const uint32_t length = 1000 + 97 * static_cast<uint32_t>(i);
    ASSERT_EQ(c.ReadReply(2 * uint64_t(i)), nbd::err::kOk) << i;
    std::vector<std::byte> data;
    ASSERT_EQ(c.ReadReply(2 * uint64_t(i) + 1, length, &data), nbd::err::kOk) << i;
    ASSERT_EQ(data, RandomBytes(length, 1000 + i)) << i;
  }
  sender.join();
}

// A RAM device that counts how READs reach it and can refuse ReadMany, or
// Read at one offset.
class BatchProbeDevice final : public BlockDevice {
 public:
  explicit BatchProbeDevice(RamBlockDevice& ram) : ram_(ram) {}
  uint64_t size() const override { return ram_.size(); }
  uint32_t preferred_block_size() const override { return ram_.preferred_block_size(); }
  Status Read(uint64_t offset, std::span<std::byte> out) override {
    if (offset == bad_offset) return IoError("no good at ", offset);
    return ram_.Read(offset, out);
  }
  Status ReadMany(std::span<const ReadRange> reads) override {
    ++batches;
    largest_batch = std::max(largest_batch, reads.size());
    if (fail_batches) return IoError("batch refused");
    return BlockDevice::ReadMany(reads);
  }
  Status Write(uint64_t offset, std::span<const std::byte> data) override {
    return ram_.Write(offset, data);
  }
  Status Flush() override { return ram_.Flush(); }
  Status Trim(uint64_t offset, uint64_t length) override { return ram_.Trim(offset, length); }

  // Set before clients connect; read after they are answered.
  std::atomic<bool> fail_batches{false};
  uint64_t bad_offset = UINT64_MAX;
  size_t batches = 0, largest_batch = 0;

 private:
  RamBlockDevice& ram_;
};

// READs sent back to back reach the device as ReadMany batches and are
// answered in order; an invalid READ in the middle ends a batch and gets its
// own error; a batch the device refuses is retried read by read, so only the
// READ that fails alone gets EIO.
TEST(NbdServerBatchTest, BackToBackReadsAreBatchedAndAnsweredOneByOne) {
  auto ram = RamBlockDevice::Create(kDeviceBytes);
  ASSERT_TRUE(ram.ok());
  const std::vector<std::byte> content = RandomBytes(kDeviceBytes, 4242);
  ASSERT_TRUE((*ram)->Write(0, content).ok());
  for (bool fail_batches : {false, true}) {
    BatchProbeDevice device(**ram);
    device.fail_batches = fail_batches;
    device.bad_offset = fail_batches ? uint64_t{110} * 4096 : UINT64_MAX;  // read 30's
    auto server = NbdServer::Start({.port = 0, .export_name = kExport,
                                    .max_request_bytes = kMaxRequest}, device);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    RawClient c;
    c.Open((*server)->port());
    constexpr int kReads = 150;
    auto offset_of = [](int i) { return uint64_t((i * 37) % 1000) * 4096; };
    nbd::Buffer stream;
    for (int i = 0; i < kReads; ++i) {
      const uint64_t offset = i == 60 ? kDeviceBytes : offset_of(i);  // 60: past the end
      nbd::AppendRequest(stream, {.type = nbd::cmd::kRead, .cookie = uint64_t(i),
                                  .offset = offset, .length = 4096});
    }
    std::thread sender([&] { EXPECT_TRUE(c.SendAll(stream)); });
    for (int i = 0; i < kReads; ++i) {
      std::vector<std::byte> data;
      if (i == 60) {
        ASSERT_EQ(c.ReadReply(uint64_t(i)), nbd::err::kInval) << i;
        continue;
      }
      if (offset_of(i) == device.bad_offset) {
        ASSERT_EQ(c.ReadReply(uint64_t(i)), nbd::err::kIo) << i;  // and no data follows
        continue;
      }
      ASSERT_EQ(c.ReadReply(uint64_t(i), 4096, &data), nbd::err::kOk) << i;
      ASSERT_TRUE(std::equal(data.begin(), data.end(), content.begin() + offset_of(i))) << i;
    }
    sender.join();
    (*server)->Stop();
    EXPECT_GT(device.largest_batch, 1u) << "fail_batches " << fail_batches;
    EXPECT_LE(device.largest_batch, 64u);
  }
}

TEST_F(NbdServerTest, RequestsArrivingByteByByteAreReassembled) {
  RawClient c;
  c.Open(port());
  nbd::Buffer m;
  const std::vector<std::byte> data = RandomBytes(100, 9);
  nbd::AppendRequest(m, {.type = nbd::cmd::kWrite, .cookie = 5, .offset = 777, .length = 100});
  m.insert(m.end(), data.begin(), data.end());
  for (std::byte b : m) {
    ASSERT_TRUE(c.SendAll({&b, 1}));
    std::this_thread::sleep_for(200us);
  }
  EXPECT_EQ(c.ReadReply(5), nbd::err::kOk);
  EXPECT_EQ(c.ReadOk(777, 100), data);
}

TEST_F(NbdServerTest, AClientThatDoesNotReadRepliesBlocksNobodyElse) {
  RawClient hog;
  hog.Open(port());
  // 64 MiB of READ replies the hog does not read for now.
  constexpr int kReads = 64;
  nbd::Buffer m;
  for (int i = 0; i < kReads; ++i) {
    nbd::AppendRequest(m, {.type = nbd::cmd::kRead, .cookie = uint64_t(i), .length = 1 << 20});
  }
  ASSERT_TRUE(hog.SendAll(m));
  std::this_thread::sleep_for(100ms);
  ExpectServerStillWorks();
  for (int i = 0; i < kReads; ++i) ASSERT_EQ(hog.ReadReply(uint64_t(i), 1 << 20), 0u) << i;
}

TEST_F(NbdServerTest, StopClosesOpenConnections) {
  RawClient c;
  c.Open(port());
  RawClient mid;
  mid.Connect(port());
  server_->Stop();
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_TRUE(mid.WaitClosed());
  server_->Stop();  // idempotent
}

TEST(NbdServerOptionsTest, BadOptionsAndBusyPortAreErrors) {
  auto dev = RamBlockDevice::Create(kDeviceBytes);
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(NbdServer::Start({.port = 0, .max_request_bytes = 100}, **dev).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NbdServer::Start({.port = 0, .export_name = std::string(5000, 'x')}, **dev)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  auto first = NbdServer::Start({.port = 0}, **dev);
  ASSERT_TRUE(first.ok());
  auto second = NbdServer::Start({.port = (*first)->port()}, **dev);
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable) << second.status().ToString();
  EXPECT_EQ(NbdServer::Start({.host = "no.such.host.invalid", .port = 0}, **dev).status().code(),
            StatusCode::kUnavailable);
}


// ---- real clients: nbdinfo, nbdcopy, qemu-img, fio ----

struct ToolRun {
  int exit_code = -1;  // -1: killed or not started
  bool missing = false;  // not on PATH
  bool timed_out = false;
  std::string output;  // stdout and stderr
};

// Runs argv (argv[0] looked up in PATH) with its output to `log`; waits at
// most `timeout` and then kills it by PID.
ToolRun RunTool(const std::vector<std::string>& argv, const fs::path& log,
                std::chrono::seconds timeout = 60s) {
  ToolRun run;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    run.missing = rc == ENOENT;
    run.output = StrCat("posix_spawnp ", argv[0], ": ", std::strerror(rc));
    return run;
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      run.timed_out = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  if (!run.timed_out && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  std::ifstream in(log);
  run.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return run;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
std::string_view AsText(std::span<const std::byte> data) {
  return {reinterpret_cast<const char*>(data.data()), data.size()};
}

// An 8 MiB export and a scratch directory; each test fails (never skips)
// when its tool is missing.
class NbdToolsTest : public NbdServerTest {
 protected:
  static constexpr uint64_t kToolDeviceBytes = 8 * kMiB;

  void SetUp() override {
    StartServer({}, kToolDeviceBytes);
    dir_ = fs::temp_directory_path() / StrCat("rampart_nbd_test_", getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs a tool that must exist and succeed; returns its output.
  std::string Run(const std::vector<std::string>& argv) {
    const ToolRun run = RunTool(argv, dir_ / (argv[0] + ".log"));
    if (run.missing) {
      ADD_FAILURE() << argv[0] << " is not installed: run scripts/install-deps.sh "
                    << "(it installs libnbd-bin, qemu-utils and fio)";
      return "";
    }
    std::string command;
    for (const std::string& a : argv) command += a + " ";
    EXPECT_FALSE(run.timed_out) << command << "ran longer than 60s:\n" << run.output;
    EXPECT_EQ(run.exit_code, 0) << command << "failed:\n" << run.output;
    return run.output;
  }

  fs::path dir_;
};

TEST_F(NbdToolsTest, NbdinfoShowsTheSizeAndTheExportList) {
  EXPECT_EQ(Run({"nbdinfo", "--size", server_->uri()}), "8388608\n");
  const std::string full = Run({"nbdinfo", server_->uri()});
  EXPECT_NE(full.find("export-size: 8388608"), std::string::npos) << full;
  EXPECT_NE(full.find("can_multi_conn: true"), std::string::npos) << full;
  const std::string list =
      Run({"nbdinfo", "--list", StrCat("nbd://127.0.0.1:", port())});
  EXPECT_NE(list.find("export=\"test\""), std::string::npos) << list;
}

TEST_F(NbdToolsTest, NbdcopyInAndOutIsByteIdentical) {
  const std::vector<std::byte> data = RandomBytes(kToolDeviceBytes, 42);
  std::ofstream(dir_ / "in.bin", std::ios::binary) << AsText(data);
  Run({"nbdcopy", (dir_ / "in.bin").string(), server_->uri()});
  Run({"nbdcopy", server_->uri(), (dir_ / "out.bin").string()});
  EXPECT_TRUE(ReadFile(dir_ / "out.bin") == AsText(data));
  RawClient c;  // and the device really holds it
  c.Open(port());
  EXPECT_EQ(c.ReadOk(kToolDeviceBytes - 4096, 4096),
            std::vector<std::byte>(data.end() - 4096, data.end()));
}

TEST_F(NbdToolsTest, QemuImgConvertReadsTheExport) {
  const std::vector<std::byte> data = RandomBytes(kToolDeviceBytes, 43);
  RawClient c;
  c.Open(port());
  for (uint64_t at = 0; at < data.size(); at += kMaxRequest) {
    ASSERT_EQ(c.Call(nbd::cmd::kWrite, at, kMaxRequest, 0,
                     std::span(data).subspan(at, kMaxRequest)),
              nbd::err::kOk);
  }
  Run({"qemu-img", "convert", "-f", "raw", "-O", "raw", server_->uri(),
       (dir_ / "out.raw").string()});
  EXPECT_TRUE(ReadFile(dir_ / "out.raw") == AsText(data));
}

TEST_F(NbdToolsTest, FioWritesAndVerifies) {
  const std::string out =
      Run({"fio", "--name=nbd", "--ioengine=nbd", "--uri=" + server_->uri(), "--rw=randwrite",
           "--bs=4k", "--size=8M", "--iodepth=16", "--verify=crc32c", "--do_verify=1",
           "--verify_state_save=0",
           "--output-format=normal"});
  // 2048 blocks written, then all 2048 read back and checked, without error.
  EXPECT_NE(out.find("err= 0"), std::string::npos) << out;
  EXPECT_NE(out.find("total=2048,2048"), std::string::npos) << out;
}

}  // namespace
}  // namespace rampart::storage
