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

Status Volume::Impl::Write(uint64_t offset, std::span<const std::byte> data) {
  RAMPART_ASSIGN_OR_RETURN(std::vector<Piece> pieces, layout.Map(offset, data.size()));
  (void)ClearIdleIntents(false);
  std::vector<RowWrite> rows =
      BuildRows(layout, pieces, data, [this](uint64_t lo, uint64_t hi) { return Align(lo, hi); });
  const uint32_t n_nodes = layout.node_count();
  const size_t budget = pool->capacity() / 2;

  auto issue_reads = [&](RowWrite& row) {
    row.errors.assign(n_nodes, Status::Ok());
    for (uint32_t n = 0; n < n_nodes; ++n) {
      const ColumnRange r = row.reads[n];
      if (r.size() == 0) continue;
      Status* slot = &row.errors[n];
      Issue(n, IoKind::kRead, layout.StripeOffset(row.stripe) + r.lo,
            static_cast<uint32_t>(r.size()),
            Slice(row.old_data, n * row.cols.size() + (r.lo - row.cols.lo), r.size()),
            [slot](const Status& st) { *slot = st; });
    }
  };
  auto first_error = [&](const RowWrite& row) -> std::optional<uint32_t> {
    for (uint32_t n = 0; n < n_nodes; ++n) {
      if (!row.errors[n].ok()) return n;
    }
    return std::nullopt;
  };

  for (size_t next = 0; next < rows.size();) {
    // A window of rows whose buffers fit the budget.
    size_t end = next, bytes = 0;
    while (end < rows.size()) {
      const size_t need = 2 * n_nodes * rows[end].cols.size();
      if (end > next && bytes + need > budget) break;
      bytes += need;
      ++end;
    }
    std::span<RowWrite> window(rows.data() + next, end - next);
    next = end;

    std::set<uint64_t> stripes;
    for (RowWrite& row : window) {
      RAMPART_ASSIGN_OR_RETURN(std::optional<uint32_t> missing, Missing(row.stripe));
      PlanRow(row, layout.ParityNode(row.stripe), n_nodes, missing, /*writable=*/false);
      RAMPART_ASSIGN_OR_RETURN(row.old_data, Get(n_nodes * row.cols.size()));
      RAMPART_ASSIGN_OR_RETURN(row.new_data, Get(n_nodes * row.cols.size()));
      stripes.insert(row.stripe);
    }
    // The intent records become durable while the old cells are read.
    Status intent;
    const std::vector<uint64_t> marked = IssueMarkDirty(stripes, intent);
    for (RowWrite& row : window) issue_reads(row);
    Drain();
    if (!intent.ok() && !marked.empty()) intent = PersistRecords(BlocksOf(marked), true);
    if (!intent.ok()) {
      for (uint64_t g : marked) dirty.erase(g);
      return intent.WithContext("write-intent log");
    }

    // A read that failed: plan the run again around that node.
    bool again = false;
    Status replan;
    for (RowWrite& row : window) {
      const std::optional<uint32_t> failed = first_error(row);
      if (!failed) continue;
      Result<std::optional<uint32_t>> missing = Missing(row.stripe);
      if (!missing.ok() || row.missing.has_value() || (*missing && **missing != *failed)) {
        replan = row.errors[*failed].WithContext(StrCat("stripe ", row.stripe, ": a second node failed"));
        break;
      }
      PlanRow(row, layout.ParityNode(row.stripe), n_nodes, failed, Usable(*failed, row.stripe));
      std::memset(row.old_data.data(), 0, row.old_data.size());
      issue_reads(row);
      again = true;
    }
    if (again) Drain();  // before any return: the reads target the rows' buffers
    RAMPART_RETURN_IF_ERROR(replan);
    if (again) {
      for (const RowWrite& row : window) {
        if (const std::optional<uint32_t> failed = first_error(row)) {
          return row.errors[*failed].WithContext(StrCat("stripe ", row.stripe));
        }
      }
    }

    // The new cells and parity.
    for (RowWrite& row : window) {
      const uint64_t len = row.cols.size();
      const uint32_t p = layout.ParityNode(row.stripe);
      if (row.rebuild_missing) {
        std::vector<MutableBytes> cells;
        for (uint32_t n = 0; n < n_nodes; ++n) cells.emplace_back(row.OldSlot(n), len);
        RAMPART_RETURN_IF_ERROR(Reconstruct(cells, *row.missing));
        ++stats.reconstructions;
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
        ++stats.rmw_writes;
      } else if (row.plan == Plan::kReconstructWrite) {
        bool read_any = false;
        for (uint32_t n = 0; n < n_nodes; ++n) {
          read_any = read_any || row.reads[n].size() > 0;
          if (n == p) continue;
          sources.emplace_back(row.Touched(n) ? row.NewSlot(n) : row.OldSlot(n), len);
        }
        ++(read_any ? stats.rcw_writes : stats.full_stripe_writes);
      }
      if (!sources.empty()) {
        RAMPART_RETURN_IF_ERROR(ComputeParity(sources, MutableBytes(row.NewSlot(p), len)));
      }
    }

    // A node found down must be on record before writes leave it out.
    RAMPART_RETURN_IF_ERROR(RecordFailedNode());
    for (RowWrite& row : window) {
      const uint64_t base = layout.StripeOffset(row.stripe);
      for (const CellWrite& c : row.cells) {
        if (!Usable(c.node, row.stripe)) continue;
        Issue(c.node, IoKind::kWrite, base + c.ext.lo, static_cast<uint32_t>(c.ext.size()),
              Slice(row.new_data, c.node * row.cols.size() + (c.ext.lo - row.cols.lo), c.ext.size()),
              [](const Status&) {});  // a failure marks the node down
      }
      const uint32_t p = layout.ParityNode(row.stripe);
      if (row.plan != Plan::kNoParity && Usable(p, row.stripe) && !options.testing.drop_parity_writes) {
        Issue(p, IoKind::kWrite, base + row.cols.lo, static_cast<uint32_t>(row.cols.size()),
              Slice(row.new_data, p * row.cols.size(), row.cols.size()), [](const Status&) {});
      }
    }
    Drain();
    Status after = RecordFailedNode();
    if (after.ok() && nodes_down() >= 2) {
      after = Unavailable("write: ", nodes_down(), " storage nodes are down");
    }
    if (after.ok() && options.testing.drop_parity_writes) {
      after = Aborted("test hook: the parity writes were dropped");
    }
    const auto now = SteadyClock::now();
    for (uint64_t s : stripes) {
      dirty[geometry.GroupOf(s)] = now;
      // Cells written half-way: the stripes stay marked until a resync.
      if (!after.ok()) tainted.insert(geometry.GroupOf(s));
    }
    RAMPART_RETURN_IF_ERROR(after);
    for (RowWrite& row : window) {
      row.old_data = Buffer();
      row.new_data = Buffer();
    }
  }
  return Status::Ok();
}

}  // namespace rampart::storage
