#include "config/component_error.h"

#include <gtest/gtest.h>

namespace seedance::config {
namespace {

TEST(ComponentErrorTest, TheValuesPlaceLeadsAndIsNotRepeated) {
  Status s = ComponentError(InvalidArgumentError("/etc/sd/c.yaml:19:13: group \"g\": overlap"),
                            "/etc/sd/c.yaml:3:5", "source", "modbus");
  EXPECT_EQ(s.message(), "/etc/sd/c.yaml:19:13: source \"modbus\": group \"g\": overlap");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(ComponentErrorTest, WithoutAPlaceOfItsOwnTheSectionsLeads) {
  for (const char* message :
       {"no GPU to read", "/etc/sd/c.yaml: cannot read", "/etc/sd/c.yaml:1x:2: odd",
        "/etc/sd/c.yaml:1:2 no colon", "/other.yaml:4:1: elsewhere", "/etc/sd/c.yaml::: x"}) {
    Status s = ComponentError(UnavailableError(message), "/etc/sd/c.yaml:3:5", "sink", "out");
    EXPECT_EQ(s.message(), std::string("/etc/sd/c.yaml:3:5: sink \"out\": ") + message);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  }
  // A file name with colons of its own.
  Status s =
      ComponentError(InvalidArgumentError("a:b.yaml:7:9: bad"), "a:b.yaml:2:3", "processor", "p");
  EXPECT_EQ(s.message(), "a:b.yaml:7:9: processor \"p\": bad");
  EXPECT_TRUE(ComponentError(Status::Ok(), "c.yaml:1:1", "sink", "s").ok());
}

}  // namespace
}  // namespace seedance::config
