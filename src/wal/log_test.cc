// The redo log end to end: LogWriter over both stores, then Recover —
// rotation, torn tails at every byte, corruption, checkpoints and crashes in
// the middle of one, identity checks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "wal/log_writer.h"
#include "wal/recovery.h"
#include "wal/test_stores.h"

namespace rampart::wal {
namespace {

using testing::AppendString;
using testing::CheckpointString;
using testing::RamDevice;
using testing::RecoverInto;
using testing::Replayed;
using testing::ScratchDir;
using testing::TestIdentity;

constexpr uint64_t kSegmentBytes = 64 << 10;

std::string Body(uint64_t i) { return "record-" + std::to_string(i) + std::string(i % 97, 'x'); }

// A store that can be reopened as it would be after a crash: a directory, or
// the bytes of a RAM device.
class Disk {
 public:
  explicit Disk(bool files) : files_(files), ram_(32 * kSegmentBytes) {}
  std::unique_ptr<SegmentStore> Open() {
    if (files_) {
      auto s = DirectoryStore::Open(dir_.path, kSegmentBytes);
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      return std::move(*s);
    }
    auto s = BlockStore::Open(std::make_unique<RamDevice>(ram_), kSegmentBytes);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(*s);
  }
  bool files() const { return files_; }
  const std::string& dir() const { return dir_.path; }
  std::vector<std::byte>& ram() { return ram_; }

 private:
  bool files_;
  ScratchDir dir_;
  std::vector<std::byte> ram_;
};

struct Opened {
  std::unique_ptr<SegmentStore> store;
  std::unique_ptr<LogWriter> writer;
  RecoveredLog recovered;
  std::vector<Replayed> replayed;
};

Opened OpenLog(Disk& disk, SyncPolicy sync = SyncPolicy::kInterval) {
  Opened o;
  o.store = disk.Open();
  auto rec = RecoverInto(*o.store, o.replayed);
  EXPECT_TRUE(rec.ok()) << rec.status().ToString();
  if (!rec.ok()) return o;
  o.recovered = *rec;
  auto w = LogWriter::Open(*o.store, LogOptions{TestIdentity(), sync}, *rec);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  if (w.ok()) o.writer = std::move(*w);
  return o;
}

// Appends records first..last in commits of `per_commit`.
void Write(LogWriter& w, uint64_t first, uint64_t last, uint64_t per_commit = 7) {
  for (uint64_t i = first; i <= last; ++i) {
    EXPECT_EQ(AppendString(w, 1, Body(i)), i);
    if (i % per_commit == 0 || i == last) {
      ASSERT_TRUE(w.Commit().ok());
    }
  }
}

std::vector<Replayed> LogRecords(uint64_t first, uint64_t last) {
  std::vector<Replayed> out;
  for (uint64_t i = first; i <= last; ++i) out.push_back({false, i, 1, Body(i)});
  return out;
}

class LogTest : public ::testing::TestWithParam<bool> {};

TEST_P(LogTest, RecordsComeBackInOrderAcrossSegmentsAndReopens) {
  Disk disk(GetParam());
  {
    Opened o = OpenLog(disk);
    EXPECT_TRUE(o.replayed.empty());
    Write(*o.writer, 1, 2000);  // ~180 KB of records, 64 KiB segments
    EXPECT_EQ(o.writer->committed_lsn(), 2000u);
  }
  {
    Opened o = OpenLog(disk);
    EXPECT_EQ(o.replayed, LogRecords(1, 2000));
    EXPECT_EQ(o.recovered.next_lsn, 2001u);
    EXPECT_FALSE(o.recovered.torn_tail);
    EXPECT_GE(o.recovered.live.size(), 3u);
    Write(*o.writer, 2001, 2050);
  }
  Opened o = OpenLog(disk);
  EXPECT_EQ(o.replayed, LogRecords(1, 2050));
}

TEST_P(LogTest, SyncPolicies) {
  Disk disk(GetParam());
  Opened a = OpenLog(disk, SyncPolicy::kAlways);
  Write(*a.writer, 1, 10, 1);
  EXPECT_EQ(a.writer->durable_lsn(), 10u);  // every commit synced
  a.writer.reset();
  Opened b = OpenLog(disk, SyncPolicy::kInterval);
  Write(*b.writer, 11, 20, 5);
  EXPECT_EQ(b.writer->committed_lsn(), 20u);
  EXPECT_EQ(b.writer->durable_lsn(), 10u);  // written, not synced yet
  ASSERT_TRUE(b.writer->SyncNow().ok());
  EXPECT_EQ(b.writer->durable_lsn(), 20u);
}

TEST_P(LogTest, CheckpointsReplaceTheLogBeforeThemAndAnUnfinishedOneIsDropped) {
  Disk disk(GetParam());
  {
    Opened o = OpenLog(disk);
    Write(*o.writer, 1, 300);
    ASSERT_TRUE(o.writer->BeginCheckpoint().ok());
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(CheckpointString(*o.writer, 2, "v" + std::to_string(i)).ok());
    Write(*o.writer, 301, 320);  // interleaved with the checkpoint's scan
    ASSERT_TRUE(o.writer->FinishCheckpoint().ok());
    EXPECT_LT(o.writer->log_bytes_since_checkpoint(), 320u * 200);
    Write(*o.writer, 321, 330);
    // A second checkpoint that never finishes (the process dies in it).
    ASSERT_TRUE(o.writer->BeginCheckpoint().ok());
    for (int i = 0; i < 10000; ++i) ASSERT_TRUE(CheckpointString(*o.writer, 2, std::string(100, 'z')).ok());
    Write(*o.writer, 331, 340);
  }
  Opened o = OpenLog(disk);
  std::vector<Replayed> want;
  for (int i = 0; i < 50; ++i) want.push_back({true, uint64_t(i) + 1, 2, "v" + std::to_string(i)});
  auto log = LogRecords(301, 340);
  want.insert(want.end(), log.begin(), log.end());
  EXPECT_EQ(o.replayed, want);
  EXPECT_EQ(o.recovered.checkpoint_start_lsn, 301u);
  EXPECT_EQ(o.recovered.checkpoint_records, 50u);
  EXPECT_FALSE(o.recovered.obsolete.empty());  // the unfinished checkpoint's parts
  // The log before the checkpoint is gone from the store.
  auto seqs = o.store->List();
  ASSERT_TRUE(seqs.ok());
  for (const SegmentInfo& s : o.recovered.live) {
    if (s.header.kind == SegmentKind::kLog) {
      EXPECT_GE(s.header.first_lsn + s.records, 301u) << "segment " << s.header.seq;
    }
  }
}

TEST_P(LogTest, ACheckpointSurvivesACrashRightAfterItFinished) {
  Disk disk(GetParam());
  {
    Opened o = OpenLog(disk);
    Write(*o.writer, 1, 20);
    ASSERT_TRUE(o.writer->BeginCheckpoint().ok());
    ASSERT_TRUE(CheckpointString(*o.writer, 2, "state").ok());
    ASSERT_TRUE(o.writer->FinishCheckpoint().ok());
  }
  Opened o = OpenLog(disk);
  EXPECT_EQ(o.replayed, (std::vector<Replayed>{{true, 1, 2, "state"}}));
  EXPECT_EQ(o.recovered.next_lsn, 21u);
}

TEST_P(LogTest, AnotherIdentityIsRefused) {
  Disk disk(GetParam());
  {
    Opened o = OpenLog(disk);
    Write(*o.writer, 1, 3);
  }
  auto store = disk.Open();
  std::vector<Replayed> replayed;
  auto rec = RecoverInto(*store, replayed, Identity{"test", 1, 2, 16});
  EXPECT_EQ(rec.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(rec.status().message().find("partition 2 of 8, not to cluster \"test\" node 1 partition 2 of 16"),
            std::string_view::npos)
      << rec.status().ToString();
  EXPECT_TRUE(replayed.empty());
}

INSTANTIATE_TEST_SUITE_P(Stores, LogTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "files" : "slots"; });

// ---- torn tails and corruption, on files (a cut file is a torn write)

uint64_t NewestLogSegment(const std::string& dir) {
  auto store = DirectoryStore::Open(dir, kSegmentBytes);
  auto seqs = (*store)->List();
  return *std::max_element(seqs->begin(), seqs->end());
}

TEST(LogTornTailTest, EveryCutOfTheLastRecordKeepsEverythingBeforeIt) {
  Disk disk(true);
  {
    Opened o = OpenLog(disk);
    Write(*o.writer, 1, 9);
    AppendString(*o.writer, 1, Body(10));
    ASSERT_TRUE(o.writer->Commit().ok());
  }
  auto store = disk.Open();
  const uint64_t seq = NewestLogSegment(disk.dir());
  const std::string path = store->SegmentName(seq);
  // The file is preallocated: its records end before its size.
  const uint64_t size = std::filesystem::file_size(path);
  std::vector<Replayed> all;
  const uint64_t end = RecoverInto(*store, all)->last_log_end;
  const uint64_t last = FramedBytes(Body(10).size());
  ASSERT_EQ(all, LogRecords(1, 10));
  ASSERT_LT(end, size);
  store.reset();
  std::vector<char> whole(size);
  {
    FILE* f = fopen(path.c_str(), "rb");
    ASSERT_EQ(fread(whole.data(), 1, size, f), size);
    fclose(f);
  }
  // Every cut inside the record's header and body (its zero padding reads
  // the same whether it was written or not).
  for (uint64_t cut = end - last; cut < end - last + kRecordHeaderBytes + Body(10).size(); ++cut) {
    // The file as a crash in the middle of the last write left it: the
    // record's first bytes, then what was there before (preallocated zeros).
    {
      std::vector<char> torn(whole.begin(), whole.begin() + static_cast<long>(cut));
      torn.resize(size, 0);
      FILE* f = fopen(path.c_str(), "wb");
      fwrite(torn.data(), 1, torn.size(), f);
      fclose(f);
    }
    auto s = disk.Open();
    std::vector<Replayed> replayed;
    auto rec = RecoverInto(*s, replayed);
    ASSERT_TRUE(rec.ok()) << "cut at " << cut << ": " << rec.status().ToString();
    ASSERT_EQ(replayed, LogRecords(1, 9)) << "cut at " << cut;
    EXPECT_EQ(rec->next_lsn, 10u);
    EXPECT_EQ(rec->last_log_end, end - last);
  }
  // The log goes on after a torn tail, and the torn segment (now in the
  // middle) is read up to where the next one says it ends.
  {
    Opened o = OpenLog(disk);
    EXPECT_EQ(o.replayed, LogRecords(1, 9));
    Write(*o.writer, 10, 15);
  }
  Opened o = OpenLog(disk);
  EXPECT_EQ(o.replayed, LogRecords(1, 15));
}

TEST(LogCorruptionTest, ABadRecordBeforeTheTailIsAnErrorNamingTheSegmentAndOffset) {
  Disk disk(true);
  uint64_t first_seq = 0;
  {
    Opened o = OpenLog(disk);
    Write(*o.writer, 1, 2000);  // several segments
    first_seq = o.recovered.next_seq;
  }
  // Damage a record in the middle of the first segment.
  auto store = disk.Open();
  const std::string path = store->SegmentName(first_seq);
  store.reset();
  {
    FILE* f = fopen(path.c_str(), "r+b");
    fseek(f, kSegmentHeaderBytes + 3 * FramedBytes(Body(1).size()) + 40, SEEK_SET);
    fputc('!', f);
    fclose(f);
  }
  auto s = disk.Open();
  std::vector<Replayed> replayed;
  auto rec = RecoverInto(*s, replayed);
  EXPECT_EQ(rec.status().code(), StatusCode::kCorruption);
  EXPECT_NE(rec.status().message().find(path + " at offset"), std::string_view::npos)
      << rec.status().ToString();
  EXPECT_NE(rec.status().message().find("checksum"), std::string_view::npos)
      << rec.status().ToString();
}

// Flips a byte at `offset` of a file.
void Damage(const std::string& path, uint64_t offset) {
  FILE* f = fopen(path.c_str(), "r+b");
  fseek(f, static_cast<long>(offset), SEEK_SET);
  const int c = fgetc(f);
  fseek(f, static_cast<long>(offset), SEEK_SET);
  fputc(c ^ 0x20, f);
  fclose(f);
}

TEST(LogCorruptionTest, ABadRecordALaterWatermarkCallsDurableIsDamageNotATornTail) {
  Disk disk(true);
  {
    Opened o = OpenLog(disk);
    Write(*o.writer, 1, 20);
    ASSERT_TRUE(o.writer->SyncNow().ok());
    Write(*o.writer, 21, 30);  // its group says: 1..20 were durable
  }
  const std::string path = disk.Open()->SegmentName(NewestLogSegment(disk.dir()));
  Damage(path, kSegmentHeaderBytes + 50);  // inside record 1 or 2
  auto s = disk.Open();
  std::vector<Replayed> replayed;
  auto rec = RecoverInto(*s, replayed);
  EXPECT_EQ(rec.status().code(), StatusCode::kCorruption);
  EXPECT_NE(rec.status().message().find("were durable: the log is damaged, not torn"),
            std::string_view::npos)
      << rec.status().ToString();
}

// After a power loss a group's pages may have reached the disk out of order:
// a bad record with intact ones after it, none of them ever durable.
TEST(LogTornTailTest, IntactRecordsAfterABadOneNeverDurableAreDroppedWithIt) {
  Disk disk(true);
  {
    Opened o = OpenLog(disk);
    Write(*o.writer, 1, 20);  // never synced
  }
  const std::string path = disk.Open()->SegmentName(NewestLogSegment(disk.dir()));
  const uint64_t second = kSegmentHeaderBytes + FramedBytes(Body(1).size());
  Damage(path, second + kRecordHeaderBytes + 2);  // record 2's body
  auto s = disk.Open();
  std::vector<Replayed> replayed;
  auto rec = RecoverInto(*s, replayed);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(replayed, LogRecords(1, 1));
  EXPECT_TRUE(rec->torn_tail);
  ASSERT_EQ(rec->notes.size(), 1u);
  EXPECT_NE(rec->notes[0].find("18 intact records written after it, never durable, dropped too"),
            std::string::npos)
      << rec->notes[0];
}

TEST(LogCorruptionTest, ADamagedHeaderWithRecordsAfterItIsAnError) {
  Disk disk(true);
  {
    Opened o = OpenLog(disk);
    Write(*o.writer, 1, 20);
  }
  const std::string path = disk.Open()->SegmentName(NewestLogSegment(disk.dir()));
  Damage(path, 30);  // the header's first_lsn
  auto s = disk.Open();
  std::vector<Replayed> replayed;
  auto rec = RecoverInto(*s, replayed);
  EXPECT_EQ(rec.status().code(), StatusCode::kCorruption);
  EXPECT_NE(rec.status().message().find("the header is damaged"), std::string_view::npos)
      << rec.status().ToString();
}

TEST(LogCorruptionTest, AMissingSegmentInTheMiddleIsAnError) {
  Disk disk(true);
  uint64_t first_seq = 0;
  {
    Opened o = OpenLog(disk);
    Write(*o.writer, 1, 2000);
    first_seq = o.recovered.next_seq;
  }
  auto store = disk.Open();
  ASSERT_TRUE(std::filesystem::remove(store->SegmentName(first_seq + 1)));
  std::vector<Replayed> replayed;
  auto rec = RecoverInto(*store, replayed);
  EXPECT_EQ(rec.status().code(), StatusCode::kCorruption);
  EXPECT_NE(rec.status().message().find("a log segment is missing"), std::string_view::npos)
      << rec.status().ToString();
}

TEST(LogTornTailTest, ASegmentWhoseHeaderWasNeverWrittenIsDropped) {
  Disk disk(false);
  {
    Opened o = OpenLog(disk);
    Write(*o.writer, 1, 30);
  }
  // A crash while the next segment's header was written: half of it there.
  std::vector<std::byte>& ram = disk.ram();
  {
    auto store = disk.Open();
    auto seqs = store->List();
    const uint64_t top = *std::max_element(seqs->begin(), seqs->end());
    std::vector<std::byte> header(kSegmentHeaderBytes);
    SegmentHeader h;
    h.seq = top + 1;
    h.first_lsn = 31;
    h.identity = TestIdentity();
    EncodeSegmentHeader(h, header);
    // The first free slot is the one the writer would take.
    for (size_t slot = 0; slot < 31; ++slot) {
      const size_t at = kSegmentHeaderBytes + slot * kSegmentBytes;  // after the store's label
      if (DecodeSegmentHeader(std::span(ram).subspan(at, kSegmentHeaderBytes)).ok()) continue;
      std::copy_n(header.begin(), 100, ram.begin() + static_cast<long>(at));
      break;
    }
  }
  Opened o = OpenLog(disk);
  EXPECT_EQ(o.replayed, LogRecords(1, 30));
  Write(*o.writer, 31, 35);
  o.writer.reset();
  Opened again = OpenLog(disk);
  EXPECT_EQ(again.replayed, LogRecords(1, 35));
}

TEST(BlockStoreTest, SlotsAreFoundByTheirHeadersAndRunOut) {
  std::vector<std::byte> ram(kSegmentHeaderBytes + 4 * kSegmentBytes);  // the label, 4 slots
  auto store = BlockStore::Open(std::make_unique<RamDevice>(ram), kSegmentBytes);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  for (uint64_t seq : {5, 6, 7, 8}) ASSERT_TRUE((*store)->Create(seq).ok());
  EXPECT_EQ((*store)->Create(9).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ((*store)->Create(5).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE((*store)->Remove(6).ok());
  EXPECT_TRUE((*store)->Create(9).ok());
  // Only segments with a header are there after a reopen.
  std::vector<std::byte> header(kSegmentHeaderBytes);
  SegmentHeader h;
  h.seq = 9;
  h.identity = TestIdentity();
  EncodeSegmentHeader(h, header);
  ASSERT_TRUE((*store)->Write(9, 0, header).ok());
  auto reopened = BlockStore::Open(std::make_unique<RamDevice>(ram), kSegmentBytes);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->List(), std::vector<uint64_t>{9});
  EXPECT_EQ((*reopened)->free_slots(), 3u);
  auto tiny = BlockStore::Open(std::make_unique<RamDevice>(ram), 3 * kSegmentBytes);
  EXPECT_EQ(tiny.status().code(), StatusCode::kInvalidArgument);
}

TEST(DirectoryStoreTest, FilesAreSegmentsAndAPathThatIsAFileIsRefused) {
  ScratchDir dir;
  auto store = DirectoryStore::Open(dir.path + "/a/b", kSegmentBytes);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Create(0x1f).ok());
  EXPECT_EQ((*store)->Create(0x1f).code(), StatusCode::kAlreadyExists);
  const std::string data = "abc";
  ASSERT_TRUE((*store)->Write(0x1f, 10, std::as_bytes(std::span(data))).ok());
  // Allocated ahead in chunks (at most the segment's size), zeros after the data.
  EXPECT_EQ(*(*store)->Size(0x1f), kSegmentBytes);
  std::vector<std::byte> out(20);
  EXPECT_EQ(*(*store)->Read(0x1f, 10, out), 20u);
  EXPECT_EQ(out[2], std::byte{'c'});
  EXPECT_EQ(out[3], std::byte{0});
  EXPECT_TRUE((*store)->Sync(0x1f).ok());
  EXPECT_EQ((*store)->SegmentName(0x1f), dir.path + "/a/b/seg-000000000000001f");
  EXPECT_EQ(*(*store)->List(), std::vector<uint64_t>{0x1f});
  ASSERT_TRUE((*store)->Remove(0x1f).ok());
  EXPECT_TRUE((*store)->List()->empty());
  FILE* f = fopen((dir.path + "/file").c_str(), "w");
  fclose(f);
  EXPECT_EQ(DirectoryStore::Open(dir.path + "/file", kSegmentBytes).status().code(),
            StatusCode::kInvalidArgument);
}

// The bytes written are the file's, for a read through another store and for
// a plain read of the file, across preallocated chunks and after a reopen.
TEST(DirectoryStoreTest, WritesAreTheFilesBytesAcrossChunksAndReopens) {
  ScratchDir dir;
  constexpr uint64_t kBigSegment = uint64_t{12} << 20;  // three 4 MiB chunks
  std::string expected(kBigSegment, '\0');
  auto write = [&](DirectoryStore& store, uint64_t offset, size_t bytes, char fill) {
    const std::string data(bytes, fill);
    ASSERT_TRUE(store.Write(7, offset, std::as_bytes(std::span(data))).ok());
    expected.replace(offset, bytes, data);
  };
  {
    auto store = DirectoryStore::Open(dir.path, kBigSegment);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Create(7).ok());
    write(**store, 0, 100, 'a');
    write(**store, (uint64_t{4} << 20) - 10, 30, 'b');  // across the first chunk's end
    write(**store, (uint64_t{8} << 20) + 5, 1 << 20, 'c');
  }
  {
    auto store = DirectoryStore::Open(dir.path, kBigSegment);  // opens the file again
    ASSERT_TRUE(store.ok());
    write(**store, 200, 50, 'd');
    write(**store, kBigSegment - 7, 7, 'e');  // the segment's last bytes
    ASSERT_TRUE((*store)->Sync(7).ok());
  }
  auto reader = DirectoryStore::Open(dir.path, kBigSegment);
  ASSERT_TRUE(reader.ok());
  std::vector<std::byte> read(kBigSegment);
  ASSERT_EQ(*(*reader)->Read(7, 0, read), kBigSegment);
  EXPECT_TRUE(std::memcmp(read.data(), expected.data(), kBigSegment) == 0);
  std::ifstream file((*reader)->SegmentName(7), std::ios::binary);
  const std::string on_disk((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(on_disk.size(), kBigSegment);
  EXPECT_TRUE(on_disk == expected);
}

}  // namespace
}  // namespace rampart::wal

namespace rampart::wal {
namespace {

// A store that models the page cache: writes land in memory and survive a
// crash of the process, but a power loss keeps only what Sync() made durable
// (a segment's creation is durable at once, as DirectoryStore syncs the
// directory).
class PowerLossStore : public SegmentStore {
 public:
  const std::string& name() const override { return name_; }
  std::string SegmentName(uint64_t seq) const override { return StrCat("segment ", seq); }
  uint64_t segment_bytes() const override { return kSegmentBytes; }
  Result<std::vector<uint64_t>> List() override {
    std::vector<uint64_t> seqs;
    for (const auto& [seq, s] : segments_) seqs.push_back(seq);
    return seqs;
  }
  Status Create(uint64_t seq) override {
    if (segments_.contains(seq)) return AlreadyExists("exists");
    segments_[seq];
    return Status::Ok();
  }
  Status Write(uint64_t seq, uint64_t offset, std::span<const std::byte> data) override {
    std::vector<std::byte>& b = segments_.at(seq).current;
    if (b.size() < offset + data.size()) b.resize(offset + data.size());
    std::copy(data.begin(), data.end(), b.begin() + static_cast<long>(offset));
    return Status::Ok();
  }
  Result<size_t> Read(uint64_t seq, uint64_t offset, std::span<std::byte> out) override {
    const std::vector<std::byte>& b = segments_.at(seq).current;
    if (offset >= b.size()) return size_t{0};
    const size_t n = std::min<size_t>(out.size(), b.size() - offset);
    std::copy_n(b.begin() + static_cast<long>(offset), n, out.begin());
    return n;
  }
  Result<uint64_t> Size(uint64_t seq) override { return segments_.at(seq).current.size(); }
  Status Sync(uint64_t seq) override {
    if (auto it = segments_.find(seq); it != segments_.end()) it->second.synced = it->second.current;
    return Status::Ok();
  }
  Status Remove(uint64_t seq) override {
    segments_.erase(seq);
    return Status::Ok();
  }
  // The machine loses power: only synced bytes are left.
  void PowerLoss() {
    for (auto& [seq, s] : segments_) s.current = s.synced;
  }

 private:
  struct Segment {
    std::vector<std::byte> current, synced;
  };
  std::string name_ = "power-loss store";
  std::map<uint64_t, Segment> segments_;
};

std::vector<Replayed> Recovered(PowerLossStore& store) {
  std::vector<Replayed> replayed;
  auto rec = testing::RecoverInto(store, replayed);
  EXPECT_TRUE(rec.ok()) << rec.status().ToString();
  return replayed;
}

TEST(LogPowerLossTest, IntervalLosesOnlyWhatCameAfterTheLastSyncAndAlwaysLosesNothing) {
  PowerLossStore store;
  {
    auto w = LogWriter::Open(store, LogOptions{TestIdentity(), SyncPolicy::kInterval}, {});
    ASSERT_TRUE(w.ok());
    Write(**w, 1, 700);  // several segments: each full one is synced before the next
    ASSERT_TRUE((*w)->SyncNow().ok());  // the sync thread's turn
    Write(**w, 701, 760);  // committed (acknowledged under interval), not synced yet
    EXPECT_EQ((*w)->durable_lsn(), 700u);
  }
  // A process crash keeps everything (the page cache survives) ...
  EXPECT_EQ(Recovered(store), LogRecords(1, 760));
  // ... a power loss keeps exactly what was synced: at most one sync interval is lost.
  store.PowerLoss();
  EXPECT_EQ(Recovered(store), LogRecords(1, 700));

  PowerLossStore always;
  {
    auto w = LogWriter::Open(always, LogOptions{TestIdentity(), SyncPolicy::kAlways}, {});
    ASSERT_TRUE(w.ok());
    Write(**w, 1, 760);
  }
  always.PowerLoss();
  EXPECT_EQ(Recovered(always), LogRecords(1, 760));
}

// The process dies with records in the page cache only, restarts (recovers,
// opens a writer, which starts a new segment naming the old one), and then
// the machine loses power: the old segment was synced before the new one
// could name it, so the log still reads as one.
TEST(LogPowerLossTest, ARestartSyncsTheLogItRecoveredBeforeItGoesOn) {
  PowerLossStore store;
  {
    auto w = LogWriter::Open(store, LogOptions{TestIdentity(), SyncPolicy::kInterval}, {});
    ASSERT_TRUE(w.ok());
    Write(**w, 1, 50);  // not synced: the process dies
  }
  {
    std::vector<Replayed> replayed;
    auto rec = testing::RecoverInto(store, replayed);
    ASSERT_TRUE(rec.ok());
    auto w = LogWriter::Open(store, LogOptions{TestIdentity(), SyncPolicy::kAlways}, *rec);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    Write(**w, 51, 60);  // synced: acknowledged under always
  }
  store.PowerLoss();
  EXPECT_EQ(Recovered(store), LogRecords(1, 60));
}

TEST(BlockStoreTest, AStoreOfAnotherSegmentSizeIsRefused) {
  std::vector<std::byte> ram(16 * kSegmentBytes);
  ASSERT_TRUE(BlockStore::Open(std::make_unique<RamDevice>(ram), kSegmentBytes).ok());
  auto other = BlockStore::Open(std::make_unique<RamDevice>(ram), 2 * kSegmentBytes);
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("holds log segments of 65536 bytes"),
            std::string_view::npos)
      << other.status().ToString();
  ASSERT_TRUE(BlockStore::Open(std::make_unique<RamDevice>(ram), kSegmentBytes).ok());
}

}  // namespace
}  // namespace rampart::wal
