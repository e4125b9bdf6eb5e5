#include "cmd/volume_log.h"

#include <spdlog/spdlog.h>

#include "cmd/volume_open.h"

namespace rampart::cmd {
namespace {

// One area of the volume, served through the service's thread.
class AreaDevice : public wal::ByteDevice {
 public:
  AreaDevice(VolumeLogService& service, std::string name, uint64_t offset, uint64_t size)
      : service_(service), name_(std::move(name)), offset_(offset), size_(size) {}

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  Status Read(uint64_t offset, std::span<std::byte> out) override {
    if (offset + out.size() > size_) return OutOfArea(offset, out.size());
    return service_.Call([&](storage::Volume& v) { return v.Read(offset_ + offset, out); });
  }
  Status Write(uint64_t offset, std::span<const std::byte> data) override {
    if (offset + data.size() > size_) return OutOfArea(offset, data.size());
    return service_.Call([&](storage::Volume& v) { return v.Write(offset_ + offset, data); });
  }
  Status Flush() override {
    return service_.Call([](storage::Volume& v) { return v.Flush(); });
  }

 private:
  Status OutOfArea(uint64_t offset, uint64_t n) const {
    return InvalidArgument(name_, ": bytes [", offset, ", ", offset + n, ") are outside its ",
                           size_, " bytes");
  }

  VolumeLogService& service_;
  const std::string name_;
  const uint64_t offset_;
  const uint64_t size_;
};

}  // namespace

Result<std::unique_ptr<VolumeLogService>> VolumeLogService::Open(const ClusterConfig& config,
                                                                 const std::string& volume,
                                                                 uint32_t areas) {
  std::unique_ptr<VolumeLogService> s(new VolumeLogService(volume));
  s->thread_ = std::thread([raw = s.get(), config] { raw->Run(config); });
  std::unique_lock<std::mutex> lock(s->mu_);
  s->cv_.wait(lock, [&] { return s->opened_; });
  if (!s->open_status_.ok()) {
    Status st = s->open_status_;
    lock.unlock();
    s->thread_.join();
    s->thread_ = std::thread();
    return st.WithContext(StrCat("the log volume \"", volume, "\""));
  }
  s->area_bytes_ = s->volume_bytes_ / areas / 4096 * 4096;
  return s;
}

VolumeLogService::~VolumeLogService() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<wal::ByteDevice> VolumeLogService::Area(uint32_t index) {
  return std::make_unique<AreaDevice>(*this, StrCat("volume ", name_, " area ", index),
                                      index * area_bytes_, area_bytes_);
}

Status VolumeLogService::Call(const std::function<Status(storage::Volume&)>& op) {
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  Status result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return Aborted("the log volume ", name_, " is closed");
    queue_.push_back([&](storage::Volume& v) {
      Status st = op(v);
      std::lock_guard<std::mutex> l(done_mu);
      result = std::move(st);
      done = true;
      done_cv.notify_one();
    });
  }
  cv_.notify_all();
  std::unique_lock<std::mutex> l(done_mu);
  done_cv.wait(l, [&] { return done; });
  return result;
}

void VolumeLogService::Run(const ClusterConfig& config) {
  Result<std::unique_ptr<storage::Volume>> volume = OpenVolume(config, name_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    opened_ = true;
    open_status_ = volume.status();
    if (volume.ok()) volume_bytes_ = (*volume)->size();
  }
  cv_.notify_all();
  if (!volume.ok()) return;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, nothing left
    auto op = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    op(**volume);
    lock.lock();
  }
  lock.unlock();
  if (Status st = (*volume)->Flush(); !st.ok()) {
    spdlog::error("log volume {}: the last flush failed: {}", name_, st.ToString());
  }
}

}  // namespace rampart::cmd
