#include "sinks/common/header_selection.h"

#include <gtest/gtest.h>

namespace seedance::sinks {
namespace {

std::vector<std::string> Selected(const HeaderSelection& s, const Event& e) {
  std::vector<std::string> names;
  s.ForEach(e, [&](const Header& h) { names.push_back(h.name); });
  return names;
}

TEST(HeaderSelectionTest, NamesAndPrefixes) {
  Event e;
  e.SetHeader("mqtt_user_site", "north");
  e.SetHeader("mqtt_content_type", "application/json");
  e.SetHeader("traceparent", "00-abc");
  EXPECT_EQ(Selected(HeaderSelection({"mqtt_user_*", "traceparent"}, true), e),
            (std::vector<std::string>{"mqtt_user_site", "traceparent"}));
  EXPECT_EQ(Selected(HeaderSelection({"*"}, true), e).size(), 3u);
  EXPECT_TRUE(Selected(HeaderSelection({}, true), e).empty());
}

TEST(HeaderSelectionTest, TextFieldsLeaveOutWhatWouldInjectAField) {
  Event e;
  e.SetHeader("evil", "x\r\nX-Injected: 1");
  e.SetHeader("bad name", "v");
  e.SetHeader("ok", "fine\tvalue");
  EXPECT_EQ(Selected(HeaderSelection({"*"}, true), e), (std::vector<std::string>{"ok"}));
  // Binary-safe headers (Kafka) take them as they are.
  EXPECT_EQ(Selected(HeaderSelection({"*"}, false), e).size(), 3u);
}

TEST(HeaderSelectionTest, AtMostEightKibibytesPerMessage) {
  Event e;
  e.SetHeader("a", std::string(5000, 'a'));
  e.SetHeader("b", std::string(5000, 'b'));  // would pass 8 KiB: left out
  e.SetHeader("c", std::string(100, 'c'));   // still fits
  EXPECT_EQ(Selected(HeaderSelection({"*"}, true), e), (std::vector<std::string>{"a", "c"}));
}

}  // namespace
}  // namespace seedance::sinks
