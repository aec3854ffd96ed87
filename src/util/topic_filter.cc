#include "util/topic_filter.h"

#include <string>

namespace seedance::util {

Status ValidateTopicFilter(std::string_view filter) {
  auto bad = [&](const char* why) {
    return InvalidArgumentError("invalid topic filter \"" + std::string(filter) + "\": " + why);
  };
  if (filter.empty()) return bad("empty");
  if (filter.size() > 65535) return bad("longer than 65535 bytes");
  if (filter.find('\0') != std::string_view::npos) return bad("contains a NUL character");
  std::string_view f = filter;
  if (f.substr(0, 7) == "$share/") {
    size_t slash = f.find('/', 7);
    if (slash == std::string_view::npos || slash == 7) return bad("$share needs a group name");
    std::string_view group = f.substr(7, slash - 7);
    if (group.find_first_of("+#") != std::string_view::npos) return bad("wildcard in share group");
    f = f.substr(slash + 1);
    if (f.empty()) return bad("$share needs a filter after the group");
  }
  size_t start = 0;
  while (true) {
    size_t end = f.find('/', start);
    std::string_view level = f.substr(start, end == std::string_view::npos ? f.npos : end - start);
    if (level.find('#') != std::string_view::npos) {
      if (level != "#") return bad("'#' must be a whole level");
      if (end != std::string_view::npos) return bad("'#' must be the last level");
    }
    if (level.find('+') != std::string_view::npos && level != "+") {
      return bad("'+' must be a whole level");
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return Status::Ok();
}

bool TopicMatches(std::string_view filter, std::string_view topic) {
  if (!topic.empty() && topic[0] == '$' && !filter.empty() &&
      (filter[0] == '+' || filter[0] == '#')) {
    return false;
  }
  size_t fi = 0, ti = 0;
  while (true) {
    size_t fe = filter.find('/', fi);
    std::string_view fl = filter.substr(fi, fe == filter.npos ? filter.npos : fe - fi);
    if (fl == "#") return true;
    if (ti > topic.size()) return false;
    size_t te = topic.find('/', ti);
    std::string_view tl = topic.substr(ti, te == topic.npos ? topic.npos : te - ti);
    if (fl != "+" && fl != tl) return false;
    if (fe == filter.npos || te == topic.npos) {
      if (fe == filter.npos && te == topic.npos) return true;
      // "a/#" matches "a": the filter continues with exactly "#".
      return te == topic.npos && filter.substr(fe + 1) == "#";
    }
    fi = fe + 1;
    ti = te + 1;
  }
}

}  // namespace seedance::util
