#include "storage/sink_cursor.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "storage/cursor_file.h"
#include "storage/durable_queue.h"
#include "storage/event_codec.h"

namespace seedance::storage {

SinkCursor::SinkCursor(DurableQueue& queue, std::string name, std::vector<Output> inputs,
                       uint64_t start)
    : queue_(queue),
      name_(std::move(name)),
      wanted_(kOutputCount, false),
      reader_(*queue.log_, start),
      read_next_(start),
      committed_(start),
      saved_(start),
      writer_(queue.log_->fs(), queue.CursorPath(name_)) {
  for (Output o : inputs) wanted_[static_cast<int>(o)] = true;
  spare_.reserve(kSpareEvents);
}

SinkCursor::~SinkCursor() {
  std::lock_guard<std::mutex> lock(queue_.cursors_mu_);
  auto& v = queue_.cursors_;
  v.erase(std::remove(v.begin(), v.end(), this), v.end());
}

void SinkCursor::Decode(uint64_t sequence, uint8_t tag, std::string_view payload,
                        std::vector<Event>* out, size_t* n) {
  if (tag >= wanted_.size() || !wanted_[tag]) return;
  // Decode into the element already there (its strings keep their storage), a spare one, or
  // a new one.
  if (*n == out->size()) {
    if (spare_.empty()) {
      out->emplace_back();
    } else {
      spare_bytes_ -= spare_.back().payload.capacity();
      out->push_back(std::move(spare_.back()));
      spare_.pop_back();
    }
  }
  Event& e = (*out)[*n];
  Status s = storage::DecodeEvent(payload, &e);
  if (!s.ok()) {  // its CRC held, its content does not: lost like a damaged record
    queue_.ReportGaps(name_,
                      {storage::SequenceGap{sequence, sequence, storage::LossReason::kCorrupt}});
    return;
  }
  e.queue_sequence = sequence;
  ++*n;
}

void SinkCursor::ReportGaps(storage::QueueReader& reader) {
  if (reader.has_gaps()) queue_.ReportGaps(name_, reader.TakeGaps());
}

void SinkCursor::Truncate(std::vector<Event>* out, size_t n) {
  while (out->size() > n && spare_.size() < kSpareEvents) {
    Event& e = out->back();
    // Over the byte bound the event is kept without its payload's storage.
    if (spare_bytes_ + e.payload.capacity() > kSpareBytes) std::string().swap(e.payload);
    spare_bytes_ += e.payload.capacity();
    spare_.push_back(std::move(e));
    out->pop_back();
  }
  out->resize(n);
}

void SinkCursor::Return(uint64_t first, uint64_t last) { returned_.emplace_back(first, last); }

bool SinkCursor::ReadAgain(uint64_t first, uint64_t last, std::vector<Event>* out, size_t* n) {
  // The range is not finished, so its segments are still there (unless drop_oldest deleted
  // them: then what is left of it).
  storage::QueueReader again(queue_.log(), first);
  uint64_t seq = 0;
  uint8_t tag = 0;
  std::string_view payload;
  while (again.Next(&seq, &tag, &payload) && seq <= last) Decode(seq, tag, payload, out, n);
  ReportGaps(again);  // found again by a retry, a gap is still counted once (the queue's)
  read_error_ = again.error();
  return read_error_ == 0;
}

bool SinkCursor::Read(size_t max, std::vector<Event>* out, uint64_t* first, uint64_t* last) {
  size_t n = 0;
  read_error_ = 0;
  if (!returned_.empty()) {
    std::tie(*first, *last) = returned_.front();
    // A range read again in part is not a batch: finishing it would lose the rest.
    const bool whole = ReadAgain(*first, *last, out, &n);
    Truncate(out, whole ? n : 0);
    if (!whole) return false;
    returned_.pop_front();
    return true;
  }
  *first = read_next_;
  bool any = false;
  uint64_t seq = 0;
  uint8_t tag = 0;
  std::string_view payload;
  size_t scanned = 0;
  // Records read from a segment that drop_oldest deleted meanwhile (the reader still had it
  // open): not delivered, so counted as dropped. read_next_ is stored before the check, and
  // DropOldest reads it after the deletion: each record is delivered or counted, never both.
  std::optional<storage::SequenceGap> dropped;
  while (n < max && scanned < 4 * max + 64 && reader_.Next(&seq, &tag, &payload)) {
    ++scanned;
    any = true;
    *last = seq;
    read_next_ = seq + 1;
    if (seq < queue_.log().first_sequence()) {
      if (!dropped) dropped = storage::SequenceGap{seq, seq, storage::LossReason::kDropped};
      dropped->last = seq;
      continue;
    }
    Decode(seq, tag, payload, out, &n);
  }
  if (dropped) queue_.ReportGaps(name_, {*dropped});
  ReportGaps(reader_);
  if (!any) {  // `out` untouched: its events keep their storage for the next read
    read_error_ = reader_.error();
    return false;
  }
  Truncate(out, n);
  return true;
}

void SinkCursor::Done(uint64_t first, uint64_t last) {
  finished_.emplace_back(first, last);
  std::sort(finished_.begin(), finished_.end());
  uint64_t c = committed_.load();
  while (!finished_.empty() && finished_.front().first <= c) {
    c = std::max(c, finished_.front().second + 1);
    finished_.erase(finished_.begin());
  }
  committed_.store(c);
  MaybeSave(std::chrono::steady_clock::now());
  queue_.CollectGarbage();
}

uint64_t SinkCursor::Backlog() const {
  uint64_t next = queue_.log_->next_sequence();
  uint64_t backlog = next > read_next_ ? next - read_next_ : 0;
  for (const auto& [first, last] : returned_) backlog += last - first + 1;
  return backlog;
}

void SinkCursor::MaybeSave(std::chrono::steady_clock::time_point now) {
  {
    std::lock_guard<std::mutex> lock(save_mu_);
    if (now - last_save_ < storage::kCursorSaveInterval || committed_.load() == saved_) return;
    last_save_ = now;
  }
  Save();
}

void SinkCursor::Save() {
  std::lock_guard<std::mutex> lock(save_mu_);
  const uint64_t c = committed_.load();
  if (c == saved_) return;
  if (writer_.Write(c)) saved_ = c;
}

}  // namespace seedance::storage
