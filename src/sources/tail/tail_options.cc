#include "sources/tail/tail_options.h"

namespace seedance::sources {

const Options<TailOptions>& TailSchema() {
  using S = TailOptions;
  static const Options<S> o =
      Options<S>()
          .Add(&S::globs,
               {.name = "path",
                .doc = "a glob or a list of globs; files that appear later are picked up",
                .required = true,
                .validator =
                    [](const ParamValue& v) {
                      for (const std::string& g : std::get<std::vector<std::string>>(v)) {
                        if (g.empty()) return InvalidArgumentError("an empty path");
                      }
                      return Status::Ok();
                    }})
          .Enum(&S::format,
                {.name = "format",
                 .doc = "json (each line is a JSON value; others go to error) or raw",
                 .default_value = "json"},
                {{"json", PayloadFormat::kJson}, {"raw", PayloadFormat::kRaw}})
          .Add(&S::topic, {.name = "topic", .doc = "topic of the events; unset: the file's path"})
          .Size(&S::max_line,
                {.name = "max_line",
                 .doc = "longest line taken; longer ones go to error (their first KiB)",
                 .default_value = "64KiB"})
          .Enum(&S::from_end,
                {.name = "read_from",
                 .doc = "for files already there at the first start: beginning or end (later "
                        "files: from their beginning; after a restart: from the stored position)",
                 .default_value = "end"},
                {{"beginning", false}, {"end", true}})
          .Add(&S::poll_interval,
               {.name = "poll_interval",
                .doc = "how often files are checked (inotify wakes the source sooner where it "
                       "works)",
                .default_value = "1s",
                .validator =
                    [](const ParamValue& v) {
                      if (std::get<std::chrono::nanoseconds>(v).count() > 0) return Status::Ok();
                      return InvalidArgumentError("must be more than 0");
                    }})
          .Add(&S::rotate_wait,
               {.name = "rotate_wait",
                .doc = "a file deleted or renamed out of the globs is still read until it has not "
                       "grown for this long (writers append to the old file until they reopen)",
                .default_value = "5s"})
          .Int(&S::max_open_files,
               {.name = "max_open_files",
                .doc = "files held open at most; beyond it the least recently active are closed "
                       "and opened again (by identity) when they grow; lowered to leave 256 of "
                       "the process's descriptors to the queue and sinks",
                .default_value = "256",
                .validator = IntInRange(1, 1000000)})
          .Add(&S::inotify, {.name = "inotify",
                             .doc = "use inotify to notice changes at once (false: polling only)",
                             .default_value = "true"});
  return o;
}

}  // namespace seedance::sources
