#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <unistd.h>

#include "bench/bench_job.h"
#include "bench/compare.h"
#include "bench/delivery_recorder.h"
#include "bench/report.h"
#include "bench/stamp.h"
#include "config/config.h"
#include "plugins/builtin_plugins.h"

namespace seedance::bench {
namespace {

std::vector<Stamp> Stamps(std::string_view text) {
  std::vector<Stamp> out;
  ForEachStamp(text, [&](const Stamp& s) { out.push_back(s); });
  return out;
}

TEST(StampTest, FoundInArraysNdjsonAndEscapedEnvelopes) {
  auto arr = Stamps(R"([{"bench_seq":1,"bench_ns":100,"t":1},{"bench_seq":2,"bench_ns":200}])");
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_EQ(arr[1].seq, 2u);
  EXPECT_EQ(arr[1].sent_ns, 200);
  auto nd = Stamps("{\"bench_seq\": 7, \"bench_ns\": 70}\n{\"bench_seq\":8,\"bench_ns\":80}\n");
  ASSERT_EQ(nd.size(), 2u);
  EXPECT_EQ(nd[0].seq, 7u);
  auto escaped = Stamps(R"({"payload":"{\"bench_seq\":3,\"bench_ns\":30}"})");
  ASSERT_EQ(escaped.size(), 1u);
  EXPECT_EQ(escaped[0].sent_ns, 30);
}

TEST(StampTest, IncompleteStampsAreSkipped) {
  // A seq without its ns, then a complete one: only the complete one counts.
  auto s = Stamps(R"([{"bench_seq":1},{"bench_seq":2,"bench_ns":20},{"bench_seq":"x"}])");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].seq, 2u);
}

TEST(StampTest, StampedTemplateKeepsTheObject) {
  EXPECT_EQ(*StampedTemplate(R"({"t":1})"), R"({"bench_seq":{n},"bench_ns":{now_ns},"t":1})");
  EXPECT_EQ(*StampedTemplate("{}"), R"({"bench_seq":{n},"bench_ns":{now_ns}})");
  EXPECT_FALSE(StampedTemplate("[1,2]").has_value());
}

TEST(DeliveryRecorderTest, CountsEachSequenceOnce) {
  DeliveryRecorder r;
  r.Record({5, 1'000'000}, 3'000'000);
  r.Record({5, 1'000'000}, 9'000'000);
  r.Record({6, 2'000'000}, 3'000'000);
  EXPECT_EQ(r.unique(), 2u);
  EXPECT_EQ(r.duplicates(), 1u);
  EXPECT_EQ(r.first_sent_ns(), 1'000'000);
  auto all = r.AllLatenciesMs();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_DOUBLE_EQ(all[0], 2.0);
  EXPECT_EQ(r.TakeInterval().size(), 2u);
  EXPECT_TRUE(r.TakeInterval().empty());
}

TEST(ReportTest, PercentilesAreNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(Percentile(v, 0.50), 50);
  EXPECT_EQ(Percentile(v, 0.95), 95);
  EXPECT_EQ(Percentile(v, 0.99), 99);
  EXPECT_EQ(Percentile(v, 1.0), 100);
  std::vector<double> empty;
  EXPECT_EQ(Percentile(empty, 0.5), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 2, 3}), 2.5);
}

TEST(ReportTest, BucketsMatchTheMetricsHistogram) {
  // Bounds are inclusive upper bounds, as in Prometheus: 0.1 ms falls in the first bucket.
  auto counts = BucketCounts({0.1, 0.2, 5000, 20000});
  ASSERT_EQ(counts.size(), LatencyBoundsMs().size() + 1);
  EXPECT_EQ(counts[0], 1u);
  EXPECT_EQ(counts[1], 1u);
  EXPECT_EQ(counts.back(), 1u);  // 20 s is beyond the last bound (10 s)
}

std::string Report(double throughput, double p99, std::vector<double> run_p99 = {}) {
  std::string runs;
  for (double r : run_p99) {
    runs += (runs.empty() ? "" : ",") + std::string(R"({"throughput_eps":)") +
            std::to_string(throughput) + R"(,"latency_ms":{"p50":1,"p95":2,"p99":)" +
            std::to_string(r) + "}}";
  }
  return R"({"throughput_eps":)" + std::to_string(throughput) +
         R"(,"latency_ms":{"p50":1,"p95":2,"p99":)" + std::to_string(p99) +
         R"(},"rss_peak_kb":1000,"runs":[)" + runs + "]}";
}

const CompareRow* Row(const Comparison& c, const std::string& figure) {
  for (const auto& r : c.rows) {
    if (r.figure == figure) return &r;
  }
  return nullptr;
}

TEST(CompareTest, RegressionNeedsTheBadDirectionPastTheThreshold) {
  CompareOptions o;  // 5%
  auto slower = CompareReports(Report(1000, 10), Report(1000, 10.6), o);
  ASSERT_TRUE(slower.has_value());
  EXPECT_TRUE(slower->regressed);
  EXPECT_EQ(Row(*slower, "latency_ms.p99")->verdict, "REGRESSED");
  auto within = CompareReports(Report(1000, 10), Report(1000, 10.4), o);
  EXPECT_FALSE(within->regressed);
  auto faster = CompareReports(Report(1000, 10), Report(1000, 5), o);
  EXPECT_FALSE(faster->regressed);
  EXPECT_EQ(Row(*faster, "latency_ms.p99")->verdict, "better");
  // Throughput is higher-is-better: a 6% drop regresses, a 50% rise does not.
  EXPECT_TRUE(CompareReports(Report(1000, 10), Report(940, 10), o)->regressed);
  EXPECT_FALSE(CompareReports(Report(1000, 10), Report(1500, 10), o)->regressed);
}

TEST(CompareTest, PerFigureThresholds) {
  CompareOptions o;
  o.metric_threshold_pct["latency_ms.p99"] = 10;
  EXPECT_FALSE(CompareReports(Report(1000, 10), Report(1000, 10.9), o)->regressed);
  EXPECT_TRUE(CompareReports(Report(1000, 10), Report(1000, 11.1), o)->regressed);
  o.metric_threshold_pct["latency_ms.p99x"] = 10;
  auto bad = CompareReports(Report(1000, 10), Report(1000, 10), o);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("did you mean \"latency_ms.p99\""), std::string::npos);
}

TEST(CompareTest, RepeatedRunsCompareMediansAndSaySo) {
  // Top-level p99 says 10 → 10, but the runs' medians are 10 → 20: the runs decide.
  auto c = CompareReports(Report(1000, 10, {9, 10, 11}), Report(1000, 10, {19, 20, 50}), {});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->baseline_runs, 3);
  const CompareRow* p99 = Row(*c, "latency_ms.p99");
  EXPECT_DOUBLE_EQ(p99->target, 20);
  EXPECT_NEAR(p99->baseline_spread_pct, 20, 1e-9);  // (11 − 9) / 10
  EXPECT_TRUE(c->regressed);
  EXPECT_NE(FormatComparison(*c).find("comparing medians"), std::string::npos);
}

TEST(CompareTest, RejectsWhatIsNotAReport) {
  EXPECT_FALSE(CompareReports("{}", Report(1, 1), {}).has_value());
  EXPECT_FALSE(CompareReports("nonsense", Report(1, 1), {}).has_value());
  EXPECT_FALSE(ParsePercent("five").has_value());
  EXPECT_EQ(*ParsePercent("2.5%"), 2.5);
}

class BenchJobTest : public ::testing::Test {
 protected:
  Result<BenchJob> Make(const std::string& yaml, BenchJobOptions options = {}) {
    // One file per test and process: ctest runs the tests of this binary in parallel.
    path_ = ::testing::TempDir() + "/bench_job_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
            std::to_string(::getpid()) + ".yaml";
    std::ofstream(path_) << yaml;
    PluginRegistry registry;
    RegisterBuiltinPlugins(registry);
    auto config = config::LoadConfigFile(path_, registry);
    EXPECT_TRUE(config.has_value()) << config.error().message();
    options.config_path = path_;
    options.receiver_url = "http://127.0.0.1:9";
    options.workdir = "/tmp/w";
    return MakeBenchJob(*config, options);
  }
  void TearDown() override {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  std::string path_;
};

TEST_F(BenchJobTest, MqttJobPublishesOnAMatchingTopicAndSinksPointAtTheReceiver) {
  auto job = Make(R"(
sources:
  - type: mqtt
    uri: "tcp://broker.local:1883"
    topic: "$share/g/sensor/+/temperature/#"
sinks:
  - type: http
    endpoint: "https://api.example.com/v1/metrics"
)");
  ASSERT_TRUE(job.has_value()) << job.error().message();
  EXPECT_TRUE(job->mqtt);
  EXPECT_EQ(job->host, "broker.local");
  EXPECT_EQ(job->topic, "sensor/bench/temperature/bench");
  EXPECT_EQ(job->http_sinks, 1);
  EXPECT_NE(job->yaml.find("http://127.0.0.1:9/v1/metrics"), std::string::npos);
  EXPECT_NE(job->yaml.find("/tmp/w/data"), std::string::npos);
  EXPECT_NE(job->payload_template.find("bench_seq"), std::string::npos);
}

TEST_F(BenchJobTest, GeneratorJobGetsCountRateAndStampedPayload) {
  BenchJobOptions o;
  o.count = 500;
  o.rate = 100;
  auto job = Make(R"(
sources:
  - type: generate
    payload: '{"v":{n}}'
sinks:
  - type: file
    path: /var/log/out.ndjson
)",
                  o);
  ASSERT_TRUE(job.has_value()) << job.error().message();
  EXPECT_FALSE(job->mqtt);
  ASSERT_EQ(job->tail_files.size(), 1u);
  EXPECT_EQ(job->tail_files[0], "/tmp/w/sink-0.ndjson");
  YAML::Node source = YAML::Load(job->yaml)["sources"][0];
  EXPECT_EQ(source["count"].as<int>(), 500);
  EXPECT_EQ(source["payload"].as<std::string>(),
            R"({"bench_seq":{n},"bench_ns":{now_ns},"v":{n}})");
}

TEST_F(BenchJobTest, UnmeasurableJobsAreRefusedWithTheReason) {
  auto job = Make(R"(
sources:
  - type: generate
sinks:
  - type: stdout
)");
  ASSERT_FALSE(job.has_value());
  EXPECT_NE(job.error().message().find("sink \"stdout\" is stdout"), std::string::npos)
      << job.error().message();
}

}  // namespace
}  // namespace seedance::bench
