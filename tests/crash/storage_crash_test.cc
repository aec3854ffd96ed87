// Crash and fault tests for storage: the durable queue, its sink positions and the checkpoint
// log, driven by one workload through every mutating file operation, as
//   - a crash there (the process dies: the operation and all later ones fail; a write there is
//     torn), then a restart with what the kernel kept (a process crash) or with only what was
//     synced (a power cut);
//   - a single failure there (EIO, ENOSPC) that the workload retries, as the pipeline does.
// After each, a restart on the real file system must show the invariants:
//   - nothing acknowledged is lost (a power cut may lose what the fsync policy allows: with
//     fsync "always" nothing, otherwise no promise and no check beyond the others);
//   - sequence numbers never go backwards (the next one is past every acknowledged record);
//   - the checkpoint holds at least the last state committed before the crash;
//   - the queue opens and takes new records.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <set>

#include "storage/checkpoint_log.h"
#include "storage/durable_queue.h"
#include "testing/fault_file_system.h"

namespace seedance {
namespace {

namespace fs = std::filesystem;
using storage::CheckpointLog;
using testing::FaultFileSystem;

constexpr int kBatches = 10;
constexpr int kBatchSize = 20;

struct Outcome {
  std::set<int> acked;      // Commit returned OK for these
  std::set<int> delivered;  // the sink finished these
  uint64_t acked_next = 1;  // next_sequence after the last successful commit
  int checkpoint = -1;      // the last batch number the checkpoint committed
  bool completed = false;
};

storage::QueueConfig Config(const std::string& dir, storage::QueueConfig::Fsync fsync) {
  storage::QueueConfig c;
  c.data_dir = dir;
  c.segment_bytes = 2048;  // rotations and deletions happen within the workload
  c.fsync.mode = fsync;
  c.fsync.interval = std::chrono::nanoseconds(0);  // every Tick syncs (interval policy)
  return c;
}

CheckpointLog::Fsync CheckpointFsync(storage::QueueConfig::Fsync f) {
  return f == storage::QueueConfig::Fsync::kAlways  ? CheckpointLog::Fsync::kAlways
         : f == storage::QueueConfig::Fsync::kNever ? CheckpointLog::Fsync::kNever
                                                    : CheckpointLog::Fsync::kInterval;
}

Event Ev(int id) {
  Event e;
  e.source = "crash";
  e.topic = "t";
  e.payload = std::to_string(id);
  return e;
}

template <typename F>
bool Retry(F&& f) {  // as the pipeline does: an error is tried again (bounded here)
  for (int i = 0; i < 3; ++i) {
    if (f().ok()) return true;
  }
  return false;
}

// Appends batches, commits them, checkpoints a counter and delivers all but the newest
// records; stops at the first error that retries do not clear.
void Workload(storage::FileSystem& fs, const std::string& dir, storage::QueueConfig::Fsync fsync,
              Outcome* out) {
  observe::MetricsRegistry metrics;
  // A start that fails is tried again, as a supervisor restarts the process.
  Result<std::unique_ptr<storage::DurableQueue>> q = InternalError("not opened");
  for (int i = 0; i < 3 && !q; ++i)
    q = storage::DurableQueue::Open(Config(dir, fsync), metrics, fs);
  if (!q) return;
  auto cursor = (*q)->OpenCursor("out", {Output::kMain});
  Result<std::unique_ptr<CheckpointLog>> cp = InternalError("not opened");
  for (int i = 0; i < 3 && !cp; ++i) {
    cp = CheckpointLog::Open(dir + "/checkpoint", CheckpointFsync(fsync),
                             std::chrono::nanoseconds(0), fs);
  }
  if (!cp) return;
  int id = 0;
  std::vector<Event> batch;
  for (int b = 0; b < kBatches; ++b) {
    std::vector<int> ids;
    for (int i = 0; i < kBatchSize; ++i, ++id) {
      if (!Retry([&] { return (*q)->Append(Output::kMain, Ev(id)); })) return;
      ids.push_back(id);
    }
    if (!Retry([&] { return (*q)->Commit(); })) return;
    out->acked.insert(ids.begin(), ids.end());
    out->acked_next = (*q)->log().next_sequence();
    // Two entries a commit: a torn commit must not keep one without the other.
    (*cp)->Put("w", "batch", std::to_string(b));
    (*cp)->Put("w", "mirror", std::to_string(b));
    if (!Retry([&] { return (*cp)->Commit(); })) return;
    out->checkpoint = b;
    uint64_t first = 0, last = 0;
    if (cursor->Read(kBatchSize + 5, &batch, &first, &last)) {
      for (const Event& e : batch) out->delivered.insert(std::stoi(e.payload));
      cursor->Done(first, last);
    }
    (*q)->Tick();
    (*cp)->Tick();
  }
  out->completed = true;
}

class StorageCrashTest : public ::testing::TestWithParam<storage::QueueConfig::Fsync> {
 protected:
  StorageCrashTest() {
    root_ =
        (fs::temp_directory_path() / ("storage_crash_test_" + std::to_string(::getpid()))).string();
  }
  ~StorageCrashTest() override { fs::remove_all(root_); }
  std::string Fresh() {
    fs::remove_all(root_);
    fs::create_directories(root_);
    return root_;
  }
  uint64_t OperationsOfACleanRun() {
    FaultFileSystem faults(Fresh());
    Outcome out;
    Workload(faults, root_, GetParam(), &out);
    EXPECT_TRUE(out.completed);
    EXPECT_EQ(out.acked.size(), static_cast<size_t>(kBatches * kBatchSize));
    return faults.operations();
  }
  // Restarts on the real file system and checks the invariants; `strict`: nothing
  // acknowledged may be missing.
  void Verify(const Outcome& out, bool strict, const std::string& where) {
    SCOPED_TRACE(where);
    observe::MetricsRegistry metrics;
    auto q = storage::DurableQueue::Open(Config(root_, GetParam()), metrics);
    ASSERT_TRUE(q.has_value()) << q.error().ToString();
    auto cursor = (*q)->OpenCursor("out", {Output::kMain});
    std::set<int> got;
    std::vector<Event> batch;
    uint64_t first = 0, last = 0;
    while (cursor->Read(100, &batch, &first, &last)) {
      for (const Event& e : batch) got.insert(std::stoi(e.payload));
      cursor->Done(first, last);
    }
    if (strict) {
      EXPECT_GE((*q)->log().next_sequence(), out.acked_next) << "a sequence went backwards";
      for (int id : out.acked) {
        if (!out.delivered.count(id) && !got.count(id)) {
          ADD_FAILURE() << "acknowledged id " << id << " lost";
          break;
        }
      }
      auto cp = CheckpointLog::Open(root_ + "/checkpoint", CheckpointLog::Fsync::kNever,
                                    std::chrono::seconds(1));
      ASSERT_TRUE(cp.has_value()) << cp.error().ToString();
      if (out.checkpoint >= 0) {
        const auto& e = (*cp)->entries();
        ASSERT_TRUE(e.count("w") && e.at("w").count("batch")) << "checkpoint lost";
        EXPECT_GE(std::stoi(e.at("w").at("batch")), out.checkpoint);
      }
    }
    {
      auto cp = CheckpointLog::Open(root_ + "/checkpoint", CheckpointLog::Fsync::kNever,
                                    std::chrono::seconds(1));
      ASSERT_TRUE(cp.has_value()) << cp.error().ToString();
      const auto& e = (*cp)->entries();
      if (e.count("w")) {
        const auto& w = e.at("w");
        EXPECT_EQ(w.count("batch"), w.count("mirror")) << "half a checkpoint commit kept";
        if (w.count("batch") && w.count("mirror")) {
          EXPECT_EQ(w.at("batch"), w.at("mirror")) << "half a checkpoint commit kept";
        }
      }
    }
    // The queue takes new records after any of it.
    ASSERT_TRUE((*q)->Append(Output::kMain, Ev(1'000'000)).ok());
    ASSERT_TRUE((*q)->Commit().ok());
    bool seen = false;
    while (cursor->Read(100, &batch, &first, &last)) {
      for (const Event& e : batch) seen = seen || e.payload == "1000000";
    }
    EXPECT_TRUE(seen) << "a record appended after the restart is not read";
  }
  std::string root_;
};

TEST_P(StorageCrashTest, ProcessCrashAtEveryOperationLosesNothingAcknowledged) {
  const uint64_t total = OperationsOfACleanRun();
  ASSERT_GT(total, 50u);
  for (uint64_t k = 1; k <= total; ++k) {
    FaultFileSystem faults(Fresh());
    faults.CrashAtOperation(k);
    Outcome out;
    Workload(faults, root_, GetParam(), &out);
    Verify(out, /*strict=*/true, "process crash at " + faults.crash_point());
    if (HasFailure()) return;
  }
}

TEST_P(StorageCrashTest, PowerCutAtEveryOperationKeepsWhatThePolicySynced) {
  const uint64_t total = OperationsOfACleanRun();
  for (uint64_t k = 1; k <= total; ++k) {
    FaultFileSystem faults(Fresh());
    faults.CrashAtOperation(k);
    Outcome out;
    Workload(faults, root_, GetParam(), &out);
    const std::string where = "power cut at " + faults.crash_point();
    faults.DropUnsyncedData();
    Verify(out, /*strict=*/GetParam() == storage::QueueConfig::Fsync::kAlways, where);
    if (HasFailure()) return;
  }
}

TEST_P(StorageCrashTest, OneFailureAtEveryOperationIsRetriedWithoutLoss) {
  const uint64_t total = OperationsOfACleanRun();
  for (int err : {EIO, ENOSPC}) {
    for (uint64_t k = 1; k <= total; ++k) {
      FaultFileSystem faults(Fresh());
      faults.FailOperation(k, err);
      Outcome out;
      Workload(faults, root_, GetParam(), &out);
      EXPECT_TRUE(out.completed) << "operation " << k << " failing with " << err
                                 << " was not recovered by a retry";
      Verify(out, /*strict=*/true,
             "failure " + std::to_string(err) + " at operation " + std::to_string(k));
      if (HasFailure()) return;
    }
  }
}

TEST_P(StorageCrashTest, ShortWritesEverywhereLoseNothing) {
  FaultFileSystem faults(Fresh());
  faults.SetShortWrites(true);
  Outcome out;
  Workload(faults, root_, GetParam(), &out);
  EXPECT_TRUE(out.completed);
  Verify(out, /*strict=*/true, "short writes");
}

INSTANTIATE_TEST_SUITE_P(FsyncPolicies, StorageCrashTest,
                         ::testing::Values(storage::QueueConfig::Fsync::kAlways,
                                           storage::QueueConfig::Fsync::kInterval,
                                           storage::QueueConfig::Fsync::kNever),
                         [](const auto& info) {
                           switch (info.param) {
                             case storage::QueueConfig::Fsync::kAlways:
                               return std::string("Always");
                             case storage::QueueConfig::Fsync::kInterval:
                               return std::string("Interval");
                             default:
                               return std::string("Never");
                           }
                         });

}  // namespace
}  // namespace seedance
