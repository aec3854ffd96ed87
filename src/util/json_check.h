// Checks and parses untrusted JSON payloads with a bounded stack.
//
// Both use RapidJSON's iterative parser (its state lives on the heap, bounded by the payload
// size, never on the C stack) and refuse nesting deeper than kMaxJsonDepth, so everything that
// walks a parsed payload recursively afterwards (the JSON→Lua bridge, comparisons, encoders)
// has a bounded depth too. A payload of a million '[' is an error with a reason, not a crash.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "seedance/status.h"
#include "util/strings.h"

namespace seedance {

// Deepest nesting of arrays and objects accepted in a payload (as serde_json's default).
inline constexpr int kMaxJsonDepth = 128;

// OK, or kInvalidArgument "invalid JSON at offset N: <what>" (including "nested deeper than 128
// levels").
Status CheckJson(std::string_view text);

namespace json_internal {

inline constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag |
                                        rapidjson::kParseValidateEncodingFlag |
                                        rapidjson::kParseStopWhenDoneFlag;

// The input of CheckJson: a MemoryStream that takes the reader's in-situ writes and drops
// them, so the reader decodes each string into nothing instead of copying it onto its stack
// (checking one 15 MB string cost 22 MB). All a check needs of the decoded text is whether a
// `\u` escape produced a lone surrogate: the input is validated UTF-8, which has no encoded
// surrogates, so the bytes 0xED 0xA0-0xBF in the output can only come from one.
class DiscardingStream : public rapidjson::MemoryStream {
 public:
  DiscardingStream(const Ch* src, size_t size) : MemoryStream(src, size) {}
  Ch* PutBegin() {
    written_ = 0;
    after_ed_ = false;
    return &sink_;
  }
  void Put(Ch c) {
    const auto b = static_cast<unsigned char>(c);
    if (after_ed_ && b >= 0xA0 && b <= 0xBF) lone_surrogate_ = true;
    after_ed_ = b == 0xED;
    ++written_;
  }
  size_t PutEnd(Ch*) { return written_; }
  bool lone_surrogate() const { return lone_surrogate_; }

 private:
  size_t written_ = 0;
  bool after_ed_ = false;
  bool lone_surrogate_ = false;
  Ch sink_ = 0;  // what the reader's in-situ string pointers point at
};

// Forwards SAX events to `Inner`, refusing nesting deeper than kMaxJsonDepth. With a
// DiscardingStream (`discarding` set), strings arrive without their text and the stream tells
// about surrogates instead.
template <typename Inner>
class DepthLimit {
 public:
  using Ch = char;
  explicit DepthLimit(Inner& inner, const DiscardingStream* discarding = nullptr)
      : inner_(inner), discarding_(discarding) {}
  bool Null() { return inner_.Null(); }
  bool Bool(bool b) { return inner_.Bool(b); }
  bool Int(int i) { return inner_.Int(i); }
  bool Uint(unsigned u) { return inner_.Uint(u); }
  bool Int64(int64_t i) { return inner_.Int64(i); }
  bool Uint64(uint64_t u) { return inner_.Uint64(u); }
  bool Double(double d) {
    // RapidJSON turns some numbers past ±1.8e308 (e.g. 1111111111111111111111e308) into
    // infinity instead of an error; no JSON writer can write that back. Refused, as
    // serde_json does ("number out of range").
    if (!std::isfinite(d)) {
      out_of_range_ = true;
      return false;
    }
    return inner_.Double(d);
  }
  bool RawNumber(const Ch* s, rapidjson::SizeType n, bool copy) {
    return inner_.RawNumber(s, n, copy);
  }
  bool String(const Ch* s, rapidjson::SizeType n, bool copy) {
    return Utf8(s, n) && inner_.String(s, n, copy);
  }
  bool Key(const Ch* s, rapidjson::SizeType n, bool copy) {
    return Utf8(s, n) && inner_.Key(s, n, copy);
  }
  bool StartObject() { return Enter() && inner_.StartObject(); }
  bool EndObject(rapidjson::SizeType n) {
    --depth_;
    return inner_.EndObject(n);
  }
  bool StartArray() { return Enter() && inner_.StartArray(); }
  bool EndArray(rapidjson::SizeType n) {
    --depth_;
    return inner_.EndArray(n);
  }
  bool too_deep() const { return too_deep_; }
  bool lone_surrogate() const { return lone_surrogate_; }
  bool out_of_range() const { return out_of_range_; }

 private:
  // The reader validates the input's UTF-8, but decodes a lone trailing surrogate escape
  // ("\udc00") into bytes that are not UTF-8. Refused, as serde_json does: every string a
  // payload carries is then valid UTF-8 downstream.
  bool Utf8(const Ch* s, rapidjson::SizeType n) {
    if (discarding_ != nullptr) {
      lone_surrogate_ = discarding_->lone_surrogate();
      return !lone_surrogate_;
    }
    // The input is already validated, so only a decoded surrogate (0xED 0xA0-0xBF ...) can be
    // malformed: the full check runs only for strings holding 0xED (hot path).
    if (std::memchr(s, 0xED, n) == nullptr) return true;
    if (util::IsValidUtf8(std::string_view(s, n))) return true;
    lone_surrogate_ = true;
    return false;
  }
  bool Enter() {
    if (++depth_ > kMaxJsonDepth) too_deep_ = true;
    return !too_deep_;
  }
  Inner& inner_;
  const DiscardingStream* discarding_;
  int depth_ = 0;
  bool too_deep_ = false;
  bool lone_surrogate_ = false;
  bool out_of_range_ = false;
};

// How Read hands strings to `inner`: copied from the reader's stack, or without their text
// (CheckJson: nothing is kept).
enum class StringMode { kCopy, kDiscard };

// Runs the reader over `text` into `inner`; OK or the error with its offset.
// `own_reader` (optional) is used instead of the thread's: for a caller whose handler may be
// unwound by an error (a Lua error raised while building a table), which must not leave the
// thread's reader in the middle of a parse.
template <typename Inner>
Status Read(std::string_view text, Inner& inner, StringMode mode = StringMode::kCopy,
            rapidjson::Reader* own_reader = nullptr) {
  // The reader's stack holds the string being copied: after a large one it is let go, so one
  // large payload does not keep its size in memory for the thread's life.
  thread_local auto thread_reader = std::make_unique<rapidjson::Reader>();
  struct Release {
    std::unique_ptr<rapidjson::Reader>& r;
    bool large;
    ~Release() {
      if (large) r = std::make_unique<rapidjson::Reader>();
    }
  } release{thread_reader,
            own_reader == nullptr && mode == StringMode::kCopy && text.size() > 256 * 1024};
  rapidjson::Reader* reader = own_reader != nullptr ? own_reader : thread_reader.get();
  rapidjson::ParseResult r;
  size_t end = 0;
  DiscardingStream discarding(text.data(), text.size());
  DepthLimit<Inner> limited(inner, mode == StringMode::kDiscard ? &discarding : nullptr);
  if (mode == StringMode::kCopy) {
    rapidjson::MemoryStream stream(text.data(), text.size());
    r = reader->Parse<kParseFlags>(stream, limited);
    end = stream.Tell();
  } else {
    r = reader->Parse<kParseFlags | rapidjson::kParseInsituFlag>(discarding, limited);
    end = discarding.Tell();
  }
  if (r.IsError()) {
    const std::string what =
        limited.too_deep()
            ? "arrays and objects nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"
        : limited.lone_surrogate() ? std::string("a \\u escape is an unpaired UTF-16 surrogate")
        : limited.out_of_range()   ? std::string("a number is out of range (beyond ±1.8e308)")
                                   : std::string(rapidjson::GetParseError_En(r.Code()));
    return InvalidArgumentError("invalid JSON at offset " + std::to_string(r.Offset()) + ": " +
                                what);
  }
  // kParseStopWhenDoneFlag lets us see trailing garbage ourselves.
  for (size_t i = end; i < text.size(); ++i) {
    const char c = text[i];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
      return InvalidArgumentError("invalid JSON at offset " + std::to_string(i) +
                                  ": unexpected data after the value");
    }
  }
  return Status::Ok();
}

}  // namespace json_internal

// Parses `text` into `doc` with the same rules as CheckJson (bounded stack and depth).
template <typename Document>
Status ParseJson(std::string_view text, Document& doc) {
  Status status;
  auto generate = [&](Document& handler) {
    status = json_internal::Read(text, handler);
    return status.ok();
  };
  doc.Populate(generate);
  return status;
}

}  // namespace seedance
