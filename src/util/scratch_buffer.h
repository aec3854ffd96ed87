// Scratch buffers that one large message must not keep large.
//
// A buffer reused from message to message (a socket's receive buffer, a record being encoded,
// a file read buffer) grows to the largest message it has held. Left alone, one 15 MB message
// would keep every such buffer on its path at 15 MB for the life of the process, and the
// next large message would find them all still held: peak memory is the sum of every stage's
// buffer instead of the largest stage's. Each owner calls ReleaseIfLarger once the message
// has moved on.
#pragma once

#include <cstddef>
#include <string>

namespace seedance::util {

// What a scratch buffer keeps between messages: larger storage is given back.
inline constexpr size_t kScratchKeepBytes = 256 * 1024;

// Gives `s`'s storage back when its capacity exceeds `keep` (its contents stay).
inline void ReleaseIfLarger(std::string& s, size_t keep = kScratchKeepBytes) {
  if (s.capacity() <= keep) return;
  if (s.empty()) {
    std::string().swap(s);
  } else {
    s.shrink_to_fit();
  }
}

}  // namespace seedance::util
