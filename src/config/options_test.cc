#include "seedance/options.h"

#include <gtest/gtest.h>

#include <set>

#include "config/config.h"
#include "plugins/builtin_plugins.h"

namespace seedance {
namespace {

enum class Color { kRed, kBlue };

struct Inner {
  bool on = false;
  int64_t level = 0;
};

struct Shared {
  std::string host;
};

struct Settings {
  std::string name;
  std::optional<std::string> nickname;
  int count = 0;
  uint64_t bytes = 0;
  double ratio = 0;
  std::chrono::milliseconds wait{0};
  std::vector<std::string> tags;
  StringPairs headers;
  Color color = Color::kRed;
  Inner inner;
  std::optional<Inner> maybe;
  Shared shared;
  std::string parsed;
  std::vector<Inner> items;
};

Options<Settings> Schema() {
  using S = Settings;
  return Options<S>()
      .Add(&S::name, {.name = "label", .doc = "a label", .required = true})
      .Add(&S::nickname, {.name = "nickname", .doc = "optional"})
      .Int(&S::count, {.name = "count", .doc = "n", .default_value = "3"})
      .Size(&S::bytes, {.name = "bytes", .doc = "b", .default_value = "2KiB"})
      .Add(&S::ratio, {.name = "ratio", .doc = "r", .default_value = "0.5"})
      .Add(&S::wait, {.name = "wait", .doc = "w", .default_value = "1500ms"})
      .Add(&S::tags, {.name = "tags", .doc = "t"})
      .Add(&S::headers, {.name = "headers", .doc = "h"})
      .Enum(&S::color, {.name = "color", .doc = "c", .default_value = "red"},
            {{"red", Color::kRed}, {"blue", Color::kBlue}})
      .Section(&S::inner, {.name = "inner", .doc = "i"},
               Options<Inner>()
                   .Add(&Inner::on, {.name = "on", .doc = "o", .default_value = "true"})
                   .Int(&Inner::level, {.name = "level", .doc = "l", .default_value = "7"}),
               std::function<void(int64_t, Inner&)>([](int64_t n, Inner& i) { i.level = n; }))
      .Section(&S::maybe, {.name = "maybe", .doc = "m"},
               Options<Inner>().Add(&Inner::on, {.name = "on", .doc = "o"}))
      .Include(&S::shared, Options<Shared>().Add(&Shared::host, {.name = "host", .doc = "h"}))
      .Parse(&S::parsed, {.name = "parsed", .doc = "p"},
             std::function<Result<std::string>(const std::string&)>(
                 [](const std::string& s) -> Result<std::string> {
                   if (s == "bad") return InvalidArgumentError("not this one");
                   return "<" + s + ">";
                 }))
      .SectionList(&S::items, {.name = "items", .doc = "list"},
                   Options<Inner>()
                       .Add(&Inner::on, {.name = "on", .doc = "o", .required = true})
                       .Int(&Inner::level, {.name = "level", .doc = "l", .default_value = "7"})
                       .Check([](const Inner& i, const Params& p) {
                         if (i.level < 0)
                           return InvalidArgumentError(p.section_location() + ": negative");
                         return Status::Ok();
                       }))
      .Check([](const S& s, const Params& p) {
        if (s.count > 100) return InvalidArgumentError(p.Location("count") + ": too many");
        return Status::Ok();
      });
}

// Checks `yaml` (one component of a test plugin with Schema()) the way the config layer does.
Result<Settings> LoadSettings(const std::string& body) {
  PluginRegistry registry;
  SourceFactory f;
  f.info.type = "test";
  f.info.kind = PluginKind::kSource;
  f.info.params = Schema().Specs();
  f.create = [](const Params&, PluginContext&) -> Result<std::unique_ptr<Source>> {
    return InternalError("not used");
  };
  registry.Add(std::move(f));
  SinkFactory sink;
  sink.info.type = "nothing";
  sink.info.kind = PluginKind::kSink;
  registry.Add(std::move(sink));
  auto config =
      config::LoadConfigText("sources:\n  - type: test\n" + body + "sinks:\n  - type: nothing\n",
                             "o.yaml", registry, [](const std::string&) { return std::nullopt; });
  if (!config) return config.error();
  return Schema().Bind(config->sources.at(0).params);
}

TEST(OptionsTest, TypesFollowTheMembers) {
  const auto specs = Schema().Specs();
  auto type = [&](const std::string& name) {
    for (const auto& s : specs) {
      if (s.name == name) return s.type;
    }
    ADD_FAILURE() << name;
    return ParamType::kString;
  };
  EXPECT_EQ(type("label"), ParamType::kString);
  EXPECT_EQ(type("nickname"), ParamType::kString);
  EXPECT_EQ(type("count"), ParamType::kInt);
  EXPECT_EQ(type("bytes"), ParamType::kSize);
  EXPECT_EQ(type("ratio"), ParamType::kDouble);
  EXPECT_EQ(type("wait"), ParamType::kDuration);
  EXPECT_EQ(type("tags"), ParamType::kStringList);
  EXPECT_EQ(type("headers"), ParamType::kStringMap);
  EXPECT_EQ(type("color"), ParamType::kString);
  EXPECT_EQ(type("inner"), ParamType::kObject);
  EXPECT_EQ(type("host"), ParamType::kString);  // included at this level
  for (const auto& s : specs) {
    if (s.name == "color") {
      EXPECT_EQ(s.allowed, (std::vector<std::string>{"red", "blue"}));
    }
    if (s.name == "inner") {
      EXPECT_EQ(s.fields.size(), 2u);
      EXPECT_EQ(s.scalar_alternative, ParamType::kInt);
    }
  }
}

TEST(OptionsTest, BindsDefaultsAndGivenValues) {
  auto s = LoadSettings("    label: a\n");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->name, "a");
  EXPECT_FALSE(s->nickname.has_value());
  EXPECT_EQ(s->count, 3);
  EXPECT_EQ(s->bytes, 2048u);
  EXPECT_DOUBLE_EQ(s->ratio, 0.5);
  EXPECT_EQ(s->wait, std::chrono::milliseconds(1500));
  EXPECT_EQ(s->color, Color::kRed);
  EXPECT_FALSE(s->inner.on);  // absent section: the member as it was
  EXPECT_FALSE(s->maybe.has_value());

  s = LoadSettings(
      "    label: b\n    nickname: bee\n    count: 9\n    bytes: 1MiB\n    wait: 2s\n"
      "    tags: [x, y]\n    headers: {K: v}\n    color: blue\n    inner: {level: 4}\n"
      "    maybe: {on: true}\n    host: h1\n    parsed: text\n");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->nickname, "bee");
  EXPECT_EQ(s->count, 9);
  EXPECT_EQ(s->bytes, 1u << 20);
  EXPECT_EQ(s->wait, std::chrono::seconds(2));
  EXPECT_EQ(s->tags, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(s->headers, (StringPairs{{"K", "v"}}));
  EXPECT_EQ(s->color, Color::kBlue);
  EXPECT_TRUE(s->inner.on);  // the section's own default
  EXPECT_EQ(s->inner.level, 4);
  ASSERT_TRUE(s->maybe.has_value());
  EXPECT_TRUE(s->maybe->on);
  EXPECT_EQ(s->shared.host, "h1");
  EXPECT_EQ(s->parsed, "<text>");
}

TEST(OptionsTest, ScalarStandsForTheSection) {
  auto s = LoadSettings("    label: a\n    inner: 12\n");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->inner.level, 12);
  EXPECT_FALSE(s->inner.on);
}

TEST(OptionsTest, ChecksAndParseErrorsNameTheLocation) {
  auto s = LoadSettings("    label: a\n    count: 101\n");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message(), "o.yaml:4:12: too many");
  s = LoadSettings("    label: a\n    parsed: bad\n");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message(), "o.yaml:4:13: parsed: not this one");
}

TEST(OptionsTest, AListOfSectionsChecksAndBindsEachItemAtItsLocation) {
  auto s = LoadSettings(
      "    label: a\n    items:\n      - {on: true}\n      - on: false\n        level: 2\n");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  ASSERT_EQ(s->items.size(), 2u);
  EXPECT_TRUE(s->items[0].on);
  EXPECT_EQ(s->items[0].level, 7);  // each item's own defaults
  EXPECT_FALSE(s->items[1].on);
  EXPECT_EQ(s->items[1].level, 2);

  // A key error names the item's path and line; a check names the item's line.
  s = LoadSettings("    label: a\n    items:\n      - {on: true}\n      - {on: true, levle: 2}\n");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("o.yaml:6:"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("items[1]"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("did you mean \"level\""), std::string::npos);
  s = LoadSettings("    label: a\n    items:\n      - {level: 1}\n");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("missing required key \"on\""), std::string::npos);
  s = LoadSettings("    label: a\n    items:\n      - {on: true}\n      - {on: true, level: -1}\n");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message(), "o.yaml:6:9: negative");
  s = LoadSettings("    label: a\n    items: [1, 2]\n");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("expected a section"), std::string::npos);
}

TEST(OptionsTest, AMismatchBetweenSchemaAndValueIsAnInternalError) {
  Params p;
  p.Set("count", ParamValue(std::string("three")), "x.yaml:1:1");
  auto s = Schema().Bind(p);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), StatusCode::kInternal);
  EXPECT_NE(s.error().message().find("count"), std::string::npos);
}

// Every built-in plugin binds its own defaults: each declared default converts to its member.
TEST(OptionsTest, EveryBuiltinPluginDeclaresEachNameOnce) {
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  for (PluginKind kind : {PluginKind::kSource, PluginKind::kProcessor, PluginKind::kSink}) {
    for (const std::string& type : registry.TypeNames(kind)) {
      const PluginInfo* info = registry.Find(kind, type);
      ASSERT_NE(info, nullptr);
      std::set<std::string> names;
      for (const ParamSpec& spec : info->params) {
        EXPECT_TRUE(names.insert(spec.name).second)
            << PluginKindName(kind) << " " << type << ": " << spec.name << " declared twice";
      }
    }
  }
}

}  // namespace
}  // namespace seedance
