#include "sinks/prometheus/remote_write_request.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>

namespace seedance::sinks {
namespace {

// A minimal reader of the wire format, to read the request back.
struct Reader {
  std::string_view in;
  size_t pos = 0;
  bool done() const { return pos >= in.size(); }
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto b = static_cast<unsigned char>(in.at(pos++));
      v |= uint64_t{b & 0x7Fu} << shift;
      if (b < 0x80) return v;
    }
  }
  std::string_view Bytes() {
    const size_t n = Varint();
    std::string_view s = in.substr(pos, n);
    EXPECT_EQ(s.size(), n);
    pos += n;
    return s;
  }
  uint64_t Fixed64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(in.at(pos++))} << (8 * i);
    return v;
  }
};

struct ReadSeries {
  Labels labels;
  std::vector<std::pair<int64_t, double>> samples;
};

std::vector<ReadSeries> ReadWriteRequest(std::string_view body) {
  std::vector<ReadSeries> out;
  Reader r{body};
  while (!r.done()) {
    EXPECT_EQ(r.Varint(), (1u << 3) | 2);  // WriteRequest.timeseries
    Reader ts{r.Bytes()};
    ReadSeries s;
    while (!ts.done()) {
      const uint64_t tag = ts.Varint();
      Reader m{ts.Bytes()};
      if (tag == ((1u << 3) | 2)) {  // TimeSeries.labels
        EXPECT_EQ(m.Varint(), (1u << 3) | 2);
        std::string name(m.Bytes());
        EXPECT_EQ(m.Varint(), (2u << 3) | 2);
        s.labels.emplace_back(name, std::string(m.Bytes()));
      } else {
        EXPECT_EQ(tag, (2u << 3) | 2);  // TimeSeries.samples
        EXPECT_EQ(m.Varint(), (1u << 3) | 1);
        const double v = std::bit_cast<double>(m.Fixed64());
        EXPECT_EQ(m.Varint(), (2u << 3) | 0);
        s.samples.emplace_back(static_cast<int64_t>(m.Varint()), v);
      }
      EXPECT_TRUE(m.done());
    }
    out.push_back(std::move(s));
  }
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
