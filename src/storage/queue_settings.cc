#include "storage/queue_settings.h"

#include <filesystem>

#include "util/units.h"

namespace seedance::storage {
namespace {

Result<QueueSettings::FsyncPolicy> ParseFsync(const std::string& text) {
  using Fsync = QueueSettings::Fsync;
  if (text == "always") return QueueSettings::FsyncPolicy{.mode = Fsync::kAlways};
  if (text == "never") return QueueSettings::FsyncPolicy{.mode = Fsync::kNever};
  auto d = util::ParseDuration(text);
  if (!d || d->count() <= 0) {
    return InvalidArgumentError("expected always, never or a duration such as 100ms, got \"" +
                                text + "\"");
  }
  return QueueSettings::FsyncPolicy{.mode = Fsync::kInterval, .interval = *d};
}

// What run does with data_dir (create_directories) refused when the config is read, so that
// `validate` says it: a path that is a file, or below one.
Status DirectoryOrCreatable(const ParamValue& v) {
  const std::string& dir = std::get<std::string>(v);
  if (dir.empty()) return InvalidArgumentError("an empty path");
  std::error_code ec;
  for (std::filesystem::path p = std::filesystem::absolute(dir, ec); !ec && !p.empty();
       p = p.parent_path()) {
    const auto status = std::filesystem::status(p, ec);
    if (ec || status.type() == std::filesystem::file_type::not_found) {
      ec.clear();
      if (p == p.parent_path()) break;
      continue;
    }
    if (status.type() != std::filesystem::file_type::directory) {
      return InvalidArgumentError(p.string() + " is not a directory");
    }
    break;  // the nearest existing ancestor is a directory: run can create the rest
  }
  return Status::Ok();
}

}  // namespace

const Options<QueueSettings>& QueueSchema() {
  using S = QueueSettings;
  static const Options<S> o =
      Options<S>()
          .Enum(&S::durable,
                {.name = "buffer",
                 .doc = "disk: durable queue (survives crashes); memory: bounded in-memory queues",
                 .default_value = "disk"},
                {{"disk", true}, {"memory", false}})
          .Add(&S::data_dir, {.name = "data_dir",
                              .doc = "directory of the durable queue and the sinks' positions",
                              .default_value = "seedance-data",
                              .validator = DirectoryOrCreatable})
          .Size(&S::segment_bytes,
                {.name = "segment_size", .doc = "size of one queue file", .default_value = "64MiB"})
          .Size(&S::max_disk,
                {.name = "max_disk", .doc = "most disk the queue may use", .default_value = "1GiB"})
          .Enum(&S::drop_oldest,
                {.name = "when_full",
                 .doc = "at max_disk: block (stop acknowledging sources) or drop_oldest (counted)",
                 .default_value = "block"},
                {{"block", false}, {"drop_oldest", true}})
          .Parse(&S::fsync,
                 {.name = "fsync",
                  .doc = "always (before acknowledging), an interval such as 100ms, or never",
                  .default_value = "100ms",
                  .validator =
                      [](const ParamValue& v) {
                        return ParseFsync(std::get<std::string>(v)).status();
                      }},
                 std::function<Result<S::FsyncPolicy>(const std::string&)>(ParseFsync));
  return o;
}

}  // namespace seedance::storage
