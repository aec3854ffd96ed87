// CallbackTarget: the closure a C library's callbacks get, for an object that may be gone by
// the time they run. libnats, for one, calls its connection handlers on its own threads, from
// a queue, and its JetStream acks on a subscription's thread, with no call that waits for them:
// a callback given `this` could run after the object was destroyed (a use-after-free at stop or
// reload).
//
// The closure handed to the library is a key, never the object. A callback finds the object
// through the key only while it is attached, and holds it for the callback's duration; Detach()
// makes later callbacks find nothing, and returns only once a callback that is running has
// returned. Keys are never reused, and a key stays valid after its target is destroyed (it
// finds nothing), so the library may keep calling with it for as long as it likes.
//
//   CallbackTarget<Publisher> target_{this};
//   lib.SetErrorHandler(opts, &OnError, target_.closure());
//   static void OnError(..., void* closure) {
//     CallbackTarget<Publisher>::With(closure, [&](Publisher& self) { ... });
//   }
//   void Close() { target_.Detach(); lib.Destroy(connection); }   // before the library's teardown
//
// A callback must not detach its own target (it would wait for itself).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

namespace seedance::util {

class CallbackKey {
 public:
  explicit CallbackKey(void* target);
  ~CallbackKey() { Detach(); }
  CallbackKey(const CallbackKey&) = delete;
  CallbackKey& operator=(const CallbackKey&) = delete;

  void* closure() const { return reinterpret_cast<void*>(key_); }
  void Detach();
  bool attached() const;

  // Runs fn(target) while the closure's target is attached; false when it is not.
  template <typename Fn>
  static bool With(void* closure, Fn&& fn) {
    std::shared_ptr<Entry> e = Find(reinterpret_cast<uintptr_t>(closure));
    if (e == nullptr) return false;
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->target == nullptr) return false;
    std::forward<Fn>(fn)(e->target);
    return true;
  }

 private:
  struct Entry {
    std::mutex mu;  // held while a callback runs, and by Detach
    void* target;
  };
  static std::shared_ptr<Entry> Find(uintptr_t key);

  uintptr_t key_;
  std::shared_ptr<Entry> entry_;
};

template <typename T>
class CallbackTarget {
 public:
  explicit CallbackTarget(T* target) : key_(target) {}
  void* closure() const { return key_.closure(); }
  void Detach() { key_.Detach(); }
  bool attached() const { return key_.attached(); }

  template <typename Fn>
  static bool With(void* closure, Fn&& fn) {
    return CallbackKey::With(closure, [&](void* t) { fn(*static_cast<T*>(t)); });
  }

 private:
  CallbackKey key_;
};

}  // namespace seedance::util
