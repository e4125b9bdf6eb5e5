// Volume: the write-intent log (marking, lazy clearing, loading and the
// resync at Open), verify and rebuild.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "storage/parity.h"
#include "storage/volume_impl.h"

namespace rampart::storage {

// ---------------------------------------------------------------------------
// Writing records

std::set<uint32_t> Volume::Impl::BlocksOf(const std::vector<uint64_t>& groups) const {
  std::set<uint32_t> blocks;
  for (uint64_t g : groups) blocks.insert(geometry.BlockOf(g));
  return blocks;
}

void Volume::Impl::IssueRecordWrites(const std::set<uint32_t>& blocks, bool durable,
                                     Status& status) {
  // Two nodes that are up, rotating so no node takes every record write.
  std::vector<uint32_t> targets;
  for (uint32_t i = 0; i < nodes.size() && targets.size() < 2; ++i) {
    const uint32_t n = (record_cursor + i) % nodes.size();
    if (nodes[n].health == Health::kUp) targets.push_back(n);
  }
  ++record_cursor;
  if (targets.size() < 2) {
    status = Unavailable("write-intent log: fewer than two storage nodes are up");
    return;
  }
  ++generation;
  for (uint32_t n : targets) {
    auto left = std::make_shared<size_t>(blocks.size());
    for (uint32_t b : blocks) {
      IntentRecord record{generation, b, geometry.fingerprint, geometry.group_stripes, failed_node, {}};
      const uint64_t first = uint64_t{b} * kIntentGroupsPerBlock;
      for (auto it = dirty.lower_bound(first); it != dirty.end() && it->first < first + kIntentGroupsPerBlock; ++it) {
        record.dirty.push_back(it->first);
      }
      Result<Buffer> buffer = Get(kIntentBlockBytes);
      if (!buffer.ok()) {
        status = buffer.status();
        return;
      }
      if (Status st = EncodeIntentRecord(record, buffer->bytes()); !st.ok()) {
        status = st;
        return;
      }
      auto held = std::make_shared<Buffer>(std::move(*buffer));
      Issue(n, IoKind::kWrite, layout.metadata_offset() + uint64_t{b} * kIntentBlockBytes,
            kIntentBlockBytes, held->ref(),
            [this, n, held, left, durable, &status](const Status& st) {
              if (!st.ok()) {
                status = st;
                return;
              }
              ++stats.intent_writes;
              if (--*left == 0 && durable) {
                Issue(n, IoKind::kFlush, 0, 0, BufferRef{}, [&status](const Status& fs) {
                  if (!fs.ok()) status = fs;
                });
              }
            });
    }
  }
}

Status Volume::Impl::PersistRecords(const std::set<uint32_t>& blocks, bool durable) {
  Status st;
  for (size_t attempt = 0; attempt < nodes.size(); ++attempt) {
    st = Status();
    IssueRecordWrites(blocks, durable, st);
    Drain();
    if (st.ok()) return st;
    uint32_t up = 0;
    for (const Node& node : nodes) up += node.health == Health::kUp ? 1 : 0;
    if (up < 2) break;
  }
  return st;
}

std::vector<uint64_t> Volume::Impl::IssueMarkDirty(const std::set<uint64_t>& stripes,
                                                   Status& status) {
  std::vector<uint64_t> marked;
  const auto now = SteadyClock::now();
  for (uint64_t s : stripes) {
    auto [it, inserted] = dirty.try_emplace(geometry.GroupOf(s), now);
    if (inserted) {
      marked.push_back(it->first);
    } else {
      it->second = now;
    }
  }
  if (!marked.empty()) IssueRecordWrites(BlocksOf(marked), /*durable=*/true, status);
  return marked;
}

Status Volume::Impl::RecordFailedNode() {
  std::optional<uint32_t> down;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].health == Health::kDown) {
      if (down) return Status::Ok();  // two down: nothing is written any more
      down = n;
    }
  }
  if (!down || *down == failed_node) return Status::Ok();
  failed_node = *down;
  Status st = PersistRecords({0}, /*durable=*/true);
  if (!st.ok()) failed_node = kNoFailedNode;  // not on record: try again before the next write
  return st.WithContext(StrCat("recording storage node ", nodes[*down].id, " as failed"));
}

Status Volume::Impl::ClearIdleIntents(bool force) {
  if (dirty.empty()) return Status::Ok();
  const auto now = SteadyClock::now();
  const bool over = dirty.size() > options.max_dirty_groups;
  if (!force && !over && now - last_clear_check < options.clear_delay / 4) return Status::Ok();
  last_clear_check = now;
  std::vector<uint64_t> idle;
  for (const auto& [g, last] : dirty) {
    if (!tainted.contains(g) && (force || over || now - last >= options.clear_delay)) {
      idle.push_back(g);
    }
  }
  if (idle.empty()) return Status::Ok();
  // The writes of these groups must be durable before their records go.
  RAMPART_RETURN_IF_ERROR(FlushNodes());
  for (uint64_t g : idle) dirty.erase(g);
  // Not flushed: a clear that is lost only costs a resync.
  return PersistRecords(BlocksOf(idle), /*durable=*/false);
}

// ---------------------------------------------------------------------------
// Loading and resync

Result<std::optional<Buffer>> Volume::Impl::ReadIntentArea(uint32_t n) {
  // The records and the label (block kVolumeLabelBlock): the whole area.
  const size_t area = size_t{kVolumeLabelBlock + 1} * kIntentBlockBytes;
  const size_t chunk = std::max<size_t>(kIntentBlockBytes, std::min<size_t>(max_io_bytes, area) /
                                                               kIntentBlockBytes * kIntentBlockBytes);
  RAMPART_ASSIGN_OR_RETURN(Buffer buffer, Get(area));
  std::vector<Status> errors((area + chunk - 1) / chunk);
  for (size_t i = 0; i < errors.size(); ++i) {
    const size_t length = std::min(chunk, area - i * chunk);
    Status* slot = &errors[i];
    Issue(n, IoKind::kRead, layout.metadata_offset() + i * chunk, static_cast<uint32_t>(length),
          Slice(buffer, i * chunk, length), [slot](const Status& st) { *slot = st; });
  }
  Drain();
  auto failed = [](const Status& s) { return !s.ok(); };
  if (auto bad = std::find_if(errors.begin(), errors.end(), failed); bad != errors.end()) {
    MarkDown(n, bad->WithContext("reading the write-intent log"));
    Drain();
    return std::optional<Buffer>();
  }
  return std::optional<Buffer>(std::move(buffer));
}

void Volume::Impl::ReadLabel(uint32_t n, std::span<const std::byte> block) {
  Result<VolumeLabel> label = DecodeVolumeLabel(block);
  if (!label.ok()) {
    // A torn label write counts as no label.
    labels[n] = Label::kNone;
    label_why[n] = label.status().code() == StatusCode::kNotFound
                       ? "no volume label (an empty or replaced device)"
                       : StrCat("its volume label is unreadable (", label.status().message(), ")");
  } else if (label->fingerprint != geometry.fingerprint || label->node_index != n ||
             label->node_count != nodes.size()) {
    labels[n] = Label::kForeign;
    label_why[n] = StrCat("its volume label is another's (fingerprint ", label->fingerprint,
                          ", node index ", label->node_index, "; this volume: ",
                          geometry.fingerprint, ", node index ", n, ")");
  } else {
    labels[n] = Label::kValid;
  }
}

std::vector<Volume::Impl::FoundIntent> Volume::Impl::DecodeIntents(uint32_t n, const Buffer& area) {
  std::vector<FoundIntent> found;
  for (uint32_t b = 0; b < kIntentMaxBlocks; ++b) {
    Result<IntentRecord> r = DecodeIntentRecord(
        std::span<const std::byte>(area.data() + size_t{b} * kIntentBlockBytes, kIntentBlockBytes));
    if (!r.ok()) {
      if (r.status().code() != StatusCode::kNotFound) {
        spdlog::warn("volume: storage node {}: intent record {} ignored: {}", nodes[n].id, b,
                     r.status().ToString());
      }
      continue;
    }
    if (r->fingerprint != geometry.fingerprint || r->block != b) {
      spdlog::warn("volume: storage node {}: intent record {} is another layout's; ignored",
                   nodes[n].id, b);
      continue;
    }
    found.push_back(FoundIntent{n, std::move(*r)});
  }
  return found;
}

void Volume::Impl::ApplyIntents(std::vector<FoundIntent> found) {
  // A node without this volume's label (replaced or foreign) holds no record
  // of this volume: its copies, if any, are not this volume's.
  const bool any_label = std::count(labels.begin(), labels.end(), Label::kValid) > 0;
  std::erase_if(found, [&](const FoundIntent& f) {
    return labels[f.node] == Label::kForeign || (any_label && labels[f.node] != Label::kValid);
  });
  uint64_t newest = 0;
  for (const FoundIntent& f : found) newest = std::max(newest, f.record.generation);
  generation = ((newest >> 32) + 1) << 32;  // a new epoch
  // The newest record says which node is failed; that node's records are stale.
  for (const FoundIntent& f : found) {
    if (f.record.generation == newest && f.record.failed_node < nodes.size()) {
      failed_node = f.record.failed_node;
    }
  }
  // Per block, the newest copy (ties: all of them) holds the dirty groups.
  std::vector<uint64_t> best(kIntentMaxBlocks, 0);
  for (const FoundIntent& f : found) {
    if (f.node != failed_node) best[f.record.block] = std::max(best[f.record.block], f.record.generation);
  }
  const auto now = SteadyClock::now();
  for (const FoundIntent& f : found) {
    if (f.node == failed_node || f.record.generation != best[f.record.block]) continue;
    for (uint64_t g : f.record.dirty) {
      // The record's own group size: the volume may have grown since.
      const uint64_t first = g * f.record.group_stripes;
      if (first >= layout.stripes()) continue;
      const uint64_t last = std::min(layout.stripes(), first + f.record.group_stripes) - 1;
      for (uint64_t cg = geometry.GroupOf(first); cg <= geometry.GroupOf(last); ++cg) {
        loaded_dirty.insert(cg);
        dirty.try_emplace(cg, now);
      }
    }
  }
}

Status Volume::Impl::LoadIntents() {
  std::vector<FoundIntent> found;
  labels.assign(nodes.size(), Label::kUnread);
  label_why.assign(nodes.size(), "");
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].health != Health::kUp) continue;
    RAMPART_ASSIGN_OR_RETURN(std::optional<Buffer> area, ReadIntentArea(n));
    if (!area) continue;  // marked down
    const size_t label_at = size_t{kVolumeLabelBlock} * kIntentBlockBytes;
    ReadLabel(n, std::span<const std::byte>(area->data() + label_at, kIntentBlockBytes));
    for (FoundIntent& f : DecodeIntents(n, *area)) found.push_back(std::move(f));
  }
  ApplyIntents(std::move(found));
  if (!loaded_dirty.empty()) {
    spdlog::info("volume: {} stripe groups of {} stripes are marked dirty{}", loaded_dirty.size(),
                 geometry.group_stripes,
                 options.testing.skip_resync ? " (resync skipped: test hook)" : "; resyncing");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Volume labels

void Volume::Impl::IssueLabelWrite(uint32_t n, bool valid, Status& status) {
  Result<Buffer> buffer = Get(kIntentBlockBytes);  // zeros
  if (!buffer.ok()) {
    status = buffer.status();
    return;
  }
  if (valid) {
    const VolumeLabel label{geometry.fingerprint, n, nodes[n].id, static_cast<uint32_t>(nodes.size())};
    if (Status st = EncodeVolumeLabel(label, buffer->bytes()); !st.ok()) {
      status = st;
      return;
    }
  }
  auto held = std::make_shared<Buffer>(std::move(*buffer));
  Issue(n, IoKind::kWrite, label_offset(), kIntentBlockBytes, held->ref(),
        [this, n, held, &status](const Status& st) {
          if (!st.ok()) {
            status = st;
            return;
          }
          Issue(n, IoKind::kFlush, 0, 0, BufferRef{}, [&status](const Status& fs) {
            if (!fs.ok()) status = fs;
          });
        });
}

Status Volume::Impl::CheckLabels(const std::string& volume) {
  if (std::count(labels.begin(), labels.end(), Label::kValid) == 0) {
    // No node knows the volume: a new one (an all-zero area is an empty,
    // consistent volume). A node down now gets no label; when it is back it
    // counts as replaced and must be rebuilt.
    std::vector<uint32_t> targets;
    for (uint32_t n = 0; n < nodes.size(); ++n) {
      if (labels[n] == Label::kForeign) {
        // Never claim another volume's device by relabelling it.
        return FailedPrecondition("volume ", volume, ": no storage node has its label and storage node ",
                                  nodes[n].id, " (index ", n, ") ", label_why[n],
                                  "; check the configuration, or wipe that device's area");
      }
      if (nodes[n].health == Health::kUp) targets.push_back(n);
    }
    Status st;
    for (uint32_t n : targets) IssueLabelWrite(n, /*valid=*/true, st);
    Drain();
    RAMPART_RETURN_IF_ERROR(st.WithContext(StrCat("volume ", volume, ": labelling its storage nodes")));
    for (uint32_t n : targets) labels[n] = Label::kValid;
    spdlog::info("volume {}: new volume: labelled {} of {} storage nodes", volume, targets.size(),
                 nodes.size());
    return Status::Ok();
  }
  // Nodes that answer but are not this volume's node (an empty replacement,
  // a torn label, another volume's or another index's device): their cells
  // are not the volume's. They are failed, exactly as nodes that missed
  // writes, until rebuilt.
  std::vector<uint32_t> strangers;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].health == Health::kUp && labels[n] != Label::kValid) strangers.push_back(n);
  }
  if (strangers.empty()) return Status::Ok();
  for (uint32_t n : strangers) {
    MarkDown(n, FailedPrecondition(label_why[n], ": a replaced or foreign device, failed until rebuilt"));
  }
  Drain();
  if (nodes_down() >= 2) {
    std::string why;
    for (uint32_t n = 0; n < nodes.size(); ++n) {
      if (nodes[n].health != Health::kDown) continue;
      if (!why.empty()) why += "; ";
      const bool stranger = std::find(strangers.begin(), strangers.end(), n) != strangers.end();
      why += StrCat("storage node ", nodes[n].id, " (index ", n, ") ",
                    stranger ? label_why[n]
                             : (n == failed_node ? std::string("is recorded failed")
                                                 : std::string("is unreachable")));
    }
    return Unavailable("volume ", volume, ": two or more storage nodes are out: ", why,
                       " (a volume survives one; rebuild needs every other node)");
  }
  return RecordFailedNode().WithContext(
      StrCat("volume ", volume, ": storage node ", nodes[strangers[0]].id, " ", label_why[strangers[0]]));
}

uint64_t Volume::Impl::StripeWindow() const {
  return std::clamp<uint64_t>(pool->capacity() / 2 / (layout.node_count() * layout.cell_bytes()),
                              1, std::max<uint32_t>(options.stripes_per_batch, 1));
}

Status Volume::Impl::Resync() {
  if (options.testing.skip_resync) {
    tainted.insert(loaded_dirty.begin(), loaded_dirty.end());
    loaded_dirty.clear();
    return Status::Ok();
  }
  if (loaded_dirty.empty()) return Status::Ok();
  std::vector<uint64_t> stripes;
  for (uint64_t g : loaded_dirty) {
    for (uint64_t s = g * geometry.group_stripes;
         s < std::min(layout.stripes(), (g + 1) * geometry.group_stripes); ++s) {
      stripes.push_back(s);
    }
  }
  const uint64_t c = layout.cell_bytes();
  const uint64_t window = StripeWindow();
  for (size_t next = 0; next < stripes.size(); next += window) {
    struct Job {
      uint64_t stripe;
      uint32_t parity;
      Buffer buffer;
      std::vector<Status> errors;
    };
    std::vector<Job> jobs;
    jobs.reserve(window);
    for (size_t i = next; i < std::min(stripes.size(), next + window); ++i) {
      const uint64_t s = stripes[i];
      RAMPART_ASSIGN_OR_RETURN(std::optional<uint32_t> missing, Missing(s));
      const uint32_t p = layout.ParityNode(s);
      if (missing && *missing != p) {
        // Which of its data cells is right cannot be known: leave it marked.
        ++stats.unsafe_stripes;
        tainted.insert(geometry.GroupOf(s));
        continue;
      }
      if (missing) continue;  // the parity comes back with the node's rebuild
      jobs.push_back(Job{s, p, Buffer(), {}});
    }
    for (Job& job : jobs) {
      RAMPART_ASSIGN_OR_RETURN(job.buffer, Get(layout.node_count() * c));
    }
    for (Job& job : jobs) IssueStripeReads(job.stripe, {0, c}, job.parity, job.buffer, job.errors);
    Drain();
    for (Job& job : jobs) {
      // The parity slot becomes the XOR of the data cells.
      RAMPART_RETURN_IF_ERROR(ReconstructSlot(job.stripe, {0, c}, job.parity, job.buffer, job.errors)
                                  .WithContext("resync"));
    }
    for (Job& job : jobs) {
      Issue(job.parity, IoKind::kWrite, layout.StripeOffset(job.stripe), static_cast<uint32_t>(c),
            Slice(job.buffer, job.parity * c, c), [](const Status&) {});
      ++stats.resynced_stripes;
    }
    Drain();
  }
  if (stats.unsafe_stripes > 0) {
    spdlog::warn("volume: {} dirty stripes have a data cell on a down node and could not be "
                 "resynced; their down cells may read wrong until rewritten",
                 stats.unsafe_stripes);
  }
  RAMPART_RETURN_IF_ERROR(FlushNodes());
  std::vector<uint64_t> clean;
  for (uint64_t g : loaded_dirty) {
    if (!tainted.contains(g)) {
      dirty.erase(g);
      clean.push_back(g);
    }
  }
  loaded_dirty.clear();
  if (!clean.empty()) {
    if (Status st = PersistRecords(BlocksOf(clean), /*durable=*/false); !st.ok()) {
      spdlog::warn("volume: clearing resynced intent records: {}", st.ToString());
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Verify

Result<std::vector<Status>> Volume::Impl::CheckStripes(uint64_t first, uint64_t count) {
  const uint64_t c = layout.cell_bytes();
  struct Job {
    Buffer buffer;
    std::vector<Status> errors;
  };
  std::vector<Job> jobs(count);
  for (uint64_t i = 0; i < count; ++i) {
    RAMPART_ASSIGN_OR_RETURN(std::optional<uint32_t> missing, Missing(first + i));
    if (missing) {
      return FailedPrecondition("stripe ", first + i, ": storage node ", nodes[*missing].id,
                                " is down; verifying needs every node");
    }
    RAMPART_ASSIGN_OR_RETURN(jobs[i].buffer, Get(layout.node_count() * c));
  }
  for (uint64_t i = 0; i < count; ++i) {
    IssueStripeReads(first + i, {0, c}, std::nullopt, jobs[i].buffer, jobs[i].errors);
  }
  Drain();
  std::vector<Status> result;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t s = first + i;
    const uint32_t p = layout.ParityNode(s);
    std::vector<ConstBytes> data;
    for (uint32_t n = 0; n < layout.node_count(); ++n) {
      RAMPART_RETURN_IF_ERROR(jobs[i].errors[n].WithContext(StrCat("verify stripe ", s)));
      if (n != p) data.emplace_back(jobs[i].buffer.data() + n * c, c);
    }
    Status st = CheckParity(data, ConstBytes(jobs[i].buffer.data() + p * c, c));
    result.push_back(st.ok() ? st
                             : Corruption("stripe ", s, ": parity does not match its data cells (",
                                          st.message(), ")"));
  }
  return result;
}

Status Volume::Impl::VerifyStripe(uint64_t stripe) {
  if (stripe >= layout.stripes()) return InvalidArgument("no stripe ", stripe);
  RAMPART_ASSIGN_OR_RETURN(std::vector<Status> result, CheckStripes(stripe, 1));
  return result.front();
}

Result<uint64_t> Volume::Impl::Verify(const Progress& progress) {
  uint64_t bad = 0;
  const uint64_t window = StripeWindow();
  for (uint64_t s = 0; s < layout.stripes(); s += window) {
    const uint64_t count = std::min(window, layout.stripes() - s);
    RAMPART_ASSIGN_OR_RETURN(std::vector<Status> result, CheckStripes(s, count));
    for (const Status& st : result) {
      if (!st.ok()) {
        ++bad;
        spdlog::warn("volume verify: {}", st.ToString());
      }
    }
    if (progress && !progress(s + count, layout.stripes())) return Aborted("verify stopped");
  }
  return bad;
}

// ---------------------------------------------------------------------------
// Rebuild

Status Volume::Impl::WriteLabelOrFail(uint32_t n, bool valid) {
  Status st;
  IssueLabelWrite(n, valid, st);
  Drain();
  if (st.ok() && nodes[n].health != Health::kDown) return Status::Ok();
  MarkDown(n, st.ok() ? Unavailable("down") : st);
  Drain();
  return (st.ok() ? Unavailable("storage node ", nodes[n].id, " failed") : st)
      .WithContext(valid ? "writing the volume label" : "clearing the volume label");
}

Status Volume::Impl::RebuildStripes(uint32_t node_index, uint64_t first, uint64_t count) {
  const uint64_t c = layout.cell_bytes();
  std::vector<Buffer> buffers(count);
  std::vector<std::vector<Status>> errors(count);
  for (uint64_t i = 0; i < count; ++i) {
    RAMPART_ASSIGN_OR_RETURN(buffers[i], Get(layout.node_count() * c));
  }
  for (uint64_t i = 0; i < count; ++i) {
    IssueStripeReads(first + i, {0, c}, node_index, buffers[i], errors[i]);
  }
  Drain();
  for (uint64_t i = 0; i < count; ++i) {
    Status st = ReconstructSlot(first + i, {0, c}, node_index, buffers[i], errors[i]);
    if (!st.ok()) {
      Drain();
      MarkDown(node_index, st);
      Drain();
      return st.WithContext("rebuild");
    }
    Issue(node_index, IoKind::kWrite, layout.StripeOffset(first + i), static_cast<uint32_t>(c),
          Slice(buffers[i], node_index * c, c), [](const Status&) {});
  }
  Drain();
  if (nodes[node_index].health == Health::kDown) {
    return Unavailable("rebuild: storage node ", nodes[node_index].id, " failed at stripe ", first);
  }
  return Status::Ok();
}

Status Volume::Impl::Rebuild(uint32_t node_index, const Progress& progress) {
  if (node_index >= nodes.size()) return InvalidArgument("no node index ", node_index);
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    if (n != node_index && nodes[n].health != Health::kUp) {
      return FailedPrecondition("rebuild of node index ", node_index, " needs every other node up; ",
                                "storage node ", nodes[n].id, " is not");
    }
  }
  // Failed on record first: a crash part-way leaves it to be rebuilt again.
  MarkDown(node_index, Aborted("being rebuilt"));
  Drain();
  RAMPART_RETURN_IF_ERROR(RecordFailedNode());
  RAMPART_RETURN_IF_ERROR(ConnectNode(node_index).WithContext("rebuild"));
  Node& node = nodes[node_index];
  node.health = Health::kRebuilding;
  node.rebuilt_below = 0;
  // No label while its cells are rewritten: an interrupted rebuild leaves
  // the node recognisably not the volume's (besides recorded failed).
  RAMPART_RETURN_IF_ERROR(WriteLabelOrFail(node_index, /*valid=*/false).WithContext("rebuild"));
  const uint64_t window = StripeWindow();
  for (uint64_t first = 0; first < layout.stripes(); first += window) {
    const uint64_t count = std::min(window, layout.stripes() - first);
    RAMPART_RETURN_IF_ERROR(RebuildStripes(node_index, first, count));
    node.rebuilt_below = first + count;
    if (progress && !progress(first + count, layout.stripes())) {
      MarkDown(node_index, Aborted("rebuild stopped"));
      Drain();
      return Aborted("rebuild stopped at stripe ", first + count);
    }
  }
  node.health = Health::kUp;
  RAMPART_RETURN_IF_ERROR(FlushNodes());
  // The label last, once every cell is durable: only then is the node the
  // volume's again.
  RAMPART_RETURN_IF_ERROR(WriteLabelOrFail(node_index, /*valid=*/true).WithContext("rebuild"));
  labels[node_index] = Label::kValid;
  failed_node = kNoFailedNode;
  return PersistRecords({0}, /*durable=*/true).WithContext("recording the rebuilt node");
}

}  // namespace rampart::storage
