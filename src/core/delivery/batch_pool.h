// BatchPool: a sink's batches, reused once the sink and the runner have let go of them
// (use_count 1): the pool holds the shared_ptr, so neither the Batch, its control block nor its
// vector of events is allocated again in steady state. What the pool keeps is not counted by
// the memory budget, so it keeps little: see Trim(). Not thread-safe (the runner's lock).
#pragma once

#include <memory>
#include <vector>

#include "core/delivery/batch_source.h"
#include "observe/metrics.h"
#include "seedance/sink.h"

namespace seedance::delivery {

class BatchPool {
 public:
  // `source` takes what a trimmed batch lets go (BatchSource::Truncate).
  BatchPool(BatchSource& source, observe::Counter& hits, observe::Counter& misses)
      : source_(source), hits_(hits), misses_(misses) {}

  // A batch nobody else holds, or a new one.
  std::shared_ptr<Batch> Take();
  // After a batch was used, before its holder lets go of it: free pooled batches keep their
  // events' storage for reuse, but only a few (4), of at most 16 events each, without large
  // payloads. The batch just finished is still held, so it keeps its storage for the next one
  // (under load the next batch is as large); it is trimmed next time if unused.
  void Trim();
  // Frees at once the storage of free batches whose events hold large payloads.
  void ReleaseLarge();

  size_t size() const { return pool_.size(); }

 private:
  BatchSource& source_;
  observe::Counter& hits_;
  observe::Counter& misses_;
  std::vector<std::shared_ptr<Batch>> pool_;
};

}  // namespace seedance::delivery
