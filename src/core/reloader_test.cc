// Reloader: changed processor parameters are checked and applied between batches, all or
// nothing; a changed processor list needs a restart; unreloaded sections are named.
#include "core/reloader.h"

#include <gtest/gtest.h>

#include <thread>

#include "plugins/builtin_plugins.h"

namespace seedance {
namespace {

// Records reconfigurations; refuses parameters when told to.
class ReconfigurableProcessor : public Processor {
 public:
  void Process(Event&&, ProcessorOutput&) override {}
  Status Reconfigure(const Params&, bool apply) override {
    if (refuse) return InvalidArgumentError("size cannot change");
    (apply ? applied : checked)++;
    return Status::Ok();
  }
  bool refuse = false;
  int checked = 0, applied = 0;
};

config::PipelineConfig Config(const std::string& size1, const std::string& size2,
                              const std::string& sink_path = "/tmp/out") {
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  const std::string text =
      "sources:\n  - type: generate\nprocessors:\n"
      "  - {name: a, type: window, size: " +
      size1 +
      "}\n"
      "  - {name: b, type: window, size: " +
      size2 +
      "}\n"
      "sinks:\n  - {type: file, path: " +
      sink_path + "}\n";
  auto c = config::LoadConfigText(text, "test.yaml", registry);
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message());
  return *c;
}

class ReloaderTest : public ::testing::Test {
 protected:
  // Reload on another thread while this one plays the processing thread.
  Status ReloadWhileProcessing(const config::PipelineConfig& now,
                               const config::PipelineConfig& next,
                               std::vector<std::string>* ignored) {
    Status result;
    std::atomic<bool> done{false};
    std::thread t([&] {
      result = reloader_.Reload(now, next, ignored);
      done = true;
    });
    while (!done) {
      reloader_.ApplyPending();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    t.join();
    return result;
  }

  ReconfigurableProcessor a_, b_;
  Reloader reloader_{{{"a", &a_}, {"b", &b_}}};
};

TEST_F(ReloaderTest, ChangedParametersAreCheckedThenAppliedBetweenBatches) {
  std::vector<std::string> ignored;
  Status s = ReloadWhileProcessing(Config("10s", "1m"), Config("10s", "2m"), &ignored);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(a_.applied, 0);  // unchanged
  EXPECT_EQ(b_.checked, 1);
  EXPECT_EQ(b_.applied, 1);
  EXPECT_TRUE(ignored.empty());
}

TEST_F(ReloaderTest, ARefusalAppliesNothing) {
  a_.refuse = true;
  std::vector<std::string> ignored;
  Status s = ReloadWhileProcessing(Config("10s", "1m"), Config("20s", "2m"), &ignored);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("processor \"a\""), std::string::npos) << s.message();
  EXPECT_EQ(b_.applied, 0);
}

TEST_F(ReloaderTest, AChangedProcessorListNeedsARestartAndOtherSectionsAreNamed) {
  std::vector<std::string> ignored;
  config::PipelineConfig fewer = Config("10s", "1m");
  fewer.processors.pop_back();
  EXPECT_EQ(reloader_.Reload(Config("10s", "1m"), fewer, &ignored).code(),
            StatusCode::kFailedPrecondition);
  ignored.clear();
  EXPECT_TRUE(reloader_.Reload(Config("10s", "1m"), Config("10s", "1m", "/tmp/other"), &ignored)
                  .ok());  // nothing for the processors to take: no wait
  EXPECT_EQ(ignored, std::vector<std::string>{"sinks"});
}

}  // namespace
}  // namespace seedance
