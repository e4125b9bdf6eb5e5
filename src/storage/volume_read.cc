// Volume reads: healthy, degraded (a node down or failing) and steered around
// a hot node (volume_steering.h). See volume.h, "Reads" and "Hot-node
// steering".
//
// A read runs in windows of pieces (one piece per data cell touched) whose
// worst case, every piece read around its node, fits half the pool. Per
// window: plan how each piece is read (its own node, or around a node: the
// other cells of its stripe, XORed), issue everything, drain, retry the
// failures another way (up to two more rounds), assemble.
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
  const uint32_t k1 = layout.node_count();
  const size_t budget = pool->capacity() / 2;
  size_t next = 0;
  while (next < pieces.size()) {
    // A window of pieces whose worst case (all read around) fits the budget.
    std::vector<PieceRead> window;
    size_t bytes = 0;
    for (size_t i = next; i < pieces.size(); ++i) {
      const Piece& p = pieces[i];
      const uint64_t in_cell = p.node_offset - layout.StripeOffset(p.stripe);
      const ColumnRange cols = Align(in_cell, in_cell + p.length);
      if (!window.empty() && bytes + k1 * cols.size() > budget) break;
      bytes += k1 * cols.size();
      PieceRead r;
      r.piece = &p;
      r.cols = cols;
      window.push_back(std::move(r));
    }
    next += window.size();

    // The window's pieces of the same stripe are adjacent (Map is in volume
    // order): sources for a piece read around its node are found among them.
    auto find_sources = [&](size_t i) {
      PieceRead& r = window[i];
      r.source.assign(k1, kNoSource);
      auto same_stripe = [&](size_t j) { return window[j].piece->stripe == r.piece->stripe; };
      size_t first = i, last = i;
      while (first > 0 && same_stripe(first - 1)) --first;
      while (last + 1 < window.size() && same_stripe(last + 1)) ++last;
      for (size_t j = first; j <= last; ++j) {
        const PieceRead& q = window[j];
        // Not another copy of r's own cell (ReadMany's reads may overlap):
        // the reconstruction writes r's cell into its source slot.
        if (j != i && !q.around && q.piece->node_index != *r.around &&
            q.cols.lo <= r.cols.lo && r.cols.hi <= q.cols.hi) {
          r.source[q.piece->node_index] = static_cast<int>(j);
        }
      }
      int extra = 0;  // cells that need a read of their own
      for (uint32_t n = 0; n < k1; ++n) {
        if (n != *r.around && r.source[n] == kNoSource) ++extra;
      }
      return extra;
    };

    // Plan: pieces on unusable nodes are read around them; then, on a volume
    // with every node of the stripe up, pieces on the hot node are steered
    // when that costs one extra read (the parity) at most.
    for (PieceRead& r : window) {
      if (!Usable(r.piece->node_index, r.piece->stripe)) r.around = r.piece->node_index;
    }
    if (options.steer_hot_reads) {
      UpdateSteering();
      if (const std::optional<uint32_t> hot = steering.hot()) {
        for (size_t i = 0; i < window.size(); ++i) {
          PieceRead& r = window[i];
          if (r.around || r.piece->node_index != *hot) continue;
          Result<std::optional<uint32_t>> missing = Missing(r.piece->stripe);
          if (!missing.ok() || missing->has_value()) continue;
          r.around = *hot;
          if (find_sources(i) <= 1 && steering.TakeSteer()) {
            r.steered = true;
          } else {
            r.around.reset();
          }
        }
      }
    }
    for (size_t i = 0; i < window.size(); ++i) {
      if (window[i].around) find_sources(i);
    }

    // Issues piece r's reads as planned: its own node, or the cells without
    // a source (sources: false, every other cell).
    auto issue = [&](PieceRead& r, bool sources) -> Status {
      const Piece& p = *r.piece;
      const uint64_t length = r.cols.size();
      const uint64_t at = layout.StripeOffset(p.stripe) + r.cols.lo;
      if (!r.around) {
        RAMPART_ASSIGN_OR_RETURN(r.buffer, pool->Get(length));
        Status* slot = &r.status;
        Issue(p.node_index, IoKind::kRead, at, static_cast<uint32_t>(length), r.buffer.ref(),
              [slot](const Status& st) { *slot = st; });
        return Status::Ok();
      }
      if (!sources) r.source.assign(k1, kNoSource);
      RAMPART_ASSIGN_OR_RETURN(r.buffer, pool->Get(k1 * length));
      r.errors.assign(k1, Status::Ok());
      for (uint32_t n = 0; n < k1; ++n) {
        if (n == *r.around || r.source[n] != kNoSource) continue;
        Status* slot = &r.errors[n];
        if (!Usable(n, p.stripe)) {
          *slot = Unavailable("storage node ", nodes[n].id, " is down");
          continue;
        }
        Issue(n, IoKind::kRead, at, static_cast<uint32_t>(length),
              Slice(r.buffer, n * length, length), [slot](const Status& st) { *slot = st; });
      }
      return Status::Ok();
    };
    // The first input of around-piece r that failed, OK when none did.
    auto input_error = [&](const PieceRead& r) -> Status {
      for (uint32_t n = 0; n < k1; ++n) {
        if (n == *r.around) continue;
        const Status& st = r.source[n] == kNoSource ? r.errors[n] : window[r.source[n]].status;
        if (!st.ok()) {
          return st.WithContext(StrCat("stripe ", r.piece->stripe,
                                       ": cannot reconstruct node index ", *r.around, "'s cell"));
        }
      }
      return Status::Ok();
    };

    // Errors stop the issuing, never the Drain: reads in flight target the
    // window's buffers.
    Status st;
    for (PieceRead& r : window) {
      if (st = issue(r, /*sources=*/true); !st.ok()) break;
    }
    Drain();
    RAMPART_RETURN_IF_ERROR(st);
    // Failures are read another way: a piece read from its node around it
    // (all other cells read afresh); a steered piece whose inputs failed from
    // its own node after all. A piece read around a down node whose inputs
    // failed has lost two cells.
    for (int round = 0; round < 2; ++round) {
      std::vector<PieceRead*> again;
      for (PieceRead& r : window) {
        if (r.final_error) continue;
        if (!r.around) {
          if (!r.status.ok()) again.push_back(&r);
        } else if (Status in = input_error(r); !in.ok()) {
          if (r.steered) {
            again.push_back(&r);
          } else {
            r.status = in;
            r.final_error = true;
          }
        }
      }
      // Decide every retry before any buffer is replaced: inputs borrowed
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
      for (PieceRead* r : again) {
        if (st = issue(*r, /*sources=*/false); !st.ok()) break;
      }
      if (again.empty()) break;
      Drain();
      RAMPART_RETURN_IF_ERROR(st);
    }
    for (PieceRead& r : window) {
      const Piece& p = *r.piece;
      if (r.final_error || (!r.around && !r.status.ok())) return r.status;
      const uint64_t in_cell = p.node_offset - layout.StripeOffset(p.stripe) - r.cols.lo;
      const std::byte* from = r.buffer.data() + in_cell;
      if (r.around) {
        RAMPART_RETURN_IF_ERROR(input_error(r));
        const uint64_t length = r.cols.size();
        std::vector<MutableBytes> cells;
        for (uint32_t n = 0; n < k1; ++n) {
          const int q = r.source[n];
          std::byte* cell = q == kNoSource
                                ? r.buffer.data() + n * length
                                : window[q].buffer.data() + (r.cols.lo - window[q].cols.lo);
          cells.emplace_back(cell, length);
        }
        ++stats.reconstructions;
        RAMPART_RETURN_IF_ERROR(Reconstruct(cells, *r.around));
        from += *r.around * length;
        ++(r.steered ? stats.steered_reads : stats.degraded_reads);
      } else {
        ++stats.healthy_reads;
      }
      std::memcpy(out.data() + p.buffer_offset, from, p.length);
    }
  }
  return Status::Ok();
}

}  // namespace rampart::storage
