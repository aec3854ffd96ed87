// LineSplitter: cuts the bytes read from one file into lines, with the file offset just past
// each, so a line is stored (and its position kept) by where it ends. Pure: no I/O.
//
// A piece is looked at (Peek) before it is taken (Take): when the pipeline refuses a line, it
// stays, and the next Peek offers it again. What a file holds:
// - a line (without its "\n" or "\r\n");
// - a blank line (only spaces and tabs): done, nothing to emit;
// - a line longer than max_line: reported once with its first KiB; the rest of it is dropped
//   up to its newline as it arrives, never buffered (a 10 GiB line costs max_line + one read);
// - the end of such a line: done.
// Not thread-safe (the source's loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace seedance::sources {

struct LinePiece {
  enum class Kind {
    kLine,     // `text` is the line
    kTooLong,  // `text` is its first KiB
    kDone,     // a blank line, or the end of a line too long: no event, only its position
  };
  Kind kind = Kind::kLine;
  std::string_view text;  // valid until the next Append, Take or Restart
  uint64_t end = 0;       // file offset just past it (its newline; for a too long line still
                          // arriving, what has arrived of it)
  uint64_t line_no = 0;   // 1-based within the file
};

class LineSplitter {
 public:
  static constexpr size_t kTooLongKept = 1024;

  explicit LineSplitter(size_t max_line) : max_line_(max_line) {}

  // Starts over at file offset `offset` (a new file, or one truncated): forgets the bytes
  // held; line numbers go on.
  void Restart(uint64_t offset);
  void Append(const char* data, size_t n);

  // The next piece, not yet taken; nullopt when more bytes are needed.
  std::optional<LinePiece> Peek();
  // Takes the piece the last Peek returned.
  void Take();
  // Frees the bytes taken so far (call once per batch of Takes).
  void Compact();

  // Nothing held: every byte read is taken.
  bool empty() const { return bytes_.size() == pos_; }

 private:
  const size_t max_line_;
  std::string bytes_;
  size_t pos_ = 0;         // bytes_[0, pos_) are taken
  uint64_t start_ = 0;     // file offset of bytes_[0]
  bool skipping_ = false;  // inside a too long line: dropped up to its newline
  uint64_t line_no_ = 0;   // lines taken
  // What Take does with the piece peeked.
  size_t next_pos_ = 0;
  bool next_skipping_ = false;
  uint64_t next_line_no_ = 0;
};

}  // namespace seedance::sources
