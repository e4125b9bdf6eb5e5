#include "kv/durability.h"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kv/placement.h"

namespace rampart::kv {

uint64_t LogSegmentBytes(const ClusterConfig& config) {
  return std::max(config.kv.log_segment_bytes, config.transport.max_message_size + (uint64_t{1} << 20));
}

std::string PartitionLogDir(const std::string& data_dir, uint32_t node_id, uint32_t partition) {
  return StrCat(data_dir, "/node-", node_id, "/partition-", partition);
}

namespace {

// A partition directory holding files for a partition not in `serving`.
Status CheckPartitionDirs(const std::filesystem::path& node_dir, uint32_t node_id,
                          const std::vector<uint32_t>& serving, uint32_t nodes,
                          uint32_t partitions_per_node) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(node_dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string_view digits = std::string_view(name).substr(std::min<size_t>(name.size(), 10));
    uint32_t partition = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), partition);
    if (!name.starts_with("partition-") || !entry.is_directory(ec) || digits.empty() ||
        error != std::errc() || end != digits.data() + digits.size()) {
      continue;
    }
    if (std::find(serving.begin(), serving.end(), partition) != serving.end()) continue;
    if (fs::is_empty(entry.path(), ec)) continue;  // nothing was ever logged there
    std::string now;
    for (uint32_t p : serving) now += StrCat(now.empty() ? "" : ",", p);
    return FailedPrecondition(
        "node ", node_id, ": ", entry.path().string(), " holds the log of partition ", partition,
        ", which this node does not serve with kv.partitions_per_node = ", partitions_per_node,
        " and ", nodes, " nodes (it serves ", now, "): its keys would be left unread. Start it "
        "with the kv.partitions_per_node and [[nodes]] the data was written with (partition ",
        partition, " of ", nodes, " nodes needs kv.partitions_per_node >= ",
        partition / std::max(nodes, 1u) + 1, "), or move the directory away");
  }
  if (ec) return ErrnoStatus(StrCat("listing ", node_dir.string()), ec.value());
  return Status::Ok();
}

constexpr std::string_view kLayoutMagic = "rampart kv layout 1";

std::string LayoutText(uint32_t nodes, uint32_t partitions_per_node) {
  return StrCat(kLayoutMagic, "\nnodes ", nodes, "\npartitions_per_node ", partitions_per_node, "\n");
}

// Writes `text` to `path` through a temporary file, synced and renamed.
Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  const std::string tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(StrCat("creating ", tmp), errno);
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return ErrnoStatus(StrCat("writing ", tmp), err);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoStatus(StrCat("renaming ", tmp), errno);
  const int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
  return Status::Ok();
}

}  // namespace

Status CheckDataLayout(const std::string& data_dir, uint32_t node_id,
                       const std::vector<uint32_t>& serving, uint32_t nodes,
                       uint32_t partitions_per_node) {
  namespace fs = std::filesystem;
  const fs::path node_dir = StrCat(data_dir, "/node-", node_id);
  const fs::path layout = node_dir / "layout";
  std::error_code ec;
  const std::string want = LayoutText(nodes, partitions_per_node);
  if (std::ifstream in(layout); in) {
    std::stringstream text;
    text << in.rdbuf();
    if (text.str() == want) return Status::Ok();
    uint32_t was_nodes = 0, was_per_node = 0;
    std::string magic;
    std::getline(text.seekg(0), magic);
    std::string word_nodes, word_per_node;
    text >> word_nodes >> was_nodes >> word_per_node >> was_per_node;
    if (magic != kLayoutMagic || word_nodes != "nodes" || word_per_node != "partitions_per_node") {
      return Corruption(layout.string(), ": not a layout file of this version (expected \"",
                        kLayoutMagic, "\" and two lines: nodes N, partitions_per_node P)");
    }
    return FailedPrecondition(
        "node ", node_id, ": the logs in ", node_dir.string(), " were written by a cluster of ",
        was_nodes, " nodes x ", was_per_node, " partitions (", layout.string(),
        "), this configuration has ", nodes, " x ", partitions_per_node,
        ": every key would be looked for in another partition. Start it with ", was_nodes,
        " [[nodes]] and kv.partitions_per_node = ", was_per_node);
  }
  if (fs::is_directory(node_dir, ec)) {
    RAMPART_RETURN_IF_ERROR(CheckPartitionDirs(node_dir, node_id, serving, nodes, partitions_per_node));
  } else if (!fs::create_directories(node_dir, ec) && ec) {
    return ErrnoStatus(StrCat("creating ", node_dir.string()), ec.value());
  }
  return WriteFileAtomically(layout, want);
}

namespace {

// Where kv.log = "dir" keeps the logs: `data_dir` (--data-dir), else kv.data_dir.
std::string LogRoot(const ClusterConfig& config, const std::string& data_dir) {
  return data_dir.empty() ? config.kv.data_dir : data_dir;
}

}  // namespace

Status CheckDataLayoutOf(const ClusterConfig& config, uint32_t node_id,
                         const std::string& data_dir) {
  if (config.kv.log != "dir") return Status::Ok();
  RAMPART_ASSIGN_OR_RETURN(Placement placement,
                           Placement::Create(config.nodes, config.kv.partitions_per_node));
  return CheckDataLayout(LogRoot(config, data_dir), node_id, placement.PartitionsOfNode(node_id),
                         static_cast<uint32_t>(config.nodes.size()),
                         config.kv.partitions_per_node);
}

DurabilityOptions DurabilityOptionsFromConfig(const ClusterConfig& config, uint32_t node_id,
                                              const std::string& data_dir) {
  DurabilityOptions o;
  o.sync = config.kv.sync == "always" ? wal::SyncPolicy::kAlways : wal::SyncPolicy::kInterval;
  o.sync_interval = std::chrono::milliseconds(config.kv.sync_interval_ms);
  o.checkpoint_log_bytes = config.kv.checkpoint_log_bytes;
  o.checkpoint_age = std::chrono::seconds(config.kv.checkpoint_age_s);
  if (config.kv.log == "dir") {
    const std::string dir = LogRoot(config, data_dir);
    const uint64_t segment_bytes = LogSegmentBytes(config);
    o.open_store = [dir, node_id, segment_bytes](uint32_t partition)
        -> Result<std::unique_ptr<wal::SegmentStore>> {
      RAMPART_ASSIGN_OR_RETURN(
          auto store,
          wal::DirectoryStore::Open(PartitionLogDir(dir, node_id, partition), segment_bytes));
      return std::unique_ptr<wal::SegmentStore>(std::move(store));
    };
  }
  return o;
}

// Syncs a writer whenever it is kicked, one sync at a time: kicks that come
// while a sync runs make one more sync after it.
class DurablePartition::SyncWorker {
 public:
  SyncWorker(wal::LogWriter& writer, std::function<void()> synced)
      : writer_(writer), synced_(std::move(synced)), thread_([this] { Run(); }) {}
  ~SyncWorker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Kick() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      kicked_ = true;
    }
    cv_.notify_one();
  }
 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return kicked_ || stop_; });
      if (!kicked_) return;  // stopping, nothing asked for
      kicked_ = false;
      lock.unlock();
      // A failure stays in the writer (LogWriter::sync_error); the partition
      // thread, woken by `synced_`, finds it there.
      (void)writer_.SyncNow();
      lock.lock();
      if (synced_) synced_();
    }
  }

  wal::LogWriter& writer_;
  const std::function<void()> synced_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool kicked_ = false;  // GUARDED_BY(mu_)
  bool stop_ = false;    // GUARDED_BY(mu_)
  std::thread thread_;
};

DurablePartition::DurablePartition(const DurabilityOptions& options, PartitionExecutor& executor)
    : options_(options), executor_(executor), last_checkpoint_(std::chrono::steady_clock::now()) {}

DurablePartition::~DurablePartition() {
  executor_.AttachRedo(nullptr);
  sync_worker_.reset();
}

Status DurablePartition::CommitTurn() {
  const uint64_t before = writer_->committed_lsn();
  RAMPART_RETURN_IF_ERROR(writer_->Commit());
  if (sync_worker_ && writer_->committed_lsn() != before) sync_worker_->Kick();
  return Status::Ok();
}

uint64_t DurablePartition::acked_lsn() const {
  return sync_worker_ ? writer_->durable_lsn() : writer_->committed_lsn();
}

Status DurablePartition::sync_error() const { return writer_->sync_error(); }

Result<std::unique_ptr<DurablePartition>> DurablePartition::Open(
    const DurabilityOptions& options, uint32_t partition, PartitionExecutor& executor,
    const wire::ProtocolLimits& limits,
    const std::function<void(uint64_t done, uint64_t total)>& progress,
    std::function<void()> synced) {
  std::unique_ptr<DurablePartition> d(new DurablePartition(options, executor));
  d->partition_ = partition;
  RAMPART_ASSIGN_OR_RETURN(d->store_, options.open_store(partition));
  const wal::Identity identity{options.cluster, options.node, partition, options.partition_count};
  RAMPART_ASSIGN_OR_RETURN(
      d->recovered_,
      RecoverPartition(*d->store_, identity, executor.mutable_partition(), limits, progress));
  // The writer never syncs inside Commit: the sync thread (always) or the
  // node's syncer (interval) does.
  RAMPART_ASSIGN_OR_RETURN(
      d->writer_, wal::LogWriter::Open(*d->store_,
                                       wal::LogOptions{identity, wal::SyncPolicy::kInterval},
                                       d->recovered_));
  if (options.sync == wal::SyncPolicy::kAlways) {
    d->sync_worker_ = std::make_unique<SyncWorker>(*d->writer_, std::move(synced));
  }
  d->redo_ = std::make_unique<PartitionRedo>(*d->writer_);
  executor.AttachRedo(d->redo_.get());
  return d;
}

Status DurablePartition::Background(std::chrono::steady_clock::time_point now) {
  Partition& partition = executor_.mutable_partition();
  if (!writer_->checkpoint_in_progress()) {
    const uint64_t log = writer_->log_bytes_since_checkpoint();
    const bool big = log >= std::max(options_.checkpoint_log_bytes, writer_->checkpoint_bytes());
    const bool old = log > 0 && now - last_checkpoint_ >= options_.checkpoint_age;
    if (!big && !old && !(log > 0 && store_->short_of_space())) return Status::Ok();
    RAMPART_RETURN_IF_ERROR(redo_->BeginCheckpoint(partition));
    checkpoint_started_ = now;
    longest_chunk_ = {};
  }
  const auto chunk_start = std::chrono::steady_clock::now();
  RAMPART_ASSIGN_OR_RETURN(
      bool more, redo_->ContinueCheckpoint(partition, options_.checkpoint_keys_per_turn,
                                           options_.checkpoint_bytes_per_turn));
  longest_chunk_ = std::max(longest_chunk_, std::chrono::steady_clock::now() - chunk_start);
  if (more) return Status::Ok();
  const uint64_t log_before = writer_->log_bytes_since_checkpoint();
  RAMPART_RETURN_IF_ERROR(redo_->FinishCheckpoint());
  const auto done = std::chrono::steady_clock::now();
  spdlog::info("partition {}: checkpoint of {} bytes in {:.3f} s (longest pause {:.1f} ms); the "
               "log to replay went from {} to {} bytes",
               partition_, writer_->checkpoint_bytes(),
               std::chrono::duration<double>(done - checkpoint_started_).count(),
               std::chrono::duration<double, std::milli>(longest_chunk_).count(), log_before,
               writer_->log_bytes_since_checkpoint());
  last_checkpoint_ = done;
  return Status::Ok();
}

LogSyncer::LogSyncer(std::chrono::milliseconds interval, std::function<void(const Status&)> on_error)
    : interval_(interval), on_error_(std::move(on_error)), thread_([this] { Run(); }) {}

LogSyncer::~LogSyncer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void LogSyncer::Add(wal::LogWriter* writer) {
  std::lock_guard<std::mutex> lock(mu_);
  writers_.push_back(writer);
}

void LogSyncer::Remove(wal::LogWriter* writer) {
  std::unique_lock<std::mutex> lock(mu_);
  writers_.erase(std::remove(writers_.begin(), writers_.end(), writer), writers_.end());
  cv_.wait(lock, [this] { return !syncing_; });
}

void LogSyncer::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  bool reported = false;
  for (;;) {
    const bool stopping = cv_.wait_for(lock, interval_, [this] { return stop_; });
    std::vector<wal::LogWriter*> writers = writers_;
    syncing_ = true;
    lock.unlock();
    for (wal::LogWriter* w : writers) {
      Status st = w->SyncNow();
      if (!st.ok() && !reported && on_error_) {
        reported = true;
        on_error_(st);
      }
    }
    lock.lock();
    syncing_ = false;
    cv_.notify_all();
    if (stopping) return;
  }
}

}  // namespace rampart::kv
