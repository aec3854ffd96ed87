// Checkpointer: what a batch changed is restored after a restart; a processor that refuses its
// state stops the start with kDataLoss naming it.
#include "core/checkpointer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace seedance {
namespace {

namespace fs = std::filesystem;

// Keeps a key → value map; what changed since the last TakeChangedState is saved.
class CountingProcessor : public Processor {
 public:
  void Process(Event&&, ProcessorOutput&) override {}
  bool stateful() const override { return true; }
  Status RestoreState(std::string_view key, std::string_view value) override {
    if (refuse) return InvalidArgumentError("cannot read it");
    state[std::string(key)] = std::string(value);
    return Status::Ok();
  }
  void TakeChangedState(const StateSink& sink) override {
    for (const auto& key : changed) sink(key, state[key]);
    changed.clear();
  }
  void Set(const std::string& key, const std::string& value) {
    state[key] = value;
    changed.push_back(key);
  }
  std::map<std::string, std::string> state;
  std::vector<std::string> changed;
  bool refuse = false;
};

class CheckpointerTest : public ::testing::Test {
 protected:
  CheckpointerTest() {
    queue_.data_dir =
        (fs::temp_directory_path() / ("checkpointer_test_" + std::to_string(::getpid()))).string();
    fs::remove_all(queue_.data_dir);
    fs::create_directories(queue_.data_dir);
  }
  ~CheckpointerTest() override { fs::remove_all(queue_.data_dir); }

  Result<std::unique_ptr<Checkpointer>> Open(CountingProcessor& p) {
    return Checkpointer::Open(queue_, {{"window", &p}}, redelivery_, positions_, metrics_);
  }

  storage::QueueSettings queue_;
  observe::MetricsRegistry metrics_;
  RedeliveryGuard redelivery_;
  StreamPositions positions_;
};

TEST_F(CheckpointerTest, WhatABatchChangedIsRestoredAfterARestart) {
  {
    CountingProcessor p;
    auto c = Open(p);
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    p.Set("sensor/1", "41");
    p.Set("sensor/2", "7");
    ASSERT_TRUE((*c)->Save([] { return false; }));
    p.Set("sensor/1", "42");
    ASSERT_TRUE((*c)->Save([] { return false; }));
  }
  CountingProcessor restored;
  auto c = Open(restored);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(restored.state,
            (std::map<std::string, std::string>{{"sensor/1", "42"}, {"sensor/2", "7"}}));
}

TEST_F(CheckpointerTest, AProcessorRefusingItsStateStopsTheStartNamingIt) {
  {
    CountingProcessor p;
    auto c = Open(p);
    ASSERT_TRUE(c.has_value());
    p.Set("k", "v");
    ASSERT_TRUE((*c)->Save([] { return false; }));
  }
  CountingProcessor refusing;
  refusing.refuse = true;
  auto c = Open(refusing);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code(), StatusCode::kDataLoss);
  EXPECT_NE(c.error().message().find("processor \"window\""), std::string::npos)
      << c.error().message();
}

}  // namespace
}  // namespace seedance
