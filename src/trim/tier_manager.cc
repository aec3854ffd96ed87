// TierManager implementation on top of the shared TrimPolicy (see seedance/trim.h).
#include <algorithm>
#include <chrono>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "seedance/trim.h"
#include "trim/access_period.h"
#include "trim/address_index.h"
#include "trim/kept_copies.h"
#include "trim/moves_in_flight.h"
#include "trim/tier_moves.h"
#include "trim/trim_policy.h"
#include "trim/usage_ledger.h"

namespace seedance::trim {
namespace {

// Where a buffer is and how it moves. When it was used is the UsageLedger's, a copy kept on a
// slower tier KeptCopies', a move in flight MovesInFlight'.
struct Buffer {
  uint64_t size = 0;
  int tier = 0;
  void* ptr = nullptr;
  uint64_t uses = 0;
  bool pinned = false;   // never moved: a stable address its block cannot keep
  void* home = nullptr;  // its fast-tier address, kept while moved (Tier::KeepsAddress)
  BufferCodec codec = BufferCodec::kNone;
  // Off the fast tier as its zero-block encoding of this many bytes (0: as it is).
  uint64_t encoded = 0;
  std::string name;
  std::string group;
  AccessPeriod period;  // when it is used again: a prefetch is scheduled before then
};

class TierManagerImpl final : public TierManager {
 public:
  TierManagerImpl(std::vector<std::unique_ptr<Tier>> tiers, PolicyOptions options)
      : tiers_(std::move(tiers)), policy_(options), usage_(options.idle_steps) {
    if (options.async_copies) in_flight_ = std::make_unique<MovesInFlight>();
  }

  Result<BufferId> Register(uint64_t size, std::string name, std::string group,
                            bool stable_address) override {
    // A stable address is one on the fastest tier (a block there may keep it across moves).
    const int tiers = stable_address ? 1 : static_cast<int>(tiers_.size());
    for (int t = 0; t < tiers; ++t) {
      auto p = AllocateOn(t, size, /*keep=*/0, stable_address);
      if (!p) continue;
      BufferId id = next_id_++;
      Buffer b;
      b.size = size;
      b.tier = t;
      b.ptr = *p;
      b.name = std::move(name);
      b.group = std::move(group);
      b.pinned = stable_address && !tiers_[0]->KeepsAddress(b.ptr);
      if (!b.group.empty()) groups_[b.group].insert(id);
      buffers_[id] = std::move(b);
      Index(id, buffers_[id]);
      usage_.Add(id, size, step_);
      UpdateEligible(id, buffers_[id]);
      return id;
    }
    return ResourceExhaustedError(
        (stable_address ? "the fastest tier cannot hold " : "no tier can hold ") +
        std::to_string(size) + " bytes" + (stable_address ? " (a stable-address buffer)" : ""));
  }

  Status Unregister(BufferId id) override {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return NotFoundError("unknown buffer " + std::to_string(id));
    if (usage_.in_use(id)) return FailedPreconditionError("buffer is acquired");
    CallOff(id, it->second);
    DropCopy(id);
    tiers_[it->second.tier]->Free(it->second.ptr);
    if (it->second.home != nullptr) tiers_[0]->Free(it->second.home);  // its reserved address
    usage_.Remove(id);
    if (auto g = groups_.find(it->second.group); g != groups_.end()) {
      g->second.erase(id);
      if (g->second.empty()) groups_.erase(g);
    }
    eligible_.erase(id);
    Unindex(it->second);
    buffers_.erase(it);
    return Status::Ok();
  }

  Result<void*> Acquire(BufferId id) override { return AcquireFor(id, /*write=*/true); }

  Result<const void*> AcquireRead(BufferId id) override {
    auto p = AcquireFor(id, /*write=*/false);
    if (!p) return p.error();
    return static_cast<const void*>(*p);
  }

  Status Release(BufferId id) override {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return NotFoundError("unknown buffer " + std::to_string(id));
    usage_.Release(id, step_);
    return Status::Ok();
  }

  void Step() override {
    ++step_;
    const auto now = std::chrono::steady_clock::now();
    if (step_ > 1) {  // moving average of the time between steps
      const double dt = std::chrono::duration<double>(now - last_step_at_).count();
      step_seconds_ = step_seconds_ <= 0 ? dt : 0.9 * step_seconds_ + 0.1 * dt;
    }
    last_step_at_ = now;
    Reap(/*wait=*/false);
    PrefetchDue();
    usage_.Age(step_);
    TrimReason reason = policy_.Sample(Sample(0), usage_.idle_share());
    if (reason != TrimReason::kNone) TrimFor(reason, 0, /*async=*/in_flight_ != nullptr);
  }

  Status SetCodec(BufferId id, BufferCodec codec) override {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return NotFoundError("unknown buffer " + std::to_string(id));
    it->second.codec = codec;
    return Status::Ok();
  }

  Status Prefetch(BufferId id) override {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return NotFoundError("unknown buffer " + std::to_string(id));
    Reap(/*wait=*/true);
    if (it->second.tier == 0) return Status::Ok();
    SEEDANCE_RETURN_IF_ERROR(MoveUp(id, it->second));
    MarkTouched(id);
    return Status::Ok();
  }

  Status StartPrefetch(BufferId id) override {
    if (in_flight_ == nullptr) return Prefetch(id);
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return NotFoundError("unknown buffer " + std::to_string(id));
    Buffer& b = it->second;
    if (const MovesInFlight::Job* job = in_flight_->Find(id)) {
      if (!job->down) return Status::Ok();  // on its way back already
      CallOff(id, b);                       // wanted again: it stays
    }
    if (b.tier == 0) return Status::Ok();
    SEEDANCE_RETURN_IF_ERROR(StartMoveUp(id, b));
    MarkTouched(id);
    return Status::Ok();
  }

  size_t Trim() override {
    Reap(/*wait=*/true);
    return TrimFor(TrimReason::kOccupancy, 0, /*async=*/false);
  }

  Result<BufferId> Lookup(const void* p) const override {
    const_cast<TierManagerImpl*>(this)->Reap(/*wait=*/true);  // addresses once moves land
    if (auto id = index_.Find(p)) return *id;
    return NotFoundError("no buffer holds that address");
  }

  Result<int> TierOf(BufferId id) const override {
    const_cast<TierManagerImpl*>(this)->Reap(/*wait=*/true);  // where it is once moves land
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return NotFoundError("unknown buffer " + std::to_string(id));
    return it->second.tier;
  }

  TrimStats Stats() const override {
    const_cast<TierManagerImpl*>(this)->Reap(/*wait=*/false);
    TrimStats s;
    for (int t = 0; t < static_cast<int>(tiers_.size()); ++t) {
      const Tier& tier = *tiers_[t];
      s.tiers.push_back(TierStats{
          .name = tier.name(),
          .capacity = tier.capacity(),
          .used = tier.used(),
          .occupancy = tier.capacity() ? static_cast<double>(tier.used()) / tier.capacity() : 0,
          .fragmentation = tier.fragmentation()});
    }
    if (!s.tiers.empty()) s.tiers[0].peak_used = peak_fast_;
    s.step = step_;
    s.buffers = buffers_.size();
    s.registered_bytes = usage_.registered_bytes();
    s.idle_share = usage_.idle_share();
    s.trims = trims_;
    s.bytes_moved_down = moved_down_;
    s.bytes_moved_up = moved_up_;
    s.bytes_down_without_copy = down_without_copy_;
    s.retained_bytes = kept_.bytes();
    s.stalls = stalls_;
    s.prefetches = prefetches_;
    const MoveCounters& mc = moves_.counters();
    s.copy_seconds = mc.copy_seconds;
    s.bytes_moved_encoded = mc.moved_encoded;
    s.bytes_codec_saved = mc.codec_saved;
    s.codec_seconds = mc.codec_seconds;
    s.codec_declined = mc.codec_declined;
    s.trim_decisions = decisions_;
    if (!decision_us_.empty()) {
      std::vector<double> v(decision_us_.begin(), decision_us_.end());
      std::sort(v.begin(), v.end());
      s.trim_latency_p50_us = v[v.size() / 2];
      s.trim_latency_p99_us = v[(v.size() * 99 + 99) / 100 - 1];
    }
    return s;
  }

 private:
  // Acquire() and AcquireRead(): only a writer makes a kept copy stale.
  Result<void*> AcquireFor(BufferId id, bool write) {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return NotFoundError("unknown buffer " + std::to_string(id));
    Buffer& b = it->second;
    if (auto job = Settle(id)) {
      if (job->down) {
        Abandon(b, *job);  // trimmed while in use again: keep it where it is
      } else {
        Finish(id, b, *job);  // prefetched: arrived, or arrives now
      }
    }
    const bool stalled = b.tier != 0;
    if (stalled) {
      SEEDANCE_RETURN_IF_ERROR(MoveUp(id, b));
      ++stalls_;
    }
    usage_.Acquire(id, step_);
    ++b.uses;
    LearnPeriod(id, b);
    if (write) DropCopy(id);  // the copy on the slower tier goes stale
    // Acquired by now, so making room for the group cannot move this one.
    if (stalled && in_flight_ != nullptr) BringGroupBack(id, b.group);
    return b.ptr;
  }

  // Records the fast tier's high-water mark after a placement on it.
  Result<void*> NotePeak(Result<void*> placed) {
    if (placed) peak_fast_ = std::max(peak_fast_, tiers_[0]->used());
    return placed;
  }

  // ---- address index (Lookup) ----
  // A buffer is found by its kept fast-tier address while moved, else by where it is now.
  static const void* Address(const Buffer& b) { return b.home != nullptr ? b.home : b.ptr; }
  // The bytes at Address(b): the encoding's on the slower tier, else the buffer's size.
  static uint64_t Extent(const Buffer& b) {
    return b.home == nullptr && b.tier != 0 && b.encoded != 0 ? b.encoded : b.size;
  }
  void Unindex(const Buffer& b) { index_.Erase(Address(b)); }
  void Index(BufferId id, const Buffer& b) { index_.Insert(Address(b), Extent(b), id); }

  TierSample Sample(int t) const {
    return TierSample{tiers_[t]->capacity(), tiers_[t]->used(), tiers_[t]->fragmentation()};
  }

  // Buffers the policy may move: on the fast tier and at least min_victim_bytes. Kept as an
  // index so a trim decision looks at candidates only, not at every registered buffer.
  std::vector<BufferState> Candidates() const {
    std::vector<BufferState> out;
    out.reserve(eligible_.size());
    for (BufferId id : eligible_) {
      const Buffer& b = buffers_.at(id);
      // A buffer being moved is in use as far as the policy is concerned.
      out.push_back(BufferState{id, b.size, true, usage_.in_use(id) || Moving(id),
                                usage_.last_used(id), b.uses});
    }
    return out;
  }

  void UpdateEligible(BufferId id, const Buffer& b) {
    if (b.tier == 0 && !b.pinned && b.size >= policy_.options().min_victim_bytes) {
      eligible_.insert(id);
    } else {
      eligible_.erase(id);
    }
  }

  void LearnPeriod(BufferId id, Buffer& b) {
    const auto due =
        b.period.OnAcquire(step_, b.uses, policy_.options().idle_steps,
                           LeadSteps(b.size, moves_.rates().link_rate(), step_seconds_));
    if (due) prefetch_at_[*due].push_back(id);
  }

  // ---- moves in flight (async_copies) ----
  bool Moving(BufferId id) const { return in_flight_ != nullptr && in_flight_->Find(id); }
  // Waits for the buffer's move, if any, and detaches it.
  std::shared_ptr<MovesInFlight::Job> Settle(BufferId id) {
    return in_flight_ != nullptr ? in_flight_->Settle(id) : nullptr;
  }

  // `encoded`: the length of the zero-block encoding on the slower tier (0: a plain copy).
  void Start(BufferId id, Buffer& b, void* dst, const void* src, Tier* to, const Tier* from,
             bool down, uint64_t encoded) {
    auto job = std::make_shared<MovesInFlight::Job>();
    job->dst = dst;
    job->src = src;
    job->size = b.size;
    job->to = to;
    job->from = from;
    job->down = down;
    job->codec = encoded != 0 ? tiers_[0].get() : nullptr;
    job->encoded = encoded;
    in_flight_->Start(id, std::move(job));
  }

  // A prefetch: room on tier 0 (or the kept address backed again) now, the copy in flight.
  Status StartMoveUp(BufferId id, Buffer& b) {
    auto p = RoomOnFastTier(id, b);
    if (!p) return p.error();
    Start(id, b, *p, b.ptr, tiers_[0].get(), tiers_[b.tier].get(), /*down=*/false, b.encoded);
    return Status::Ok();
  }

  // Completes a finished move: frees (or evicts) the source and switches the pointer.
  void Finish(BufferId id, Buffer& b, const MovesInFlight::Job& job) {
    moves_.Account(b.size, job.encoded, job.seconds);
    if (!job.result.ok()) {
      Discard(b, job);
      return;
    }
    Unindex(b);
    if (job.down) {
      if (!LeaveFastTier(b)) {
        tiers_[1]->Free(job.dst);
        Index(id, b);
        return;
      }
      b.tier = 1;
      b.encoded = job.encoded;
      moved_down_ += b.size;
    } else {
      KeepCopy(id, b);
      b.home = nullptr;
      b.tier = 0;
      b.encoded = 0;
      moved_up_ += b.size;
      ++prefetches_;
    }
    moves_.CountLanded(b.size, job.encoded);
    b.ptr = job.dst;
    Index(id, b);
    UpdateEligible(id, b);
  }

  // Undoes a move's destination; the buffer stays where it was.
  void Discard(Buffer& b, const MovesInFlight::Job& job) {
    if (job.down) {
      tiers_[1]->Free(job.dst);
    } else if (job.dst == b.home) {
      (void)tiers_[0]->Evict(b.home);
    } else {
      tiers_[0]->Free(job.dst);
    }
  }
  // A settled move not wanted any more: its time counted, its destination undone.
  void Abandon(Buffer& b, const MovesInFlight::Job& job) {
    moves_.Account(b.size, job.encoded, job.seconds);
    Discard(b, job);
  }

  // Waits for the buffer's move, if any, and calls it off.
  void CallOff(BufferId id, Buffer& b) {
    if (auto job = Settle(id)) Abandon(b, *job);
  }

  // Completes the moves that have finished (all of them, waiting, with `wait`).
  void Reap(bool wait) {
    if (in_flight_ == nullptr || in_flight_->empty()) return;
    for (auto& [id, job] : in_flight_->TakeDone(wait)) Finish(id, buffers_.at(id), *job);
  }

  // Brings back buffers expected soon (learned period), so their use is no stall.
  void PrefetchDue() {
    auto it = prefetch_at_.find(step_);
    if (it == prefetch_at_.end()) return;
    std::vector<BufferId> ids = std::move(it->second);
    prefetch_at_.erase(it);
    for (BufferId id : ids) {
      auto b = buffers_.find(id);
      // Superseded when the buffer was used again since it was scheduled.
      if (b == buffers_.end() || b->second.period.gap() < 2 ||
          b->second.period.prefetch_step() != step_ || b->second.tier == 0) {
        continue;
      }
      if (Moving(id)) continue;
      if (in_flight_ != nullptr) {
        if (StartMoveUp(id, b->second).ok()) MarkTouched(id);
      } else if (MoveUp(id, b->second).ok()) {
        ++prefetches_;
        MarkTouched(id);
      }
    }
  }

  // A stall on one buffer of a group: the group is used together, so its other moved buffers
  // start coming back in the background while the program computes on this one — as far as
  // they fit under the low watermark (a guess must not push other buffers out).
  void BringGroupBack(BufferId stalled, const std::string& group) {
    auto g = groups_.find(group);
    if (g == groups_.end()) return;
    const auto room = static_cast<uint64_t>(policy_.options().low_watermark *
                                            static_cast<double>(tiers_[0]->capacity()));
    for (BufferId id : g->second) {
      Buffer& b = buffers_.at(id);
      if (id == stalled || b.tier == 0 || Moving(id)) continue;
      if (tiers_[0]->used() + b.size > room) break;
      if (StartMoveUp(id, b).ok()) MarkTouched(id);
    }
  }

  // A buffer brought back for an imminent use counts as used now, so the same step's trim
  // does not send it straight back down.
  void MarkTouched(BufferId id) { usage_.Touch(id, step_); }

  // Allocates on tier `t`, trimming idle buffers off it (never `keep`) when it is tier 0.
  // On a slower tier, copies kept there are dropped to make room.
  // With `stable`, tier 0 is asked for a block that keeps its address (Tier::AllocateStable).
  Result<void*> AllocateOn(int t, uint64_t size, BufferId keep, bool stable = false) {
    if (t != 0) {
      auto p = tiers_[t]->Allocate(size);
      while (!p && DropACopyOn(t)) p = tiers_[t]->Allocate(size);
      return p;
    }
    return WithRoom(size, keep, [&] {
      return stable ? tiers_[0]->AllocateStable(size) : tiers_[0]->Allocate(size);
    });
  }

  // Runs `attempt` (a tier-0 allocation or restore of `size` bytes); when tier 0 is full,
  // moves idle buffers off it (never `keep`) and tries again.
  template <typename Attempt>
  Result<void*> WithRoom(uint64_t size, BufferId keep, const Attempt& attempt) {
    auto p = attempt();
    // Only a full tier is cured by moving buffers off it; any other failure is returned.
    if (p || p.error().code() != StatusCode::kResourceExhausted) return NotePeak(std::move(p));
    // Make room: free what the new buffer needs beyond the low watermark target.
    TierSample s = Sample(0);
    const uint64_t target = static_cast<uint64_t>(policy_.options().low_watermark * s.capacity);
    uint64_t need = s.used + size > target ? s.used + size - target : size;
    // Free bytes are not always one hole: keep moving victims (then also buffers released in
    // this very step, never acquired ones) until the block fits or nothing is left to move.
    // Last, moves still in flight (async_copies) are waited for: a finished move down frees
    // its fast memory, and a buffer brought back becomes a victim like any other.
    for (bool wait_in_flight : {false, true}) {
      if (wait_in_flight) {
        if (in_flight_ == nullptr || in_flight_->empty()) break;
        Reap(/*wait=*/true);
      }
      for (bool allow_recent : {false, true}) {
        while (true) {
          size_t moved = TrimBytes(need, keep, allow_recent);
          p = attempt();
          if (p) return NotePeak(std::move(p));
          if (p.error().code() != StatusCode::kResourceExhausted) return p;
          if (moved == 0) break;
          need = size;
        }
      }
    }
    return p;
  }

  // Where a moved buffer goes back to on tier 0: its kept address backed again, or a new
  // block; idle buffers are moved off to make room when needed.
  Result<void*> RoomOnFastTier(BufferId id, const Buffer& b) {
    void* home = b.home;
    if (home == nullptr) return AllocateOn(0, b.size, id);
    return WithRoom(b.size, id, [&]() -> Result<void*> {
      Status r = tiers_[0]->Restore(home);
      if (!r.ok()) return r;
      return home;
    });
  }

  Status MoveUp(BufferId id, Buffer& b) {
    void* home = b.home;
    auto p = RoomOnFastTier(id, b);
    if (!p) return p.error();
    const uint64_t encoded = b.encoded;
    Status copied = moves_.Up(*tiers_[0], *tiers_[b.tier], *p, b.ptr, b.size, encoded);
    if (!copied.ok()) {
      if (home != nullptr) {
        (void)tiers_[0]->Evict(home);
      } else {
        tiers_[0]->Free(*p);
      }
      return copied;
    }
    KeepCopy(id, b);
    Unindex(b);
    b.ptr = *p;
    b.home = nullptr;
    b.tier = 0;
    b.encoded = 0;
    Index(id, b);
    UpdateEligible(id, b);
    moved_up_ += b.size;
    moves_.CountLanded(b.size, encoded);
    return Status::Ok();
  }

  // ---- copies kept on a slower tier (see KeptCopies) ----
  // Keeps where the buffer is now, before it moves up, as its copy.
  void KeepCopy(BufferId id, const Buffer& b) {
    kept_.Keep(id, KeptCopy{.ptr = b.ptr, .tier = b.tier, .size = b.size, .encoded = b.encoded});
  }
  void DropCopy(BufferId id) {
    if (auto copy = kept_.Take(id)) tiers_[copy->tier]->Free(copy->ptr);
  }
  // Frees one kept copy on tier `t`; false when there is none.
  bool DropACopyOn(int t) {
    auto copy = kept_.TakeOneOn(t);
    if (!copy) return false;
    tiers_[t]->Free(copy->ptr);
    return true;
  }
  // Moves a buffer down to its kept copy: no bytes to copy, only its fast memory to give up.
  bool MoveDownToCopy(BufferId id, Buffer& b) {
    Unindex(b);
    const bool left = LeaveFastTier(b);
    if (left) {
      KeptCopy copy = *kept_.Take(id);
      b.tier = copy.tier;
      b.encoded = copy.encoded;
      b.ptr = copy.ptr;
    }
    Index(id, b);
    if (!left) return false;
    UpdateEligible(id, b);
    moved_down_ += b.size;
    down_without_copy_ += b.size;
    return true;
  }

  // Gives up the buffer's tier-0 memory once its contents are elsewhere: frees the block, or
  // evicts it and remembers its address (Tier::KeepsAddress). False when that fails.
  bool LeaveFastTier(Buffer& b) {
    if (tiers_[0]->KeepsAddress(b.ptr)) {
      if (!tiers_[0]->Evict(b.ptr).ok()) return false;
      b.home = b.ptr;
    } else {
      tiers_[0]->Free(b.ptr);
    }
    return true;
  }

  size_t TrimFor(TrimReason reason, BufferId keep, bool async) {
    uint64_t bytes = policy_.BytesToFree(Sample(0));
    if (reason == TrimReason::kIdleShare || reason == TrimReason::kFragmentation) {
      // Move what has been idle long enough even below the watermark.
      for (BufferId id : eligible_) {
        if (usage_.IdleAt(id, step_)) bytes += buffers_.at(id).size;
      }
    }
    return TrimBytes(bytes, keep, /*allow_recent=*/false, async);
  }

  // Moves victims down one tier until `bytes` are freed on tier 0. With `allow_recent`,
  // buffers released in the current step count as idle for one step. Returns buffers moved.
  size_t TrimBytes(uint64_t bytes, BufferId keep, bool allow_recent, bool async = false) {
    if (bytes == 0) return 0;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<BufferState> states = Candidates();
    for (auto& s : states) {
      if (s.id == keep) s.in_use = true;  // the buffer being brought back stays
    }
    // Seen from one step later, buffers released in this step are idle too.
    std::vector<uint64_t> victims =
        policy_.ChooseVictims(states, allow_recent ? step_ + 1 : step_, bytes);
    RecordDecision(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    size_t moved = 0;
    for (uint64_t id : victims) moved += MoveDown(id, buffers_.at(id), async);
    if (moved > 0) ++trims_;
    return moved;
  }

  // Moves a victim down one tier: to its kept copy, else copied (encoded where its codec says
  // so; see EncodingFor) now or, with `async`, by the copy worker. False when it stays.
  bool MoveDown(BufferId id, Buffer& b, bool async) {
    if (kept_.Find(id) != nullptr) return MoveDownToCopy(id, b);
    const uint64_t encoded = moves_.EncodingFor(*tiers_[0], *tiers_[1], b.ptr, b.size, b.codec);
    auto p = AllocateOn(1, encoded != 0 ? encoded : b.size, 0);
    if (!p) return false;  // the slower tier is full too
    if (async) {
      Start(id, b, *p, b.ptr, tiers_[1].get(), tiers_[0].get(), /*down=*/true, encoded);
      return true;
    }
    Status copied = moves_.Down(*tiers_[0], *tiers_[1], *p, b.ptr, b.size, encoded);
    if (!copied.ok()) {
      tiers_[1]->Free(*p);
      return false;
    }
    Unindex(b);
    if (!LeaveFastTier(b)) {  // cannot release it: leave it where it is
      Index(id, b);
      tiers_[1]->Free(*p);
      return false;
    }
    b.ptr = *p;
    b.tier = 1;
    b.encoded = encoded;
    Index(id, b);
    UpdateEligible(id, b);
    moved_down_ += b.size;
    moves_.CountLanded(b.size, encoded);
    return true;
  }

  void RecordDecision(double us) {
    ++decisions_;
    decision_us_.push_back(us);
    if (decision_us_.size() > 4096) decision_us_.pop_front();
  }

  std::vector<std::unique_ptr<Tier>> tiers_;
  TrimPolicy policy_;
  std::unordered_map<BufferId, Buffer> buffers_;
  std::unordered_set<BufferId> eligible_;                                 // see Candidates()
  std::unordered_map<std::string, std::unordered_set<BufferId>> groups_;  // named groups only
  UsageLedger usage_;
  KeptCopies kept_;
  BufferId next_id_ = 1;
  uint64_t step_ = 0;
  uint64_t trims_ = 0;
  uint64_t moved_down_ = 0;
  uint64_t moved_up_ = 0;
  uint64_t down_without_copy_ = 0;
  uint64_t stalls_ = 0;
  uint64_t prefetches_ = 0;
  uint64_t peak_fast_ = 0;
  AddressIndex index_;                                               // see Address()
  std::unordered_map<uint64_t, std::vector<BufferId>> prefetch_at_;  // step → buffers due next
  TierMoves moves_;  // the bytes of each move; the link and codec rates they measure
  double step_seconds_ = 0;
  std::chrono::steady_clock::time_point last_step_at_{};
  std::deque<double> decision_us_;
  uint64_t decisions_ = 0;
  // Moves in the background (async_copies; else null). Last: its worker runs what is queued
  // and joins before anything it copies between goes.
  std::unique_ptr<MovesInFlight> in_flight_;
};

}  // namespace

Result<std::unique_ptr<TierManager>> TierManager::Create(std::vector<std::unique_ptr<Tier>> tiers,
                                                         PolicyOptions options) {
  if (tiers.size() < 2) return InvalidArgumentError("a TierManager needs at least two tiers");
  // Neighbours copy both ways (down on a trim, up on a stall): each must reach the other.
  for (size_t t = 0; t + 1 < tiers.size(); ++t) {
    for (auto [to, from] : {std::pair{t, t + 1}, std::pair{t + 1, t}}) {
      if (tiers[to] == nullptr || tiers[from] == nullptr) {
        return InvalidArgumentError("tier " + std::to_string(tiers[to] ? from : to) + " is null");
      }
      if (!tiers[to]->CanCopyFrom(*tiers[from])) {
        return InvalidArgumentError(
            "tier '" + tiers[to]->name() + "' cannot copy out of tier '" + tiers[from]->name() +
            "' (" + (tiers[from]->memory() == MemoryKind::kDevice ? "device" : "host") +
            " memory): put a tier that reaches both next to it (e.g. the CUDA pinned tier)");
      }
    }
  }
  return std::unique_ptr<TierManager>(new TierManagerImpl(std::move(tiers), options));
}

}  // namespace seedance::trim
