// Volume reads: healthy, degraded (a node down or failing) and steered around
// a hot node (volume_steering.h). See volume.h, "Reads" and "Hot-node
// steering".
//
// A read runs in windows of pieces (one piece per data cell touched) whose
// worst case, every piece read around its node, fits half the pool. Per
// window (ReadWindow): plan how each piece is read (its own node, or around a
// node: the other cells of its stripe, XORed), issue everything, drain, retry
// the failures another way (up to two more rounds), assemble.
#include <algorithm>
#include <cstring>

#include "storage/parity.h"
#include "storage/volume.h"
#include "storage/volume_impl.h"

namespace rampart::storage {
namespace {

constexpr int kNoSource = -1;

// One piece of a read window and how it is read.
struct PieceRead {
  const Piece* piece = nullptr;
  ColumnRange cols;
  // Read around this node (the piece's own): its stripe's other cells over
  // `cols` are XORed. nullopt: read from the node.
  std::optional<uint32_t> around;
  bool steered = false;  // around a hot node (the node is up)
  bool final_error = false;  // `status` is the piece's outcome, no retry
  Buffer buffer;         // own node: cols.size(); around: node_count slots of it
  Status status;         // own node: the read's outcome
  std::vector<Status> errors;  // around: by node, the reads issued into the slots
  // Around: by node, the window index of a piece read from that node whose
  // bytes cover `cols` (used instead of a read), or kNoSource.
  std::vector<int> source;
};

}  // namespace

// One window of a read: the pieces from `first` on whose worst case fits
// the budget, planned, read (with retries) and copied out.
//
//   ReadWindow w(impl, pieces, next);   // next += w.size()
//   w.Plan();
//   RAMPART_RETURN_IF_ERROR(w.Read());
//   RAMPART_RETURN_IF_ERROR(w.Assemble(out));
//
// REQUIRES: `pieces` and the volume outlive the window; one window at a time.
class Volume::Impl::ReadWindow {
 public:
  ReadWindow(Volume::Impl& volume, const std::vector<Piece>& pieces, size_t first)
      : v_(volume), k1_(volume.layout.node_count()) {
    const size_t budget = v_.pool->capacity() / 2;
    size_t bytes = 0;
    for (size_t i = first; i < pieces.size(); ++i) {
      const Piece& p = pieces[i];
      const uint64_t in_cell = p.node_offset - v_.layout.StripeOffset(p.stripe);
      const ColumnRange cols = v_.Align(in_cell, in_cell + p.length);
      if (!window_.empty() && bytes + k1_ * cols.size() > budget) break;
      bytes += k1_ * cols.size();
      PieceRead r;
      r.piece = &p;
      r.cols = cols;
      window_.push_back(std::move(r));
    }
  }

  size_t size() const { return window_.size(); }

  // Pieces on unusable nodes are read around them; then, on a volume with
  // every node of the stripe up, pieces on the hot node are steered when that
  // costs one extra read (the parity) at most.
  void Plan() {
    for (PieceRead& r : window_) {
      if (!v_.Usable(r.piece->node_index, r.piece->stripe)) r.around = r.piece->node_index;
    }
    if (v_.options.steer_hot_reads) PlanSteering();
    for (size_t i = 0; i < window_.size(); ++i) {
      if (window_[i].around) FindSources(i);
    }
  }

  // Issues every piece's reads, drains, and reads the failures another way.
  // Errors stop the issuing, never the Drain: reads in flight target the
  // window's buffers.
  Status Read() {
    Status st;
    for (PieceRead& r : window_) {
      if (st = Issue(r, /*sources=*/true); !st.ok()) break;
    }
    v_.Drain();
    RAMPART_RETURN_IF_ERROR(st);
    for (int round = 0; round < 2; ++round) {
      std::vector<PieceRead*> again = TakeRetries();
      if (again.empty()) break;
      for (PieceRead* r : again) {
        if (st = Issue(*r, /*sources=*/false); !st.ok()) break;
      }
      v_.Drain();
      RAMPART_RETURN_IF_ERROR(st);
    }
    return Status::Ok();
  }

  // Copies every piece into `out` (reconstructing those read around a node);
  // the first piece's error when one could not be read.
  Status Assemble(std::span<std::byte> out) {
    for (PieceRead& r : window_) {
      const Piece& p = *r.piece;
      if (r.final_error || (!r.around && !r.status.ok())) return r.status;
      const uint64_t in_cell = p.node_offset - v_.layout.StripeOffset(p.stripe) - r.cols.lo;
      const std::byte* from = r.buffer.data() + in_cell;
      if (r.around) {
        RAMPART_RETURN_IF_ERROR(Reconstruct(r));
        from += *r.around * r.cols.size();
        ++(r.steered ? v_.stats.steered_reads : v_.stats.degraded_reads);
      } else {
        ++v_.stats.healthy_reads;
      }
      std::memcpy(out.data() + p.buffer_offset, from, p.length);
    }
    return Status::Ok();
  }

 private:
  void PlanSteering() {
    v_.UpdateSteering();
    const std::optional<uint32_t> hot = v_.steering.hot();
    if (!hot) return;
    for (size_t i = 0; i < window_.size(); ++i) {
      PieceRead& r = window_[i];
      if (r.around || r.piece->node_index != *hot) continue;
      Result<std::optional<uint32_t>> missing = v_.Missing(r.piece->stripe);
      if (!missing.ok() || missing->has_value()) continue;
      r.around = *hot;
      if (FindSources(i) <= 1 && v_.steering.TakeSteer()) {
        r.steered = true;
      } else {
        r.around.reset();
      }
    }
  }

  // Sources for piece i, read around its node, among the window's pieces of
  // the same stripe (adjacent: Map is in volume order). Returns how many of
  // the other cells need a read of their own.
  int FindSources(size_t i) {
    PieceRead& r = window_[i];
    r.source.assign(k1_, kNoSource);
    auto same_stripe = [&](size_t j) { return window_[j].piece->stripe == r.piece->stripe; };
    size_t first = i, last = i;
    while (first > 0 && same_stripe(first - 1)) --first;
    while (last + 1 < window_.size() && same_stripe(last + 1)) ++last;
    for (size_t j = first; j <= last; ++j) {
      const PieceRead& q = window_[j];
      // Not another copy of r's own cell (ReadMany's reads may overlap):
      // the reconstruction writes r's cell into its source slot.
      if (j != i && !q.around && q.piece->node_index != *r.around &&
          q.cols.lo <= r.cols.lo && r.cols.hi <= q.cols.hi) {
        r.source[q.piece->node_index] = static_cast<int>(j);
      }
    }
    int extra = 0;
    for (uint32_t n = 0; n < k1_; ++n) {
      if (n != *r.around && r.source[n] == kNoSource) ++extra;
    }
    return extra;
  }

  // Issues piece r's reads as planned: its own node, or the cells without a
  // source (sources: false, every other cell).
  Status Issue(PieceRead& r, bool sources) {
    const Piece& p = *r.piece;
    const uint64_t length = r.cols.size();
    const uint64_t at = v_.layout.StripeOffset(p.stripe) + r.cols.lo;
    if (!r.around) {
      RAMPART_ASSIGN_OR_RETURN(r.buffer, v_.pool->Get(length));
      Status* slot = &r.status;
      v_.Issue(p.node_index, IoKind::kRead, at, static_cast<uint32_t>(length), r.buffer.ref(),
               [slot](const Status& st) { *slot = st; });
      return Status::Ok();
    }
    if (!sources) r.source.assign(k1_, kNoSource);
    RAMPART_ASSIGN_OR_RETURN(r.buffer, v_.pool->Get(k1_ * length));
    r.errors.assign(k1_, Status::Ok());
    for (uint32_t n = 0; n < k1_; ++n) {
      if (n == *r.around || r.source[n] != kNoSource) continue;
      Status* slot = &r.errors[n];
      if (!v_.Usable(n, p.stripe)) {
        *slot = Unavailable("storage node ", v_.nodes[n].id, " is down");
        continue;
      }
      v_.Issue(n, IoKind::kRead, at, static_cast<uint32_t>(length),
               Slice(r.buffer, n * length, length), [slot](const Status& st) { *slot = st; });
    }
    return Status::Ok();
  }

  // The first input of around-piece r that failed, OK when none did.
  Status InputError(const PieceRead& r) const {
    for (uint32_t n = 0; n < k1_; ++n) {
      if (n == *r.around) continue;
      const Status& st = r.source[n] == kNoSource ? r.errors[n] : window_[r.source[n]].status;
      if (!st.ok()) {
        return st.WithContext(StrCat("stripe ", r.piece->stripe,
                                     ": cannot reconstruct node index ", *r.around, "'s cell"));
      }
    }
    return Status::Ok();
  }

  // The failed pieces to read another way, switched over: a piece read from
  // its node is read around it (all other cells afresh); a steered piece
  // whose inputs failed from its own node after all. A piece read around a
  // down node whose inputs failed has lost two cells: final.
  std::vector<PieceRead*> TakeRetries() {
    std::vector<PieceRead*> again;
    for (PieceRead& r : window_) {
      if (r.final_error) continue;
      if (!r.around) {
        if (!r.status.ok()) again.push_back(&r);
      } else if (Status in = InputError(r); !in.ok()) {
        if (r.steered) {
          again.push_back(&r);
        } else {
          r.status = in;
          r.final_error = true;
        }
      }
    }
    // Every retry is decided before any buffer is replaced: inputs borrowed
    // from a piece being retried were checked above.
    for (PieceRead* r : again) {
      if (r->around) {
        r->around.reset();
        r->steered = false;
      } else {
        r->around = r->piece->node_index;
      }
      r->status = Status::Ok();
      r->buffer = Buffer();
    }
    return again;
  }

  // Rebuilds around-piece r's cell into its slot of r.buffer from the other
  // cells (its own reads or the sources').
  Status Reconstruct(PieceRead& r) {
    RAMPART_RETURN_IF_ERROR(InputError(r));
    const uint64_t length = r.cols.size();
    std::vector<MutableBytes> cells;
    for (uint32_t n = 0; n < k1_; ++n) {
      const int q = r.source[n];
      std::byte* cell = q == kNoSource
                            ? r.buffer.data() + n * length
                            : window_[q].buffer.data() + (r.cols.lo - window_[q].cols.lo);
      cells.emplace_back(cell, length);
    }
    ++v_.stats.reconstructions;
    return storage::Reconstruct(cells, *r.around);
  }

  Volume::Impl& v_;
  const uint32_t k1_;
  std::vector<PieceRead> window_;
};

void Volume::Impl::UpdateSteering() {
  std::vector<NodeLoad> loads(nodes.size());
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    loads[n] = NodeLoad{node.health == Health::kUp, node.outstanding, node.read_latency_us};
  }
  steering.Update(loads);
}

Status Volume::Impl::Read(uint64_t offset, std::span<std::byte> out) {
  RAMPART_ASSIGN_OR_RETURN(std::vector<Piece> pieces, layout.Map(offset, out.size()));
  return ReadPieces(pieces, out);
}

Status Volume::Impl::ReadMany(std::span<const BlockDevice::ReadRange> reads) {
  if (reads.size() == 1) return Read(reads[0].offset, reads[0].out);
  // The reads' pieces, laid end to end in one staging buffer, and kept in
  // stripe order so that a piece read around its node finds the cells other
  // reads fetch of its stripe next to it (ReadPieces looks for them there).
  std::vector<Piece> pieces;
  size_t total = 0;
  for (const BlockDevice::ReadRange& r : reads) {
    RAMPART_ASSIGN_OR_RETURN(std::vector<Piece> mine, layout.Map(r.offset, r.out.size()));
    for (Piece& p : mine) p.buffer_offset += total;
    pieces.insert(pieces.end(), mine.begin(), mine.end());
    total += r.out.size();
  }
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const Piece& a, const Piece& b) { return a.stripe < b.stripe; });
  std::vector<std::byte> staging(total);
  RAMPART_RETURN_IF_ERROR(ReadPieces(pieces, staging));
  size_t at = 0;
  for (const BlockDevice::ReadRange& r : reads) {
    std::memcpy(r.out.data(), staging.data() + at, r.out.size());
    at += r.out.size();
  }
  return Status::Ok();
}

Status Volume::Impl::ReadPieces(const std::vector<Piece>& pieces, std::span<std::byte> out) {
  (void)ClearIdleIntents(false);
  size_t next = 0;
  while (next < pieces.size()) {
    ReadWindow window(*this, pieces, next);
    next += window.size();
    window.Plan();
    RAMPART_RETURN_IF_ERROR(window.Read());
    RAMPART_RETURN_IF_ERROR(window.Assemble(out));
  }
  return Status::Ok();
}

}  // namespace rampart::storage
