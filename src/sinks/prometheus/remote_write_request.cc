#include "sinks/prometheus/remote_write_request.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "util/protobuf_writer.h"

namespace seedance::sinks {
namespace {

// The label set as one key. 0xFF never occurs in UTF-8, so names and values cannot run into
// each other.
std::string SeriesKey(const Labels& labels) {
  std::string key;
  for (const auto& [name, value] : labels) {
    key += name;
    key += '\xff';
    key += value;
    key += '\xff';
  }
  return key;
}

}  // namespace

void AppendWriteRequest(const std::vector<SeriesSample>& samples, std::string& out) {
  // The series, in the order they first appear; each with its samples' indexes.
  std::unordered_map<std::string, size_t> index;
  std::vector<std::vector<size_t>> series;
  for (size_t i = 0; i < samples.size(); ++i) {
    auto [it, added] = index.try_emplace(SeriesKey(samples[i].labels), series.size());
    if (added) series.emplace_back();
    series[it->second].push_back(i);
  }
  util::ProtobufWriter w(out);
  for (std::vector<size_t>& members : series) {
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return samples[a].timestamp_ms < samples[b].timestamp_ms;
    });
    const size_t ts = w.BeginMessage(1);
    for (const auto& [name, value] : samples[members.front()].labels) {
      const size_t label = w.BeginMessage(1);
      w.Bytes(1, name);
      w.Bytes(2, value);
      w.EndMessage(label);
    }
    for (size_t i : members) {
      const size_t sample = w.BeginMessage(2);
      w.Double(1, samples[i].value);
      w.Int64(2, samples[i].timestamp_ms);
      w.EndMessage(sample);
    }
    w.EndMessage(ts);
  }
}

}  // namespace seedance::sinks
