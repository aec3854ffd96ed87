#include "sinks/prometheus/remote_write_request.h"

#include <gtest/gtest.h>

#include <bit>

#include "util/protobuf_reader.h"

namespace seedance::sinks {
namespace {

struct ReadSeries {
  Labels labels;
  std::vector<std::pair<int64_t, double>> samples;
};

// The request read back with the project's wire reader, checking each field's number and type.
std::vector<ReadSeries> ReadWriteRequest(std::string_view body) {
  using util::ProtobufField;
  using util::ProtobufReader;
  std::vector<ReadSeries> out;
  ProtobufReader r(body);
  ProtobufField f;
  while (r.Next(&f)) {
    EXPECT_EQ(f.number * 8 + f.wire_type, (1u << 3) | 2);  // WriteRequest.timeseries
    ReadSeries s;
    ProtobufReader ts(f.bytes);
    ProtobufField g;
    while (ts.Next(&g)) {
      ProtobufReader m(g.bytes);
      ProtobufField a, b;
      EXPECT_TRUE(m.Next(&a) && m.Next(&b));
      EXPECT_FALSE(m.Next(&f));
      if (g.number == 1) {  // TimeSeries.labels: name = 1, value = 2
        EXPECT_EQ(a.number * 8 + a.wire_type, (1u << 3) | 2);
        EXPECT_EQ(b.number * 8 + b.wire_type, (2u << 3) | 2);
        s.labels.emplace_back(std::string(a.bytes), std::string(b.bytes));
      } else {  // TimeSeries.samples: double value = 1, int64 timestamp = 2
        EXPECT_EQ(g.number, 2u);
        EXPECT_EQ(a.number * 8 + a.wire_type, (1u << 3) | 1);
        EXPECT_EQ(b.number * 8 + b.wire_type, (2u << 3) | 0);
        s.samples.emplace_back(static_cast<int64_t>(b.number_value),
                               std::bit_cast<double>(a.number_value));
      }
    }
    EXPECT_TRUE(ts.error().empty()) << ts.error();
    out.push_back(std::move(s));
  }
  EXPECT_TRUE(r.error().empty()) << r.error();
  return out;
}

SeriesSample Sample(std::string name, std::string host, double v, int64_t t) {
  return {.labels = {{"__name__", std::move(name)}, {"host", std::move(host)}},
          .value = v,
          .timestamp_ms = t};
}

TEST(RemoteWriteRequestTest, EachSeriesOnceWithItsSamplesInTimeOrder) {
  const std::vector<SeriesSample> samples = {Sample("up", "a", 1, 3000), Sample("up", "b", 0, 1000),
                                             Sample("up", "a", 2, 1000), Sample("up", "a", 3, 2000),
                                             Sample("up", "a", 4, 1000)};
  std::string body = "pre";  // appended to
  AppendWriteRequest(samples, body);
  ASSERT_EQ(body.substr(0, 3), "pre");
  const auto series = ReadWriteRequest(std::string_view(body).substr(3));
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].labels, (Labels{{"__name__", "up"}, {"host", "a"}}));
  // Sorted by time; of the two at 1000, the later one last.
  const std::vector<std::pair<int64_t, double>> a = {{1000, 2}, {1000, 4}, {2000, 3}, {3000, 1}};
  EXPECT_EQ(series[0].samples, a);
  EXPECT_EQ(series[1].labels[1].second, "b");
  EXPECT_EQ(series[1].samples.size(), 1u);
}

TEST(RemoteWriteRequestTest, NegativeTimesAndLargeSeriesReadBack) {
  std::vector<SeriesSample> samples;
  for (int i = 0; i < 3000; ++i) samples.push_back(Sample("m", std::string(50, 'h'), i, i - 5));
  std::string body;
  AppendWriteRequest(samples, body);
  const auto series = ReadWriteRequest(body);
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].samples.size(), 3000u);
  EXPECT_EQ(series[0].samples.front(), (std::pair<int64_t, double>{-5, 0}));
  EXPECT_EQ(series[0].samples.back(), (std::pair<int64_t, double>{2994, 2999}));
}

TEST(RemoteWriteRequestTest, NoSamplesIsAnEmptyRequest) {
  std::string body;
  AppendWriteRequest({}, body);
  EXPECT_TRUE(body.empty());
}

}  // namespace
}  // namespace seedance::sinks
