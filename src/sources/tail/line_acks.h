// LineAcks: the lines of the tail source in the pipeline, by token, until the pipeline says
// each is stored (from its own thread). The source then moves each file's stored position
// past them: the pipeline stores a source's events in the order they were emitted, so no
// earlier line is still pending. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace seedance::sources {

struct StoredLine {
  uint64_t file = 0;   // the source's id of the file
  uint64_t epoch = 0;  // of its content (+1 at each truncation: older lines are stale)
  uint64_t end = 0;    // offset just past the line
  bool operator==(const StoredLine&) const = default;
};

class LineAcks {
 public:
  // A token for a line about to be emitted.
  uint64_t Register(const StoredLine& line);
  // The line was refused after all: its token is forgotten (and reused).
  void Withdraw(uint64_t token);
  // A line that needs no acknowledgement (blank, the end of a too long one): stored once
  // everything emitted before it is.
  void Done(const StoredLine& line);
  // The pipeline's acknowledgement of `token` (any thread); unknown tokens are ignored.
  void Acknowledge(uint64_t token);
  // The lines stored since the last call, in the order they were acknowledged.
  std::vector<StoredLine> TakeStored();

 private:
  std::mutex mu_;
  uint64_t next_token_ = 1;
  std::map<uint64_t, StoredLine> in_flight_;
  std::vector<StoredLine> stored_;
};

}  // namespace seedance::sources
