// DirectoryStore: segments as files of one directory.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "wal/segment_store.h"

namespace rampart::wal {
namespace {

constexpr char kPrefix[] = "seg-";
constexpr size_t kHexDigits = 16;
// Files grow by preallocated chunks: a write inside the allocated size does
// not change the file's size, so its fdatasync has no metadata to journal
// (on ext4 here: ~125 us instead of ~185 us per write+sync).
constexpr uint64_t kAllocateChunk = uint64_t{4} << 20;

Status FileError(std::string_view what, const std::string& path, int err) {
  const std::string text = StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOSPC || err == EDQUOT) return ResourceExhausted(text);
  return IoError(text);
}

}  // namespace

struct DirectoryStore::File {
  File(int f, uint64_t size) : fd(f), allocated(size) {}
  ~File() { ::close(fd); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  const int fd;
  uint64_t allocated;  // the file's size: writes below it change no metadata
};

Result<std::unique_ptr<DirectoryStore>> DirectoryStore::Open(const std::string& dir,
                                                             uint64_t segment_bytes) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    return InvalidArgument("the log directory ", dir, " is not a directory");
  }
  // The directories created here are durable before anything in them is: each
  // new one's parent is synced after it appears.
  std::vector<std::filesystem::path> created;
  for (std::filesystem::path p = std::filesystem::absolute(dir, ec);
       !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    created.push_back(p);
    if (p == p.parent_path()) break;
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("creating the log directory ", dir, ": ", ec.message());
  if (!std::filesystem::is_directory(dir, ec)) {
    return InvalidArgument("the log directory ", dir, " is not a directory");
  }
  for (const std::filesystem::path& p : created) {
    const int parent = ::open(p.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0) return FileError("opening", p.parent_path().string(), errno);
    const int rc = ::fsync(parent);
    const int err = errno;
    ::close(parent);
    if (rc != 0) return FileError("syncing the directory", p.parent_path().string(), err);
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FileError("opening the log directory", dir, errno);
  return std::unique_ptr<DirectoryStore>(new DirectoryStore(dir, fd, segment_bytes));
}

DirectoryStore::DirectoryStore(std::string dir, int dir_fd, uint64_t segment_bytes)
    : dir_(std::move(dir)),
      name_(StrCat("directory ", dir_)),
      dir_fd_(dir_fd),
      segment_bytes_(segment_bytes) {}

DirectoryStore::~DirectoryStore() { ::close(dir_fd_); }

std::string DirectoryStore::SegmentName(uint64_t seq) const {
  char name[sizeof kPrefix + kHexDigits];
  std::snprintf(name, sizeof name, "%s%016" PRIx64, kPrefix, seq);
  return StrCat(dir_, "/", name);
}

Result<std::vector<uint64_t>> DirectoryStore::List() {
  DIR* d = ::fdopendir(::dup(dir_fd_));
  if (d == nullptr) return FileError("listing", dir_, errno);
  ::rewinddir(d);
  std::vector<uint64_t> seqs;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n.size() != sizeof kPrefix - 1 + kHexDigits || !n.starts_with(kPrefix)) continue;
    uint64_t seq = 0;
    bool hex = true;
    for (char c : n.substr(sizeof kPrefix - 1)) {
      const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (v < 0) hex = false;
      seq = seq * 16 + static_cast<uint64_t>(v < 0 ? 0 : v);
    }
    if (hex && seq != 0) seqs.push_back(seq);
  }
  ::closedir(d);
  return seqs;
}

Status DirectoryStore::Create(uint64_t seq) {
  const std::string path = SegmentName(seq);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return AlreadyExists(path, " exists already");
    return FileError("creating", path, errno);
  }
  auto file = std::make_shared<File>(fd, 0);
  // The new name is durable before anything in it is acknowledged.
  if (::fsync(dir_fd_) != 0) return FileError("syncing the directory", dir_, errno);
  std::lock_guard<std::mutex> lock(mu_);
  files_[seq] = std::move(file);
  return Status::Ok();
}

Result<std::shared_ptr<DirectoryStore::File>> DirectoryStore::Get(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = files_.find(seq); it != files_.end()) return it->second;
  const std::string path = SegmentName(seq);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path, " does not exist");
    return FileError("opening", path, errno);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return FileError("stat of", path, err);
  }
  auto file = std::make_shared<File>(fd, static_cast<uint64_t>(st.st_size));
  files_[seq] = file;
  return file;
}

Status DirectoryStore::Write(uint64_t seq, uint64_t offset, std::span<const std::byte> data) {
  RAMPART_ASSIGN_OR_RETURN(std::shared_ptr<File> f, Get(seq));
  if (offset + data.size() > f->allocated) {
    const uint64_t want = std::min(
        segment_bytes_, std::max(offset + data.size(), f->allocated + kAllocateChunk));
    const int err = ::posix_fallocate(f->fd, 0, static_cast<off_t>(want));
    if (err == 0) {
      f->allocated = want;
    } else if (err != EOPNOTSUPP && err != EINVAL) {
      return FileError("allocating", SegmentName(seq), err);
    }  // else a file system without fallocate: plain appends
  }
  while (!data.empty()) {
    const ssize_t n = ::pwrite(f->fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return FileError("writing", SegmentName(seq), errno);
    }
    data = data.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Result<size_t> DirectoryStore::Read(uint64_t seq, uint64_t offset, std::span<std::byte> out) {
  RAMPART_ASSIGN_OR_RETURN(std::shared_ptr<File> f, Get(seq));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(f->fd, out.data() + done, out.size() - done,
                              static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return FileError("reading", SegmentName(seq), errno);
    }
    if (n == 0) break;  // end of file
    done += static_cast<size_t>(n);
  }
  return done;
}

Result<uint64_t> DirectoryStore::Size(uint64_t seq) {
  RAMPART_ASSIGN_OR_RETURN(std::shared_ptr<File> f, Get(seq));
  struct stat st;
  if (::fstat(f->fd, &st) != 0) return FileError("stat of", SegmentName(seq), errno);
  return static_cast<uint64_t>(st.st_size);
}

Status DirectoryStore::Sync(uint64_t seq) {
  std::shared_ptr<File> f;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(seq);
    if (it == files_.end()) return Status::Ok();  // removed meanwhile, or never written here
    f = it->second;
  }
  if (::fdatasync(f->fd) != 0) return FileError("syncing", SegmentName(seq), errno);
  return Status::Ok();
}

Status DirectoryStore::Remove(uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    files_.erase(seq);
  }
  const std::string path = SegmentName(seq);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return FileError("removing", path, errno);
  if (::fsync(dir_fd_) != 0) return FileError("syncing the directory", dir_, errno);
  return Status::Ok();
}

}  // namespace rampart::wal
