// Regression tests for the durable queue's positions, losses and full disks (issue 15's
// findings), on real files; the fault-injected cases use tests/testing/fault_file_system.h.
#include "storage/durable_queue.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include "storage/cursor_file.h"
#include "storage/log_format.h"
#include "storage/record_scanner.h"
#include "testing/fault_file_system.h"

namespace seedance::storage {
namespace {

namespace fs = std::filesystem;
using storage::FileSystem;
using testing::FaultFileSystem;

class DurableQueueTest : public ::testing::Test {
 protected:
  DurableQueueTest() {
    dir_ = (fs::temp_directory_path() /
            ("durable_queue_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~DurableQueueTest() override { fs::remove_all(dir_); }

  QueueConfig Config() const {
    QueueConfig c;
    c.data_dir = dir_;
    c.segment_bytes = 64 * 1024;
    c.fsync.mode = QueueConfig::Fsync::kNever;
    return c;
  }
  std::unique_ptr<DurableQueue> Open(const QueueConfig& c,
                                     FileSystem& fs = storage::PosixFileSystem()) {
    metrics_ = std::make_unique<observe::MetricsRegistry>();
    auto q = DurableQueue::Open(c, *metrics_, fs);
    EXPECT_TRUE(q.has_value()) << (q ? "" : q.error().ToString());
    return q ? std::move(q).value() : nullptr;
  }
  static Event Ev(int id) {
    Event e;
    e.source = "test";
    e.topic = "t";
    e.payload = std::to_string(id);
    return e;
  }
  static Status AppendIds(DurableQueue& q, int from, int to) {
    for (int i = from; i < to; ++i) SEEDANCE_RETURN_IF_ERROR(q.Append(Output::kMain, Ev(i)));
    return q.Commit();
  }
  // Ids 0-9 queued, delivered by the sink "out" and its position saved; the queue closed.
  void DeliverTenAndSavePosition() {
    auto q = Open(Config());
    auto c = q->OpenCursor("out", {Output::kMain});
    ASSERT_TRUE(AppendIds(*q, 0, 10).ok());
    Drain(*c);
    c->Save();
  }
  // Reads what is available; marks it finished when `done`.
  static std::vector<int> Drain(SinkCursor& c, bool done = true) {
    std::vector<int> ids;
    std::vector<Event> batch;
    uint64_t first = 0, last = 0;
    while (c.Read(100, &batch, &first, &last)) {
      for (const Event& e : batch) ids.push_back(std::stoi(e.payload));
      if (done) c.Done(first, last);
    }
    return ids;
  }
  uint64_t Counter(const std::string& name, const observe::Labels& labels = {}) {
    return metrics_->GetCounter(name, "", labels).Value();
  }
  std::string CursorFile() const { return dir_ + "/cursors/out"; }
  std::string Segment(uint64_t first) const {
    return dir_ + "/queue/" + storage::SegmentFileName(first);
  }

  std::string dir_;
  std::unique_ptr<observe::MetricsRegistry> metrics_;
};

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Offsets of every record in a file: sequence → (offset, size).
std::map<uint64_t, std::pair<size_t, size_t>> RecordLayout(const std::string& path) {
  const std::string data = ReadBytes(path);
  std::map<uint64_t, std::pair<size_t, size_t>> out;
  size_t pos = 0;
  storage::ScannedRecord r;
  size_t skipped = 0;
  while (storage::ScanRecord(data, &pos, &r, &skipped) == storage::ScanResult::kRecord) {
    out[r.sequence] = {r.offset, r.size};
  }
  return out;
}

// Cuts `path` just before the record with sequence `seq` (a clean cut at a record boundary).
void CutBefore(const std::string& path, uint64_t seq) {
  const auto layout = RecordLayout(path);
  auto it = layout.find(seq);
  ASSERT_NE(it, layout.end()) << "no record " << seq << " in " << path;
  fs::resize_file(path, it->second.first);
}

uint64_t SavedPosition(const std::string& path) {
  uint64_t position = 0;
  EXPECT_EQ(storage::ReadCursorFile(storage::PosixFileSystem(), path, &position),
            storage::CursorFile::kOk)
      << path;
  return position;
}

std::set<int> AsSet(const std::vector<int>& v) { return {v.begin(), v.end()}; }

void ExpectHolds(const std::set<int>& got, int from, int to) {
  for (int i = from; i < to; ++i) ASSERT_TRUE(got.count(i)) << "id " << i << " missing";
}

// Finding 1: a position past the end of the log is not trusted, and new events are not
// numbered below it.
TEST_F(DurableQueueTest, LostTailAfterDeliveryKeepsNewEventsAndNumbersForward) {
  {
    auto q = Open(Config());
    auto c = q->OpenCursor("out", {Output::kMain});
    ASSERT_TRUE(AppendIds(*q, 0, 100).ok());
    ASSERT_EQ(Drain(*c).size(), 100u);
    c->Save();
  }
  CutBefore(Segment(1), 71);  // a power cut took the last 30 (delivered) records
  auto q = Open(Config());
  EXPECT_GE(q->log().next_sequence(), 101u);  // 71..100 are not numbered again
  auto c = q->OpenCursor("out", {Output::kMain});
  ASSERT_TRUE(AppendIds(*q, 100, 150).ok());
  const auto got = AsSet(Drain(*c));
  ExpectHolds(got, 100, 150);  // nothing new is skipped
  EXPECT_EQ(Counter("seedance_queue_cursor_resets_total", {{"reason", "ahead"}}), 1u);
  // The only sink had delivered the lost tail: nothing was lost.
  EXPECT_EQ(Counter("seedance_queue_lost_records_total", {{"reason", "lost_tail"}}), 0u);
}

TEST_F(DurableQueueTest, LostTailIsCountedForTheSinkThatHadNotDeliveredIt) {
  {
    auto q = Open(Config());
    auto a = q->OpenCursor("a", {Output::kMain});
    auto b = q->OpenCursor("b", {Output::kMain});
    ASSERT_TRUE(AppendIds(*q, 0, 100).ok());
    ASSERT_EQ(Drain(*a).size(), 100u);
    std::vector<Event> batch;
    uint64_t first = 0, last = 0;
    ASSERT_TRUE(b->Read(50, &batch, &first, &last));
    b->Done(first, last);
    a->Save();
    b->Save();
  }
  CutBefore(Segment(1), 71);
  auto q = Open(Config());
  auto a = q->OpenCursor("a", {Output::kMain});
  auto b = q->OpenCursor("b", {Output::kMain});
  EXPECT_EQ(Counter("seedance_queue_lost_records_total", {{"reason", "lost_tail"}}), 30u);
  ASSERT_TRUE(AppendIds(*q, 100, 110).ok());
  const auto got = AsSet(Drain(*b));
  ExpectHolds(got, 50, 70);
  ExpectHolds(got, 100, 110);
  // Counted once, however many sinks and reads pass the gap.
  Drain(*a);
  EXPECT_EQ(Counter("seedance_queue_lost_records_total", {{"reason", "lost_tail"}}), 30u);
}

TEST_F(DurableQueueTest, QueueFilesRemovedWithPositionsKeptLosesNothingNew) {
  {
    auto q = Open(Config());
    auto c = q->OpenCursor("out", {Output::kMain});
    ASSERT_TRUE(AppendIds(*q, 0, 3000).ok());
    ASSERT_EQ(Drain(*c).size(), 3000u);
    c->Save();
  }
  for (const auto& e : fs::directory_iterator(dir_ + "/queue")) {
    if (e.path().extension() == ".log") fs::remove(e.path());
  }
  auto q = Open(Config());
  EXPECT_GE(q->log().next_sequence(), 3001u);  // sequence numbers never go backwards
  auto c = q->OpenCursor("out", {Output::kMain});
  ASSERT_TRUE(AppendIds(*q, 3000, 6000).ok());
  const auto got = AsSet(Drain(*c));
  EXPECT_EQ(got.size(), 3000u);
  ExpectHolds(got, 3000, 6000);
}

TEST_F(DurableQueueTest, DamagedPositionFileResendsInsteadOfLosing) {
  for (const std::string& damage :
       {std::string("\x07\x00garbage", 9), std::string("99999999999\n")}) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    {
      auto q = Open(Config());
      auto c = q->OpenCursor("out", {Output::kMain});
      ASSERT_TRUE(AppendIds(*q, 0, 100).ok());
      std::vector<Event> batch;
      uint64_t first = 0, last = 0;
      ASSERT_TRUE(c->Read(50, &batch, &first, &last));
      c->Done(first, last);
      c->Save();
    }
    {
      std::ofstream out(CursorFile(), std::ios::binary | std::ios::trunc);
      out << damage;
    }
    auto q = Open(Config());
    auto c = q->OpenCursor("out", {Output::kMain});
    ASSERT_TRUE(AppendIds(*q, 100, 110).ok());
    const auto got = AsSet(Drain(*c));
    ExpectHolds(got, 50, 110);  // every queued and every new event
    // Sequences a position moved on are skipped, not reported as lost.
    EXPECT_EQ(Counter("seedance_queue_lost_records_total", {{"reason", "corrupt"}}), 0u);
    const bool text = damage[0] == '9';
    EXPECT_EQ(
        Counter("seedance_queue_cursor_resets_total", {{"reason", text ? "ahead" : "damaged"}}), 1u)
        << damage;
  }
}

// A position file that cannot be read (out of descriptors at a reload) is not called damaged:
// the log says why, the reset is counted as "unreadable", and what is retained is re-sent.
TEST_F(DurableQueueTest, AnUnreadablePositionFileResendsAndSaysWhy) {
  DeliverTenAndSavePosition();
  FaultFileSystem faults(dir_);
  auto q = Open(Config(), faults);
  faults.FailNext(FaultFileSystem::Op::kOpen, EMFILE, 1, "/cursors/out");
  auto c = q->OpenCursor("out", {Output::kMain});
  EXPECT_EQ(AsSet(Drain(*c, false)).size(), 10u);  // re-sent: duplicates, never loss
  EXPECT_EQ(Counter("seedance_queue_cursor_resets_total", {{"reason", "unreadable"}}), 1u);
  EXPECT_EQ(Counter("seedance_queue_cursor_resets_total", {{"reason", "damaged"}}), 0u);
}

TEST_F(DurableQueueTest, PositionsAreWrittenAsCheckedRecordsAndTheTextFormIsStillRead) {
  DeliverTenAndSavePosition();
  EXPECT_EQ(SavedPosition(CursorFile()), 11u);
  {
    std::ofstream out(CursorFile(), std::ios::trunc);
    out << "6\n";  // as written before 0.3
  }
  auto q = Open(Config());
  auto c = q->OpenCursor("out", {Output::kMain});
  const auto got = Drain(*c);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.front(), 5);  // sequence 6 holds id 5
}

// Finding 3: every detectable loss is reported with its record count, by reason.
TEST_F(DurableQueueTest, MissingMiddleSegmentIsCountedByRecords) {
  auto config = Config();
  config.segment_bytes = 4096;
  {
    auto q = Open(config);
    ASSERT_TRUE(AppendIds(*q, 0, 1000).ok());
  }
  std::vector<uint64_t> firsts;
  for (const auto& e : fs::directory_iterator(dir_ + "/queue")) {
    uint64_t first = 0;
    if (storage::ParseSegmentFileName(e.path().filename().string(), &first))
      firsts.push_back(first);
  }
  std::sort(firsts.begin(), firsts.end());
  ASSERT_GE(firsts.size(), 4u);
  fs::remove(Segment(firsts[1]));
  const uint64_t missing = firsts[2] - firsts[1];
  auto q = Open(config);
  auto c = q->OpenCursor("out", {Output::kMain});
  EXPECT_EQ(Counter("seedance_queue_lost_records_total", {{"reason", "missing_segment"}}), missing);
  EXPECT_EQ(Drain(*c).size(), 1000u - missing);
}

TEST_F(DurableQueueTest, TruncatedNewestSegmentCountsTheTornRecord) {
  {
    auto q = Open(Config());
    ASSERT_TRUE(AppendIds(*q, 0, 100).ok());
  }
  fs::resize_file(Segment(1), fs::file_size(Segment(1)) - 3);
  auto q = Open(Config());
  auto c = q->OpenCursor("out", {Output::kMain});
  EXPECT_EQ(Counter("seedance_queue_lost_records_total", {{"reason", "torn_tail"}}), 1u);
  EXPECT_EQ(Drain(*c).size(), 99u);
}

TEST_F(DurableQueueTest, TruncatedNewestSegmentReportsEveryRecordItLost) {
  for (const size_t into_record : {size_t{0}, size_t{10}}) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    {
      auto q = Open(Config());
      ASSERT_TRUE(AppendIds(*q, 0, 100).ok());
    }  // shutdown saves the log's end (HEAD)
    // Sequences 71-100 cut off, the cut inside record 71 or on its boundary.
    const auto layout = RecordLayout(Segment(1));
    fs::resize_file(Segment(1), layout.at(71).first + into_record);
    auto q = Open(Config());
    auto c = q->OpenCursor("out", {Output::kMain});
    const uint64_t torn = Counter("seedance_queue_lost_records_total", {{"reason", "torn_tail"}});
    const uint64_t lost = Counter("seedance_queue_lost_records_total", {{"reason", "lost_tail"}});
    EXPECT_EQ(torn, into_record > 0 ? 1u : 0u);
    EXPECT_EQ(torn + lost, 30u) << "cut " << into_record << " bytes into record 71";
    EXPECT_EQ(Drain(*c).size(), 70u);
    EXPECT_GE(q->log().next_sequence(), 101u);
  }
}

// Finding 4: damage is counted in records, once, however many sinks read past it.
TEST_F(DurableQueueTest, ZeroedPageCountsEveryRecordItDestroyedOnce) {
  auto config = Config();
  config.segment_bytes = 64 * 1024;
  {
    auto q = Open(config);
    ASSERT_TRUE(AppendIds(*q, 0, 3000).ok());
  }
  // Zero one 4 KiB page in the first (closed) segment.
  const auto layout = RecordLayout(Segment(1));
  const size_t page = 8192;
  uint64_t destroyed = 0;
  for (const auto& [seq, at] : layout) {
    if (at.first < page + 4096 && at.first + at.second > page) ++destroyed;
  }
  {
    std::fstream f(Segment(1), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(page);
    const std::string zeros(4096, '\0');
    f.write(zeros.data(), zeros.size());
  }
  ASSERT_GT(destroyed, 30u);
  auto q = Open(config);
  auto a = q->OpenCursor("a", {Output::kMain});
  auto b = q->OpenCursor("b", {Output::kMain});
  const auto got_a = Drain(*a);
  const auto got_b = Drain(*b);
  EXPECT_EQ(got_a.size(), 3000u - destroyed);
  EXPECT_EQ(got_b.size(), 3000u - destroyed);
  EXPECT_EQ(Counter("seedance_queue_corrupt_records_total"), destroyed);
  EXPECT_EQ(Counter("seedance_queue_lost_records_total", {{"reason", "corrupt"}}), destroyed);
}

TEST_F(DurableQueueTest, BitFlipsCountEachDamagedRecordOnce) {
  {
    auto q = Open(Config());
    ASSERT_TRUE(AppendIds(*q, 0, 1000).ok());
  }
  const auto layout = RecordLayout(Segment(1));
  std::set<uint64_t> hit;
  {
    std::fstream f(Segment(1), std::ios::in | std::ios::out | std::ios::binary);
    uint64_t seq = 37;
    for (int i = 0; i < 20; ++i, seq += 41) {  // 20 records: length, tag or payload
      const auto [offset, size] = layout.at(seq);
      const size_t at = offset + (i % 3 == 0 ? 6 : i % 3 == 1 ? 24 : size - 1);
      f.seekg(static_cast<std::streamoff>(at));
      char byte = 0;
      f.read(&byte, 1);
      f.seekp(static_cast<std::streamoff>(at));
      byte ^= 0x10;
      f.write(&byte, 1);
      hit.insert(seq);
    }
  }
  auto q = Open(Config());
  auto a = q->OpenCursor("a", {Output::kMain});
  auto b = q->OpenCursor("b", {Output::kMain});
  EXPECT_EQ(Drain(*a).size(), 1000u - hit.size());
  EXPECT_EQ(Drain(*b).size(), 1000u - hit.size());
  EXPECT_EQ(Counter("seedance_queue_corrupt_records_total"), hit.size());
}

TEST_F(DurableQueueTest, DropOldestCountsOnlyRecordsNoSinkDelivered) {
  auto config = Config();
  config.max_disk = 256 * 1024;  // segments of 64 KiB
  config.drop_oldest = true;
  auto q = Open(config);
  auto c = q->OpenCursor("out", {Output::kMain});
  std::set<int> delivered;
  int appended = 0;
  for (int round = 0; round < 40; ++round) {
    ASSERT_TRUE(AppendIds(*q, appended, appended + 1000).ok());
    appended += 1000;
    if (round % 10 == 9) {  // the sink catches up now and then only: mid-segment
      for (int id : Drain(*c)) delivered.insert(id);
    }
  }
  for (int id : Drain(*c)) delivered.insert(id);
  const uint64_t dropped = Counter("seedance_queue_dropped_total");
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(dropped, static_cast<uint64_t>(appended) - delivered.size());
}

// Issue 50, finding 7: a batch a sink has read and not yet finished (a retry in progress) is
// in its memory and still delivered: dropping its segment loses none of it. It was counted as
// dropped (43,479 counted where 43,466 were lost end to end).
TEST_F(DurableQueueTest, DropOldestDoesNotCountWhatASinkHoldsInMemory) {
  auto config = Config();
  config.max_disk = 256 * 1024;  // segments of 64 KiB
  config.drop_oldest = true;
  auto q = Open(config);
  auto c = q->OpenCursor("out", {Output::kMain});
  ASSERT_TRUE(AppendIds(*q, 0, 1000).ok());
  std::vector<Event> held;
  uint64_t held_first = 0, held_last = 0;
  ASSERT_TRUE(c->Read(300, &held, &held_first, &held_last));  // being retried, say
  ASSERT_EQ(held.size(), 300u);
  int appended = 1000;
  for (; appended < 40000; appended += 1000) {
    ASSERT_TRUE(AppendIds(*q, appended, appended + 1000).ok());
  }
  std::set<int> delivered;
  for (const Event& e : held) delivered.insert(std::stoi(e.payload));
  c->Done(held_first, held_last);  // the retry succeeded
  for (int id : Drain(*c)) delivered.insert(id);
  const uint64_t dropped = Counter("seedance_queue_dropped_total");
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(dropped, static_cast<uint64_t>(appended) - delivered.size());
}

// A batch let go of under the memory budget (Return) whose segment is dropped before it is
// read again: lost then, and counted then, once.
TEST_F(DurableQueueTest, DropOldestCountsAReturnedBatchWhenItIsFoundGone) {
  auto config = Config();
  config.max_disk = 256 * 1024;
  config.drop_oldest = true;
  auto q = Open(config);
  auto c = q->OpenCursor("out", {Output::kMain});
  ASSERT_TRUE(AppendIds(*q, 0, 1000).ok());
  std::vector<Event> batch;
  uint64_t first = 0, last = 0;
  ASSERT_TRUE(c->Read(300, &batch, &first, &last));
  c->Return(first, last);  // evicted: to be read again from the queue
  int appended = 1000;
  for (; appended < 40000; appended += 1000) {
    ASSERT_TRUE(AppendIds(*q, appended, appended + 1000).ok());
  }
  const uint64_t before = Counter("seedance_queue_dropped_total");
  std::set<int> delivered;
  for (int id : Drain(*c)) delivered.insert(id);
  EXPECT_FALSE(delivered.contains(0));  // gone with its segment
  EXPECT_GE(Counter("seedance_queue_dropped_total"), before + 300);
  EXPECT_EQ(Counter("seedance_queue_dropped_total"),
            static_cast<uint64_t>(appended) - delivered.size());
}

// Finding 5: an idle sink's position is saved on a timer, not only when a batch completes.
TEST_F(DurableQueueTest, IdleSinkPositionIsSavedByTheTimer) {
  auto q = Open(Config());
  auto c = q->OpenCursor("out", {Output::kMain});
  ASSERT_TRUE(AppendIds(*q, 0, 10).ok());
  Drain(*c);  // the first completion saves at once
  ASSERT_TRUE(AppendIds(*q, 10, 20).ok());
  Drain(*c);  // within 100 ms of the last save: not saved now
  EXPECT_EQ(SavedPosition(CursorFile()), 11u);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  q->Tick();  // the processing loop ticks at least every 100 ms
  EXPECT_EQ(SavedPosition(CursorFile()), 21u);
}

// A sink a reload replaces: its cursor closes with the position saved, and the cursor opened
// again in the same run resumes there, although the log has grown past its end at the start
// (that check is for positions from before the start).
TEST_F(DurableQueueTest, ACursorReopenedInTheSameRunResumesWhereItStopped) {
  auto q = Open(Config());
  ASSERT_TRUE(AppendIds(*q, 0, 10).ok());
  auto c = q->OpenCursor("out", {Output::kMain});
  EXPECT_EQ(Drain(*c).size(), 10u);
  c->Save();
  c.reset();
  ASSERT_TRUE(AppendIds(*q, 10, 15).ok());
  c = q->OpenCursor("out", {Output::kMain});
  EXPECT_EQ(Drain(*c), (std::vector<int>{10, 11, 12, 13, 14}));
  EXPECT_EQ(Counter("seedance_queue_cursor_resets_total", {{"reason", "ahead"}}), 0u);
}

// Finding 2: a full file system below max_disk behaves like the disk limit, and the only
// segment is reclaimed once delivered; writing resumes by itself.
TEST_F(DurableQueueTest, FullFileSystemRecoversWithoutAnOperatorAndWithoutLoss) {
  FaultFileSystem faults(dir_);
  faults.SetSpaceLimit(48 * 1024);
  auto config = Config();
  config.segment_bytes = 64ull << 20;  // one segment for everything, as with the defaults
  auto q = Open(config, faults);
  auto c = q->OpenCursor("out", {Output::kMain});
  int acked = 0;
  Status s;
  for (int round = 0; round < 1000; ++round) {
    s = AppendIds(*q, acked, acked + 100);
    if (!s.ok()) break;
    acked += 100;
  }
  ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ(Counter("seedance_queue_disk_full_total"), 1u);
  std::set<int> got = AsSet(Drain(*c));  // the sink drains what was written ...
  ExpectHolds(got, 0, acked);
  ASSERT_TRUE(q->Commit().ok());  // ... which frees the only segment: the batch is written
  for (int id : Drain(*c)) got.insert(id);
  ExpectHolds(got, 0, acked + 100);
  ASSERT_TRUE(AppendIds(*q, acked + 100, acked + 200).ok());  // and writing goes on
  for (int id : Drain(*c)) got.insert(id);
  ExpectHolds(got, 0, acked + 200);
  EXPECT_LT(q->disk_bytes(), 48u * 1024);
}

TEST_F(DurableQueueTest, FullFileSystemWithBlockWaitsNoLongerThanTheDeadline) {
  FaultFileSystem faults(dir_);
  faults.SetSpaceLimit(16 * 1024);
  auto q = Open(Config(), faults);
  auto c = q->OpenCursor("out", {Output::kMain});  // never drains
  Status s;
  int id = 0;
  while (s.ok() && id < 100000) s = AppendIds(*q, id, id + 50), id += 50;
  ASSERT_EQ(s.code(), StatusCode::kResourceExhausted);
  const auto t0 = std::chrono::steady_clock::now();
  q->SetShutdownDeadline(t0 + std::chrono::milliseconds(300));
  (void)q->Append(Output::kMain, Ev(-1));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST_F(DurableQueueTest, FullFileSystemWithDropOldestKeepsWriting) {
  FaultFileSystem faults(dir_);
  faults.SetSpaceLimit(40 * 1024);
  auto config = Config();
  config.drop_oldest = true;
  config.segment_bytes = 64ull << 20;
  auto q = Open(config, faults);
  auto c = q->OpenCursor("out", {Output::kMain});  // never drains
  int id = 0;
  for (int round = 0; round < 60; ++round, id += 100) {
    ASSERT_TRUE(AppendIds(*q, id, id + 100).ok()) << "round " << round;
  }
  const auto got = Drain(*c);
  const uint64_t dropped = Counter("seedance_queue_dropped_total");
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(dropped + got.size(), static_cast<uint64_t>(id));
  ExpectHolds(AsSet(got), id - 100, id);  // the newest batch is there
}

// A read that finds nothing leaves the batch as it was: its events keep their storage for the
// next read (the sink runner kicks often with nothing new; truncating the batch each time made
// every event of the next one allocate again).
TEST_F(DurableQueueTest, AReadThatFindsNothingLeavesTheBatchAndItsStorage) {
  auto q = Open(Config());
  auto c = q->OpenCursor("out", {Output::kMain});
  ASSERT_TRUE(AppendIds(*q, 0, 5).ok());
  std::vector<Event> batch;
  uint64_t first = 0, last = 0;
  ASSERT_TRUE(c->Read(100, &batch, &first, &last));
  ASSERT_EQ(batch.size(), 5u);
  c->Done(first, last);
  const char* storage = batch[4].payload.data();
  EXPECT_FALSE(c->Read(100, &batch, &first, &last));
  ASSERT_EQ(batch.size(), 5u);
  EXPECT_EQ(batch[4].payload.data(), storage);
  ASSERT_TRUE(AppendIds(*q, 5, 10).ok());
  ASSERT_TRUE(c->Read(100, &batch, &first, &last));
  ASSERT_EQ(batch.size(), 5u);
  EXPECT_EQ(batch[4].payload, std::to_string(9));
  EXPECT_EQ(batch[4].payload.data(), storage) << "decoded into the element already there";
}

TEST_F(DurableQueueTest, EventsAShorterReadLeavesAreKeptWithTheirStorageForALongerRead) {
  // At 5k msg/s batch sizes vary by dozens of events; a spare of 16 let the rest go, and
  // every one was allocated again (bench/run alloc: 0.02 allocations per event).
  auto q = Open(Config());
  auto c = q->OpenCursor("out", {Output::kMain});
  auto append = [&](int n, size_t bytes) {
    for (int i = 0; i < n; ++i) {
      Event e = Ev(i);
      e.payload.assign(bytes, 'x');
      ASSERT_TRUE(q->Append(Output::kMain, std::move(e)).ok());
    }
    ASSERT_TRUE(q->Commit().ok());
  };
  std::vector<Event> batch;
  uint64_t first = 0, last = 0;
  append(60, 100);
  ASSERT_TRUE(c->Read(100, &batch, &first, &last));
  ASSERT_EQ(batch.size(), 60u);
  c->Done(first, last);
  append(1, 100);
  ASSERT_TRUE(c->Read(100, &batch, &first, &last));
  ASSERT_EQ(batch.size(), 1u);
  c->Done(first, last);
  EXPECT_EQ(c->spare_events(), 59u);
  EXPECT_GE(c->spare_payload_bytes(), 59u * 100);
  append(60, 100);
  ASSERT_TRUE(c->Read(100, &batch, &first, &last));
  ASSERT_EQ(batch.size(), 60u);
  EXPECT_EQ(c->spare_events(), 0u) << "the longer read took them back";
  EXPECT_EQ(c->spare_payload_bytes(), 0u);
  for (const Event& e : batch) EXPECT_EQ(e.payload, std::string(100, 'x'));
}

TEST_F(DurableQueueTest, TheEventsAShorterReadLeavesHoldAtMost64KiBOfPayloadStorage) {
  // Pooled memory is not counted by the memory budget: large payloads are not kept.
  auto q = Open(Config());
  auto c = q->OpenCursor("out", {Output::kMain});
  for (int i = 0; i < 100; ++i) {
    Event e = Ev(i);
    e.payload.assign(4000, 'x');
    ASSERT_TRUE(q->Append(Output::kMain, std::move(e)).ok());
  }
  ASSERT_TRUE(q->Append(Output::kMain, Ev(100)).ok());
  ASSERT_TRUE(q->Commit().ok());
  std::vector<Event> batch;
  uint64_t first = 0, last = 0;
  ASSERT_TRUE(c->Read(100, &batch, &first, &last));
  ASSERT_EQ(batch.size(), 100u);
  c->Done(first, last);
  ASSERT_TRUE(c->Read(100, &batch, &first, &last));
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].payload, "100");
  EXPECT_EQ(c->spare_events(), 64u) << "at most 64 events";
  EXPECT_LE(c->spare_payload_bytes(), 64u * 1024);
  EXPECT_GE(c->spare_payload_bytes(), 16u * 4000) << "those that fit keep their storage";
}

// The real file system, with an fdatasync that waits until the test lets it go (a slow disk).
class SlowSyncFileSystem final : public FileSystem {
 public:
  explicit SlowSyncFileSystem(std::shared_future<void> released) : released_(released) {}
  std::future<void> Entered() { return entered_.get_future(); }
  int Open(const std::string& path, int flags, mode_t mode) override {
    return real_.Open(path, flags, mode);
  }
  int Close(int fd) override { return real_.Close(fd); }
  ssize_t Write(int fd, const void* data, size_t size) override {
    return real_.Write(fd, data, size);
  }
  ssize_t PWrite(int fd, const void* data, size_t size, off_t offset) override {
    return real_.PWrite(fd, data, size, offset);
  }
  ssize_t PRead(int fd, void* data, size_t size, off_t offset) override {
    return real_.PRead(fd, data, size, offset);
  }
  int Fdatasync(int fd) override {
    if (!entered_once_.exchange(true)) entered_.set_value();
    released_.wait();
    return real_.Fdatasync(fd);
  }
  int Ftruncate(int fd, off_t size) override { return real_.Ftruncate(fd, size); }
  int Rename(const std::string& from, const std::string& to) override {
    return real_.Rename(from, to);
  }
  int Unlink(const std::string& path) override { return real_.Unlink(path); }
  int SyncDir(const std::string& dir) override { return real_.SyncDir(dir); }

 private:
  FileSystem& real_ = storage::PosixFileSystem();
  std::shared_future<void> released_;
  std::promise<void> entered_;
  std::atomic<bool> entered_once_{false};
};

TEST_F(DurableQueueTest, TheIntervalFsyncDoesNotHoldUpAppendsCommitsOrTicks) {
  std::promise<void> release;
  SlowSyncFileSystem slow(release.get_future().share());
  QueueConfig c = Config();
  c.fsync.mode = QueueConfig::Fsync::kInterval;
  c.fsync.interval = std::chrono::milliseconds(1);
  auto q = Open(c, slow);
  ASSERT_TRUE(q);
  std::future<void> entered = slow.Entered();
  ASSERT_TRUE(AppendIds(*q, 0, 10).ok());
  ASSERT_EQ(entered.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the committed records were never synced";
  // The fdatasync is stuck on the disk now; the processing thread's work goes on.
  auto work = std::async(std::launch::async, [&] {
    for (int i = 1; i < 20; ++i) {
      if (!AppendIds(*q, i * 10, i * 10 + 10).ok()) return false;
      q->Tick();
    }
    return true;
  });
  const bool finished = work.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  release.set_value();
  EXPECT_TRUE(finished) << "appends, commits or ticks waited for the fdatasync";
  EXPECT_TRUE(work.get());
}

TEST_F(DurableQueueTest, AFailedIntervalFsyncIsCountedAndTriedAgain) {
  FaultFileSystem faults(dir_);
  QueueConfig c = Config();
  c.fsync.mode = QueueConfig::Fsync::kInterval;
  c.fsync.interval = std::chrono::milliseconds(1);
  auto q = Open(c, faults);
  ASSERT_TRUE(q);
  faults.FailNext(FaultFileSystem::Op::kFdatasync, EIO, 2);
  ASSERT_TRUE(AppendIds(*q, 0, 10).ok()) << "a commit does not wait for the interval fsync";
  const observe::Histogram& syncs = metrics_->GetHistogram("seedance_queue_fsync_seconds", "", {});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (syncs.Count() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(syncs.Count(), 3u) << "two failed fsyncs, then one that succeeded, then none";
  EXPECT_EQ(Counter("seedance_queue_fsync_failures_total"), 2u);
  EXPECT_EQ(Drain(*q->OpenCursor("out", {Output::kMain})).size(), 10u) << "records lost";
}

}  // namespace
}  // namespace seedance::storage
