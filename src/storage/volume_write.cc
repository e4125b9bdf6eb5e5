// Volume writes: per stripe and run of cell columns, the parity update plan
// (read-modify-write, reconstruct-write, or none when the parity node is
// down), the write-intent records first, then the cells.
#include <algorithm>
#include <cstring>

#include "storage/parity.h"
#include "storage/volume_impl.h"

namespace rampart::storage {
namespace {

// New bytes for one data cell of a stripe.
struct CellWrite {
  uint32_t node = 0;
  uint64_t lo = 0, hi = 0;       // the new bytes, in cell coordinates
  ColumnRange ext;               // [lo, hi) rounded out to the nodes' alignment
  const std::byte* src = nullptr;  // the caller's bytes for [lo, hi)

  bool whole() const { return ext.lo == lo && ext.hi == hi; }
};

enum class Plan {
  // new parity = old parity ^ old data ^ new data: reads the parity and the
  // cells written.
  kReadModifyWrite,
  // new parity = XOR of the new stripe: reads the data cells not fully
  // rewritten (none: a full-stripe write). Degraded, when the down node's
  // cell is written only in part: reads every other cell, parity included,
  // and rebuilds the down cell's old bytes first.
  kReconstructWrite,
  // The parity node is down: the data cells are written alone.
  kNoParity,
};

// One run of cell columns [cols.lo, cols.hi) of one stripe that a write
// touches; the unit of planning. Buffers hold one slot of cols.size() bytes
// per node index.
struct RowWrite {
  uint64_t stripe = 0;
  ColumnRange cols;
  std::vector<CellWrite> cells;
  Plan plan = Plan::kReadModifyWrite;
  std::optional<uint32_t> missing;
  bool rebuild_missing = false;   // reconstruct the missing cell's old bytes
  std::vector<ColumnRange> reads;  // by node: what to read (empty: nothing)
  Buffer old_data;                 // what the reads found
  Buffer new_data;                 // the new cells and the new parity
  std::vector<Status> errors;      // by node: read outcomes

  const CellWrite* Touched(uint32_t node) const {
    for (const CellWrite& c : cells) {
      if (c.node == node) return &c;
    }
    return nullptr;
  }
  // The cell's new bytes cover the whole run: its old bytes are not needed.
  bool Covers(const CellWrite* c) const {
    return c != nullptr && c->whole() && c->ext.lo <= cols.lo && c->ext.hi >= cols.hi;
  }
  std::byte* OldSlot(uint32_t node) const { return old_data.data() + node * cols.size(); }
  std::byte* NewSlot(uint32_t node) const { return new_data.data() + node * cols.size(); }
};

// The runs of `pieces` (one stripe's worth at a time, in volume order):
// cells whose aligned extents overlap or touch share a run.
std::vector<RowWrite> BuildRows(const VolumeLayout& layout, const std::vector<Piece>& pieces,
                                std::span<const std::byte> data,
                                const std::function<ColumnRange(uint64_t, uint64_t)>& align) {
  std::vector<RowWrite> rows;
  for (size_t i = 0; i < pieces.size();) {
    const uint64_t stripe = pieces[i].stripe;
    std::vector<CellWrite> cells;
    for (; i < pieces.size() && pieces[i].stripe == stripe; ++i) {
      const Piece& p = pieces[i];
      const uint64_t lo = p.node_offset - layout.StripeOffset(stripe);
      cells.push_back(CellWrite{p.node_index, lo, lo + p.length, align(lo, lo + p.length),
                                data.data() + p.buffer_offset});
    }
    std::sort(cells.begin(), cells.end(),
              [](const CellWrite& a, const CellWrite& b) { return a.ext.lo < b.ext.lo; });
    const size_t first_row = rows.size();
    for (const CellWrite& c : cells) {
      if (rows.size() > first_row && c.ext.lo <= rows.back().cols.hi) {
        rows.back().cols.hi = std::max(rows.back().cols.hi, c.ext.hi);
        rows.back().cells.push_back(c);
      } else {
        RowWrite row;
        row.stripe = stripe;
        row.cols = c.ext;
        row.cells.push_back(c);
        rows.push_back(std::move(row));
      }
    }
  }
  return rows;
}

// Chooses how `row` updates its parity given the node that cannot be read
// (`missing`: down, or its read failed while it is up and `writable`), and
// what it must read.
void PlanRow(RowWrite& row, uint32_t parity_node, uint32_t node_count,
             std::optional<uint32_t> missing, bool writable) {
  row.missing = missing;
  row.rebuild_missing = false;
  row.reads.assign(node_count, ColumnRange{});
  const CellWrite* lost = missing ? row.Touched(*missing) : nullptr;
  if (missing && *missing == parity_node) {
    // An unreadable parity that can still be written is recomputed whole.
    row.plan = writable ? Plan::kReconstructWrite : Plan::kNoParity;
  } else if (lost != nullptr && !row.Covers(lost)) {
    row.plan = Plan::kReconstructWrite;
    row.rebuild_missing = true;
  } else if (missing && lost == nullptr) {
    row.plan = Plan::kReadModifyWrite;  // the down cell is neither read nor written
  } else {
    size_t rcw_reads = 0;
    for (uint32_t n = 0; n < node_count; ++n) {
      if (n != parity_node && !row.Covers(row.Touched(n))) ++rcw_reads;
    }
    const size_t rmw_reads = 1 + row.cells.size();
    // A down cell that is fully rewritten can only be written by reconstruction.
    row.plan = (missing || rcw_reads < rmw_reads) ? Plan::kReconstructWrite : Plan::kReadModifyWrite;
  }
  switch (row.plan) {
    case Plan::kNoParity:
      for (const CellWrite& c : row.cells) {
        if (!c.whole()) row.reads[c.node] = c.ext;
      }
      break;
    case Plan::kReadModifyWrite:
      row.reads[parity_node] = row.cols;
      for (const CellWrite& c : row.cells) row.reads[c.node] = c.ext;
      break;
    case Plan::kReconstructWrite:
      for (uint32_t n = 0; n < node_count; ++n) {
        if (missing && n == *missing) continue;
        if (row.rebuild_missing || (n != parity_node && !row.Covers(row.Touched(n)))) {
          row.reads[n] = row.cols;
        }
      }
      break;
  }
}

}  // namespace

// One window of Write: the rows from `first` on whose buffers fit the
// budget, each planned, its old bytes read while its stripes' intent records
// become durable, its new cells and parity computed, then written.
//
//   WriteWindow w(impl, rows, next);   // next += w.size()
//   RAMPART_RETURN_IF_ERROR(w.Run());
//
// REQUIRES: `rows` and the volume outlive the window; one window at a time.
class Volume::Impl::WriteWindow {
 public:
  WriteWindow(Volume::Impl& volume, std::vector<RowWrite>& rows, size_t first)
      : v_(volume), n_nodes_(volume.layout.node_count()) {
    const size_t budget = v_.pool->capacity() / 2;
    size_t end = first, bytes = 0;
    while (end < rows.size()) {
      const size_t need = 2 * n_nodes_ * rows[end].cols.size();
      if (end > first && bytes + need > budget) break;
      bytes += need;
      ++end;
    }
    rows_ = std::span<RowWrite>(rows.data() + first, end - first);
  }

  size_t size() const { return rows_.size(); }

  Status Run() {
    RAMPART_RETURN_IF_ERROR(Plan());
    RAMPART_RETURN_IF_ERROR(ReadOldWithIntents());
    RAMPART_RETURN_IF_ERROR(ReplanFailedReads());
    for (RowWrite& row : rows_) RAMPART_RETURN_IF_ERROR(ComputeNew(row));
    // A node found down must be on record before writes leave it out.
    RAMPART_RETURN_IF_ERROR(v_.RecordFailedNode());
    for (const RowWrite& row : rows_) IssueWrites(row);
    v_.Drain();
    RAMPART_RETURN_IF_ERROR(Settle());
    for (RowWrite& row : rows_) {
      row.old_data = Buffer();
      row.new_data = Buffer();
    }
    return Status::Ok();
  }

 private:
  Status Plan() {
    for (RowWrite& row : rows_) {
      RAMPART_ASSIGN_OR_RETURN(std::optional<uint32_t> missing, v_.Missing(row.stripe));
      PlanRow(row, v_.layout.ParityNode(row.stripe), n_nodes_, missing, /*writable=*/false);
      RAMPART_ASSIGN_OR_RETURN(row.old_data, v_.Get(n_nodes_ * row.cols.size()));
      RAMPART_ASSIGN_OR_RETURN(row.new_data, v_.Get(n_nodes_ * row.cols.size()));
      stripes_.insert(row.stripe);
    }
    return Status::Ok();
  }

  // The intent records become durable while the old cells are read.
  Status ReadOldWithIntents() {
    Status intent;
    const std::vector<uint64_t> marked = v_.IssueMarkDirty(stripes_, intent);
    for (RowWrite& row : rows_) IssueReads(row);
    v_.Drain();
    if (!intent.ok() && !marked.empty()) intent = v_.PersistRecords(v_.BlocksOf(marked), true);
    if (!intent.ok()) {
      for (uint64_t g : marked) v_.dirty.erase(g);
      return intent.WithContext("write-intent log");
    }
    return Status::Ok();
  }

  void IssueReads(RowWrite& row) {
    row.errors.assign(n_nodes_, Status::Ok());
    for (uint32_t n = 0; n < n_nodes_; ++n) {
      const ColumnRange r = row.reads[n];
      if (r.size() == 0) continue;
      Status* slot = &row.errors[n];
      v_.Issue(n, IoKind::kRead, v_.layout.StripeOffset(row.stripe) + r.lo,
               static_cast<uint32_t>(r.size()),
               Slice(row.old_data, n * row.cols.size() + (r.lo - row.cols.lo), r.size()),
               [slot](const Status& st) { *slot = st; });
    }
  }

  std::optional<uint32_t> FirstError(const RowWrite& row) const {
    for (uint32_t n = 0; n < n_nodes_; ++n) {
      if (!row.errors[n].ok()) return n;
    }
    return std::nullopt;
  }

  // A read that failed: the run is planned again around that node and read
  // once more; a second failure (or a second node out) fails the write.
  Status ReplanFailedReads() {
    bool again = false;
    Status replan;
    for (RowWrite& row : rows_) {
      const std::optional<uint32_t> failed = FirstError(row);
      if (!failed) continue;
      Result<std::optional<uint32_t>> missing = v_.Missing(row.stripe);
      if (!missing.ok() || row.missing.has_value() || (*missing && **missing != *failed)) {
        replan = row.errors[*failed].WithContext(
            StrCat("stripe ", row.stripe, ": a second node failed"));
        break;
      }
      PlanRow(row, v_.layout.ParityNode(row.stripe), n_nodes_, failed,
              v_.Usable(*failed, row.stripe));
      std::memset(row.old_data.data(), 0, row.old_data.size());
      IssueReads(row);
      again = true;
    }
    if (!again) return replan;
    v_.Drain();  // before any return: the reads target the rows' buffers
    RAMPART_RETURN_IF_ERROR(replan);
    for (const RowWrite& row : rows_) {
      if (const std::optional<uint32_t> failed = FirstError(row)) {
        return row.errors[*failed].WithContext(StrCat("stripe ", row.stripe));
      }
    }
    return Status::Ok();
  }

  // The row's new cells and parity, into its new_data slots.
  Status ComputeNew(RowWrite& row) {
    const uint64_t len = row.cols.size();
    const uint32_t p = v_.layout.ParityNode(row.stripe);
    if (row.rebuild_missing) {
      std::vector<MutableBytes> cells;
      for (uint32_t n = 0; n < n_nodes_; ++n) cells.emplace_back(row.OldSlot(n), len);
      RAMPART_RETURN_IF_ERROR(Reconstruct(cells, *row.missing));
      ++v_.stats.reconstructions;
    }
    for (const CellWrite& c : row.cells) {
      std::byte* dst = row.NewSlot(c.node);
      // Old bytes around the new ones: the whole run after a reconstruct-
      // write's reads, the aligned extent otherwise.
      const ColumnRange keep = row.plan == Plan::kReconstructWrite ? row.cols : c.ext;
      std::memcpy(dst + (keep.lo - row.cols.lo), row.OldSlot(c.node) + (keep.lo - row.cols.lo),
                  keep.size());
      std::memcpy(dst + (c.lo - row.cols.lo), c.src, c.hi - c.lo);
    }
    std::vector<ConstBytes> sources;
    if (row.plan == Plan::kReadModifyWrite) {
      // Outside a cell's extent its old and new slots are both zero.
      sources.emplace_back(row.OldSlot(p), len);
      for (const CellWrite& c : row.cells) {
        sources.emplace_back(row.OldSlot(c.node), len);
        sources.emplace_back(row.NewSlot(c.node), len);
      }
      ++v_.stats.rmw_writes;
    } else if (row.plan == Plan::kReconstructWrite) {
      bool read_any = false;
      for (uint32_t n = 0; n < n_nodes_; ++n) {
        read_any = read_any || row.reads[n].size() > 0;
        if (n == p) continue;
        sources.emplace_back(row.Touched(n) ? row.NewSlot(n) : row.OldSlot(n), len);
      }
      ++(read_any ? v_.stats.rcw_writes : v_.stats.full_stripe_writes);
    }
    if (sources.empty()) return Status::Ok();
    return ComputeParity(sources, MutableBytes(row.NewSlot(p), len));
  }

  // The row's cells and parity to the usable nodes; a failure marks the node
  // down (Settle looks).
  void IssueWrites(const RowWrite& row) {
    const uint64_t base = v_.layout.StripeOffset(row.stripe);
    for (const CellWrite& c : row.cells) {
      if (!v_.Usable(c.node, row.stripe)) continue;
      v_.Issue(c.node, IoKind::kWrite, base + c.ext.lo, static_cast<uint32_t>(c.ext.size()),
               Slice(row.new_data, c.node * row.cols.size() + (c.ext.lo - row.cols.lo),
                     c.ext.size()),
               [](const Status&) {});
    }
    const uint32_t p = v_.layout.ParityNode(row.stripe);
    if (row.plan != Plan::kNoParity && v_.Usable(p, row.stripe) &&
        !v_.options.testing.drop_parity_writes) {
      v_.Issue(p, IoKind::kWrite, base + row.cols.lo, static_cast<uint32_t>(row.cols.size()),
               Slice(row.new_data, p * row.cols.size(), row.cols.size()), [](const Status&) {});
    }
  }

  // After the writes: the failed node on record, the stripes' groups marked
  // dirty (and tainted when the writes went wrong half-way).
  Status Settle() {
    Status after = v_.RecordFailedNode();
    if (after.ok() && v_.nodes_down() >= 2) {
      after = Unavailable("write: ", v_.nodes_down(), " storage nodes are down");
    }
    if (after.ok() && v_.options.testing.drop_parity_writes) {
      after = Aborted("test hook: the parity writes were dropped");
    }
    const auto now = SteadyClock::now();
    for (uint64_t s : stripes_) {
      v_.dirty[v_.geometry.GroupOf(s)] = now;
      // Cells written half-way: the stripes stay marked until a resync.
      if (!after.ok()) v_.tainted.insert(v_.geometry.GroupOf(s));
    }
    return after;
  }

  Volume::Impl& v_;
  const uint32_t n_nodes_;
  std::span<RowWrite> rows_;
  std::set<uint64_t> stripes_;
};

Status Volume::Impl::Write(uint64_t offset, std::span<const std::byte> data) {
  RAMPART_ASSIGN_OR_RETURN(std::vector<Piece> pieces, layout.Map(offset, data.size()));
  (void)ClearIdleIntents(false);
  std::vector<RowWrite> rows =
      BuildRows(layout, pieces, data, [this](uint64_t lo, uint64_t hi) { return Align(lo, hi); });
  for (size_t next = 0; next < rows.size();) {
    WriteWindow window(*this, rows, next);
    next += window.size();
    RAMPART_RETURN_IF_ERROR(window.Run());
  }
  return Status::Ok();
}

}  // namespace rampart::storage
