#include "processors/fields/fields_processor.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "util/json_check.h"

namespace seedance::processors {
namespace {

using rapidjson::Value;

struct FieldsSettings {
  StringPairs rename;  // from → to
  std::vector<std::string> remove;
  std::vector<std::string> keep;
  StringPairs set;  // path → value text
};

// A dotted path is a field name per level; empty names ("a..b", ".a") are refused.
Status CheckPath(std::string_view path, std::string_view param) {
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    if (path.substr(start, dot - start).empty()) {
      return InvalidArgumentError(fmt::format(
          "{}: \"{}\" has an empty field name (paths are dotted names: meta.device)", param, path));
    }
    if (dot == std::string_view::npos) return Status::Ok();
    start = dot + 1;
  }
}

const Options<FieldsSettings>& FieldsSchema() {
  using S = FieldsSettings;
  static const Options<S> o =
      Options<S>()
          .Add(&S::rename,
               {.name = "rename", .doc = "fields to move, from: to (dotted paths), in order"})
          .Add(&S::remove, {.name = "remove", .doc = "fields to delete (dotted paths)"})
          .Add(&S::keep, {.name = "keep",
                          .doc = "when set, the only fields kept (dotted paths); after remove"})
          .Add(&S::set, {.name = "set",
                         .doc = "fields to set last, path: value; a value that is JSON (1.5, "
                                "true, \"42\") is that JSON, any other a string"})
          .Check([](const S& s, const Params& p) -> Status {
            for (const auto& [from, to] : s.rename) {
              SEEDANCE_RETURN_IF_ERROR(CheckPath(from, p.Location("rename") + ": rename"));
              SEEDANCE_RETURN_IF_ERROR(CheckPath(to, p.Location("rename") + ": rename"));
            }
            for (const auto& path : s.remove) {
              SEEDANCE_RETURN_IF_ERROR(CheckPath(path, p.Location("remove") + ": remove"));
            }
            for (const auto& path : s.keep) {
              SEEDANCE_RETURN_IF_ERROR(CheckPath(path, p.Location("keep") + ": keep"));
            }
            for (const auto& [path, value] : s.set) {
              SEEDANCE_RETURN_IF_ERROR(CheckPath(path, p.Location("set") + ": set"));
            }
            if (s.rename.empty() && s.remove.empty() && s.keep.empty() && s.set.empty()) {
              return InvalidArgumentError(
                  p.section_location() +
                  ": fields: give at least one of rename, remove, keep, set");
            }
            return Status::Ok();
          });
  return o;
}

// The operations, ready to apply: `set` values parsed once.
struct Plan {
  FieldsSettings settings;
  rapidjson::Document values;  // an array: the value of each `set` entry, in order
};

Result<std::unique_ptr<Plan>> MakePlan(const Params& params) {
  SEEDANCE_ASSIGN_OR_RETURN(FieldsSettings s, FieldsSchema().Bind(params));
  auto plan = std::make_unique<Plan>();
  plan->values.SetArray();
  auto& alloc = plan->values.GetAllocator();
  for (const auto& [path, text] : s.set) {
    rapidjson::Document parsed;
    Value v;
    if (ParseJson(text, parsed).ok()) {
      v.CopyFrom(parsed, alloc);
    } else {
      v.SetString(text.data(), static_cast<rapidjson::SizeType>(text.size()), alloc);
    }
    plan->values.PushBack(v, alloc);
  }
  plan->settings = std::move(s);
  return plan;
}

Value NameOf(std::string_view name) {
  return Value(rapidjson::StringRef(name.data(), static_cast<rapidjson::SizeType>(name.size())));
}

// The object that holds the last name of `path`, and that name; null when a level is missing
// or not an object.
Value* ParentOf(Value& root, std::string_view path, std::string_view* last) {
  Value* v = &root;
  while (true) {
    const size_t dot = path.find('.');
    if (dot == std::string_view::npos) {
      *last = path;
      return v->IsObject() ? v : nullptr;
    }
    if (!v->IsObject()) return nullptr;
    auto it = v->FindMember(NameOf(path.substr(0, dot)));
    if (it == v->MemberEnd()) return nullptr;
    v = &it->value;
    path.remove_prefix(dot + 1);
  }
}

// Moves the field at `path` out of `root` into `out`; false when there is none.
bool Take(Value& root, std::string_view path, Value* out) {
  std::string_view last;
  Value* parent = ParentOf(root, path, &last);
  if (parent == nullptr) return false;
  auto it = parent->FindMember(NameOf(last));
  if (it == parent->MemberEnd()) return false;
  *out = std::move(it->value);
  parent->EraseMember(it);  // keeps the other members' order
  return true;
}

// Sets the field at `path`, making the objects on the way; an error naming the level that is
// there and not an object.
Status Put(Value& root, std::string_view path, Value&& value,
           rapidjson::Document::AllocatorType& alloc) {
  Value* v = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string_view name = path.substr(start, dot - start);
    auto it = v->FindMember(NameOf(name));
    if (dot == std::string_view::npos) {
      if (it != v->MemberEnd()) {
        it->value = std::move(value);
      } else {
        v->AddMember(Value(name.data(), static_cast<rapidjson::SizeType>(name.size()), alloc),
                     value, alloc);
      }
      return Status::Ok();
    }
    if (it == v->MemberEnd()) {
      v->AddMember(Value(name.data(), static_cast<rapidjson::SizeType>(name.size()), alloc),
                   Value(rapidjson::kObjectType), alloc);
      it = v->MemberEnd() - 1;
    } else if (!it->value.IsObject()) {
      return InvalidArgumentError(
          fmt::format("cannot set \"{}\": \"{}\" is not an object", path, path.substr(0, dot)));
    }
    v = &it->value;
    start = dot + 1;
  }
}

class FieldsProcessor final : public Processor {
 public:
  explicit FieldsProcessor(std::unique_ptr<Plan> plan) : plan_(std::move(plan)) {}

  void Process(Event&& event, ProcessorOutput& out) override {
    rapidjson::Document doc;
    if (event.format != PayloadFormat::kJson || !ParseJson(event.payload, doc).ok() ||
        !doc.IsObject()) {
      out.EmitSide(Output::kError, std::move(event), "fields: the payload is not a JSON object");
      return;
    }
    auto& alloc = doc.GetAllocator();
    const FieldsSettings& s = plan_->settings;
    bool changed = false;
    for (const auto& [from, to] : s.rename) {
      Value v;
      if (!Take(doc, from, &v)) continue;
      if (Status put = Put(doc, to, std::move(v), alloc); !put.ok()) {
        out.EmitSide(Output::kError, std::move(event), "fields: rename: " + put.message());
        return;
      }
      changed = true;
    }
    for (const auto& path : s.remove) {
      Value gone;
      changed |= Take(doc, path, &gone);
    }
    if (!s.keep.empty()) {
      Value kept(rapidjson::kObjectType);
      for (const auto& path : s.keep) {
        Value v;
        if (Take(doc, path, &v)) {
          // Paths in `keep` are names, so Put cannot meet a level that is not an object
          // unless two of them overlap ("a" and "a.b"): the first wins.
          (void)Put(kept, path, std::move(v), alloc);
        }
      }
      changed |= !doc.ObjectEmpty();  // something was left out
      static_cast<Value&>(doc).Swap(kept);
    }
    for (size_t i = 0; i < s.set.size(); ++i) {
      Value v(plan_->values[static_cast<rapidjson::SizeType>(i)], alloc);  // a copy
      if (Status put = Put(doc, s.set[i].first, std::move(v), alloc); !put.ok()) {
        out.EmitSide(Output::kError, std::move(event), "fields: set: " + put.message());
        return;
      }
      changed = true;
    }
    if (changed) {
      rapidjson::StringBuffer text;
      rapidjson::Writer<rapidjson::StringBuffer> writer(text);
      doc.Accept(writer);
      event.payload.assign(text.GetString(), text.GetSize());
    }
    out.Emit(std::move(event));
  }

  Status Reconfigure(const Params& params, bool apply) override {
    SEEDANCE_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, MakePlan(params));
    if (apply) plan_ = std::move(plan);
    return Status::Ok();
  }

 private:
  std::unique_ptr<Plan> plan_;
};

}  // namespace

ProcessorFactory FieldsProcessorFactory() {
  ProcessorFactory f;
  f.info.type = "fields";
  f.info.kind = PluginKind::kProcessor;
  f.info.summary = "Renames, removes, keeps and sets fields of JSON payloads (dotted paths).";
  f.info.params = FieldsSchema().Specs();
  f.create = [](const Params& p, PluginContext&) -> Result<std::unique_ptr<Processor>> {
    SEEDANCE_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, MakePlan(p));
    return std::unique_ptr<Processor>(new FieldsProcessor(std::move(plan)));
  };
  return f;
}

}  // namespace seedance::processors
