// PageCache: a worker's copy of the upper levels of its paged collections —
// headers whose root is an interior node, and interior pages — as last read
// or written, so that a command on a large collection can guess the pages it
// will need and read them in its first round (Worker::Predict) instead of
// one round per tree level. A guess is only a guess: the round reads the
// header and pages afresh, and a wrong guess costs another round, never a
// wrong answer. Least recently used entries go first past max_bytes.
//
// Thread-safety: belongs to one worker.
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rampart::proxy {

class PageCache {
 public:
  explicit PageCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Longer values are never kept: an interior page is at most 2 KiB (more
  // only for one long separator). (A long string's chunks, which may look
  // like anything, the worker never offers: DataView::IsChunk.)
  static constexpr size_t kMaxCachedBytes = 64 << 10;

  // What was read or written at `key` (nullopt: absent): kept when it is a
  // collection header with an interior root or an interior page, dropped
  // otherwise.
  void Offer(std::string_view key, const std::optional<std::string>& value);
  // The cached bytes of `key`, or nullptr. Valid until the next Offer.
  const std::string* Find(std::string_view key);

  size_t bytes() const { return bytes_; }

 private:
  struct Entry {
    std::string key;
    std::string value;
  };
  void Drop(std::list<Entry>::iterator it);

  size_t max_bytes_;
  size_t bytes_ = 0;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // views lru_'s keys
};

}  // namespace rampart::proxy
