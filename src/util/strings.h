// Small string helpers with no dependencies.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace seedance::util {

// Edit distance (insert, delete, substitute each cost 1).
size_t EditDistance(std::string_view a, std::string_view b);

// Returns the candidate closest to `word` when it is close enough to be a likely typo
// (distance ≤ max(2, |word|/3)), or "" when none is.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF), as RFC 3629 defines it.
bool IsValidUtf8(std::string_view s);

// Length of the well-formed UTF-8 sequence at the start of `s`, or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view s);

// Appends `s` to `out` as a JSON string literal, quotes included. The result is always valid
// JSON: a byte that is not part of well-formed UTF-8 becomes U+FFFD (as serde_json's and
// Python's "replace" do). Callers that must keep such bytes carry them as base64 instead.
void AppendJsonString(std::string& out, std::string_view s);

// Appends `bytes` as standard base64 (RFC 4648, with padding).
void AppendBase64(std::string& out, std::string_view bytes);
// Appends `bytes` as lowercase hex digits, two per byte.
void AppendHex(std::string& out, std::string_view bytes);
// Hex digits (either case) back to bytes; false for an odd count or a character that is not
// a hex digit.
bool DecodeHex(std::string_view hex, std::string* out);
// Standard base64 (with padding) back to bytes; false for text that is not base64.
bool DecodeBase64(std::string_view text, std::string* out);

// Text from outside (scripts, brokers, servers, payloads) made safe for one log line or one
// header value: control characters and DEL become escapes (\n, \r, \t, \xHH), so no text can
// start a forged line or move the terminal's cursor, and text past `max_bytes` is cut with
// "... (N more bytes)". Bytes of well-formed UTF-8 stay as they are; malformed ones become \xHH.
std::string SanitizeText(std::string_view s, size_t max_bytes);

// Replaces every `from` in `text` with `to`, left to right (a replacement is not searched
// again). REQUIRES: `from` is not empty.
void ReplaceAll(std::string& text, std::string_view from, std::string_view to);

// True when `a` and `b` are equal, in constant time in their length: a comparison of a secret
// (a bearer token) does not tell how much of a guess was right.
bool SameSecret(std::string_view a, std::string_view b);

}  // namespace seedance::util
