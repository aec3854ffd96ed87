#include "util/callback_target.h"

#include <unordered_map>

namespace seedance::util {
namespace {

// Every attached key. A key is a number from a counter that never wraps in practice (2^64),
// not an address, so a stale closure can never find a newer object.
struct Registry {
  std::mutex mu;
  uintptr_t next = 1;
  std::unordered_map<uintptr_t, std::shared_ptr<void>> entries;
};

Registry& TheRegistry() {
  static Registry* r = new Registry;  // never destroyed: libraries may call back during exit
  return *r;
}

}  // namespace

CallbackKey::CallbackKey(void* target) : entry_(std::make_shared<Entry>()) {
  entry_->target = target;
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  key_ = r.next++;
  r.entries.emplace(key_, entry_);
}

void CallbackKey::Detach() {
  if (entry_ == nullptr) return;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.entries.erase(key_);
  }
  std::lock_guard<std::mutex> lock(entry_->mu);  // waits for a running callback
  entry_->target = nullptr;
  entry_ = nullptr;
}

bool CallbackKey::attached() const { return entry_ != nullptr; }

std::shared_ptr<CallbackKey::Entry> CallbackKey::Find(uintptr_t key) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.entries.find(key);
  if (it == r.entries.end()) return nullptr;
  return std::static_pointer_cast<Entry>(it->second);
}

}  // namespace seedance::util
